//! Session health classification.

use std::time::Duration;

use lifecycle_core::{
    Health, HealthInput, HealthThresholds, Liveness, SessionKind, classify_session_health,
};
use proptest::prelude::*;

fn input(status: &str) -> HealthInput {
    HealthInput {
        status: status.into(),
        message_count: 3,
        has_artifacts: false,
        has_stale_locks: false,
        liveness: Liveness::Unknown,
        idle: Duration::from_secs(1),
        kind: SessionKind::Orchestrated,
    }
}

fn classify(i: &HealthInput) -> Health {
    classify_session_health(i, &HealthThresholds::default())
}

const TERMINAL: [&str; 5] = ["completed", "failed", "timed_out", "aborted", "cancelled"];

// contract: LC-003, LC-004, LC-005, LC-006
#[test]
fn terminal_sessions_are_done_or_zombie_only() {
    for status in TERMINAL {
        for (messages, artifacts, liveness, idle) in [
            (0, false, Liveness::Dead, 1_000_000),
            (5, true, Liveness::Unknown, 1_000_000),
            (0, true, Liveness::Alive, 0),
        ] {
            let mut i = input(status);
            i.message_count = messages;
            i.has_artifacts = artifacts;
            i.liveness = liveness;
            i.idle = Duration::from_secs(idle);
            assert_eq!(classify(&i), Health::Done, "{status} {i:?}");
            i.has_stale_locks = true;
            assert_eq!(classify(&i), Health::Zombie, "{status} {i:?}");
        }
    }
    // Exactly those five: running and completed_empty are not terminal for
    // health, so stale locks do not make them ZOMBIE nor are they done.
    for status in ["running", "completed_empty"] {
        let mut i = input(status);
        i.has_stale_locks = true;
        assert_eq!(classify(&i), Health::Active, "{status}");
    }
}

// contract: LC-007, LC-008, LC-009
#[test]
fn orphan_needs_no_messages_and_no_artifacts_and_runs_first() {
    for liveness in [Liveness::Dead, Liveness::Unknown] {
        let mut i = input("running");
        i.message_count = 0;
        i.liveness = liveness;
        assert_eq!(classify(&i), Health::Orphan, "{liveness:?}");
        i.has_artifacts = true;
        assert_ne!(classify(&i), Health::Orphan);
        i.has_artifacts = false;
        i.message_count = 1;
        assert_ne!(classify(&i), Health::Orphan);
    }
}

// contract: LC-010
#[test]
fn confirmed_dead_outranks_fresh_activity() {
    let mut i = input("running");
    i.liveness = Liveness::Dead;
    i.idle = Duration::ZERO;
    assert_eq!(classify(&i), Health::Dead);
}

// contract: LC-002, LC-011, LC-012
#[test]
fn unknown_liveness_is_not_dead_until_quiet_past_threshold() {
    let t = HealthThresholds::default();
    let mut i = input("running");
    i.idle = t.orchestrated - Duration::from_secs(1);
    assert_eq!(
        classify(&i),
        Health::Active,
        "unknown must not read as dead"
    );
    i.liveness = Liveness::Dead;
    assert_eq!(
        classify(&i),
        Health::Dead,
        "the same input with confirmed death differs"
    );
    i.liveness = Liveness::Unknown;
    i.idle = t.orchestrated + Duration::from_secs(1);
    assert_eq!(classify(&i), Health::Dead);
}

// contract: LC-013
#[test]
fn the_threshold_depends_on_the_kind() {
    let t = HealthThresholds::default();
    assert!(t.orchestrated < t.mirrored);
    let mut i = input("running");
    i.idle = (t.orchestrated + t.mirrored) / 2;
    i.kind = SessionKind::Orchestrated;
    let a = classify(&i);
    i.kind = SessionKind::Mirrored;
    let b = classify(&i);
    assert_eq!((a, b), (Health::Dead, Health::Active));
}

proptest! {
    // contract: LC-001
    #[test]
    fn classification_is_a_pure_function(
        status in prop::sample::select(vec!["running", "completed", "failed", "cancelled", "timed_out", "aborted", "completed_empty"]),
        messages in 0u64..3, artifacts: bool, locks: bool,
        liveness in prop::sample::select(vec![Liveness::Alive, Liveness::Dead, Liveness::Unknown]),
        idle in 0u64..10_000,
        kind in prop::sample::select(vec![SessionKind::Orchestrated, SessionKind::Interactive, SessionKind::Mirrored]),
    ) {
        let i = HealthInput { status: status.into(), message_count: messages, has_artifacts: artifacts,
            has_stale_locks: locks, liveness, idle: Duration::from_secs(idle), kind };
        let first = classify(&i);
        for _ in 0..3 {
            prop_assert_eq!(classify(&i.clone()), first);
        }
    }
}

// contract: LC-001
#[test]
fn the_classifier_module_reaches_no_io() {
    // No process lookup, file, clock, environment or database access: the
    // verdict can come only from its arguments.
    let src = include_str!("../../src/health.rs");
    for banned in [
        "std::fs",
        "std::env",
        "std::process",
        "std::net",
        "std::io",
        "SystemTime",
        "Instant",
        "static ",
        "Mutex",
        "Atomic",
        "Cell",
        "crate::store",
    ] {
        assert!(!src.contains(banned), "health.rs uses {banned}");
    }
    assert!(src.contains("pub fn classify_session_health(input: &HealthInput"));
}
