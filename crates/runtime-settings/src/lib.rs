//! Where the runtime's user-level settings file is: the one locator shared
//! by every crate that the spec makes read it (secret lookup in
//! `cli-supervisor`, plugin trust in `plugin-trust`).
//!
//! The file is `$LIONAGI_SETTINGS_FILE` when set and non-empty, else
//! `$HOME/.lionagi/settings.yaml`; with neither variable there is no
//! settings file. Tests pass their own variable source to
//! [`locate_settings_with`] and never touch the real home directory.
//!
//! ```
//! use std::ffi::OsString;
//! use std::path::PathBuf;
//!
//! let vars = |name: &str| (name == "HOME").then(|| OsString::from("/home/ada"));
//! assert_eq!(
//!     runtime_settings::locate_settings_with(vars),
//!     Some(PathBuf::from("/home/ada/.lionagi/settings.yaml"))
//! );
//! ```
//!
//! Features: none.

mod locate;

pub use locate::{SETTINGS_PATH_VAR, locate_settings, locate_settings_with};
