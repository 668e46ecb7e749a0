//! The settings file on disk: located once, read fresh on every call, and
//! written by locked read-modify-write with an atomic replace.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::document::Settings;
use crate::error::Error;
use crate::locate::{SETTINGS_PATH_VAR, locate_settings_with};
use crate::splice::splice;

/// The user-level settings file. Every crate that reads `settings.yaml`
/// (secret lookup in `cli-supervisor`, plugin trust in `plugin-trust`)
/// goes through this one type and the [`Settings`] it parses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    path: PathBuf,
}

impl SettingsFile {
    /// The variable naming the settings file instead of
    /// `$HOME/.lionagi/settings.yaml`.
    pub const PATH_VAR: &'static str = SETTINGS_PATH_VAR;

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
        locate_settings_with(lookup).map(Self::at)
    }

    /// The path of the file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads and parses the file. A missing file is empty settings; an
    /// unreadable or unparsable one is an error, never "no settings".
    ///
    /// # Errors
    /// [`Error::NotConfigured`] for an empty path, [`Error::Read`],
    /// [`Error::NotUtf8`], [`Error::Invalid`].
    pub fn load(&self) -> Result<Settings, Error> {
        if self.path.as_os_str().is_empty() {
            return Err(Error::NotConfigured);
        }
        match std::fs::read(&self.path) {
            Ok(bytes) => Settings::parse(&bytes).map_err(|e| e.at(&self.path)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Settings::default()),
            Err(source) => Err(Error::Read {
                path: self.path.clone(),
                source,
            }),
        }
    }

    /// Loads the file and checks it against the published schema
    /// (`docs/schemas/settings.schema.json`): every violation is reported
    /// with this file's path, the JSON path and what was expected (values
    /// are never echoed). Loading itself stays lenient per section (a
    /// malformed section of one owner does not hide another's); this is the
    /// strict reading, for `doctor`-style checks and editors.
    ///
    /// # Errors
    /// As [`SettingsFile::load`], and [`Error::Schema`].
    pub fn check(&self) -> Result<Settings, Error> {
        let settings = self.load()?;
        config_schema::validate(
            config_schema::ConfigKind::Settings,
            &self.path,
            &serde_json::Value::Object(settings.root.clone()),
        )
        .map_err(Error::Schema)?;
        Ok(settings)
    }

    /// Read-modify-write under an exclusive lock on `<path>.lock`: `change`
    /// sees the latest file, keys it does not touch survive, and the new
    /// content replaces the old by rename, so a reader sees the old or the
    /// new file, never half of one. Nothing is written when `change` leaves
    /// the document as it was. The lock file is separate because a rename
    /// would orphan a lock held on the settings file itself.
    ///
    /// The write keeps the file as its owner made it: only the top-level
    /// keys `change` altered are re-rendered, in place, and every other
    /// byte (comments, blank lines, key order, formatting) is kept; a file
    /// in a shape the splice cannot follow (a flow-style top level, say) is
    /// rendered whole instead. The file's permission bits are kept (a new
    /// file is owner-only, 0600), and a symlinked settings file stays a
    /// symlink: the file it points to is the one replaced.
    ///
    /// # Errors
    /// As [`SettingsFile::load`], and [`Error::Write`].
    pub fn update<R>(&self, change: impl FnOnce(&mut Settings) -> R) -> Result<R, Error> {
        if self.path.as_os_str().is_empty() {
            return Err(Error::NotConfigured);
        }
        let write_err = |source: io::Error| Error::Write {
            path: self.path.clone(),
            source,
        };
        let link_dir = match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&link_dir).map_err(write_err)?;
        let lock = open_lock(&self.lock_path()).map_err(write_err)?;
        lock.lock().map_err(write_err)?;
        // The file actually replaced: the symlink's target when the
        // settings path is a link (a dotfiles checkout), else the path.
        let target = resolve_link(&self.path).map_err(write_err)?;
        let (text, mode) = match std::fs::read(&target) {
            Ok(bytes) => {
                let mode = std::fs::metadata(&target).map_err(write_err)?.permissions();
                (Some(bytes), Some(mode))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => (None, None),
            Err(source) => {
                return Err(Error::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let before = match &text {
            Some(bytes) => Settings::parse(bytes).map_err(|e| e.at(&self.path))?,
            None => Settings::default(),
        };
        let mut settings = before.clone();
        let result = change(&mut settings);
        if settings == before {
            return Ok(result);
        }
        let spliced = text
            .as_deref()
            .and_then(|bytes| std::str::from_utf8(bytes).ok())
            .and_then(|old| splice(old, &before, &settings));
        let new_text = match spliced {
            Some(t) => t,
            None => settings.render().map_err(write_err)?,
        };
        let dir = match target.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut temp = tempfile::Builder::new()
            .prefix(".settings.")
            .tempfile_in(&dir)
            .map_err(write_err)?;
        temp.write_all(new_text.as_bytes()).map_err(write_err)?;
        if let Some(mode) = mode {
            temp.as_file().set_permissions(mode).map_err(write_err)?;
        }
        temp.as_file().sync_all().map_err(write_err)?;
        temp.persist(&target).map_err(|e| write_err(e.error))?;
        // The lock is released when `lock` is closed, after the rename.
        drop(lock);
        Ok(result)
    }

    fn lock_path(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        PathBuf::from(name)
    }
}

/// Follows `path` through any chain of symlinks (relative links resolve
/// against the link's directory) to the file a write must replace; a
/// dangling link yields its target, which the write creates. Refuses a
/// chain longer than 40 links (a loop).
fn resolve_link(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let to = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
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
