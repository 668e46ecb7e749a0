//! The runtime's user-level settings file, `settings.yaml`: where it is, and
//! its parsing into typed sections. The one owner of that file for every
//! crate the spec makes read it: secret lookup in `cli-supervisor`
//! (`secrets.lookup`, [`LookupConfig`]) and plugin trust in `plugin-trust`
//! (`trusted_plugins` and `disabled_plugins`, [`TrustRecord`]).
//!
//! The file is `$LIONAGI_SETTINGS_FILE` when set and non-empty, else
//! `$HOME/.lionagi/settings.yaml`; with neither variable there is no
//! settings file. Tests pass their own variable source to
//! [`SettingsFile::locate_with`] and never touch the real home directory.
//! [`SettingsFile::load`] reads the file fresh on every call (a missing file
//! is empty settings, an unreadable one an error);
//! [`SettingsFile::update`] is a locked read-modify-write that keeps keys it
//! does not touch, byte for byte: only the top-level keys it changes are
//! re-rendered, so comments, key order, formatting, the file's mode and a
//! symlinked settings file survive. Each section is checked by its own view, so a malformed
//! section of one owner does not hide another's.
//!
//! ```
//! use std::ffi::OsString;
//! use std::path::Path;
//! use runtime_settings::{LookupConfig, Settings, SettingsFile};
//!
//! let vars = |name: &str| (name == "HOME").then(|| OsString::from("/home/ada"));
//! let file = SettingsFile::locate_with(vars).expect("HOME is set");
//! assert_eq!(file.path(), Path::new("/home/ada/.lionagi/settings.yaml"));
//!
//! let settings = Settings::from_yaml("secrets:\n  lookup:\n    enabled: false\n")?;
//! assert_eq!(settings.secret_lookup(), LookupConfig::Disabled);
//! assert!(!settings.is_plugin_disabled("acme"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Features: none.
#![forbid(unsafe_code)]

mod document;
mod error;
mod file;
mod locate;
mod plugins;
mod secrets;
mod splice;

pub use document::Settings;
pub use error::Error;
pub use file::SettingsFile;
pub use locate::{SETTINGS_PATH_VAR, locate_settings, locate_settings_with};
pub use plugins::{DISABLED_KEY, TRUSTED_KEY, TrustRecord};
pub use secrets::{LookupConfig, PLACEHOLDER, SecretLookup, parse_secret_lookup, reason};
