//! The behaviour every `LifecycleStore` must show.

use lifecycle_core::{
    Actor, ActorType, InitialCommand, LifecycleStore, OutcomeKind, Override, Reason,
    TransitionCommand,
};

fn actor() -> Actor {
    Actor::new(ActorType::Executor, "contract")
}

fn create<S: LifecycleStore>(store: &S, id: &str) {
    let out = store
        .create(&InitialCommand {
            entity_type: "session".into(),
            entity_id: id.into(),
            status: "running".into(),
            reason: Reason::new("run.started.ok"),
            actor: actor(),
            patch: Default::default(),
        })
        .unwrap_or_else(|e| panic!("create {id}: {e}"));
    assert_eq!(out.result, OutcomeKind::Applied, "create {id}");
}

fn to(id: &str, status: &str, code: &str) -> TransitionCommand {
    TransitionCommand::new("session", id, status, Reason::new(code), actor())
}

/// Runs the store contract against fresh stores from `make`; panics (with
/// the rule that broke) on the first violation. For use in tests.
pub fn lifecycle_store_contract<S: LifecycleStore>(make: impl Fn() -> S) {
    // Applied moves append history, oldest first, with from/to statuses.
    let store = make();
    create(&store, "s1");
    let out = store.transition(&to("s1", "completed", "run.completed.ok").expecting("running"));
    let out = out.unwrap_or_else(|e| panic!("transition: {e}"));
    assert_eq!(out.result, OutcomeKind::Applied);
    assert_eq!(out.previous_status.as_deref(), Some("running"));
    let history = store
        .history("session", "s1")
        .unwrap_or_else(|e| panic!("history: {e}"));
    let moves: Vec<(Option<&str>, &str)> = history
        .iter()
        .map(|t| (t.from_status.as_deref(), t.to_status.as_str()))
        .collect();
    assert_eq!(moves, [(None, "running"), (Some("running"), "completed")]);
    assert!(
        out.transition_id == Some(history[1].id),
        "outcome names its history row"
    );

    // A creation over an existing row is a conflict, not a second row.
    let store = make();
    create(&store, "s2");
    let again = store.create(&InitialCommand {
        entity_type: "session".into(),
        entity_id: "s2".into(),
        status: "running".into(),
        reason: Reason::new("run.started.ok"),
        actor: actor(),
        patch: Default::default(),
    });
    assert_eq!(again.map(|o| o.result).ok(), Some(OutcomeKind::Conflict));

    // A stale expectation is a conflict that writes nothing.
    let out = store.transition(&to("s2", "failed", "run.failed.exception").expecting("completed"));
    assert_eq!(out.map(|o| o.result).ok(), Some(OutcomeKind::Conflict));
    assert_eq!(
        store.history("session", "s2").map(|h| h.len()).ok(),
        Some(1)
    );

    // Leaving a terminal status is rejected without an override, applied
    // (and marked) with one.
    let store = make();
    create(&store, "s3");
    assert!(
        store
            .transition(&to("s3", "cancelled", "run.cancelled.manual_kill"))
            .is_ok()
    );
    let back = to("s3", "running", "session.reopened.by_resume");
    let out = store
        .transition(&back)
        .unwrap_or_else(|e| panic!("reject: {e}"));
    assert_eq!(out.result, OutcomeKind::Rejected);
    assert_eq!(out.current_status.as_deref(), Some("cancelled"));
    assert_eq!(
        store.history("session", "s3").map(|h| h.len()).ok(),
        Some(2)
    );
    let o = Override {
        actor: Actor::new(ActorType::Operator, "ops"),
        justification: "resume".into(),
    };
    let out = store
        .transition(&back.with_override(o))
        .unwrap_or_else(|e| panic!("override: {e}"));
    assert_eq!(out.result, OutcomeKind::Applied);
    let history = store.history("session", "s3").unwrap_or_default();
    assert!(history.last().is_some_and(|t| t.overridden));

    // Bad input is an error, never a silent outcome.
    let store = make();
    create(&store, "s4");
    assert!(
        store
            .transition(&to("s4", "exploded", "run.failed.exception"))
            .is_err()
    );
    assert!(
        store
            .transition(&to("s4", "failed", "run.failed.invented"))
            .is_err()
    );
    assert!(
        store
            .transition(&to("missing", "failed", "run.failed.exception"))
            .is_err()
    );
    assert!(store.history("spaceship", "s4").is_err());
    assert_eq!(
        store.history("session", "s4").map(|h| h.len()).ok(),
        Some(1)
    );
}
