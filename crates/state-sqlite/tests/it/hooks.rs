//! Session start/end persistence hooks.

use std::collections::BTreeMap;

use lifecycle_core::{ActorType, OutcomeKind};
use serde_json::json;
use state_sqlite::{SessionEnd, SessionStart, StoreError, Usage};

use crate::common::{actor, count, db};

fn start(id: &str) -> SessionStart {
    SessionStart {
        session_id: id.into(),
        reason_code: "run.started.ok".into(),
        kind: Some("orchestrated".into()),
        project: Some("proj".into()),
        model: Some("sonnet".into()),
        agent_name: Some("coder".into()),
        provider: Some("claude".into()),
        cwd: Some("/tmp/w".into()),
        pid: Some(4242),
        invocation_id: Some("inv-1".into()),
        owner: None,
    }
}

fn end(id: &str, tokens: i64) -> SessionEnd {
    SessionEnd {
        session_id: id.into(),
        status: "completed".into(),
        reason_code: "run.completed.ok".into(),
        usage: Usage {
            input_tokens: Some(tokens),
            output_tokens: Some(tokens * 2),
            total_cost_usd: Some(0.5),
            num_turns: Some(3),
            duration_ms: Some(1200),
            model: None,
        },
        error: None,
        ended_at: 1_000,
    }
}

type Row = (
    String,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<String>,
);

