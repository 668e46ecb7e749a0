//! One ticking scheduler per database: an exclusive lock on a file next to
//! the state file (`<db>.scheduler.lock`), held for the daemon's lifetime.
//! The kernel drops it when the process dies, even by SIGKILL, so a crashed
//! daemon never blocks the next one.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use crate::error::Error;

/// The held lock; dropping it releases it.
#[derive(Debug)]
pub struct TickLock {
    _file: File,
    path: PathBuf,
}

impl TickLock {
    /// The lock file of the state file `db`.
    pub fn path_for(db: &Path) -> PathBuf {
        let mut name = db.as_os_str().to_owned();
        name.push(".scheduler.lock");
        PathBuf::from(name)
    }

    /// Takes the lock of `db` without waiting; [`Error::Locked`] when
    /// another process (or another handle in this one) holds it.
    pub fn acquire(db: &Path) -> Result<Self, Error> {
        let path = Self::path_for(db);
        let io = |source| Error::Io {
            path: path.display().to_string(),
            source,
        };
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file, path }),
            Err(TryLockError::WouldBlock) => Err(Error::Locked(path.display().to_string())),
            Err(TryLockError::Error(e)) => Err(io(e)),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
