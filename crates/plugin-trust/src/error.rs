//! The one error type of the crate: every refusal names the plugin or path.

use std::io;
use std::path::PathBuf;

/// Everything plugin discovery, trust and activation can refuse or fail on.
///
/// Activation fails closed: any variant returned by
/// [`Registry::activate`](crate::Registry::activate) means nothing was handed
/// out. [`Error::is_refusal`] tells a trust refusal (the plugin is not
/// usable as it stands) from an environment failure (settings unreadable, a
/// system call failed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `plugin.yaml` could not be read.
    #[error("cannot read manifest {path}")]
    ManifestRead {
        /// The manifest path.
        path: PathBuf,
        /// The I/O cause.
        #[source]
        source: io::Error,
    },
    /// `plugin.yaml` is not valid YAML or does not match the schema.
    #[error("invalid manifest {path}: {reason}")]
    ManifestInvalid {
        /// The manifest path.
        path: PathBuf,
        /// What is wrong, in words.
        reason: String,
    },
    /// No discovered bundle carries this name.
    #[error("unknown plugin '{plugin}'")]
    UnknownPlugin {
        /// The plugin name asked for.
        plugin: String,
    },
    /// The plugin declares no such target.
    #[error("plugin '{plugin}' declares no target '{target}'")]
    UnknownTarget {
        /// The plugin.
        plugin: String,
        /// The target asked for.
        target: String,
    },
    /// There is no trust record for the plugin.
    #[error("plugin '{plugin}' is not trusted")]
    Untrusted {
        /// The plugin.
        plugin: String,
    },
    /// The trust record no longer matches what is on disk.
    #[error("plugin '{plugin}' changed since it was trusted: {what}")]
    Changed {
        /// The plugin.
        plugin: String,
        /// What differs (the manifest, a declared path, the bundle location).
        what: String,
    },
    /// The plugin is listed in `disabled_plugins`.
    #[error("plugin '{plugin}' is disabled")]
    Disabled {
        /// The plugin.
        plugin: String,
    },
    /// The runtime's compatibility version does not satisfy the manifest's
    /// `lionagi` specifier, or the specifier does not parse.
    #[error("plugin '{plugin}' is incompatible: '{specifier}' does not admit runtime {runtime}")]
    Incompatible {
        /// The plugin.
        plugin: String,
        /// The manifest's specifier.
        specifier: String,
        /// [`COMPAT_VERSION`](crate::COMPAT_VERSION).
        runtime: &'static str,
    },
    /// A declared file could not be read (missing, a symlink, not a regular
    /// file, too large, or an I/O error).
    #[error("plugin '{plugin}': cannot read declared file '{path}'")]
    Unreadable {
        /// The plugin.
        plugin: String,
        /// The declared relative path.
        path: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Loading verified bytes failed (for example a provider definition that
    /// does not parse). Cached per content hash like a success.
    #[error("plugin '{plugin}': loading '{path}' failed: {reason}")]
    Load {
        /// The plugin.
        plugin: String,
        /// The declared relative path.
        path: String,
        /// What failed.
        reason: String,
    },
    /// The settings file could not be read or parsed.
    #[error("cannot read settings {path}: {reason}")]
    SettingsRead {
        /// The settings path.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// The settings file could not be locked or written.
    #[error("cannot write settings {path}")]
    SettingsWrite {
        /// The settings path.
        path: PathBuf,
        /// The I/O cause.
        #[source]
        source: io::Error,
    },
    /// Preparing a sealed in-memory executable failed.
    #[error("plugin '{plugin}': cannot seal '{path}' for execution")]
    Seal {
        /// The plugin.
        plugin: String,
        /// The declared relative path.
        path: String,
        /// The I/O cause.
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// True when the error says "this plugin may not be used as it is"
    /// (untrusted, changed, disabled, incompatible, unknown, unreadable,
    /// invalid), false for environment failures.
    pub fn is_refusal(&self) -> bool {
        !matches!(
            self,
            Error::SettingsRead { .. } | Error::SettingsWrite { .. } | Error::Seal { .. }
        )
    }

    /// The plugin the error is about, where it names one.
    pub fn plugin(&self) -> Option<&str> {
        match self {
            Error::UnknownPlugin { plugin }
            | Error::UnknownTarget { plugin, .. }
            | Error::Untrusted { plugin }
            | Error::Changed { plugin, .. }
            | Error::Disabled { plugin }
            | Error::Incompatible { plugin, .. }
            | Error::Unreadable { plugin, .. }
            | Error::Load { plugin, .. }
            | Error::Seal { plugin, .. } => Some(plugin),
            _ => None,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
