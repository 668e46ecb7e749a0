//! Reason-code vocabulary and the small reason rules.

use lifecycle_core::reasons::{
    DeferralSampler, DispatchReasons, REASON_CLASSES, RunReasons, ScheduleReasons,
    admission_skip_reason, completion_reason, is_clean_completion, is_valid_reason_code,
    rollup_completion_reason, skip_reason, valid_reason_codes,
};
use lifecycle_core::{
    Actor, ActorType, Decision, Reason, RowSnapshot, TransitionCommand, decide, default_registry,
};

// contract: LC-040
#[test]
fn valid_codes_are_exactly_the_union_of_the_classes() {
    let union: Vec<&str> = REASON_CLASSES
        .iter()
        .flat_map(|c| c.iter().copied())
        .collect();
    let all: Vec<&str> = valid_reason_codes().collect();
    assert_eq!(all, union);
    assert_eq!(
        all.len(),
        29 + 6 + 8 + 5 + 7 + 9 + 1 + 8,
        "every code of lifecycle-vocabulary.md"
    );
    for code in &all {
        assert!(is_valid_reason_code(code));
    }
    for bogus in [
        "",
        "run",
        "run.completed",
        "run.completed.ok ",
        "RUN.COMPLETED.OK",
        "schedule.skipped.anything",
    ] {
        assert!(!is_valid_reason_code(bogus), "{bogus:?}");
    }
    assert!(is_valid_reason_code(DispatchReasons::ACKED_CONSUMER));
}

// contract: LC-038, LC-041
#[test]
fn skipped_rows_accept_any_registered_code_with_an_allowed_prefix() {
    let policy = default_registry().get("schedule_run").expect("policy");
    let queued = RowSnapshot {
        status: "queued".into(),
        version: 1,
        columns: Default::default(),
    };
    for code in [
        ScheduleReasons::DEFERRED_CAPACITY,
        ScheduleReasons::BUDGET_EXHAUSTED,
        ScheduleReasons::SKIPPED_OVERLAP,
        RunReasons::SKIPPED_WAITER_CAP_EXCEEDED,
        RunReasons::SKIPPED_DURATION_EXCEEDS_LEASE,
    ] {
        let cmd = TransitionCommand::new(
            "schedule_run",
            "r",
            "skipped",
            Reason::new(code),
            Actor::new(ActorType::Scheduler, "s"),
        );
        assert!(
            matches!(decide(policy, Some(&queued), &cmd), Ok(Decision::Write(_))),
            "{code}"
        );
    }
    // The registered vocabulary is the only bound: every member whose
    // prefix the schedule_run policy allows is accepted on a skipped row.
    let mut accepted = 0;
    for code in valid_reason_codes() {
        if !(code.starts_with("run.") || code.starts_with("schedule.")) {
            continue;
        }
        let cmd = TransitionCommand::new(
            "schedule_run",
            "r",
            "skipped",
            Reason::new(code),
            Actor::new(ActorType::Scheduler, "s"),
        );
        assert!(
            matches!(decide(policy, Some(&queued), &cmd), Ok(Decision::Write(_))),
            "{code}"
        );
        accepted += 1;
    }
    assert!(accepted > 30, "{accepted}");
}

// contract: LC-035, LC-036
#[test]
fn refused_spawns_complete_with_a_non_clean_reason_and_evidence() {
    let clean = completion_reason(&[]);
    assert_eq!(clean.code, RunReasons::COMPLETED_OK);
    assert!(is_clean_completion(&clean.code));
    assert!(clean.evidence_refs.is_empty());
    let refused = completion_reason(&["spawn-7".into(), "spawn-9".into()]);
    assert_eq!(refused.code, RunReasons::COMPLETED_SPAWN_REFUSED);
    assert!(!is_clean_completion(&refused.code));
    assert_eq!(
        refused.evidence_refs,
        ["refused_spawn:spawn-7", "refused_spawn:spawn-9"]
    );
    // The status it lands on is completed, a declared edge from running.
    let policy = default_registry().get("session").expect("policy");
    let running = RowSnapshot {
        status: "running".into(),
        version: 1,
        columns: Default::default(),
    };
    let cmd = TransitionCommand::new(
        "session",
        "s",
        "completed",
        refused,
        Actor::new(ActorType::Executor, "e"),
    );
    assert!(matches!(
        decide(policy, Some(&running), &cmd),
        Ok(Decision::Write(_))
    ));
}

// contract: LC-037
#[test]
fn rollup_keeps_spawn_refused() {
    assert_eq!(
        rollup_completion_reason(["run.completed.ok", "run.completed.ok"]),
        RunReasons::COMPLETED_OK
    );
    assert_eq!(
        rollup_completion_reason([
            "run.completed.ok",
            RunReasons::COMPLETED_SPAWN_REFUSED,
            "run.completed.ok"
        ]),
        RunReasons::COMPLETED_SPAWN_REFUSED
    );
    assert_eq!(
        rollup_completion_reason([
            RunReasons::COMPLETED_GATE_REJECTED,
            RunReasons::COMPLETED_SPAWN_REFUSED
        ]),
        RunReasons::COMPLETED_SPAWN_REFUSED
    );
}

// contract: LC-039
#[test]
fn admission_skips_use_the_decisions_code_or_the_waiter_cap_fallback() {
    assert_eq!(
        admission_skip_reason(None),
        Ok(RunReasons::SKIPPED_WAITER_CAP_EXCEEDED)
    );
    assert_eq!(
        admission_skip_reason(Some(ScheduleReasons::BUDGET_EXHAUSTED)),
        Ok(ScheduleReasons::BUDGET_EXHAUSTED)
    );
    assert!(admission_skip_reason(Some("made.up.code")).is_err());
}

// contract: LC-046
#[test]
fn a_skip_without_a_code_gets_the_precondition_fallback() {
    assert_eq!(skip_reason(None), ScheduleReasons::SKIPPED_PRECONDITION);
    assert_eq!(
        skip_reason(Some(ScheduleReasons::SKIPPED_OVERLAP)),
        ScheduleReasons::SKIPPED_OVERLAP
    );
}

// contract: LC-047
#[test]
fn capacity_deferrals_are_sampled() {
    for every in [1u64, 3, 10] {
        for k in 1u64..40 {
            let mut s = DeferralSampler::new(every);
            let recorded = (0..k).filter_map(|i| s.record(i as i64)).count() as u64;
            assert_eq!(recorded, 1 + (k - 1) / every, "every={every} k={k}");
            assert_eq!(s.count(), k);
        }
    }
    let mut s = DeferralSampler::new(5);
    assert!(s.record(0).is_some());
    assert!(s.record(1).is_none());
    s.reset();
    assert!(
        s.record(2).is_some(),
        "a new stretch records its first deferral"
    );
}

// contract: LC-048
#[test]
fn a_sampled_row_carries_its_own_deferrals_time() {
    let mut s = DeferralSampler::new(3);
    let stamps: Vec<i64> = [100, 105, 111, 120, 130, 131, 140]
        .into_iter()
        .filter_map(|t| s.record(t))
        .collect();
    assert_eq!(stamps, [100, 120, 140]);
}
