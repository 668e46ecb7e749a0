//! `update_session_metadata` against concurrent writers on PostgreSQL:
//! threads, each with its own engine (its own pool and connections),
//! merging distinct keys into one session's node_metadata. A
//! read-modify-write without the row lock loses keys here.

use lifecycle_core::{Actor, ActorType, MetadataUpdate, SessionStart};
use serde_json::{Value, json};
use state_postgres::PgStore;

use crate::common::{Schema, server};

const KEYS: usize = 60;

fn merge_keys(store: &PgStore, prefix: &str) {
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

#[test]
fn threads_merging_keys_into_one_session_lose_none() {
    let Some(url) = server("metadata") else {
        return;
    };
    let schema = Schema::new(&url, "metadata");
    let store = schema.store();
    store
        .persist_session_start(
            &SessionStart::new("s1", "run.started.ok"),
            &Actor::new(ActorType::Executor, "test"),
        )
        .expect("start");
    store
        .update_session_metadata("s1", "first", &mut |_| Some(json!("kept")))
        .expect("first key");
    let prefixes = ["t0", "t1", "t2", "t3"];
    std::thread::scope(|scope| {
        for prefix in prefixes {
            let own = schema.store();
            scope.spawn(move || merge_keys(&own, prefix));
        }
    });
    let snap = store.session("s1").expect("read").expect("session");
    let meta: serde_json::Map<String, Value> = match snap.columns.get("node_metadata") {
        Some(Value::String(text)) => serde_json::from_str(text).expect("json object"),
        other => panic!("node_metadata: {other:?}"),
    };
    assert_eq!(meta.get("first"), Some(&json!("kept")));
    for prefix in prefixes {
        for i in 0..KEYS {
            assert_eq!(
                meta.get(&format!("{prefix}-{i}")),
                Some(&json!(i)),
                "key {prefix}-{i} lost"
            );
        }
    }
    assert_eq!(meta.get("total"), Some(&json!(prefixes.len() * KEYS)));
    assert_eq!(meta.len(), prefixes.len() * KEYS + 2);
}
