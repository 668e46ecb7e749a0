//! The end-of-run status rule, as a table.

use lifecycle_core::reasons::is_valid_reason_code;
use lifecycle_core::{Cancellation, LegEnd, RunFacts, WorkEvidence, default_registry, end_of_run};

const OK: LegEnd = LegEnd::Exited { success: true };
const NONZERO: LegEnd = LegEnd::Exited { success: false };

fn facts(leg: LegEnd, saw_final: bool, provider_error: bool) -> RunFacts {
    RunFacts {
        leg,
        saw_final,
        provider_error,
        cancelled: None,
        evidence: WorkEvidence::Unknown,
    }
}

#[test]
fn the_rule_table() {
    let cancelled = |c| RunFacts {
        cancelled: Some(c),
        ..facts(OK, true, false)
    };
    let evidence = |e| RunFacts {
        evidence: e,
        ..facts(OK, true, false)
    };
    let table: Vec<(RunFacts, &str, &str)> = vec![
        (facts(OK, true, false), "completed", "run.completed.ok"),
        (
            evidence(WorkEvidence::Found),
            "completed",
            "run.completed.ok",
        ),
        // A probe that failed never turns a completion into completed_empty.
        (
            evidence(WorkEvidence::Unknown),
            "completed",
            "run.completed.ok",
        ),
        (
            evidence(WorkEvidence::NoneFound),
            "completed_empty",
            "run.completed_empty.no_evidence",
        ),
        (
            facts(NONZERO, true, false),
            "failed",
            "run.failed.exit_nonzero",
        ),
        (
            facts(NONZERO, false, false),
            "failed",
            "run.failed.exit_nonzero",
        ),
        (
            facts(NONZERO, true, true),
            "failed",
            "run.failed.exit_nonzero",
        ),
        (
            facts(OK, true, true),
            "failed",
            "run.failed.provider_nonretryable",
        ),
        (
            facts(OK, false, false),
            "failed",
            "run.failed.provider_nonretryable",
        ),
        (
            facts(LegEnd::NotStarted, false, false),
            "failed",
            "run.failed.exception",
        ),
        (
            facts(LegEnd::SupervisionFailed, true, false),
            "failed",
            "run.failed.exception",
        ),
        (
            facts(LegEnd::WatchdogFired, false, false),
            "timed_out",
            "run.timed_out.deadline",
        ),
        (
            cancelled(Cancellation::Sigint),
            "cancelled",
            "run.cancelled.sigint",
        ),
        (
            cancelled(Cancellation::Sigterm),
            "cancelled",
            "run.cancelled.sigterm",
        ),
        (
            cancelled(Cancellation::ManualKill),
            "cancelled",
            "run.cancelled.manual_kill",
        ),
        (
            cancelled(Cancellation::Orchestrator),
            "cancelled",
            "run.cancelled.orchestrator",
        ),
        // Cancellation outranks every other fact, even a leg that never ran.
        (
            RunFacts {
                cancelled: Some(Cancellation::Sigterm),
                ..facts(LegEnd::NotStarted, false, false)
            },
            "cancelled",
            "run.cancelled.sigterm",
        ),
        // Evidence is consulted only for a clean run.
        (
            RunFacts {
                evidence: WorkEvidence::NoneFound,
                ..facts(NONZERO, true, false)
            },
            "failed",
            "run.failed.exit_nonzero",
        ),
    ];
    for (input, status, reason) in table {
        let verdict = end_of_run(&input);
        assert_eq!(
            (verdict.status, verdict.reason_code),
            (status, reason),
            "{input:?}"
        );
        assert_eq!(verdict.ok(), status.starts_with("completed"), "{input:?}");
    }
}

#[test]
fn every_verdict_is_a_terminal_session_status_with_a_registered_reason() {
    let policy = default_registry().get("session").expect("session policy");
    let legs = [
        LegEnd::NotStarted,
        LegEnd::SupervisionFailed,
        LegEnd::WatchdogFired,
        OK,
        NONZERO,
    ];
    let cancels = [
        None,
        Some(Cancellation::Sigint),
        Some(Cancellation::Sigterm),
        Some(Cancellation::ManualKill),
        Some(Cancellation::Orchestrator),
    ];
    let evidence = [
        WorkEvidence::Unknown,
        WorkEvidence::Found,
        WorkEvidence::NoneFound,
    ];
    for leg in legs {
        for cancelled in cancels {
            for evidence in evidence {
                for (saw_final, provider_error) in
                    [(false, false), (true, false), (false, true), (true, true)]
                {
                    let v = end_of_run(&RunFacts {
                        leg,
                        saw_final,
                        provider_error,
                        cancelled,
                        evidence,
                    });
                    assert!(policy.is_terminal(v.status), "{v:?}");
                    assert!(is_valid_reason_code(v.reason_code), "{v:?}");
                }
            }
        }
    }
}
