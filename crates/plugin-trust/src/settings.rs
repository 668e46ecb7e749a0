//! Plugin trust's use of the user-level settings file. The file, its
//! parsing and the `trusted_plugins` / `disabled_plugins` sections belong
//! to `runtime-settings`; this module reads them fresh on every check
//! (refusing the whole file when a plugin section is malformed) and maps
//! their errors to this crate's.

use std::io;

pub(crate) use runtime_settings::Settings;
pub use runtime_settings::{SettingsFile, TrustRecord};

use crate::error::{Error, Result};

/// Reads the settings for a trust decision: a missing file is empty
/// settings; an unreadable or unparsable file, or a malformed plugin
/// section, is an error (never "no settings").
pub(crate) fn load(file: &SettingsFile) -> Result<Settings> {
    let settings = file.load().map_err(|e| read_error(file, e))?;
    settings
        .check_plugin_sections()
        .map_err(|reason| Error::SettingsRead {
            path: file.path().to_owned(),
            reason,
        })?;
    Ok(settings)
}

/// A locked read-modify-write of the settings (see
/// [`SettingsFile::update`]); a malformed plugin section refuses the write.
pub(crate) fn update<R>(file: &SettingsFile, change: impl FnOnce(&mut Settings) -> R) -> Result<R> {
    let outcome = file
        .update(|settings| settings.check_plugin_sections().map(|()| change(settings)))
        .map_err(|e| match e {
            runtime_settings::Error::NotConfigured => Error::SettingsWrite {
                path: file.path().to_owned(),
                source: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "no settings file is configured",
                ),
            },
            runtime_settings::Error::Write { path, source } => {
                Error::SettingsWrite { path, source }
            }
            other => read_error(file, other),
        })?;
    outcome.map_err(|reason| Error::SettingsRead {
        path: file.path().to_owned(),
        reason,
    })
}

fn read_error(file: &SettingsFile, error: runtime_settings::Error) -> Error {
    let reason = match error {
        runtime_settings::Error::NotConfigured => "no settings file is configured".to_owned(),
        runtime_settings::Error::Read { source, .. } => source.to_string(),
        runtime_settings::Error::NotUtf8 { .. } => "not UTF-8".to_owned(),
        runtime_settings::Error::Invalid { reason, .. } => reason,
        other => other.to_string(),
    };
    Error::SettingsRead {
        path: file.path().to_owned(),
        reason,
    }
}
