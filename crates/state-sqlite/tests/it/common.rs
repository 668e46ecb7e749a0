//! Shared helpers: temp databases and command builders.

use std::path::PathBuf;

use lifecycle_core::{Actor, ActorType, InitialCommand, Reason};
use rusqlite::{Connection, params};
use serde_json::Value;
use state_sqlite::{Engine, EngineConfig, MIGRATIONS, Store};
use tempfile::TempDir;

pub(crate) struct Db {
    pub(crate) dir: TempDir,
    pub(crate) store: Store,
}

impl Db {
    pub(crate) fn path(&self) -> PathBuf {
        self.dir.path().join("state.db")
    }
}

pub(crate) fn db() -> Db {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine =
        Engine::create(dir.path().join("state.db"), EngineConfig::default()).expect("engine");
    Db {
        dir,
        store: Store::new(engine),
    }
}

pub(crate) fn actor(kind: ActorType) -> Actor {
    Actor::new(kind, "test")
}

pub(crate) fn create(
    store: &Store,
    entity: &str,
    id: &str,
    status: &str,
    code: &str,
    patch: &[(&str, Value)],
) {
    store
        .create(&InitialCommand {
            entity_type: entity.into(),
            entity_id: id.into(),
            status: status.into(),
            reason: Reason::new(code),
            actor: actor(ActorType::System),
            patch: patch
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        })
        .expect("create");
}

pub(crate) fn count(store: &Store, sql: &str) -> i64 {
    store
        .engine()
        .conn()
        .expect("conn")
        .query_row(sql, [], |r| r.get(0))
        .expect("count")
}

/// What an older build left on `conn`: the migrations table and every
/// migration before `version`, applied and recorded.
pub(crate) fn migrate_before(conn: &Connection, version: u32) {
    conn.execute_batch(
        "CREATE TABLE schema_migrations (
            version INTEGER PRIMARY KEY NOT NULL,
            name TEXT NOT NULL,
            checksum TEXT NOT NULL,
            applied_at INTEGER NOT NULL
        )",
    )
    .expect("migrations table");
    for m in MIGRATIONS.iter().filter(|m| m.version < version) {
        conn.execute_batch(m.sql).expect("an older migration");
        conn.execute(
            "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?1, ?2, ?3, 0)",
            params![m.version, m.name, m.checksum()],
        )
        .expect("record it");
    }
}
