//! The crate's error type.

use std::path::PathBuf;

/// A boxed handler or sink error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Errors of the notify crate. Messages never carry adapter argument
/// values: an adapter is named by the basename of its program only.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An envelope could not be read or written as JSON.
    #[error("run-terminal envelope is not valid json")]
    EnvelopeJson {
        /// The parse or write error.
        #[source]
        source: serde_json::Error,
    },
    /// An envelope names a schema or version this reader does not speak.
    #[error("unsupported envelope schema {schema:?} version {version}")]
    UnsupportedSchema {
        /// The schema name found.
        schema: String,
        /// The schema version found.
        version: u64,
    },
    /// The exec adapter's program could not be started.
    #[error("notify adapter {label} could not start: {detail}")]
    Spawn {
        /// The basename of the adapter's program.
        label: String,
        /// What went wrong, with argument values redacted.
        detail: String,
    },
    /// The exec adapter exited unsuccessfully.
    #[error("notify adapter {label} exited with {exit}")]
    AdapterFailed {
        /// The basename of the adapter's program.
        label: String,
        /// The exit code or signal, rendered.
        exit: String,
    },
    /// The exec adapter outlived its timeout and was ended.
    #[error("notify adapter {label} timed out and was ended")]
    AdapterTimedOut {
        /// The basename of the adapter's program.
        label: String,
    },
    /// The exec adapter call was cancelled and its child ended.
    #[error("notify adapter {label} was cancelled and its child ended")]
    AdapterCancelled {
        /// The basename of the adapter's program.
        label: String,
    },
    /// The supervising task of an exec adapter call was lost.
    #[error("notify adapter {label} supervisor task ended abnormally")]
    SupervisorLost {
        /// The basename of the adapter's program.
        label: String,
    },
    /// A recorded notify outcome could not be read.
    #[error("could not read the notify outcome at {path}")]
    Read {
        /// The file being read.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A recorded notify outcome is not valid json.
    #[error("notify outcome at {path} is not valid json")]
    OutcomeJson {
        /// The file read.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// A notify outcome or captured stderr could not be written.
    #[error("could not write {path}")]
    Write {
        /// The file being written.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}
