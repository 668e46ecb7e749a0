//! The behaviour every `SessionRecorder` must show.

use std::collections::BTreeMap;

use lifecycle_core::{
    Actor, ActorType, LegRecord, MetadataUpdate, OutcomeKind, OwnerRecord, SessionEnd,
    SessionRecorder, SessionStart, Usage, leg_columns, owner_columns,
};
use serde_json::{Value, json};

fn actor() -> Actor {
    Actor::new(ActorType::Executor, "recorder-contract")
}

fn start(id: &str) -> SessionStart {
    SessionStart {
        kind: Some("orchestrated".into()),
        project: Some("p".into()),
        model: Some("m".into()),
        agent_name: Some("a".into()),
        provider: Some("scripted".into()),
        cwd: Some("/w".into()),
        pid: Some(42),
        invocation_id: Some("inv-1".into()),
        owner: Some(OwnerRecord {
            pid: 4242,
            start_time: Some(987_654),
            boot_id: Some("boot-a".into()),
            host_id: Some("machine-a:host-a".into()),
        }),
        ..SessionStart::new(id, "run.started.ok")
    }
}

fn end(id: &str, status: &str, reason: &str, tokens: i64) -> SessionEnd {
    SessionEnd {
        usage: Usage {
            input_tokens: Some(tokens),
            output_tokens: Some(tokens + 1),
            total_cost_usd: Some(0.5),
            num_turns: Some(3),
            duration_ms: Some(1200),
            model: None,
        },
        error: Some("boom".into()),
        ..SessionEnd::new(id, status, reason, 1_000)
    }
}

/// An update that stores `value` whatever the key held.
fn put(value: Value) -> impl FnMut(Option<&Value>) -> Option<Value> {
    move |_| Some(value.clone())
}

