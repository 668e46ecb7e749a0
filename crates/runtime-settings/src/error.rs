//! The crate's one error type.

use std::io;
use std::path::PathBuf;

/// Reading or writing the settings file failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The [`crate::SettingsFile`] has an empty path: nothing is configured.
    #[error("no settings file is configured")]
    NotConfigured,
    /// The file exists but cannot be read.
    #[error("cannot read settings file {path}")]
    Read {
        /// The settings file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The file is not UTF-8 text.
    #[error("settings file {path} is not UTF-8")]
    NotUtf8 {
        /// The settings file.
        path: PathBuf,
    },
    /// The file is not YAML, its document is not a mapping, or a section
    /// has the wrong shape.
    #[error("settings file {path} is not valid: {reason}")]
    Invalid {
        /// The settings file.
        path: PathBuf,
        /// What is wrong (a parser message or the section at fault; never
        /// a configured value).
        reason: String,
    },
    /// Writing the file (or its lock, or the replacement) failed.
    #[error("cannot write settings file {path}")]
    Write {
        /// The settings file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The file breaks the published settings schema
    /// ([`SettingsFile::check`](crate::SettingsFile::check)).
    #[error(transparent)]
    Schema(config_schema::Error),
}
