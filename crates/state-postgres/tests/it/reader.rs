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
