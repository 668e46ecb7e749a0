//! The end-of-run status rule: what a finished run's facts make its
//! session's terminal status and reason code. Pure, so every runner (and
//! every store) reaches the same verdict from the same facts.

use serde::{Deserialize, Serialize};

use crate::reasons::RunReasons;

/// How the leg ended, as far as the runner saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LegEnd {
    /// No leg ran: the failure came before or during spawning, or the
    /// runner itself failed (storage, files) after the session started.
    NotStarted,
    /// The leg exited on its own (or was ended by the runner) with this
    /// success flag.
    Exited {
        /// Whether the exit status was success.
        success: bool,
    },
    /// A watchdog (first output or idle) fired and ended the leg.
    WatchdogFired,
    /// Supervising the leg failed (reading its output, recording a message).
    SupervisionFailed,
}

/// Why a run was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cancellation {
    /// SIGINT to the runner.
    Sigint,
    /// SIGTERM to the runner.
    Sigterm,
    /// An operator ended it from outside (`lionrt kill`).
    ManualKill,
    /// The embedding program cancelled it.
    Orchestrator,
}

impl Cancellation {
    /// The registered reason code of this cancellation.
    pub fn reason_code(self) -> &'static str {
        match self {
            Self::Sigint => RunReasons::CANCELLED_SIGINT,
            Self::Sigterm => RunReasons::CANCELLED_SIGTERM,
            Self::ManualKill => RunReasons::CANCELLED_MANUAL_KILL,
            Self::Orchestrator => RunReasons::CANCELLED_ORCHESTRATOR,
        }
    }
}

/// What git (or another probe) says about the work a run left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkEvidence {
    /// Not probed, or the probe failed: says nothing.
    #[default]
    Unknown,
    /// Commits or changes were found.
    Found,
    /// The probe ran and found nothing.
    NoneFound,
}

/// Everything the end-of-run rule looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunFacts {
    /// How the leg ended.
    pub leg: LegEnd,
    /// Whether the provider's stream delivered a final result.
    pub saw_final: bool,
    /// Whether that final result (or the stream) reported an error.
    pub provider_error: bool,
    /// Set when the run was cancelled; outranks everything else.
    pub cancelled: Option<Cancellation>,
    /// The completion evidence (only consulted for an otherwise clean run).
    pub evidence: WorkEvidence,
}

/// The verdict: a terminal session status and its reason code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunVerdict {
    /// The terminal session status.
    pub status: &'static str,
    /// The registered reason code.
    pub reason_code: &'static str,
}

impl RunVerdict {
    /// Whether the run counts as a success (`completed` or `completed_empty`).
    pub fn ok(&self) -> bool {
        matches!(self.status, "completed" | "completed_empty")
    }
}

impl RunFacts {
    /// Whether the leg did its job: exited with success, delivered a final
    /// result, reported no error, and was not cancelled.
    pub fn clean(&self) -> bool {
        self.cancelled.is_none()
            && self.leg == (LegEnd::Exited { success: true })
            && self.saw_final
            && !self.provider_error
    }
}

/// The end-of-run rule, first match wins:
///
/// | facts | status | reason |
/// |---|---|---|
/// | cancelled | `cancelled` | the cancellation's code |
/// | no leg ran, or supervision failed | `failed` | `run.failed.exception` |
/// | a watchdog fired | `timed_out` | `run.timed_out.deadline` |
/// | clean, evidence probed and none found | `completed_empty` | `run.completed_empty.no_evidence` |
/// | clean | `completed` | `run.completed.ok` |
/// | exited nonzero | `failed` | `run.failed.exit_nonzero` |
/// | exited 0, with an error or no final result | `failed` | `run.failed.provider_nonretryable` |
///
/// A probe that failed ([`WorkEvidence::Unknown`]) never turns a completion
/// into `completed_empty`.
pub fn end_of_run(facts: &RunFacts) -> RunVerdict {
    let verdict = |status, reason_code| RunVerdict {
        status,
        reason_code,
    };
    if let Some(cancel) = facts.cancelled {
        return verdict("cancelled", cancel.reason_code());
    }
    match facts.leg {
        LegEnd::NotStarted | LegEnd::SupervisionFailed => {
            verdict("failed", RunReasons::FAILED_EXCEPTION)
        }
        LegEnd::WatchdogFired => verdict("timed_out", RunReasons::TIMED_OUT_DEADLINE),
        LegEnd::Exited { success: true } if facts.clean() => match facts.evidence {
            WorkEvidence::NoneFound => {
                verdict("completed_empty", RunReasons::COMPLETED_EMPTY_NO_EVIDENCE)
            }
            WorkEvidence::Found | WorkEvidence::Unknown => {
                verdict("completed", RunReasons::COMPLETED_OK)
            }
        },
        LegEnd::Exited { success: false } => verdict("failed", RunReasons::FAILED_EXIT_NONZERO),
        LegEnd::Exited { success: true } => {
            verdict("failed", RunReasons::FAILED_PROVIDER_NONRETRYABLE)
        }
    }
}
