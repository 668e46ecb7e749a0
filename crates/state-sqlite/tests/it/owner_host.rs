//! Migration 0008: a file written before the owner's host was recorded
//! upgrades in place. Its sessions read back with no host (a sweep judges
//! them as before on this single-host file), and a start recorded after the
//! upgrade stores its owner's host.

use lifecycle_core::{Actor, ActorType, OwnerRecord, SessionRecorder, SessionStart};
use rusqlite::Connection;
use state_sqlite::{Engine, EngineConfig, MIGRATIONS, Store, schema_version};

use crate::common::migrate_before;

#[test]
fn a_file_from_before_0008_upgrades_and_its_sessions_have_no_host() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.db");
    {
        // What an older build left: every migration before 0008 and a
        // session whose owner has a pid, start time and boot id only.
        let conn = Connection::open(&path).expect("open");
        migrate_before(&conn, 8);
        conn.execute(
            "INSERT INTO sessions (id, status, created_at, updated_at, owner_pid, owner_start_time, owner_boot_id)
             VALUES ('old', 'running', 1, 1, 7, 9, 'boot-a')",
            [],
        )
        .expect("an old session");
    }

    let store = Store::new(Engine::create(&path, EngineConfig::default()).expect("upgrade"));
    let conn = Connection::open(&path).expect("open");
    assert_eq!(
        schema_version(&conn).expect("version"),
        MIGRATIONS.last().expect("one").version
    );
    let old = store.session("old").expect("read").expect("row");
    assert_eq!(
        old.owner(),
        Some(OwnerRecord {
            pid: 7,
            start_time: Some(9),
            boot_id: Some("boot-a".into()),
            host_id: None,
        })
    );
    // A local file is one host's: such a row is judged as before.
    assert!(!store.shared_by_hosts());

    let owner = OwnerRecord {
        pid: 8,
        start_time: Some(10),
        boot_id: Some("boot-b".into()),
        host_id: Some("machine-a:host-a".into()),
    };
    let start = SessionStart {
        owner: Some(owner.clone()),
        ..SessionStart::new("new", "run.started.ok")
    };
    store
        .persist_session_start(&start, &Actor::new(ActorType::Executor, "t"))
        .expect("start");
    let new = store.session("new").expect("read").expect("row");
    assert_eq!(new.owner(), Some(owner));
}
