//! The store's mirror writes: upserts, progression dedupe, scaffold order
//! and repair, no overwrite, project backfill, status untouched.

use state_sqlite::{MirrorBatch, MirrorMessage};

use crate::common::{Env, message, scaffold, write};

// contract: SQL-053
#[test]
fn messages_upsert_by_id_and_progressions_hold_each_id_once() {
    let env = Env::new();
    let s = scaffold("s-upsert", Some("acme"));
    let m1 = message("m1", 10);
    let first = write(&env.store, &s, &[m1.clone(), m1.clone(), message("m2", 20)]);
    assert_eq!(first.messages_added, 2);
    // The same id with new content updates the row in place.
    let changed = MirrorMessage {
        content: "{\"instruction\":\"edited\"}".into(),
        ..m1.clone()
    };
    let second = write(&env.store, &s, &[changed, message("m2", 20)]);
    assert_eq!((second.messages_added, second.messages_updated), (0, 1));
    assert_eq!(env.count("SELECT count(*) FROM messages"), 2);
    assert_eq!(
        env.text("SELECT content FROM messages WHERE id = ?1", "m1")
            .as_deref(),
        Some("{\"instruction\":\"edited\"}")
    );
    assert_eq!(
        env.count("SELECT count(*) FROM progression_items WHERE message_id = 'm1'"),
        1
    );
    let order = env.progression_order();
    assert_eq!(order, [("m1".to_owned(), 0), ("m2".to_owned(), 1)]);
}

// contract: SQL-056
#[test]
fn mirroring_never_changes_the_session_status() {
    let env = Env::new();
    let s = scaffold("s-status", Some("acme"));
    write(&env.store, &s, &[message("a", 10)]);
    for status in ["completed", "failed", "cancelled"] {
        env.exec(&format!(
            "UPDATE sessions SET status = '{status}' WHERE id = 's-status'"
        ));
        let history = env
            .store
            .history("session", "s-status")
            .expect("history")
            .len();
        let now = state_sqlite::now_micros();
        let w = write(&env.store, &s, &[message(&format!("new-{status}"), now)]);
        assert_eq!(w.messages_added, 1);
        assert_eq!(
            env.text("SELECT status FROM sessions WHERE id = ?1", "s-status")
                .as_deref(),
            Some(status),
            "a fresh message does not revive the session by itself"
        );
        assert_eq!(
            env.store
                .history("session", "s-status")
                .expect("history")
                .len(),
            history
        );
    }
}

// contract: SQL-057
#[test]
fn scaffold_writes_run_every_call_in_order_and_repair_a_partial_scaffold() {
    let env = Env::new();
    env.exec(
        "CREATE TABLE scaffold_log (n INTEGER PRIMARY KEY AUTOINCREMENT, t TEXT);
         CREATE TRIGGER log_p AFTER INSERT ON progressions BEGIN INSERT INTO scaffold_log (t) VALUES ('progressions'); END;
         CREATE TRIGGER log_s AFTER INSERT ON sessions BEGIN INSERT INTO scaffold_log (t) VALUES ('sessions'); END;
         CREATE TRIGGER log_b AFTER INSERT ON branches BEGIN INSERT INTO scaffold_log (t) VALUES ('branches'); END;",
    );
    let s = scaffold("s-order", Some("acme"));
    write(&env.store, &s, &[message("o1", 10)]);
    let log = |env: &Env| -> Vec<String> {
        let conn = env.store.engine().conn().expect("conn");
        let mut stmt = conn
            .prepare("SELECT t FROM scaffold_log ORDER BY n")
            .expect("prepare");
        stmt.query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    };
    assert_eq!(log(&env), ["progressions", "sessions", "branches"]);
    // An earlier pass died after committing the session: no branch, no
    // progression. The next call (even one with no new message) repairs it.
    env.exec("DELETE FROM scaffold_log; DELETE FROM branches; DELETE FROM progression_items; DELETE FROM progressions;");
    let w = write(&env.store, &s, &[]);
    assert!(
        w.progression_created && w.branch_created && !w.session_created,
        "{w:?}"
    );
    assert_eq!(log(&env), ["progressions", "branches"]);
    // A failing branch write rolls the whole call back; the next call
    // creates everything.
    let fresh = scaffold("s-fail", None);
    env.exec("CREATE TRIGGER fail_b BEFORE INSERT ON branches BEGIN SELECT RAISE(ABORT, 'branch write failed'); END;");
    let failed = env.store.mirror_session(&MirrorBatch {
        session: &fresh,
        messages: &[message("f1", 10)],
        event_uuids: &[],
        cursor: None,
    });
    assert!(failed.is_err());
    env.exec("DROP TRIGGER fail_b;");
    let w = write(&env.store, &fresh, &[message("f1", 10)]);
    assert!(
        w.progression_created && w.session_created && w.branch_created,
        "{w:?}"
    );
    assert_eq!(w.messages_added, 1);
}

