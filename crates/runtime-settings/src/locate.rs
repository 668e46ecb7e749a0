//! The settings-file locator.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The variable naming the settings file instead of
/// `$HOME/.lionagi/settings.yaml`.
pub const SETTINGS_PATH_VAR: &str = "LIONAGI_SETTINGS_FILE";

/// The settings file from this process's environment.
pub fn locate_settings() -> Option<PathBuf> {
    locate_settings_with(|name| std::env::var_os(name))
}

/// The settings file from any variable source: `LIONAGI_SETTINGS_FILE`
/// (when non-empty), else `HOME/.lionagi/settings.yaml` (when `HOME` is
/// non-empty), else `None`.
pub fn locate_settings_with(lookup: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(path) = lookup(SETTINGS_PATH_VAR).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let home = lookup("HOME").filter(|h| !h.is_empty())?;
    Some(Path::new(&home).join(".lionagi").join("settings.yaml"))
}
