//! The user-level settings file: trust records and the disabled list,
//! read fresh on every check and written under a file lock.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The key holding trust records.
pub(crate) const TRUSTED_KEY: &str = "trusted_plugins";
/// The key holding the names of disabled plugins.
pub(crate) const DISABLED_KEY: &str = "disabled_plugins";

/// One trust record, exactly as the original writes it under
/// `trusted_plugins.<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustRecord {
    /// sha256 of the canonical manifest JSON.
    pub manifest: String,
    /// Every declared bundle-relative path and the sha256 of its bytes
    /// (`None`, written `null`, when it was unreadable; such a target is
    /// never activated).
    pub targets: BTreeMap<String, Option<String>>,
    /// The bundle directory the record was made for.
    pub bundle_path: String,
}

/// Where the user-level settings file is. The library never looks this up
/// itself: callers pass the path in [`Config`](crate::Config), and
/// [`SettingsFile::locate`] is the one helper that reads the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    path: PathBuf,
}

impl SettingsFile {
    /// The variable naming the settings file instead of
    /// `$HOME/.lionagi/settings.yaml`.
    pub const PATH_VAR: &'static str = runtime_settings::SETTINGS_PATH_VAR;

    /// The settings file at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// `$LIONAGI_SETTINGS_FILE`, else `$HOME/.lionagi/settings.yaml`;
    /// `None` if neither is set.
    pub fn locate() -> Option<Self> {
        Self::locate_with(|name| std::env::var_os(name))
    }

    /// [`SettingsFile::locate`] over any variable source.
    pub fn locate_with(lookup: impl Fn(&str) -> Option<OsString>) -> Option<Self> {
        runtime_settings::locate_settings_with(lookup).map(Self::at)
    }

    /// The path of the file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock_path(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        PathBuf::from(name)
    }

    /// Reads the file. A missing file is empty settings; an unreadable or
    /// unparsable one is an error (never "no settings").
    pub(crate) fn load(&self) -> Result<Settings> {
        if self.path.as_os_str().is_empty() {
            return Err(Error::SettingsRead {
                path: self.path.clone(),
                reason: "no settings file is configured".to_owned(),
            });
        }
        match std::fs::read(&self.path) {
            Ok(bytes) => Settings::parse(&bytes).map_err(|reason| Error::SettingsRead {
                path: self.path.clone(),
                reason,
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Settings::default()),
            Err(e) => Err(Error::SettingsRead {
                path: self.path.clone(),
                reason: e.to_string(),
            }),
        }
    }

    /// Read-modify-write under an exclusive lock on `<path>.lock`: the
    /// update sees the latest file, other keys survive, and the new content
    /// replaces the old by rename, so a reader sees the old or the new
    /// file, never half of one. The lock file is separate because a rename
    /// would orphan a lock held on the settings file itself.
    pub(crate) fn update<R>(&self, change: impl FnOnce(&mut Settings) -> R) -> Result<R> {
        let write_err = |source: io::Error| Error::SettingsWrite {
            path: self.path.clone(),
            source,
        };
        if self.path.as_os_str().is_empty() {
            return Err(write_err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no settings file is configured",
            )));
        }
        let dir = match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir).map_err(write_err)?;
        let lock = open_lock(&self.lock_path()).map_err(write_err)?;
        lock.lock().map_err(write_err)?;
        let mut settings = self.load()?;
        let before = settings.root.clone();
        let result = change(&mut settings);
        if settings.root == before {
            // Nothing to write: a no-op (gc with nothing to prune, untrust of
            // an unknown name) leaves the file, or its absence, alone.
            return Ok(result);
        }
        let text = settings.render().map_err(write_err)?;
        let mut temp = tempfile::Builder::new()
            .prefix(".settings.")
            .tempfile_in(&dir)
            .map_err(write_err)?;
        temp.write_all(text.as_bytes()).map_err(write_err)?;
        temp.as_file().sync_all().map_err(write_err)?;
        temp.persist(&self.path).map_err(|e| write_err(e.error))?;
        // The lock is released when `lock` is closed, after the rename.
        drop(lock);
        Ok(result)
    }
}

fn open_lock(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// The parsed settings document; keys this crate does not own are kept as
/// they are.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    root: Map<String, Value>,
}

impl Settings {
    fn parse(bytes: &[u8]) -> std::result::Result<Settings, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_owned())?;
        let value: Value = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        let root = match value {
            Value::Null => Map::new(),
            Value::Object(map) => map,
            _ => return Err("the document is not a mapping".to_owned()),
        };
        match root.get(TRUSTED_KEY) {
            None | Some(Value::Null) | Some(Value::Object(_)) => {}
            Some(_) => return Err(format!("'{TRUSTED_KEY}' is not a mapping")),
        }
        match root.get(DISABLED_KEY) {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => {}
            Some(_) => return Err(format!("'{DISABLED_KEY}' is not a list of names")),
        }
        Ok(Settings { root })
    }

    fn render(&self) -> io::Result<String> {
        serde_saphyr::to_string(&Value::Object(self.root.clone())).map_err(io::Error::other)
    }

    /// The record for `name`. A record that does not have the record shape
    /// counts as no record (fail closed).
    pub(crate) fn record(&self, name: &str) -> Option<TrustRecord> {
        let value = self.root.get(TRUSTED_KEY)?.get(name)?;
        serde_json::from_value(value.clone()).ok()
    }

    /// Names with an entry under `trusted_plugins`, well-formed or not.
    pub(crate) fn record_names(&self) -> Vec<String> {
        match self.root.get(TRUSTED_KEY) {
            Some(Value::Object(map)) => map.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// The recorded bundle path of an entry, if it has one.
    pub(crate) fn record_bundle_path(&self, name: &str) -> Option<String> {
        self.root
            .get(TRUSTED_KEY)?
            .get(name)?
            .get("bundle_path")?
            .as_str()
            .map(str::to_owned)
    }

    pub(crate) fn set_record(&mut self, name: &str, record: &TrustRecord) {
        let value = serde_json::to_value(record).unwrap_or(Value::Null);
        let entry = self
            .root
            .entry(TRUSTED_KEY)
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        if let Value::Object(map) = entry {
            map.insert(name.to_owned(), value);
        }
    }

    pub(crate) fn remove_record(&mut self, name: &str) -> bool {
        match self.root.get_mut(TRUSTED_KEY) {
            Some(Value::Object(map)) => map.remove(name).is_some(),
            _ => false,
        }
    }

    pub(crate) fn is_disabled(&self, name: &str) -> bool {
        match self.root.get(DISABLED_KEY) {
            Some(Value::Array(items)) => items.iter().any(|v| v.as_str() == Some(name)),
            _ => false,
        }
    }

    pub(crate) fn set_disabled(&mut self, name: &str, disabled: bool) {
        let entry = self
            .root
            .entry(DISABLED_KEY)
            .or_insert_with(|| Value::Array(Vec::new()));
        if !entry.is_array() {
            *entry = Value::Array(Vec::new());
        }
        if let Value::Array(items) = entry {
            items.retain(|v| v.as_str() != Some(name));
            if disabled {
                items.push(Value::String(name.to_owned()));
            }
        }
    }
}
