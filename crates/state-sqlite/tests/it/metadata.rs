//! `update_session_metadata` against concurrent writers: real processes
//! (this test binary re-run as workers) and threads, each with its own
//! connections, merging distinct keys into one session's node_metadata.
//! A read-modify-write outside the write lock loses keys here.

use std::process::{Command, Stdio};
use std::time::Duration;

use lifecycle_core::{ActorType, MetadataUpdate, SessionStart};
use serde_json::{Value, json};
use state_sqlite::{Engine, EngineConfig, Store};

use crate::common::{actor, db};

const ROLE: &str = "STATE_SQLITE_TEST_METADATA_ROLE";
const DB: &str = "STATE_SQLITE_TEST_METADATA_DB";
const KEYS: usize = 120;

fn open(path: &std::path::Path) -> Store {
    let config = EngineConfig {
        busy_timeout: Duration::from_secs(60),
        ..EngineConfig::default()
    };
    Store::new(Engine::open(path, config).expect("engine"))
}

/// Writes `KEYS` keys `<prefix>-<i>`, each with a counter bumped from the
/// value the update reads (so a stale read would also show as a wrong
/// count on the shared `total` key).
fn merge_keys(store: &Store, prefix: &str) {
    for i in 0..KEYS {
        let out = store
            .update_session_metadata("s1", &format!("{prefix}-{i}"), &mut |_| Some(json!(i)))
            .expect("merge");
        assert_eq!(out, MetadataUpdate::Written);
        let out = store
            .update_session_metadata("s1", "total", &mut |current| {
                Some(json!(current.and_then(Value::as_u64).unwrap_or(0) + 1))
            })
            .expect("merge total");
        assert_eq!(out, MetadataUpdate::Written);
    }
}

/// Worker role: merge this worker's keys into session s1.
#[test]
fn worker_merge_metadata() {
    let Ok(prefix) = std::env::var(ROLE) else {
        return;
    };
    let path = std::env::var(DB).expect("db path");
    merge_keys(&open(std::path::Path::new(&path)), &prefix);
}

fn stored(store: &Store) -> serde_json::Map<String, Value> {
    let snap = lifecycle_core::SessionRecorder::session(store, "s1")
        .expect("read")
        .expect("session");
    match snap.columns.get("node_metadata") {
        Some(Value::String(text)) => match serde_json::from_str(text).expect("json") {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        },
        other => panic!("node_metadata: {other:?}"),
    }
}

#[test]
fn processes_and_threads_merging_keys_into_one_session_lose_none() {
    let db = db();
    db.store
        .persist_session_start(
            &SessionStart::new("s1", "run.started.ok"),
            &actor(ActorType::Executor),
        )
        .expect("start");
    db.store
        .update_session_metadata("s1", "first", &mut |_| Some(json!("kept")))
        .expect("first key");
    let exe = std::env::current_exe().expect("test binary");
    let children: Vec<_> = ["p0", "p1"]
        .iter()
        .map(|prefix| {
            Command::new(&exe)
                .args([
                    "metadata::worker_merge_metadata",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(ROLE, prefix)
                .env(DB, db.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn worker")
        })
        .collect();
    let path = db.path();
    std::thread::scope(|scope| {
        for prefix in ["t0", "t1"] {
            let path = &path;
            scope.spawn(move || merge_keys(&open(path), prefix));
        }
    });
    for mut child in children {
        assert!(child.wait().expect("worker").success(), "worker failed");
    }
    let meta = stored(&db.store);
    assert_eq!(meta.get("first"), Some(&json!("kept")));
    for prefix in ["p0", "p1", "t0", "t1"] {
        for i in 0..KEYS {
            assert_eq!(
                meta.get(&format!("{prefix}-{i}")),
                Some(&json!(i)),
                "key {prefix}-{i} lost"
            );
        }
    }
    // Every increment read the value the previous one wrote.
    assert_eq!(meta.get("total"), Some(&json!(4 * KEYS)));
    assert_eq!(meta.len(), 4 * KEYS + 2);
}
