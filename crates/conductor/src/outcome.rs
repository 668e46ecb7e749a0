//! The flow's end: the invocation's terminal status and reason, rolled up
//! from its ops (LC-037: a child's `COMPLETED_SPAWN_REFUSED` is kept).

use lifecycle_core::reasons::{RunReasons, rollup_completion_reason};

/// How one op of a flow ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpEnd<'a> {
    /// Its leg ran; the session's terminal status and reason.
    Ran {
        /// The session status (`completed`, `failed`, ...).
        status: &'a str,
        /// The session's reason code.
        reason: &'a str,
    },
    /// A dependency failed; it never started.
    Blocked,
    /// The flow was cancelled before it started.
    NotStarted,
}

/// The invocation's terminal status and reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowOutcome {
    /// A terminal run status.
    pub status: &'static str,
    /// A `run.*` reason code.
    pub reason: &'static str,
}

/// Whether a session status counts as an op that succeeded (its
/// dependents may start).
pub fn succeeded(status: &str) -> bool {
    matches!(status, "completed" | "completed_empty")
}

const RUN_TERMINAL: [&str; 6] = [
    "completed",
    "completed_empty",
    "failed",
    "timed_out",
    "aborted",
    "cancelled",
];

/// The invocation's end from its ops' ends, in plan order:
///
/// - a cancelled op, or an op the flow never started: `cancelled`, with the
///   first cancelled op's reason (else `run.cancelled.system`);
/// - else the first op that did not succeed: its status (failed,
///   timed_out, aborted) and its reason, a non-`run.*` reason (e.g. a swept
///   orphan's `session.orphaned.no_process`) as `run.failed.exception`; a
///   blocked op with no failed op before it counts as failed with
///   `run.failed.exception` (cannot happen: its dependency failed first);
/// - else `completed` with the roll-up of every op's reason
///   ([`rollup_completion_reason`]: a non-clean completion is kept).
pub fn flow_outcome(ops: &[OpEnd<'_>]) -> FlowOutcome {
    let registered = |code: &str| RunReasons::ALL.iter().find(|c| **c == code).copied();
    let status_of = |s: &str| RUN_TERMINAL.iter().find(|t| **t == s).copied();
    let cancelled = ops.iter().find_map(|o| match o {
        OpEnd::Ran {
            status: "cancelled",
            reason,
        } => Some(registered(reason).unwrap_or(RunReasons::CANCELLED_SYSTEM)),
        _ => None,
    });
    if let Some(reason) = cancelled {
        return FlowOutcome {
            status: "cancelled",
            reason,
        };
    }
    if ops.iter().any(|o| matches!(o, OpEnd::NotStarted)) {
        return FlowOutcome {
            status: "cancelled",
            reason: RunReasons::CANCELLED_SYSTEM,
        };
    }
    for op in ops {
        match op {
            OpEnd::Ran { status, reason } if !succeeded(status) => {
                return FlowOutcome {
                    status: status_of(status).unwrap_or("failed"),
                    reason: registered(reason).unwrap_or(RunReasons::FAILED_EXCEPTION),
                };
            }
            OpEnd::Blocked => {
                return FlowOutcome {
                    status: "failed",
                    reason: RunReasons::FAILED_EXCEPTION,
                };
            }
            _ => {}
        }
    }
    let codes = ops.iter().filter_map(|o| match o {
        OpEnd::Ran { reason, .. } => Some(*reason),
        _ => None,
    });
    FlowOutcome {
        status: "completed",
        reason: rollup_completion_reason(codes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: OpEnd<'static> = OpEnd::Ran {
        status: "completed",
        reason: RunReasons::COMPLETED_OK,
    };

    // contract: LC-037
    #[test]
    fn a_childs_spawn_refused_completion_is_kept_on_the_invocation() {
        let refused = OpEnd::Ran {
            status: "completed",
            reason: RunReasons::COMPLETED_SPAWN_REFUSED,
        };
        for ops in [vec![refused, OK], vec![OK, refused, OK]] {
            let o = flow_outcome(&ops);
            assert_eq!(o.status, "completed");
            assert_eq!(o.reason, RunReasons::COMPLETED_SPAWN_REFUSED);
        }
        assert_eq!(flow_outcome(&[OK, OK]).reason, RunReasons::COMPLETED_OK);
    }

    #[test]
    fn the_first_failed_op_decides_a_failed_flow_and_a_cancel_wins() {
        let failed = OpEnd::Ran {
            status: "failed",
            reason: RunReasons::FAILED_EXIT_NONZERO,
        };
        let timed_out = OpEnd::Ran {
            status: "timed_out",
            reason: RunReasons::TIMED_OUT_DEADLINE,
        };
        let o = flow_outcome(&[OK, failed, OpEnd::Blocked, timed_out]);
        assert_eq!(
            (o.status, o.reason),
            ("failed", RunReasons::FAILED_EXIT_NONZERO)
        );
        let o = flow_outcome(&[timed_out, failed]);
        assert_eq!(
            (o.status, o.reason),
            ("timed_out", RunReasons::TIMED_OUT_DEADLINE)
        );
        let orphan = OpEnd::Ran {
            status: "failed",
            reason: "session.orphaned.no_process",
        };
        assert_eq!(flow_outcome(&[orphan]).reason, RunReasons::FAILED_EXCEPTION);
        let sigint = OpEnd::Ran {
            status: "cancelled",
            reason: RunReasons::CANCELLED_SIGINT,
        };
        let o = flow_outcome(&[failed, sigint, OpEnd::NotStarted]);
        assert_eq!(
            (o.status, o.reason),
            ("cancelled", RunReasons::CANCELLED_SIGINT)
        );
        let o = flow_outcome(&[OK, OpEnd::NotStarted]);
        assert_eq!(
            (o.status, o.reason),
            ("cancelled", RunReasons::CANCELLED_SYSTEM)
        );
    }
}
