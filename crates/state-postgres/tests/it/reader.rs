//! The read seam on PostgreSQL against SQLite's, as a differential
//! property: the same sessions written to both stores read back the same
//! (prefix matches with their sorted candidates, listings in order with
//! their filters, messages after a cursor), whatever the ids (non-ASCII
//! included: PostgreSQL's "C" order and SQLite's BINARY order are both
//! code-point order).

use std::sync::atomic::{AtomicU32, Ordering};

use lifecycle_core::{
    Actor, ActorType, SessionEnd, SessionFilter, SessionRecorder, SessionStart, StateReader,
};
use proptest::prelude::*;
use state_sqlite::{Engine, EngineConfig, Store};

use crate::common::{Schema, server};

static CASE: AtomicU32 = AtomicU32::new(0);

fn write<S: SessionRecorder>(store: &S, ids: &[String], ended: &[bool]) {
    let actor = Actor::new(ActorType::Executor, "diff");
    for (n, id) in ids.iter().enumerate() {
        store
            .persist_session_start(&SessionStart::new(id, "run.started.ok"), &actor)
            .expect("start");
        let at = i64::try_from(n).unwrap_or(0);
        store
            .record_message(id, &format!("{id}#m"), "assistant", "\"x\"", 100 - at)
            .expect("message");
        store
            .record_message(id, &format!("{id}#n"), "user", "\"y\"", 50 - at)
            .expect("message");
        if ended.get(n).copied().unwrap_or(false) {
            store
                .persist_session_end(
                    &SessionEnd::new(id, "completed", "run.completed.ok", 1_000),
                    &actor,
                )
                .expect("end");
        }
    }
}

/// What the reads show, without the times (the two stores take their
/// own clocks).
fn reads<R: StateReader>(r: &R, scope: &str, ids: &[String], probes: &[String]) -> Vec<String> {
    let mut seen = Vec::new();
    for p in probes {
        seen.push(format!(
            "{:?}",
            r.match_id("session", &format!("{scope}{p}"))
                .expect("match")
        ));
    }
    let mut open = SessionFilter::open();
    open.limit = Some(1000);
    for filter in [SessionFilter::all(), open] {
        let rows: Vec<String> = r
            .sessions(&filter)
            .expect("ls")
            .into_iter()
            .filter(|s| s.id.starts_with(scope))
            .map(|s| format!("{} {} {}", s.id, s.status, s.messages))
            .collect();
        seen.push(rows.join("|"));
    }
    for id in ids {
        let all = r.messages(id, 0, 10).expect("messages");
        let after = r.messages(id, all[0].seq, 10).expect("after");
        let text = |m: &[lifecycle_core::MessageRow]| {
            m.iter().map(|m| m.id.clone()).collect::<Vec<_>>().join(",")
        };
        seen.push(format!("{} / {}", text(&all), text(&after)));
    }
    seen
}

fn id_chars() -> impl Strategy<Value = String> {
    // Short ids over a small alphabet, so prefixes collide often; with a
    // non-ASCII letter and one past the BMP.
    proptest::collection::vec(
        prop_oneof![Just('a'), Just('b'), Just('é'), Just('𝔸'), Just('-')],
        1..5,
    )
    .prop_map(|c| c.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn postgres_reads_back_what_sqlite_reads_back(
        raw in proptest::collection::btree_set(id_chars(), 1..10),
        ended in proptest::collection::vec(any::<bool>(), 10),
        probes in proptest::collection::vec(id_chars(), 1..6),
    ) {
        let Some(url) = server("reader_diff") else { return Ok(()) };
        let n = CASE.fetch_add(1, Ordering::SeqCst);
        // A schema and a file of the case's own; the ids carry a scope
        // too, so the listing is read back among the case's rows only.
        let scope = format!("k{n}:");
        let ids: Vec<String> = raw.iter().map(|r| format!("{scope}{r}")).collect();
        let mut probes = probes;
        probes.push(String::new());
        probes.extend(raw.iter().take(2).cloned());
        let schema = Schema::new(&url, "reader_diff");
        let dir = tempfile::tempdir().expect("tempdir");
        let pg = schema.store();
        let sqlite = Store::new(
            Engine::create(dir.path().join("diff.db"), EngineConfig::default()).expect("sqlite"),
        );
        write(&pg, &ids, &ended);
        write(&sqlite, &ids, &ended);
        prop_assert_eq!(reads(&pg, &scope, &ids, &probes), reads(&sqlite, &scope, &ids, &probes));
    }
}

#[test]
fn a_prune_takes_a_sessions_mirror_rows_with_it() {
    use lifecycle_core::SessionRetention;
    let Some(url) = server("prune_mirror") else {
        return;
    };
    let schema = Schema::new(&url, "prune_mirror");
    let store = schema.store();
    let actor = Actor::new(ActorType::Executor, "t");
    let mut c = schema.client();
    for id in ["gone", "kept"] {
        store
            .persist_session_start(&SessionStart::new(id, "run.started.ok"), &actor)
            .expect("start");
        store
            .record_message(id, &format!("{id}-m"), "assistant", "\"x\"", 1)
            .expect("message");
        // What the transcript mirror writes for a session (migration 0004).
        c.batch_execute(&format!(
            "INSERT INTO progressions (id, next_position, created_at) VALUES ('p-{id}', 1, 1);
             INSERT INTO progression_items (progression_id, message_id, position)
                 VALUES ('p-{id}', '{id}-m', 0);
             UPDATE sessions SET progression_id = 'p-{id}' WHERE id = '{id}';
             INSERT INTO branches (id, session_id, first_msg_id, created_at)
                 VALUES ('b-{id}', '{id}', '{id}-m', 1);
             INSERT INTO mirror_events (event_uuid, session_id) VALUES ('e-{id}', '{id}');"
        ))
        .expect("mirror rows");
    }
    store
        .persist_session_end(
            &SessionEnd::new("gone", "completed", "run.completed.ok", 1_000),
            &actor,
        )
        .expect("end");
    let report = store
        .prune_sessions(2_000, false, &Actor::new(ActorType::Operator, "t"))
        .expect("prune");
    assert_eq!((report.sessions, report.messages), (1, 1));
    let count = |c: &mut postgres::Client, sql: &str, id: &str| -> i64 {
        c.query_one(sql, &[&id]).expect(sql).get(0)
    };
    for id in ["gone", "kept"] {
        let want = i64::from(id == "kept");
        let p = format!("p-{id}");
        assert_eq!(
            count(
                &mut c,
                "SELECT count(*) FROM progressions WHERE id = $1",
                &p
            ),
            want,
            "{id}"
        );
        assert_eq!(
            count(
                &mut c,
                "SELECT count(*) FROM progression_items WHERE progression_id = $1",
                &p
            ),
            want,
            "{id}"
        );
        for table in ["branches", "mirror_events", "messages", "sessions"] {
            let column = if table == "sessions" {
                "id"
            } else {
                "session_id"
            };
            let sql = format!("SELECT count(*) FROM {table} WHERE {column} = $1");
            assert_eq!(count(&mut c, &sql, id), want, "{table} of {id}");
        }
    }
}
