//! Decision rules beyond the matrix: guards, compatibility switches, shape
//! errors.

use std::collections::BTreeMap;

use lifecycle_core::{
    Actor, ActorType, CompatOptions, CoreError, Decision, Edge, Expected, Override, PolicyRegistry,
    PolicySpec, Reason, Rejection, RowSnapshot, SameStatus, TransitionCommand, ZeroRows, decide,
    decide_with, default_registry,
};
use serde_json::{Value, json};

fn row(status: &str, version: i64, columns: &[(&str, Value)]) -> RowSnapshot {
    RowSnapshot {
        status: status.into(),
        version,
        columns: columns
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    }
}

fn claim() -> TransitionCommand {
    TransitionCommand::new(
        "dispatch",
        "d1",
        "delivering",
        Reason::new("dispatch.delivering.attempt"),
        Actor::new(ActorType::Executor, "worker-1"),
    )
    .expecting("delivering")
}

fn guard(pairs: &[(&str, Value)]) -> CompatOptions {
    CompatOptions {
        extra_guard: pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
        ..CompatOptions::default()
    }
}

fn dispatch() -> &'static lifecycle_core::Policy {
    default_registry().get("dispatch").expect("dispatch policy")
}

// contract: LC-030
#[test]
fn a_guarded_self_edge_proceeds_with_a_covering_guard() {
    let r = row("delivering", 5, &[("attempt", json!(2))]);
    let d = decide_with(
        dispatch(),
        Some(&r),
        &claim(),
        &guard(&[("attempt", json!(2))]),
    )
    .expect("decides");
    let Decision::Write(plan) = d else {
        panic!("expected a write, got {d:?}")
    };
    assert_eq!(plan.guard.get("attempt"), Some(&json!(2)));
    assert_eq!(plan.from_status.as_deref(), Some("delivering"));
}

// contract: LC-029
#[test]
fn a_guard_mismatch_is_a_conflict() {
    let r = row("delivering", 5, &[("attempt", json!(3))]);
    let d = decide_with(
        dispatch(),
        Some(&r),
        &claim(),
        &guard(&[("attempt", json!(2))]),
    )
    .expect("decides");
    assert_eq!(
        d,
        Decision::Conflict {
            current_status: Some("delivering".into())
        }
    );
    // A guard on a column the row does not carry can never match either.
    let r = row("delivering", 5, &[]);
    let d = decide_with(
        dispatch(),
        Some(&r),
        &claim(),
        &guard(&[("attempt", json!(2))]),
    )
    .expect("decides");
    assert!(matches!(d, Decision::Conflict { .. }));
}

// contract: LC-031
#[test]
fn a_guarded_self_edge_proceeds_with_an_expected_version() {
    let r = row("delivering", 9, &[("attempt", json!(2))]);
    let d = decide(dispatch(), Some(&r), &claim().with_version(9)).expect("decides");
    assert!(matches!(d, Decision::Write(ref p) if p.expected_version == Some(9)));
    let d = decide(dispatch(), Some(&r), &claim().with_version(8)).expect("decides");
    assert!(matches!(d, Decision::Conflict { .. }));
}

// contract: LC-032
#[test]
fn an_unguarded_guarded_self_edge_is_a_caller_error_never_an_outcome() {
    for current in ["delivering", "pending", "delivered"] {
        let r = row(current, 1, &[("attempt", json!(0))]);
        let err = decide(dispatch(), Some(&r), &claim()).expect_err("must raise");
        assert!(
            matches!(err, CoreError::SelfEdgeUnguarded { ref required, .. } if required == &["attempt".to_owned()]),
            "{err}"
        );
    }
}

// contract: LC-033
#[test]
fn a_partial_or_wrong_guard_does_not_cover_the_self_edge() {
    let r = row(
        "delivering",
        1,
        &[("attempt", json!(0)), ("last_error", json!(null))],
    );
    let err = decide_with(
        dispatch(),
        Some(&r),
        &claim(),
        &guard(&[("last_error", json!(null))]),
    )
    .expect_err("must raise");
    assert!(matches!(err, CoreError::SelfEdgeUnguarded { .. }));
    // A self-edge requiring two guard columns, guarded on only one of them.
    let mut self_edge = Edge::to("open");
    self_edge.required_guard_fields = ["a".to_owned(), "b".to_owned()].into_iter().collect();
    let mut registry = PolicyRegistry::new();
    registry
        .register(PolicySpec {
            entity_type: "widget".into(),
            table: "widgets".into(),
            statuses: vec!["open".into(), "done".into()],
            initial_statuses: vec!["open".into()],
            terminal_statuses: vec!["done".into()],
            edges: vec![
                ("open".into(), self_edge),
                ("open".into(), Edge::to("done")),
            ],
            same_status: SameStatus::Append,
            patch_fields: vec!["a".into(), "b".into()],
            reason_prefixes: vec!["run".into()],
            reason_columns: true,
        })
        .expect("register");
    let widget = registry.get("widget").expect("widget");
    let touch = TransitionCommand::new(
        "widget",
        "w1",
        "open",
        Reason::new("run.started.ok"),
        Actor::new(ActorType::Executor, "e"),
    )
    .expecting("open");
    let r = row("open", 1, &[("a", json!(1)), ("b", json!(2))]);
    let err = decide_with(widget, Some(&r), &touch, &guard(&[("a", json!(1))]))
        .expect_err("partial cover must raise");
    assert!(matches!(err, CoreError::SelfEdgeUnguarded { .. }), "{err}");
    let full = guard(&[("a", json!(1)), ("b", json!(2))]);
    assert!(matches!(
        decide_with(widget, Some(&r), &touch, &full),
        Ok(Decision::Write(_))
    ));
}

