//! The crate's error type.

use std::path::PathBuf;

use state_sqlite::StoreError;

/// Everything a mirror pass can fail with. Bad transcript content is never
/// an error (it is counted and skipped); only I/O and the store are.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MirrorError {
    /// A transcript file or directory could not be read.
    #[error("cannot read {path}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The store refused or failed a write.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A duration such as `--since 7d` did not parse.
    #[error("invalid duration {0:?} (expected a number with s, m, h, d or w, e.g. 12h)")]
    Duration(String),
}

impl MirrorError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        MirrorError::Io {
            path: path.into(),
            source,
        }
    }
}
