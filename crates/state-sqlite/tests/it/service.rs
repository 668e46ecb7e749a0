//! The transition service: commit-before-callback, audit rows, anomaly
//! rollback, reason columns, version bumps.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use lifecycle_core::{
    ActorType, OutcomeKind, Override, Reason, TerminalEvent, TerminalSink, TransitionCommand,
};
use serde_json::json;
use state_sqlite::{ReadOnlyEngine, StatusUpdate, StoreError};

use crate::common::{actor, count, create, db};

fn complete(id: &str) -> TransitionCommand {
    TransitionCommand::new(
        "session",
        id,
        "completed",
        Reason::new("run.completed.ok").with_summary("done"),
        actor(ActorType::Executor),
    )
    .expecting("running")
}

struct Observer {
    path: std::path::PathBuf,
    seen: Mutex<Vec<(String, usize)>>,
}

impl TerminalSink for Observer {
    fn on_terminal(
        &self,
        event: &TerminalEvent,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        // A separate connection must already see the committed row.
        let ro = ReadOnlyEngine::open(&self.path, std::time::Duration::from_millis(500))?;
        let conn = ro.conn()?;
        let status: String = conn.query_row(
            "SELECT status FROM sessions WHERE id = ?1",
            [&event.transition.entity_id],
            |r| r.get(0),
        )?;
        let history = state_sqlite::query::history(&conn, "session", &event.transition.entity_id)?;
        self.seen
            .lock()
            .map_err(|_| "poisoned")?
            .push((status, history.len()));
        Ok(())
    }
}

struct Hostile(AtomicUsize);

impl TerminalSink for Hostile {
    fn on_terminal(
        &self,
        _: &TerminalEvent,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if self.0.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
            panic!("handler blew up");
        }
        Err("handler failed".into())
    }
}

// contract: SQL-026
#[test]
fn sinks_run_after_commit_and_see_the_committed_row() {
    let mut db = db();
    let observer = Arc::new(Observer {
        path: db.path(),
        seen: Mutex::new(Vec::new()),
    });
    db.store.add_terminal_sink(observer.clone());
    create(&db.store, "session", "s1", "running", "run.started.ok", &[]);
    assert!(
        observer.seen.lock().expect("lock").is_empty(),
        "running is not terminal"
    );
    db.store.transition(&complete("s1")).expect("transition");
    assert_eq!(
        *observer.seen.lock().expect("lock"),
        vec![("completed".to_owned(), 2)]
    );
}

// contract: SQL-027
#[test]
fn failing_or_panicking_sinks_cannot_undo_the_write() {
    let mut db = db();
    db.store
        .add_terminal_sink(Arc::new(Hostile(AtomicUsize::new(0))));
    for id in ["a", "b"] {
        create(&db.store, "session", id, "running", "run.started.ok", &[]);
        let out = db
            .store
            .transition(&complete(id))
            .expect("transition despite sink");
        assert_eq!(out.result, OutcomeKind::Applied);
        assert_eq!(
            db.store
                .status_of("session", id)
                .expect("status")
                .map(|s| s.0)
                .as_deref(),
            Some("completed")
        );
    }
    // A hanging sink does not delay the commit: while it hangs, another
    // connection already reads the new status and its history row.
    let mut db = crate::common::db();
    let gate = Arc::new(Stuck(Barrier::new(2), Barrier::new(2)));
    db.store.add_terminal_sink(gate.clone());
    create(&db.store, "session", "h", "running", "run.started.ok", &[]);
    let store = db.store.clone();
    let caller = std::thread::spawn(move || store.transition(&complete("h")));
    gate.0.wait();
    assert_eq!(
        db.store
            .status_of("session", "h")
            .expect("status")
            .map(|s| s.0)
            .as_deref(),
        Some("completed"),
        "committed while the sink hangs"
    );
    assert_eq!(db.store.history("session", "h").expect("history").len(), 2);
    gate.1.wait();
    let out = caller.join().expect("caller").expect("transition");
    assert_eq!(out.result, OutcomeKind::Applied);
}

/// A sink that hangs until released: it meets the test at the first
/// barrier once called, then waits at the second.
struct Stuck(Barrier, Barrier);

impl TerminalSink for Stuck {
    fn on_terminal(
        &self,
        _: &TerminalEvent,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.0.wait();
        self.1.wait();
        Ok(())
    }
}