// contract: SQL-058
#[test]
fn scaffold_re_runs_never_overwrite_existing_rows() {
    let env = Env::new();
    let s = scaffold("s-keep", Some("acme"));
    write(&env.store, &s, &[message("k1", 10)]);
    let row = |env: &Env| {
        let conn = env.store.engine().conn().expect("conn");
        conn.query_row(
            "SELECT project, model, agent_name, provider, node_metadata, created_at, progression_id FROM sessions WHERE id = 's-keep'",
            [],
            |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, Option<String>>(6)?,
                ))
            },
        )
        .expect("row")
    };
    let branch = |env: &Env| {
        env.text("SELECT session_id || '/' || progression_id || '/' || created_at FROM branches WHERE id = ?1", &s.branch_id)
    };
    let before = (row(&env), branch(&env));
    assert_eq!(before.0.5, 1_000, "created_at is the transcript start");
    let other = state_sqlite::MirrorSession {
        project: Some("other".into()),
        model: Some("m2".into()),
        agent_name: Some("someone".into()),
        provider: Some("codex".into()),
        node_metadata: Some(serde_json::json!({"x": 1})),
        started_at: Some(5_000),
        ..s.clone()
    };
    write(&env.store, &other, &[message("k2", 20)]);
    assert_eq!((row(&env), branch(&env)), before);
}

// contract: SQL-059
#[test]
fn project_backfill_leaves_the_liveness_clock_alone() {
    let env = Env::new();
    let s = scaffold("s-backfill", None);
    write(&env.store, &s, &[message("b1", 123_456)]);
    assert_eq!(
        env.text("SELECT project FROM sessions WHERE id = ?1", "s-backfill"),
        None
    );
    let clock = env.int(
        "SELECT last_message_at FROM sessions WHERE id = ?1",
        "s-backfill",
    );
    assert_eq!(clock, Some(123_456));
    let with_project = state_sqlite::MirrorSession {
        project: Some("acme".into()),
        ..s.clone()
    };
    let w = write(&env.store, &with_project, &[]);
    assert!(w.project_backfilled);
    assert_eq!(
        env.text("SELECT project FROM sessions WHERE id = ?1", "s-backfill")
            .as_deref(),
        Some("acme")
    );
    assert_eq!(
        env.int(
            "SELECT last_message_at FROM sessions WHERE id = ?1",
            "s-backfill"
        ),
        clock
    );
    // And never over an existing project.
    let w = write(
        &env.store,
        &state_sqlite::MirrorSession {
            project: Some("zzz".into()),
            ..s
        },
        &[],
    );
    assert!(!w.project_backfilled);
    assert_eq!(
        env.text("SELECT project FROM sessions WHERE id = ?1", "s-backfill")
            .as_deref(),
        Some("acme"),
        "an existing project is never overwritten"
    );
}