// contract: LC-034
#[test]
fn zero_rows_is_an_anomaly_only_when_unguarded_and_asked() {
    let policy = default_registry().get("session").expect("policy");
    let cmd = TransitionCommand::new(
        "session",
        "s",
        "failed",
        Reason::new("run.failed.exception"),
        Actor::new(ActorType::System, "reaper"),
    );
    let r = row("running", 1, &[]);
    let raise = CompatOptions {
        enforce_edges: false,
        raise_on_unguarded_conflict: true,
        ..CompatOptions::default()
    };
    let Decision::Write(plan) = decide_with(policy, Some(&r), &cmd, &raise).expect("decides")
    else {
        panic!("expected write")
    };
    assert!(plan.is_unguarded());
    assert_eq!(plan.zero_rows(), ZeroRows::Anomaly);
    let Decision::Write(plan) =
        decide_with(policy, Some(&r), &cmd.clone().with_version(1), &raise).expect("decides")
    else {
        panic!("expected write")
    };
    assert_eq!(plan.zero_rows(), ZeroRows::Conflict);
    let Decision::Write(plan) = decide(policy, Some(&r), &cmd).expect("decides") else {
        panic!("expected write")
    };
    assert_eq!(plan.zero_rows(), ZeroRows::Conflict);
}

// contract: LC-025, LC-026
#[test]
fn update_status_mode_ignores_edges_but_not_vocabulary_or_terminal_exit() {
    let policy = default_registry().get("schedule_run").expect("policy");
    let compat = CompatOptions {
        enforce_edges: false,
        raise_on_unguarded_conflict: true,
        ..CompatOptions::default()
    };
    // queued -> completed is undeclared but inside the vocabulary.
    let cmd = TransitionCommand::new(
        "schedule_run",
        "r",
        "completed",
        Reason::new("run.completed.ok"),
        Actor::new(ActorType::Scheduler, "s"),
    );
    let r = row("queued", 1, &[]);
    assert!(matches!(
        decide_with(policy, Some(&r), &cmd, &compat),
        Ok(Decision::Write(_))
    ));
    assert!(matches!(
        decide(policy, Some(&r), &cmd),
        Ok(Decision::Reject {
            rejection: Rejection::UndeclaredEdge,
            ..
        })
    ));
    // Leaving terminal still needs an override.
    let back = TransitionCommand::new(
        "schedule_run",
        "r",
        "queued",
        Reason::new("schedule.queued.created"),
        Actor::new(ActorType::Scheduler, "s"),
    );
    let done = row("completed", 1, &[]);
    assert!(matches!(
        decide_with(policy, Some(&done), &back, &compat),
        Ok(Decision::Reject {
            rejection: Rejection::TerminalExit,
            ..
        })
    ));
    let mut bad = cmd.clone();
    bad.to_status = "vanished".into();
    assert!(matches!(
        decide_with(policy, Some(&r), &bad, &compat),
        Err(CoreError::UnknownStatus { .. })
    ));
}

// contract: LC-028
#[test]
fn legacy_mode_raises_on_every_undeclared_edge() {
    let policy = default_registry().get("schedule_run").expect("policy");
    let legacy = CompatOptions {
        enforce_edges: true,
        raise_on_undeclared_edge: true,
        write_reason_columns: false,
        ..CompatOptions::default()
    };
    for (from, to, code) in [
        ("queued", "completed", "run.completed.ok"),
        ("completed", "queued", "schedule.queued.created"),
        ("failed", "running", "run.started.ok"),
    ] {
        let cmd = TransitionCommand::new(
            "schedule_run",
            "r",
            to,
            Reason::new(code),
            Actor::new(ActorType::Scheduler, "s"),
        )
        .expecting(from);
        let err = decide_with(policy, Some(&row(from, 1, &[])), &cmd, &legacy).expect_err("raises");
        assert!(
            matches!(err, CoreError::UndeclaredEdge { .. }),
            "{from}->{to}: {err}"
        );
    }
    let ok = TransitionCommand::new(
        "schedule_run",
        "r",
        "running",
        Reason::new("run.started.ok"),
        Actor::new(ActorType::Scheduler, "s"),
    )
    .expecting("queued");
    assert!(
        matches!(decide_with(policy, Some(&row("queued", 1, &[])), &ok, &legacy), Ok(Decision::Write(ref p)) if !p.write_reason_columns)
    );
}

