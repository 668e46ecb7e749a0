//! The envelope: when one exists, its golden form, tolerant reading, and
//! the store calling the sink strictly after commit.

use std::sync::Arc;

use lifecycle_core::{
    Actor, ActorType, InitialCommand, OutcomeKind, Reason, TerminalSink, TransitionCommand,
    default_registry,
};
use notify::{Handler, Registration, Registry, RunTerminalEnvelope, TerminalNotifier};
use serde_json::json;
use state_sqlite::{Engine, EngineConfig, Store};

use crate::common::{envelope, multi_thread, record};

// contract: NTF-001
#[test]
fn envelopes_exist_only_for_terminal_moves_of_execution_entities() {
    let policies = default_registry();
    for (kind, from, to) in [
        ("session", "running", "completed"),
        ("session", "running", "timed_out"),
        ("invocation", "running", "failed"),
        ("schedule_run", "running", "cancelled"),
        ("play", "running", "merged"),
    ] {
        let built =
            RunTerminalEnvelope::for_terminal_event(&record(kind, "x1", Some(from), to), policies)
                .unwrap_or_else(|| panic!("{kind} {from} -> {to} has an envelope"));
        assert_eq!(built.entity.kind, kind);
        assert_eq!(built.entity.id, "x1");
        assert_eq!(built.previous_status.as_deref(), Some(from));
        assert_eq!(built.terminal_status, to);
        assert_eq!(built.schema_version, 1);
    }
}

// contract: NTF-002
#[test]
fn no_envelope_for_non_terminal_moves_or_non_execution_entities() {
    let policies = default_registry();
    for (kind, from, to) in [
        // Non-terminal moves of execution entities.
        ("schedule_run", "queued", "running"),
        ("schedule_run", "running", "retry_wait"),
        ("play", "pending", "prepared"),
        // A same-status append on a terminal status is not a terminal move.
        ("session", "completed", "completed"),
        // Non-execution entities, even on their terminal statuses.
        ("dispatch", "delivering", "delivered"),
        ("show", "active", "completed"),
        ("team", "active", "archived"),
        // Unknown entities.
        ("nonsense", "a", "b"),
    ] {
        assert!(
            RunTerminalEnvelope::for_terminal_event(&record(kind, "x1", Some(from), to), policies)
                .is_none(),
            "{kind} {from} -> {to} must have no envelope"
        );
    }
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine =
        Engine::create(dir.path().join("state.db"), EngineConfig::default()).expect("engine");
    (dir, Store::new(engine))
}

fn actor() -> Actor {
    Actor::new(ActorType::System, "test")
}

fn create(store: &Store, kind: &str, id: &str, status: &str, code: &str) {
    store
        .create(&InitialCommand {
            entity_type: kind.into(),
            entity_id: id.into(),
            status: status.into(),
            reason: Reason::new(code),
            actor: actor(),
            patch: Default::default(),
        })
        .expect("create");
}

// contract: NTF-001, NTF-002, NTF-005
#[test]
fn a_real_store_emits_once_per_committed_terminal_move_and_handlers_cannot_undo_it() {
    let runtime = multi_thread();
    let (_dir, mut store) = store();
    let registry = Arc::new(Registry::default());
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    // The handler reads through the store's pool (another connection than
    // the writer's): what it sees must already be committed.
    let reader = store.clone();
    {
        let seen = Arc::clone(&seen);
        registry.register(Registration::new(
            "observer",
            Handler::blocking(move |envelope| {
                let status = reader
                    .status_of("session", &envelope.entity.id)?
                    .map(|s| s.0)
                    .unwrap_or_default();
                seen.lock()
                    .expect("seen")
                    .push((envelope.entity.id.clone(), status));
                Ok(())
            }),
        ));
    }
    // Hostile handlers: an error and a panic.
    registry.register(Registration::new(
        "failing",
        Handler::from_async(|_| async { Err("handler refused".into()) }),
    ));
    registry.register(Registration::new(
        "panicking",
        Handler::blocking(|_| panic!("handler exploded")),
    ));
    let notifier = Arc::new(TerminalNotifier::new(
        Arc::clone(&registry),
        runtime.handle().clone(),
    ));
    store.add_terminal_sink(notifier.clone() as Arc<dyn TerminalSink>);

    create(&store, "session", "s1", "running", "run.started.ok");
    let complete = |id: &str| {
        TransitionCommand::new(
            "session",
            id,
            "completed",
            Reason::new("run.completed.ok"),
            actor(),
        )
        .expecting("running")
    };
    assert_eq!(
        store.transition(&complete("s1")).expect("t").result,
        OutcomeKind::Applied
    );
    // A conflicted move (already completed) and a rejected one (terminal exit).
    assert_eq!(
        store.transition(&complete("s1")).expect("t").result,
        OutcomeKind::Conflict
    );
    let reopen = TransitionCommand::new(
        "session",
        "s1",
        "running",
        Reason::new("session.reopened.by_resume"),
        Actor::new(ActorType::Agent, "a"),
    );
    assert_eq!(
        store.transition(&reopen).expect("t").result,
        OutcomeKind::Rejected
    );
    // A terminal move of a non-execution entity.
    create(&store, "team", "t1", "active", "team.archived.operator");
    let archive = TransitionCommand::new(
        "team",
        "t1",
        "archived",
        Reason::new("team.archived.operator"),
        actor(),
    );
    let archived = store.transition(&archive).expect("t").result;
    assert_eq!(archived, OutcomeKind::Applied);

    let reports = runtime.block_on(notifier.flush());
    assert_eq!(reports.len(), 1, "exactly one envelope: {reports:?}");
    assert_eq!(reports[0].succeeded, ["observer"]);
    let mut failed = reports[0].failed.clone();
    failed.sort();
    assert_eq!(failed, ["failing", "panicking"]);
    assert_eq!(
        *seen.lock().expect("seen"),
        [("s1".to_owned(), "completed".to_owned())],
        "the handler saw the committed row"
    );
    assert_eq!(
        store
            .status_of("session", "s1")
            .expect("status")
            .map(|s| s.0)
            .as_deref(),
        Some("completed"),
        "failing handlers left the committed write alone"
    );
}

