//! The crate's error type.

use std::path::PathBuf;

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
    /// The store refused or failed a read or a write (its own error, e.g.
    /// `state_sqlite::StoreError` or `state_postgres::PgStoreError`).
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// A duration such as `--since 7d` did not parse.
    #[error("invalid duration {0:?} (expected a number with s, m, h, d or w, e.g. 12h)")]
    Duration(String),
}

impl MirrorError {
    pub(crate) fn store(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        MirrorError::Store(Box::new(e))
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        MirrorError::Io {
            path: path.into(),
            source,
        }
    }
}