// contract: SQL-028, LC-020, LC-022
#[test]
fn a_rejection_writes_only_an_audit_row() {
    let db = db();
    create(&db.store, "session", "s1", "running", "run.started.ok", &[]);
    db.store.transition(&complete("s1")).expect("complete");
    let back = TransitionCommand::new(
        "session",
        "s1",
        "running",
        Reason::new("session.reopened.by_resume"),
        actor(ActorType::Agent),
    );
    let out = db.store.transition(&back).expect("outcome");
    assert_eq!(out.result, OutcomeKind::Rejected);
    assert_eq!(out.current_status.as_deref(), Some("completed"));
    assert_eq!(db.store.history("session", "s1").expect("history").len(), 2);
    let events = db.store.admin_events("session", "s1").expect("events");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, "transition.rejected");
    assert_eq!(events[0].detail["rejection"], "terminal_exit");
    assert_eq!(
        db.store
            .status_of("session", "s1")
            .expect("status")
            .map(|s| s.0)
            .as_deref(),
        Some("completed")
    );
    // An undeclared edge off a non-terminal status (schedule_run queued ->
    // completed) is rejected the same way, with its own audit row.
    create(
        &db.store,
        "schedule_run",
        "r1",
        "queued",
        "schedule.queued.created",
        &[],
    );
    let skip = TransitionCommand::new(
        "schedule_run",
        "r1",
        "completed",
        Reason::new("run.completed.ok"),
        actor(ActorType::Scheduler),
    );
    let out = db.store.transition(&skip).expect("outcome, not an error");
    assert_eq!(out.result, OutcomeKind::Rejected);
    assert_eq!(out.current_status.as_deref(), Some("queued"));
    let events = db.store.admin_events("schedule_run", "r1").expect("events");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, "transition.rejected");
    assert_eq!(events[0].detail["rejection"], "undeclared_edge");
    assert_eq!(
        db.store
            .status_of("schedule_run", "r1")
            .expect("status")
            .map(|s| s.0)
            .as_deref(),
        Some("queued")
    );
    assert_eq!(
        db.store
            .history("schedule_run", "r1")
            .expect("history")
            .len(),
        1
    );
}

// contract: LC-023
#[test]
fn an_override_applies_and_is_audited() {
    let db = db();
    create(&db.store, "session", "s1", "running", "run.started.ok", &[]);
    db.store.transition(&complete("s1")).expect("complete");
    let o = Override {
        actor: actor(ActorType::Operator),
        justification: "resumed by hand".into(),
    };
    let back = TransitionCommand::new(
        "session",
        "s1",
        "running",
        Reason::new("session.reopened.by_resume"),
        actor(ActorType::Agent),
    )
    .with_override(o.clone());
    // The same request without the override is rejected.
    let mut bare = back.clone();
    bare.override_ = None;
    assert_eq!(
        db.store.transition(&bare).expect("outcome").result,
        OutcomeKind::Rejected
    );
    let out = db.store.transition(&back).expect("outcome");
    assert_eq!(out.result, OutcomeKind::Applied);
    let history = db.store.history("session", "s1").expect("history");
    assert!(history[2].overridden);
    let events = db.store.admin_events("session", "s1").expect("events");
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["transition.rejected", "transition.override"]);
    let audit = &events[1];
    assert_eq!(audit.actor_type, "operator");
    assert_eq!(audit.detail["justification"], "resumed by hand");
    assert_eq!(audit.detail["transition_id"], json!(history[2].id));
    // An undeclared edge: rejected without the override, applied and
    // audited with it.
    create(
        &db.store,
        "schedule_run",
        "r1",
        "queued",
        "schedule.queued.created",
        &[],
    );
    let skip = TransitionCommand::new(
        "schedule_run",
        "r1",
        "completed",
        Reason::new("run.completed.ok"),
        actor(ActorType::Scheduler),
    );
    assert_eq!(
        db.store.transition(&skip).expect("outcome").result,
        OutcomeKind::Rejected
    );
    let out = db
        .store
        .transition(&skip.with_override(o))
        .expect("outcome");
    assert_eq!(out.result, OutcomeKind::Applied);
    let history = db.store.history("schedule_run", "r1").expect("history");
    assert_eq!(history.len(), 2);
    assert!(history[1].overridden);
    let events = db.store.admin_events("schedule_run", "r1").expect("events");
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["transition.rejected", "transition.override"]);
    assert_eq!(events[1].detail["transition_id"], json!(history[1].id));
}

