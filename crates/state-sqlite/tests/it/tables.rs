//! Deliveries, session controls and schema facts.

use std::time::Duration;

use lifecycle_core::{ActorType, Reason, TransitionCommand};
use state_sqlite::controls::{ControlApplier, ControlVerb, enqueue_control, poll_controls};
use state_sqlite::deliveries::{record_delivery, undelivered};
use state_sqlite::{ReadOnlyEngine, StoreError};

use crate::common::{actor, count, create, db};

fn ids(v: &[lifecycle_core::TransitionRecord]) -> Vec<String> {
    v.iter()
        .map(|t| format!("{}:{}", t.entity_id, t.to_status))
        .collect()
}

// contract: SQL-033, SQL-035, SQL-036, SQL-039
#[test]
fn reconciliation_is_a_per_consumer_anti_join_over_terminal_execution_moves() {
    let mut db = db();
    struct Quiet;
    impl lifecycle_core::TerminalSink for Quiet {
        fn on_terminal(
            &self,
            _: &lifecycle_core::TerminalEvent,
        ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            Ok(())
        }
    }
    db.store.add_terminal_sink(std::sync::Arc::new(Quiet));
    create(&db.store, "session", "s1", "running", "run.started.ok", &[]);
    create(&db.store, "session", "s2", "running", "run.started.ok", &[]);
    create(
        &db.store,
        "team",
        "t1",
        "active",
        "team.archived.operator",
        &[],
    );
    let done = |id: &str| {
        TransitionCommand::new(
            "session",
            id,
            "completed",
            Reason::new("run.completed.ok"),
            actor(ActorType::Executor),
        )
    };
    db.store.transition(&done("s1")).expect("s1");
    db.store.transition(&done("s2")).expect("s2");
    db.store
        .transition(&TransitionCommand::new(
            "team",
            "t1",
            "archived",
            Reason::new("team.archived.operator"),
            actor(ActorType::Admin),
        ))
        .expect("team");
    assert_eq!(
        count(&db.store, "SELECT count(*) FROM transition_deliveries"),
        0,
        "push path records nothing"
    );
    let conn = db.store.engine().conn().expect("conn");
    let registry = db.store.registry();
    assert_eq!(
        ids(&undelivered(&conn, registry, "mailer").expect("q")),
        ["s1:completed", "s2:completed"]
    );
    let first = undelivered(&conn, registry, "mailer").expect("q")[0].id;
    record_delivery(&conn, "mailer", first).expect("ack");
    record_delivery(&conn, "mailer", first).expect("ack twice is fine");
    assert_eq!(
        ids(&undelivered(&conn, registry, "mailer").expect("q")),
        ["s2:completed"]
    );
    assert_eq!(
        ids(&undelivered(&conn, registry, "pager").expect("q")),
        ["s1:completed", "s2:completed"],
        "another consumer's ack hides nothing"
    );
}

// contract: SQL-034, SQL-037, SQL-038
#[test]
fn reconciliation_is_read_only_and_never_expires_anything() {
    let db = db();
    create(
        &db.store,
        "session",
        "old",
        "running",
        "run.started.ok",
        &[],
    );
    db.store
        .transition(&TransitionCommand::new(
            "session",
            "old",
            "failed",
            Reason::new("run.failed.exception"),
            actor(ActorType::Executor),
        ))
        .expect("failed");
    // Backdate it to 1970: no age filter may drop it.
    db.store
        .engine()
        .conn()
        .expect("conn")
        .execute_batch("UPDATE status_transitions SET created_at = 1")
        .expect("backdate");
    let ro = ReadOnlyEngine::open(db.path(), Duration::from_millis(200)).expect("ro");
    let conn = ro.conn().expect("conn");
    for _ in 0..3 {
        assert_eq!(
            ids(&undelivered(&conn, db.store.registry(), "offline-for-years").expect("q")),
            ["old:failed"]
        );
    }
    assert_eq!(
        count(&db.store, "SELECT count(*) FROM transition_deliveries"),
        0
    );
}

#[derive(Default)]
struct Recorder {
    calls: Vec<String>,
    fail_inject: bool,
    fail_pause: bool,
}

impl ControlApplier for Recorder {
    fn pause(&mut self, s: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.calls.push(format!("pause {s}"));
        if self.fail_pause {
            return Err("crashed mid-pause".into());
        }
        Ok(())
    }
    fn resume(&mut self, s: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.calls.push(format!("resume {s}"));
        Ok(())
    }
    fn inject(&mut self, s: &str, m: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.calls.push(format!("inject {s} {m}"));
        if self.fail_inject {
            return Err("crashed mid-injection".into());
        }
        Ok(())
    }
}

fn state(db: &crate::common::Db, id: i64) -> String {
    db.store
        .engine()
        .conn()
        .expect("conn")
        .query_row(
            "SELECT state FROM session_controls WHERE id = ?1",
            [id],
            |r| r.get(0),
        )
        .expect("state")
}

