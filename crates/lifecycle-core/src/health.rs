//! `classify_session_health`: a pure verdict on one session's state.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Process liveness, three-valued. `Unknown` (no recorded pid, no process
/// match) is the normal case for sessions mirrored from another process and
/// is never read as `Dead`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Liveness {
    /// The process was observed running.
    Alive,
    /// Positive evidence: a recorded pid that is no longer running.
    Dead,
    /// Nothing is known.
    Unknown,
}

/// What kind of session, which sets how long quiet means gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionKind {
    /// A leg the runtime spawned and supervises.
    Orchestrated,
    /// An interactive session driven by a person.
    Interactive,
    /// A session mirrored from an external transcript.
    Mirrored,
}

/// Quiet thresholds per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthThresholds {
    /// For [`SessionKind::Orchestrated`].
    pub orchestrated: Duration,
    /// For [`SessionKind::Interactive`].
    pub interactive: Duration,
    /// For [`SessionKind::Mirrored`].
    pub mirrored: Duration,
}

impl Default for HealthThresholds {
    fn default() -> Self {
        HealthThresholds {
            orchestrated: Duration::from_secs(15 * 60),
            interactive: Duration::from_secs(2 * 60 * 60),
            mirrored: Duration::from_secs(30 * 60),
        }
    }
}

impl HealthThresholds {
    /// The threshold for `kind`.
    pub fn for_kind(&self, kind: SessionKind) -> Duration {
        match kind {
            SessionKind::Orchestrated => self.orchestrated,
            SessionKind::Interactive => self.interactive,
            SessionKind::Mirrored => self.mirrored,
        }
    }
}

/// Everything the verdict depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthInput {
    /// The session's status.
    pub status: String,
    /// Messages the session produced.
    pub message_count: u64,
    /// Whether artifacts exist on disk.
    pub has_artifacts: bool,
    /// Whether stale locks were left behind.
    pub has_stale_locks: bool,
    /// Process liveness.
    pub liveness: Liveness,
    /// Time since the newest activity (message, or creation if none).
    pub idle: Duration,
    /// The session kind.
    pub kind: SessionKind,
}

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    /// Terminal and clean.
    Done,
    /// Terminal, but stale locks remain.
    Zombie,
    /// Advertised, never produced a message, no artifacts, not observed alive.
    Orphan,
    /// Gone: confirmed dead, or unknown liveness and quiet past the threshold.
    Dead,
    /// Running, or too recently active to call.
    Active,
}

/// Session statuses the health rules treat as terminal.
pub const HEALTH_TERMINAL: [&str; 5] = ["completed", "failed", "timed_out", "aborted", "cancelled"];

/// Classifies a session. Decision order:
///
/// 1. terminal: `Zombie` if stale locks remain, else `Done` (artifacts are a
///    good outcome, not zombie evidence);
/// 2. orphan: no messages and no artifacts. The spec says the orphan check
///    runs first among non-terminal rules but leaves open a process observed
///    alive; we do not call a live process an orphan (it may just have
///    started), so this rule applies unless liveness is `Alive`;
/// 3. confirmed dead outranks fresh activity;
/// 4. unknown liveness is dead only once quiet past the kind's threshold.
pub fn classify_session_health(input: &HealthInput, thresholds: &HealthThresholds) -> Health {
    if HEALTH_TERMINAL.contains(&input.status.as_str()) {
        return if input.has_stale_locks {
            Health::Zombie
        } else {
            Health::Done
        };
    }
    if input.message_count == 0 && !input.has_artifacts && input.liveness != Liveness::Alive {
        return Health::Orphan;
    }
    match input.liveness {
        Liveness::Alive => Health::Active,
        Liveness::Dead => Health::Dead,
        Liveness::Unknown if input.idle > thresholds.for_kind(input.kind) => Health::Dead,
        Liveness::Unknown => Health::Active,
    }
}