// contract: SQL-029, LC-034
#[test]
fn an_unguarded_zero_row_update_is_an_anomaly_rolled_back_in_the_transaction() {
    let db = db();
    create(&db.store, "session", "s1", "running", "run.started.ok", &[]);
    // A trigger that silently skips every update makes the UPDATE match
    // zero rows after the history append was already written.
    db.store
        .engine()
        .conn()
        .expect("conn")
        .execute_batch(
            "CREATE TRIGGER swallow BEFORE UPDATE ON sessions BEGIN SELECT RAISE(IGNORE); END;",
        )
        .expect("trigger");
    let before = count(&db.store, "SELECT count(*) FROM status_transitions");
    let req = StatusUpdate {
        entity_type: "session".into(),
        entity_id: "s1".into(),
        to_status: "failed".into(),
        reason: Reason::new("run.failed.exception"),
        actor: actor(ActorType::System),
        override_: None,
        patch: Default::default(),
    };
    let err = db.store.update_status(&req).expect_err("anomaly");
    assert!(matches!(err, StoreError::StorageAnomaly { .. }), "{err}");
    assert_eq!(
        count(&db.store, "SELECT count(*) FROM status_transitions"),
        before,
        "history append rolled back"
    );
    // The public surface reports the same zero-row update as a conflict.
    let out = db
        .store
        .transition(&TransitionCommand::new(
            "session",
            "s1",
            "failed",
            Reason::new("run.failed.exception"),
            actor(ActorType::System),
        ))
        .expect("conflict");
    assert_eq!(out.result, OutcomeKind::Conflict);
    assert_eq!(
        count(&db.store, "SELECT count(*) FROM status_transitions"),
        before
    );
}

// contract: SQL-030, LC-025
#[test]
fn update_status_writes_reason_columns_and_ignores_edges() {
    let db = db();
    create(
        &db.store,
        "schedule_run",
        "r1",
        "queued",
        "schedule.queued.created",
        &[],
    );
    let req = StatusUpdate {
        entity_type: "schedule_run".into(),
        entity_id: "r1".into(),
        to_status: "completed".into(),
        reason: Reason::new("run.completed.ok").with_summary("fast path"),
        actor: actor(ActorType::Scheduler),
        override_: None,
        patch: Default::default(),
    };
    assert_eq!(
        db.store.update_status(&req).expect("applied").result,
        OutcomeKind::Applied
    );
    let (code, summary): (String, String) = db
        .store
        .engine()
        .conn()
        .expect("conn")
        .query_row(
            "SELECT status_reason_code, status_reason_summary FROM schedule_runs WHERE id = 'r1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("row");
    assert_eq!(
        (code.as_str(), summary.as_str()),
        ("run.completed.ok", "fast path")
    );
}

// contract: SQL-032
#[test]
fn every_write_bumps_the_version() {
    let db = db();
    create(&db.store, "session", "s1", "running", "run.started.ok", &[]);
    let (_, v0) = db
        .store
        .status_of("session", "s1")
        .expect("status")
        .expect("row");
    let heartbeat = TransitionCommand::new(
        "session",
        "s1",
        "running",
        Reason::new("run.started.ok"),
        actor(ActorType::Executor),
    )
    .with_version(v0);
    assert_eq!(
        db.store.transition(&heartbeat).expect("applied").result,
        OutcomeKind::Applied
    );
    let (_, v1) = db
        .store
        .status_of("session", "s1")
        .expect("status")
        .expect("row");
    assert!(v1 > v0);
    let stale = complete("s1").with_version(v0);
    assert_eq!(
        db.store.transition(&stale).expect("outcome").result,
        OutcomeKind::Conflict
    );
    assert_eq!(
        db.store
            .transition(&complete("s1").with_version(v1))
            .expect("outcome")
            .result,
        OutcomeKind::Applied
    );
}

#[test]
fn unknown_inputs_are_typed_errors_that_write_nothing() {
    let db = db();
    create(&db.store, "session", "s1", "running", "run.started.ok", &[]);
    let base = complete("s1");
    let mut cases = Vec::new();
    let mut c = base.clone();
    c.entity_type = "spaceship".into();
    cases.push(c);
    let mut c = base.clone();
    c.to_status = "exploded".into();
    cases.push(c);
    let mut c = base.clone();
    c.reason = Reason::new("run.completed.fabulous");
    cases.push(c);
    cases.push(
        base.clone()
            .with_patch("status_reason_code = 'x' --", json!(1)),
    );
    let history = count(&db.store, "SELECT count(*) FROM status_transitions");
    for c in cases {
        let err = db.store.transition(&c).expect_err("typed error");
        assert!(matches!(err, StoreError::Rule(_)), "{err}");
    }
    assert_eq!(
        count(&db.store, "SELECT count(*) FROM status_transitions"),
        history
    );
    assert_eq!(count(&db.store, "SELECT count(*) FROM admin_events"), 0);
}