fn ok<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Runs the recorder contract against fresh recorders from `make`; panics
/// (naming the rule) on the first violation. For use in tests.
pub fn session_recorder_contract<S: SessionRecorder>(make: impl Fn() -> S) {
    // contract: SQL-051
    // The start moves to running with its explicit reason, and every
    // provenance field (the owner included) is persisted.
    let rec = make();
    let out = ok("start", rec.persist_session_start(&start("s1"), &actor()));
    assert_eq!(out.result, OutcomeKind::Applied);
    assert_eq!(out.current_status.as_deref(), Some("running"));
    let snap = ok("session", rec.session("s1")).expect("the started session exists");
    assert_eq!(snap.status, "running");
    assert_eq!(snap.reason_code.as_deref(), Some("run.started.ok"));
    for (column, value) in [
        ("kind", json!("orchestrated")),
        ("project", json!("p")),
        ("model", json!("m")),
        ("agent_name", json!("a")),
        ("provider", json!("scripted")),
        ("cwd", json!("/w")),
        ("pid", json!(42)),
        ("invocation_id", json!("inv-1")),
    ] {
        assert_eq!(
            snap.columns.get(column),
            Some(&value),
            "provenance {column}"
        );
    }
    assert_eq!(
        snap.owner(),
        start("s1").owner,
        "the owner round-trips through the row"
    );
    // The owner's host is stored in its own column: a sweep judges only
    // sessions of its own host.
    assert_eq!(
        snap.columns.get("owner_host_id"),
        Some(&json!("machine-a:host-a")),
        "the owner's host is persisted"
    );
    let history = ok("history", rec.history("session", "s1"));
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].reason_code, "run.started.ok");
    assert_eq!(rec.session("nope").ok().flatten(), None);

    // Messages: insert-or-ignore by id, and the liveness clock moves.
    assert!(ok(
        "message",
        rec.record_message("s1", "s1:1", "assistant", "{}", 10)
    ));
    assert!(!ok(
        "again",
        rec.record_message("s1", "s1:1", "assistant", "{}", 11)
    ));
    assert!(ok(
        "message 2",
        rec.record_message("s1", "s1:2", "result", "{}", 20)
    ));
    let snap = ok("session", rec.session("s1")).expect("exists");
    assert_eq!(snap.messages, 2);
    assert_eq!(snap.columns.get("last_message_at"), Some(&json!(20)));

    // contract: SQL-049
    // update_session is a plain SET: node_metadata is replaced, not merged;
    // an unknown column is refused and writes nothing; a missing row is no
    // update.
    let set = |pairs: &[(&str, Value)]| -> BTreeMap<String, Value> {
        pairs
            .iter()
            .map(|(c, v)| ((*c).to_owned(), v.clone()))
            .collect()
    };
    assert!(ok(
        "update",
        rec.update_session("s1", &set(&[("node_metadata", json!("{\"a\":1}"))]))
    ));
    assert!(ok(
        "update",
        rec.update_session("s1", &set(&[("node_metadata", json!("{\"b\":2}"))]))
    ));
    let snap = ok("session", rec.session("s1")).expect("exists");
    assert_eq!(snap.columns.get("node_metadata"), Some(&json!("{\"b\":2}")));
    assert!(
        rec.update_session(
            "s1",
            &set(&[("model", json!("x")), ("status", json!("completed"))])
        )
        .is_err(),
        "status is not an update_session column"
    );
    let snap = ok("session", rec.session("s1")).expect("exists");
    assert_eq!(
        snap.columns.get("model"),
        Some(&json!("m")),
        "nothing written"
    );
    assert_eq!(snap.status, "running");
    assert!(!ok(
        "missing",
        rec.update_session("nope", &set(&[("model", json!("x"))]))
    ));

    // The spawn record round-trips, a missing start time included.
    let leg = LegRecord {
        pid: 777,
        pgid: 777,
        create_time: None,
    };
    assert!(ok("leg", rec.update_session("s1", &leg_columns(&leg))));
    let snap = ok("session", rec.session("s1")).expect("exists");
    assert_eq!(snap.leg(), Some(leg));
    let leg = LegRecord {
        create_time: Some(123),
        ..leg
    };
    assert!(ok("leg", rec.update_session("s1", &leg_columns(&leg))));
    assert_eq!(
        ok("session", rec.session("s1")).and_then(|s| s.leg()),
        Some(leg)
    );

    // The owner written as columns round-trips too, its host included,
    // and so does an owner whose host is unknown.
    let moved = OwnerRecord {
        pid: 4343,
        start_time: Some(5),
        boot_id: Some("boot-b".into()),
        host_id: Some("machine-b:host-b".into()),
    };
    assert!(ok(
        "owner",
        rec.update_session("s1", &owner_columns(&moved))
    ));
    assert_eq!(
        ok("session", rec.session("s1")).and_then(|s| s.owner()),
        Some(moved.clone())
    );
    let unknown = OwnerRecord {
        host_id: None,
        ..moved
    };
    assert!(ok(
        "owner",
        rec.update_session("s1", &owner_columns(&unknown))
    ));
    assert_eq!(
        ok("session", rec.session("s1")).and_then(|s| s.owner()),
        Some(unknown)
    );

    // Open sessions and prefix lookup.
    ok("start", rec.persist_session_start(&start("s2"), &actor()));
    ok("start", rec.persist_session_start(&start("t1"), &actor()));
    let open: Vec<String> = ok("open", rec.open_sessions())
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(open, ["s1", "s2", "t1"]);
    assert_eq!(
        ok("prefix", rec.session_ids_with_prefix("s", 10)),
        ["s1", "s2"]
    );
    assert_eq!(ok("prefix", rec.session_ids_with_prefix("s", 1)), ["s1"]);
    assert_eq!(ok("prefix", rec.session_ids_with_prefix("s1", 10)), ["s1"]);
    assert!(ok("prefix", rec.session_ids_with_prefix("x", 10)).is_empty());
    assert!(ok("prefix", rec.session_ids_with_prefix("%", 10)).is_empty());

    // contract: SQL-050
    // The end of a running session makes the terminal move itself, with
    // ended_at and usage, and the error as the reason summary.
    let out = ok(
        "end",
        rec.persist_session_end(&end("s1", "failed", "run.failed.exit_nonzero", 5), &actor()),
    );
    assert_eq!(out.result, OutcomeKind::Applied);
    assert_eq!(out.current_status.as_deref(), Some("failed"));
    assert!(out.transition_id.is_some());
    let snap = ok("session", rec.session("s1")).expect("exists");
    assert_eq!(snap.status, "failed");
    assert_eq!(snap.reason_code.as_deref(), Some("run.failed.exit_nonzero"));
    assert_eq!(snap.columns.get("ended_at"), Some(&json!(1_000)));
    assert_eq!(snap.columns.get("input_tokens"), Some(&json!(5)));
    let history = ok("history", rec.history("session", "s1"));
    assert_eq!(history.len(), 2);
    assert_eq!(history[1].reason_summary, "boom");
    let open: Vec<String> = ok("open", rec.open_sessions())
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(open, ["s2", "t1"], "a terminal session is not open");

    // contract: SQL-046, SQL-047, SQL-048
    // A second end on a terminal row writes only usage: no status, reason,
    // ended_at, node_metadata or history change.
    let mut again = end("s1", "completed", "run.completed.ok", 9);
    again.ended_at = 2_000;
    let out = ok("end again", rec.persist_session_end(&again, &actor()));
    assert_eq!(out.result, OutcomeKind::Applied);
    assert_eq!(out.transition_id, None);
    assert_eq!(out.current_status.as_deref(), Some("failed"));
    let snap = ok("session", rec.session("s1")).expect("exists");
    assert_eq!(snap.status, "failed");
    assert_eq!(snap.reason_code.as_deref(), Some("run.failed.exit_nonzero"));
    assert_eq!(snap.columns.get("ended_at"), Some(&json!(1_000)));
    assert_eq!(snap.columns.get("input_tokens"), Some(&json!(9)));
    assert_eq!(snap.columns.get("output_tokens"), Some(&json!(10)));
    assert_eq!(snap.columns.get("node_metadata"), Some(&json!("{\"b\":2}")));
    assert_eq!(ok("history", rec.history("session", "s1")).len(), 2);

    // An end for a session that never started is an error, not a row.
    assert!(
        rec.persist_session_end(&end("ghost", "failed", "run.failed.exception", 1), &actor())
            .is_err()
    );
    assert_eq!(rec.session("ghost").ok().flatten(), None);

    // A bad reason code at the end is an error and leaves the row running.
    assert!(
        rec.persist_session_end(&end("s2", "failed", "run.failed.invented", 1), &actor())
            .is_err()
    );
    assert_eq!(
        ok("session", rec.session("s2")).map(|s| s.status),
        Some("running".to_owned())
    );

    // update_session_metadata rewrites one key and keeps the others; the
    // update sees the key's current value; declining writes nothing; a
    // missing row is NotFound; a value that is not a JSON object is left
    // as is.
    let meta = |rec: &S, id: &str| -> Option<Value> {
        let snap = ok("session", rec.session(id)).expect("exists");
        match snap.columns.get("node_metadata") {
            Some(Value::String(text)) => Some(serde_json::from_str(text).expect("json text")),
            None | Some(Value::Null) => None,
            Some(other) => panic!("node_metadata stored as {other}"),
        }
    };
    let mut seen = Vec::new();
    assert_eq!(
        ok(
            "merge",
            rec.update_session_metadata("s1", "k", &mut put(json!({"n": 1})))
        ),
        MetadataUpdate::Written
    );
    assert_eq!(meta(&rec, "s1"), Some(json!({"b": 2, "k": {"n": 1}})));
    assert_eq!(
        ok(
            "merge",
            rec.update_session_metadata("s1", "k", &mut |current| {
                seen.push(current.cloned());
                None
            })
        ),
        MetadataUpdate::Unchanged
    );
    assert_eq!(seen.last(), Some(&Some(json!({"n": 1}))));
    assert_eq!(meta(&rec, "s1"), Some(json!({"b": 2, "k": {"n": 1}})));
    assert_eq!(
        ok(
            "merge",
            rec.update_session_metadata("s1", "k", &mut |current| {
                let n = current.and_then(|c| c["n"].as_i64()).unwrap_or(0);
                Some(json!({"n": n + 1}))
            })
        ),
        MetadataUpdate::Written
    );
    assert_eq!(meta(&rec, "s1"), Some(json!({"b": 2, "k": {"n": 2}})));
    assert_eq!(
        ok(
            "merge",
            rec.update_session_metadata("ghost", "k", &mut put(json!(1)))
        ),
        MetadataUpdate::NotFound
    );
    assert_eq!(rec.session("ghost").ok().flatten(), None);
    // A row with no node_metadata gets an object with the one key.
    assert_eq!(meta(&rec, "s2"), None);
    assert_eq!(
        ok(
            "merge",
            rec.update_session_metadata("s2", "k", &mut put(json!("v")))
        ),
        MetadataUpdate::Written
    );
    assert_eq!(meta(&rec, "s2"), Some(json!({"k": "v"})));
    assert!(ok(
        "update",
        rec.update_session("s2", &set(&[("node_metadata", json!("[1, 2]"))]))
    ));
    assert_eq!(
        ok(
            "merge",
            rec.update_session_metadata("s2", "k", &mut put(json!(1)))
        ),
        MetadataUpdate::NotAnObject
    );
    let snap = ok("session", rec.session("s2")).expect("exists");
    assert_eq!(snap.columns.get("node_metadata"), Some(&json!("[1, 2]")));
}