// contract: LC-024
#[test]
fn the_public_command_has_no_compatibility_switches() {
    let base = json!({
        "entity_type": "dispatch", "entity_id": "d", "to_status": "delivering",
        "reason": {"code": "dispatch.delivering.attempt"},
        "actor": {"type": "executor", "id": "w"}
    });
    let cmd: TransitionCommand =
        serde_json::from_value(base.clone()).expect("plain command parses");
    assert_eq!(cmd.to_status, "delivering");
    // Each value has the type the switch would have, so the command would
    // parse if it carried such a field; it must be refused as unknown.
    for (key, value) in [
        ("extra_guard", json!({"attempt": 1})),
        ("enforce_edges", json!(false)),
        ("raise_on_unguarded_conflict", json!(false)),
        ("raise_on_undeclared_edge", json!(false)),
    ] {
        let mut v = base.clone();
        v[key] = value;
        assert!(
            serde_json::from_value::<TransitionCommand>(v).is_err(),
            "{key} must not be accepted"
        );
    }
}

#[test]
fn a_missing_row_is_not_found_unless_no_row_is_expected() {
    let policy = default_registry().get("session").expect("policy");
    let cmd = TransitionCommand::new(
        "session",
        "s",
        "running",
        Reason::new("run.started.ok"),
        Actor::new(ActorType::Executor, "e"),
    );
    assert!(matches!(
        decide(policy, None, &cmd),
        Err(CoreError::NotFound { .. })
    ));
    let mut create = cmd.clone();
    create.expected_statuses.insert(Expected::NoRow);
    assert!(
        matches!(decide(policy, None, &create), Ok(Decision::Write(ref p)) if p.from_status.is_none())
    );
    create.to_status = "completed".into();
    create.reason = Reason::new("run.completed.ok");
    assert!(matches!(
        decide(policy, None, &create),
        Err(CoreError::NotInitialStatus { .. })
    ));
    // A row that exists where none was expected is a conflict.
    let only_new = TransitionCommand {
        expected_statuses: [Expected::NoRow].into_iter().collect(),
        ..cmd
    };
    assert!(matches!(
        decide(policy, Some(&row("running", 1, &[])), &only_new),
        Ok(Decision::Conflict { .. })
    ));
}

#[test]
fn shape_errors_name_the_problem() {
    let policy = default_registry().get("session").expect("policy");
    let r = row("running", 1, &[]);
    let base = TransitionCommand::new(
        "session",
        "s",
        "failed",
        Reason::new("run.failed.exception"),
        Actor::new(ActorType::Executor, "e"),
    );
    let mut c = base.clone();
    c.reason = Reason::new("run.failed.made_up");
    assert_eq!(
        decide(policy, Some(&r), &c),
        Err(CoreError::UnknownReasonCode("run.failed.made_up".into()))
    );
    let mut c = base.clone();
    c.reason = Reason::new("dispatch.acked.consumer");
    assert!(matches!(
        decide(policy, Some(&r), &c),
        Err(CoreError::ReasonNotAllowed { .. })
    ));
    let c = base
        .clone()
        .with_patch("status; DROP TABLE sessions", json!(1));
    let err = decide(policy, Some(&r), &c).expect_err("unknown column");
    assert!(err.to_string().contains("DROP TABLE"), "{err}");
    let mut c = base.clone();
    c.entity_type = "dispatch".into();
    assert!(matches!(
        decide(policy, Some(&r), &c),
        Err(CoreError::UnknownEntityType(_))
    ));
    for (kind, id, why) in [
        (ActorType::Agent, "a", "x"),
        (ActorType::Operator, " ", "x"),
        (ActorType::Operator, "o", "  "),
    ] {
        let c = base.clone().with_override(Override {
            actor: Actor::new(kind, id),
            justification: why.into(),
        });
        assert!(matches!(
            decide(policy, Some(&r), &c),
            Err(CoreError::InvalidOverride(_))
        ));
    }
}

#[test]
fn a_recovery_edge_requires_its_patch_fields() {
    let cmd = TransitionCommand::new(
        "dispatch",
        "d",
        "pending",
        Reason::new("dispatch.pending.retry_backoff"),
        Actor::new(ActorType::Operator, "ops"),
    )
    .expecting("dead_letter")
    .with_patch("attempt", json!(0));
    let err =
        decide(dispatch(), Some(&row("dead_letter", 1, &[])), &cmd).expect_err("missing fields");
    let CoreError::MissingPatchFields { missing, .. } = err else {
        panic!("{err}")
    };
    assert_eq!(
        missing,
        vec!["last_error".to_owned(), "next_attempt_at".to_owned()]
    );
    let full = cmd
        .with_patch("next_attempt_at", json!(0))
        .with_patch("last_error", Value::Null);
    let d = decide(dispatch(), Some(&row("dead_letter", 1, &[])), &full).expect("decides");
    let Decision::Write(plan) = d else {
        panic!("{d:?}")
    };
    assert_eq!(plan.patch.len(), 3);
    assert!(
        plan.override_used.is_none(),
        "a declared recovery edge is not an override"
    );
    let _: BTreeMap<String, Value> = plan.patch;
}