// contract: NTF-006
#[test]
fn golden_serialization_of_the_guaranteed_fields() {
    let mut envelope = envelope("session", "s-golden").with_run_id("run-1");
    envelope.artifacts.push(json!({"path": "out.md"}));
    let text = serde_json::to_string_pretty(&envelope).expect("json");
    insta::assert_snapshot!("envelope_v1", text);
}

// contract: NTF-007
#[test]
fn a_version_1_reader_accepts_unknown_extra_fields() {
    let text = json!({
        "schema": "lionagi.run-terminal",
        "schema_version": 1,
        "event_id": "9",
        "durable": true,
        "entity": {"kind": "session", "id": "s1", "tenant": "t"},
        "previous_status": "running",
        "terminal_status": "failed",
        "reason_code": "run.failed.exit_nonzero",
        "occurred_at": 1.5,
        "correlation": {"session_id": "s1", "trace_id": "abc"},
        "artifacts": [],
        "new_optional_field": {"nested": [1, 2]}
    })
    .to_string();
    let read = RunTerminalEnvelope::from_json(&text).expect("extra fields are accepted");
    assert_eq!(read.terminal_status, "failed");
    assert_eq!(read.correlation.session_id.as_deref(), Some("s1"));
    // The guaranteed fields stay required, and another version is refused.
    let missing = json!({"schema": "lionagi.run-terminal", "schema_version": 1}).to_string();
    assert!(RunTerminalEnvelope::from_json(&missing).is_err());
    let v2 = text.replace("\"schema_version\":1", "\"schema_version\":2");
    assert!(matches!(
        RunTerminalEnvelope::from_json(&v2),
        Err(notify::Error::UnsupportedSchema { version: 2, .. })
    ));
    // Round trip of what this crate writes.
    let written = envelope("invocation", "i1").to_json().expect("json");
    assert_eq!(
        RunTerminalEnvelope::from_json(&written).expect("read"),
        envelope("invocation", "i1")
    );
}

// contract: NTF-005
#[test]
fn the_sink_never_holds_up_the_stores_caller() {
    // The handler waits for a signal the test sends only once the store's
    // transition has returned. Had the sink blocked the caller until the
    // handlers finished, the signal would come after the deadline and the
    // handler would time out instead of succeeding.
    let runtime = multi_thread();
    let (_dir, mut store) = store();
    let registry = Arc::new(Registry::new(std::time::Duration::from_secs(2)));
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = std::sync::Mutex::new(rx);
    registry.register(Registration::new(
        "waits_for_the_caller",
        Handler::blocking(move |_| {
            rx.lock()
                .expect("rx")
                .recv_timeout(std::time::Duration::from_secs(30))
                .map_err(|e| e.to_string().into())
        }),
    ));
    let notifier = Arc::new(TerminalNotifier::new(
        Arc::clone(&registry),
        runtime.handle().clone(),
    ));
    store.add_terminal_sink(notifier.clone() as Arc<dyn TerminalSink>);
    create(&store, "session", "s9", "running", "run.started.ok");
    let complete = TransitionCommand::new(
        "session",
        "s9",
        "failed",
        Reason::new("run.failed.exit_nonzero"),
        actor(),
    );
    assert_eq!(
        store.transition(&complete).expect("t").result,
        OutcomeKind::Applied
    );
    tx.send(()).expect("the handler is waiting");
    let reports = runtime.block_on(notifier.flush());
    assert_eq!(reports.len(), 1);
    assert_eq!(
        reports[0].succeeded,
        ["waits_for_the_caller"],
        "{reports:?}"
    );
}