// contract: SQL-040
#[test]
fn pause_and_resume_apply_then_stamp_and_reapply_harmlessly() {
    let db = db();
    let conn = db.store.engine().conn().expect("conn");
    let p = enqueue_control(&conn, "s1", &ControlVerb::Pause).expect("enqueue");
    let r = enqueue_control(&conn, "s1", &ControlVerb::Resume).expect("enqueue");
    // A poller that crashed after applying but before stamping leaves the
    // row pending: the next poll applies it again, which is harmless.
    let mut first = Recorder::default();
    let report = poll_controls(&conn, "s1", &mut first).expect("poll");
    assert_eq!(report.applied, vec![p, r]);
    assert_eq!(first.calls, ["pause s1", "resume s1"]);
    assert_eq!(
        (state(&db, p), state(&db, r)),
        ("applied".into(), "applied".into())
    );
    conn.execute(
        "UPDATE session_controls SET state = 'pending' WHERE id = ?1",
        [p],
    )
    .expect("simulate crash before stamp");
    let mut second = Recorder::default();
    poll_controls(&conn, "s1", &mut second).expect("poll");
    assert_eq!(second.calls, ["pause s1"]);
    // Applied before stamped: a pause that fails while being applied is
    // not stamped, so the next poll applies it again.
    let q = enqueue_control(&conn, "s2", &ControlVerb::Pause).expect("enqueue");
    let mut crashing = Recorder {
        fail_pause: true,
        ..Recorder::default()
    };
    let err = poll_controls(&conn, "s2", &mut crashing).expect_err("applier failed");
    assert!(matches!(err, StoreError::ControlFailed { id, .. } if id == q));
    assert_eq!(state(&db, q), "pending");
    let mut retry = Recorder::default();
    let report = poll_controls(&conn, "s2", &mut retry).expect("poll");
    assert_eq!(retry.calls, ["pause s2"]);
    assert_eq!(report.applied, vec![q]);
    assert_eq!(state(&db, q), "applied");
}

// contract: SQL-041
#[test]
fn a_message_is_stamped_applying_first_and_never_injected_twice() {
    let db = db();
    let conn = db.store.engine().conn().expect("conn");
    let m = enqueue_control(&conn, "s1", &ControlVerb::Message("hello".into())).expect("enqueue");
    let mut crashing = Recorder {
        fail_inject: true,
        ..Recorder::default()
    };
    let err = poll_controls(&conn, "s1", &mut crashing).expect_err("applier failed");
    assert!(matches!(err, StoreError::ControlFailed { id, .. } if id == m));
    assert_eq!(state(&db, m), "applying");
    let mut next = Recorder::default();
    let report = poll_controls(&conn, "s1", &mut next).expect("poll");
    assert!(
        next.calls.is_empty(),
        "must not inject again: {:?}",
        next.calls
    );
    assert_eq!(report.stuck_applying, vec![m]);
    let ok = enqueue_control(&conn, "s2", &ControlVerb::Message("hi".into())).expect("enqueue");
    let mut fine = Recorder::default();
    poll_controls(&conn, "s2", &mut fine).expect("poll");
    assert_eq!(fine.calls, ["inject s2 hi"]);
    assert_eq!(state(&db, ok), "applied");
}

// contract: SQL-042
#[test]
fn stop_is_rejected_as_unsupported_and_nothing_is_applied() {
    let db = db();
    let conn = db.store.engine().conn().expect("conn");
    conn.execute_batch("INSERT INTO session_controls (session_id, verb, state, created_at, updated_at) VALUES ('s1', 'stop', 'pending', 0, 0)").expect("schema allows stop");
    let mut rec = Recorder::default();
    let report = poll_controls(&conn, "s1", &mut rec).expect("poll");
    assert_eq!(report.rejected.len(), 1);
    assert!(rec.calls.is_empty());
    let detail: String = conn
        .query_row("SELECT detail FROM session_controls", [], |r| r.get(0))
        .expect("detail");
    assert!(detail.contains("unsupported"));
    // The enqueue API has no stop verb at all.
    assert!(serde_json::from_str::<ControlVerb>(r#"{"verb":"stop"}"#).is_err());
}

// contract: SQL-044, SQL-045
#[test]
fn message_pointer_indexes_are_plain() {
    let db = db();
    let conn = db.store.engine().conn().expect("conn");
    for col in ["first_msg_id", "last_msg_id", "system_msg_id"] {
        let (name, partial): (String, i64) = conn
            .query_row(
                "SELECT il.name, il.partial FROM pragma_index_list('branches') il
                 JOIN pragma_index_info(il.name) ii WHERE ii.name = ?1",
                [col],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("an index on the column");
        assert_eq!(partial, 0, "{name} must not be partial");
        let sql: String = conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE name = ?1",
                [&name],
                |r| r.get(0),
            )
            .expect("sql");
        assert!(!sql.to_uppercase().contains("WHERE"), "{sql}");
        let plan: String = conn
            .query_row(
                &format!("EXPLAIN QUERY PLAN SELECT id FROM branches WHERE {col} = 'm'"),
                [],
                |r| r.get(3),
            )
            .expect("plan");
        assert!(plan.contains(&name), "{plan}");
    }
}