fn row(db: &crate::common::Db, id: &str) -> Row {
    db.store.engine().conn().expect("conn")
        .query_row(
            "SELECT status, status_reason_code, ended_at, input_tokens, node_metadata FROM sessions WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .expect("row")
}

// contract: SQL-051
#[test]
fn start_records_the_reason_and_every_provenance_field() {
    let db = db();
    let out = db
        .store
        .persist_session_start(&start("s1"), &actor(ActorType::Executor))
        .expect("start");
    assert_eq!(out.result, OutcomeKind::Applied);
    let got: (String, String, String, String, String, String, String, i64, String) = db.store.engine().conn().expect("conn")
        .query_row(
            "SELECT status, status_reason_code, kind, project, model, agent_name, provider || cwd, pid, invocation_id FROM sessions WHERE id = 's1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?)),
        )
        .expect("row");
    assert_eq!(
        got,
        (
            "running".into(),
            "run.started.ok".into(),
            "orchestrated".into(),
            "proj".into(),
            "sonnet".into(),
            "coder".into(),
            "claude/tmp/w".into(),
            4242,
            "inv-1".into(),
        )
    );
    let mut bad = start("s2");
    bad.reason_code = "nope".into();
    assert!(matches!(
        db.store
            .persist_session_start(&bad, &actor(ActorType::Executor)),
        Err(StoreError::Rule(_))
    ));
    assert_eq!(
        count(&db.store, "SELECT count(*) FROM sessions WHERE id = 's2'"),
        0
    );
}

// contract: SQL-050
#[test]
fn end_on_a_running_row_makes_the_terminal_transition() {
    let db = db();
    db.store
        .persist_session_start(&start("s1"), &actor(ActorType::Executor))
        .expect("start");
    let out = db
        .store
        .persist_session_end(&end("s1", 10), &actor(ActorType::Executor))
        .expect("end");
    assert_eq!(out.result, OutcomeKind::Applied);
    assert_eq!(
        row(&db, "s1"),
        (
            "completed".into(),
            Some("run.completed.ok".into()),
            Some(1_000),
            Some(10),
            None
        )
    );
    assert_eq!(db.store.history("session", "s1").expect("history").len(), 2);
}

// contract: SQL-046, SQL-047, SQL-048
#[test]
fn end_on_a_terminal_row_writes_usage_only() {
    let db = db();
    db.store
        .persist_session_start(&start("s1"), &actor(ActorType::Executor))
        .expect("start");
    db.store
        .update_session(
            "s1",
            &BTreeMap::from([("node_metadata".to_owned(), json!({"k": 1}))]),
        )
        .expect("meta");
    let mut first = end("s1", 10);
    first.status = "failed".into();
    first.reason_code = "run.failed.exit_nonzero".into();
    db.store
        .persist_session_end(&first, &actor(ActorType::Executor))
        .expect("end");
    let history = db.store.history("session", "s1").expect("history").len();
    let mut again = end("s1", 99);
    again.error = Some("late duplicate end with an error".into());
    again.ended_at = 9_999;
    let out = db
        .store
        .persist_session_end(&again, &actor(ActorType::Executor))
        .expect("end again");
    assert_eq!(out.transition_id, None);
    let (status, code, ended, tokens, meta) = row(&db, "s1");
    assert_eq!(
        (status.as_str(), code.as_deref(), ended, tokens),
        (
            "failed",
            Some("run.failed.exit_nonzero"),
            Some(1_000),
            Some(99)
        )
    );
    assert_eq!(meta.as_deref(), Some(r#"{"k":1}"#));
    assert_eq!(
        db.store.history("session", "s1").expect("history").len(),
        history
    );
    // Every usage field is written, not only the input tokens.
    let mut third = end("s1", 7);
    third.usage = Usage {
        input_tokens: Some(7),
        output_tokens: Some(70),
        total_cost_usd: Some(1.25),
        num_turns: Some(9),
        duration_ms: Some(4_500),
        model: None,
    };
    db.store
        .persist_session_end(&third, &actor(ActorType::Executor))
        .expect("end a third time");
    let usage: (i64, i64, f64, i64, i64) = db
        .store
        .engine()
        .conn()
        .expect("conn")
        .query_row(
            "SELECT input_tokens, output_tokens, total_cost_usd, num_turns, duration_ms
             FROM sessions WHERE id = 's1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .expect("usage");
    assert_eq!(usage, (7, 70, 1.25, 9, 4_500));
    assert_eq!(row(&db, "s1").0, "failed");
}

// contract: SQL-049
#[test]
fn update_session_is_a_plain_set() {
    let db = db();
    db.store
        .persist_session_start(&start("s1"), &actor(ActorType::Executor))
        .expect("start");
    db.store
        .update_session(
            "s1",
            &BTreeMap::from([("node_metadata".to_owned(), json!({"a": 1, "b": 2}))]),
        )
        .expect("set");
    db.store
        .update_session(
            "s1",
            &BTreeMap::from([("node_metadata".to_owned(), json!({"c": 3}))]),
        )
        .expect("set");
    assert_eq!(row(&db, "s1").4.as_deref(), Some(r#"{"c":3}"#));
    let err = db
        .store
        .update_session(
            "s1",
            &BTreeMap::from([("status".to_owned(), json!("completed"))]),
        )
        .expect_err("status is not settable");
    assert!(matches!(err, StoreError::ColumnNotAllowed { .. }));
    assert!(
        !db.store
            .update_session(
                "ghost",
                &BTreeMap::from([("project".to_owned(), json!("p"))])
            )
            .expect("no row")
    );
}

#[test]
fn messages_are_recorded_once_and_move_the_liveness_clock() {
    let db = db();
    db.store
        .persist_session_start(&start("s1"), &actor(ActorType::Executor))
        .expect("start");
    assert!(
        db.store
            .record_message("s1", "m1", "assistant", "hi", 50)
            .expect("first")
    );
    assert!(
        !db.store
            .record_message("s1", "m1", "assistant", "hi", 60)
            .expect("again")
    );
    assert!(
        db.store
            .record_message("s1", "m0", "system", "init", 10)
            .expect("older")
    );
    let last: i64 = db
        .store
        .engine()
        .conn()
        .expect("conn")
        .query_row(
            "SELECT last_message_at FROM sessions WHERE id = 's1'",
            [],
            |r| r.get(0),
        )
        .expect("row");
    assert_eq!(last, 50);
    assert_eq!(count(&db.store, "SELECT count(*) FROM messages"), 2);
}
