//! One ticking scheduler per database: an exclusive `flock` on the state
//! file itself, held for the daemon's lifetime. The lock belongs to the
//! file (its inode), not to the path that reached it, so a symlink, a hard
//! link, a relative path or a bind mount of the same file finds it taken.
//! The kernel drops it when the process dies, even by SIGKILL, so a crashed
//! daemon never blocks the next one.
//!
//! SQLite locks the same file with POSIX record locks, which are separate
//! from `flock` locks on Linux but all released when the process closes
//! ANY descriptor of the file. So the descriptor taken here is never
//! closed: it is kept, one per file, for the process's lifetime, and
//! dropping a [`TickLock`] only unlocks it (a later acquire in this process
//! reuses it).

use std::collections::HashMap;
use std::fs::{File, TryLockError};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::Error;

/// A file's identity: its device and inode.
type FileId = (u64, u64);

/// The descriptor kept for one file, and whether a [`TickLock`] of this
/// process holds its lock.
#[derive(Debug)]
struct Kept {
    file: Arc<File>,
    held: bool,
}

/// Every file this process has locked, by identity.
fn kept() -> &'static Mutex<HashMap<FileId, Kept>> {
    static KEPT: OnceLock<Mutex<HashMap<FileId, Kept>>> = OnceLock::new();
    KEPT.get_or_init(Default::default)
}

/// The held lock; dropping it releases it.
#[derive(Debug)]
pub struct TickLock {
    id: FileId,
    file: Arc<File>,
    path: PathBuf,
}

impl TickLock {
    /// The file whose lock guards the state file `db`: `db` itself (kept
    /// for callers that name the lock in messages).
    pub fn path_for(db: &Path) -> PathBuf {
        db.to_path_buf()
    }

    /// Takes the lock of the state file `db` (which must exist) without
    /// waiting; [`Error::Locked`] when another process, or another handle
    /// in this one, holds it, whatever path either reached the file by.
    pub fn acquire(db: &Path) -> Result<Self, Error> {
        let io = |source| Error::Io {
            path: db.display().to_string(),
            source,
        };
        let meta = std::fs::metadata(db).map_err(io)?;
        let id = (meta.dev(), meta.ino());
        let mut kept = kept().lock().unwrap_or_else(|p| p.into_inner());
        let entry = match kept.get_mut(&id) {
            Some(entry) => entry,
            None => {
                let file = File::open(db).map_err(io)?;
                // The path may have moved to another file meanwhile: the
                // lock is that of the file opened.
                let meta = file.metadata().map_err(io)?;
                let opened = (meta.dev(), meta.ino());
                if opened != id {
                    return Err(io(std::io::Error::other(
                        "the file changed while it was being locked",
                    )));
                }
                kept.entry(id).or_insert(Kept {
                    file: Arc::new(file),
                    held: false,
                })
            }
        };
        let locked = || Error::Locked(db.display().to_string());
        if entry.held {
            return Err(locked());
        }
        match entry.file.try_lock() {
            Ok(()) => {
                entry.held = true;
                Ok(Self {
                    id,
                    file: Arc::clone(&entry.file),
                    path: db.to_path_buf(),
                })
            }
            Err(TryLockError::WouldBlock) => Err(locked()),
            Err(TryLockError::Error(e)) => Err(io(e)),
        }
    }

    /// The path the lock was taken by.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TickLock {
    fn drop(&mut self) {
        let mut kept = kept().lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = self.file.unlock() {
            tracing::warn!(path = %self.path.display(), error = %e, "releasing the tick lock failed");
        }
        if let Some(entry) = kept.get_mut(&self.id) {
            entry.held = false;
        }
    }
}
