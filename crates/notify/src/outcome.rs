//! The per-run notify outcome: what `notify_outcome.json` records.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// Reason codes of unsuccessful outcomes (besides the resolution refusals
/// of [`crate::Refusal`]).
pub mod reason {
    /// The adapter's program could not be started.
    pub const SPAWN_FAILED: &str = "adapter_spawn_failed";
    /// The adapter exited with a non-zero status or a signal.
    pub const EXITED_UNSUCCESSFULLY: &str = "adapter_exited_unsuccessfully";
    /// The adapter outlived the call's timeout and was ended.
    pub const TIMED_OUT: &str = "adapter_timed_out";
    /// The call was cancelled (the registry's deadline) and the adapter ended.
    pub const CANCELLED: &str = "adapter_cancelled";
}

/// The notify outcome recorded on a run. Carries no argument value and no
/// stderr text: raw stderr is referred to by the path of its owner-only file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotifyOutcome {
    /// Whether the notifier ran and succeeded.
    pub ok: bool,
    /// The adapter's exit code, when it exited normally.
    pub exit_code: Option<i32>,
    /// The owner-only file holding the adapter's raw stderr, if captured.
    pub stderr_path: Option<PathBuf>,
    /// Why it was unsuccessful (a stable reason code).
    pub reason: Option<String>,
}

impl NotifyOutcome {
    /// An unsuccessful outcome.
    pub fn failed(exit_code: Option<i32>, stderr_path: Option<PathBuf>, reason: &str) -> Self {
        Self {
            ok: false,
            exit_code,
            stderr_path,
            reason: Some(reason.to_owned()),
        }
    }
}

/// Where a run keeps its notify outcome; the caller implements it over its
/// own run record (or uses [`RunDir`]).
pub trait OutcomeSink: Send + Sync {
    /// Where the adapter's raw stderr is captured; `None` captures nothing.
    /// The notify crate creates the file with mode 0600.
    fn stderr_path(&self) -> Option<PathBuf>;

    /// Records `outcome` on the run (replacing an earlier one).
    fn record(&self, outcome: &NotifyOutcome) -> Result<(), Error>;
}

/// A run directory: `notify_outcome.json` and `notify_stderr.log`, both
/// written atomically with mode 0600.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    dir: PathBuf,
}

impl RunDir {
    /// The outcome file's name.
    pub const OUTCOME_FILE: &'static str = "notify_outcome.json";
    /// The captured stderr file's name.
    pub const STDERR_FILE: &'static str = "notify_stderr.log";

    /// A run directory at `dir` (it must exist when something is written).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of `notify_outcome.json`.
    pub fn outcome_path(&self) -> PathBuf {
        self.dir.join(Self::OUTCOME_FILE)
    }

    /// The recorded outcome, or `None` when nothing was recorded.
    pub fn read_outcome(&self) -> Result<Option<NotifyOutcome>, Error> {
        let path = self.outcome_path();
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|source| Error::OutcomeJson { path, source }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(Error::Read { path, source }),
        }
    }
}

impl OutcomeSink for RunDir {
    fn stderr_path(&self) -> Option<PathBuf> {
        Some(self.dir.join(Self::STDERR_FILE))
    }

    fn record(&self, outcome: &NotifyOutcome) -> Result<(), Error> {
        let path = self.outcome_path();
        let mut bytes =
            serde_json::to_vec_pretty(outcome).map_err(|source| Error::OutcomeJson {
                path: path.clone(),
                source,
            })?;
        bytes.push(b'\n');
        write_private(&path, &bytes)
    }
}

/// Writes `bytes` to `path` atomically (a temporary file in the same
/// directory, renamed over it) with mode 0600 from creation on, so the
/// content is never readable by anyone but the owner.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let fail = |source| Error::Write {
        path: path.to_owned(),
        source,
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut file = tempfile::Builder::new()
        .prefix(".notify-")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .map_err(fail)?;
    file.write_all(bytes).map_err(fail)?;
    file.as_file().sync_all().map_err(fail)?;
    file.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}