// contract: SQL-059
#[test]
fn a_transcript_that_names_its_cwd_later_backfills_the_project() {
    let env = Env::new();
    let path = env.claude_file("s-late-cwd");
    // The first pass sees an event with no cwd.
    crate::common::append(
        &path,
        "{\"type\":\"user\",\"uuid\":\"l1\",\"parentUuid\":null,\"sessionId\":\"s-late-cwd\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    );
    let mut mirror = env.mirror();
    mirror.pass(std::time::SystemTime::now()).expect("pass");
    assert_eq!(
        env.text("SELECT project FROM sessions WHERE id = ?1", "s-late-cwd"),
        None
    );
    let clock = env.int(
        "SELECT last_message_at FROM sessions WHERE id = ?1",
        "s-late-cwd",
    );
    // The next one has a cwd, on a line that adds no message.
    crate::common::append(
        &path,
        "{\"type\":\"system\",\"subtype\":\"informational\",\"uuid\":\"l2\",\"cwd\":\"/srv/work/acme\",\"sessionId\":\"s-late-cwd\",\"timestamp\":\"2026-01-01T00:00:01Z\"}\n{\"type\":\"assistant\",\"uuid\":\"l3\",\"parentUuid\":\"l2\",\"cwd\":\"/srv/work/acme\",\"sessionId\":\"s-late-cwd\",\"timestamp\":\"2025-12-31T23:59:59Z\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"x\"},{\"type\":\"text\",\"text\":\"old\"}]}}\n",
    );
    let report = mirror.pass(std::time::SystemTime::now()).expect("pass");
    assert!(report.files[0].write.project_backfilled, "{report:#?}");
    assert_eq!(
        env.text("SELECT project FROM sessions WHERE id = ?1", "s-late-cwd")
            .as_deref(),
        Some("acme")
    );
    // The new message is no newer than the clock, which stays put.
    assert_eq!(
        env.int(
            "SELECT last_message_at FROM sessions WHERE id = ?1",
            "s-late-cwd"
        ),
        clock
    );
}

// contract: SQL-053
#[test]
fn a_large_batch_mixing_new_existing_and_repeated_ids_keeps_each_id_once_in_order() {
    let env = Env::new();
    let s = scaffold("s-mixed", Some("acme"));
    // 40 rows first; then 70 rows in which every third id already exists,
    // one id appears twice and one existing row changes: the multi-row
    // chunks fall back to row-by-row writes where they meet them.
    let first: Vec<MirrorMessage> = (0..40).map(|i| message(&format!("x{i:03}"), i)).collect();
    assert_eq!(write(&env.store, &s, &first).messages_added, 40);
    let mut second: Vec<MirrorMessage> = (0..70)
        .map(|i| {
            if i % 3 == 0 && i < 60 {
                message(&format!("x{:03}", i / 3), i)
            } else {
                message(&format!("y{i:03}"), 100 + i)
            }
        })
        .collect();
    second.insert(10, message("y001", 101));
    second[0].content = "{\"instruction\":\"changed\"}".into();
    let w = write(&env.store, &s, &second);
    let new_ids = 70 - 20;
    assert_eq!((w.messages_added, w.messages_updated), (new_ids, 1));
    assert_eq!(
        env.count("SELECT count(*) FROM messages"),
        (40 + new_ids) as i64
    );
    let order = env.progression_order();
    let mut expected: Vec<String> = first.iter().map(|m| m.id.clone()).collect();
    for m in &second {
        if !expected.contains(&m.id) {
            expected.push(m.id.clone());
        }
    }
    assert_eq!(order.len(), expected.len());
    for (i, (id, position)) in order.iter().enumerate() {
        assert_eq!((id, *position), (&expected[i], i as i64));
    }
    assert_eq!(
        env.int(
            "SELECT next_position FROM progressions WHERE id = ?1",
            &s.progression_id
        ),
        Some(expected.len() as i64)
    );
    assert_eq!(
        env.text(
            "SELECT last_msg_id FROM branches WHERE id = ?1",
            &s.branch_id
        ),
        expected.last().cloned()
    );
}

// contract: SQL-053
#[test]
fn a_new_message_already_listed_in_its_progression_is_not_listed_twice() {
    let env = Env::new();
    let s = scaffold("s-listed", Some("acme"));
    assert_eq!(write(&env.store, &s, &[message("m0", 0)]).messages_added, 1);
    // The progression already lists "orphan" (position 1) although the
    // messages table has no such row. A batch of 20 rows, all new to the
    // messages table, reaches it inside a 16-row statement: the message is
    // inserted, its listing is not repeated, and the other 19 take the
    // next positions in batch order, with no gap.
    env.exec(&format!(
        "INSERT INTO progression_items (progression_id, message_id, position)
         VALUES ('{p}', 'orphan', 1);
         UPDATE progressions SET next_position = 2 WHERE id = '{p}';",
        p = s.progression_id
    ));
    let mut batch: Vec<MirrorMessage> = (0..20)
        .map(|i| message(&format!("n{i:02}"), 10 + i))
        .collect();
    batch[9] = message("orphan", 19);
    let w = write(&env.store, &s, &batch);
    assert_eq!((w.messages_added, w.messages_updated), (20, 0));
    assert_eq!(env.count("SELECT count(*) FROM messages"), 21);
    let order = env.progression_order();
    let mut expected = vec!["m0".to_owned(), "orphan".to_owned()];
    expected.extend(
        batch
            .iter()
            .map(|m| m.id.clone())
            .filter(|id| id != "orphan"),
    );
    let got: Vec<&str> = order.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(got, expected);
    let positions: Vec<i64> = order.iter().map(|(_, p)| *p).collect();
    assert_eq!(positions, (0..21).collect::<Vec<i64>>());
    assert_eq!(
        env.int(
            "SELECT next_position FROM progressions WHERE id = ?1",
            &s.progression_id
        ),
        Some(21)
    );
}
