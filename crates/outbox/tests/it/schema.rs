//! The outbox's schema footprint.

use rusqlite::Connection;
use state_sqlite::MIGRATIONS;

fn schedules_ddl(up_to: u32) -> Option<String> {
    let conn = Connection::open_in_memory().expect("memory db");
    for m in MIGRATIONS.iter().filter(|m| m.version <= up_to) {
        conn.execute_batch(m.sql).expect("migration applies");
    }
    conn.query_row(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'schedules'",
        [],
        |r| r.get(0),
    )
    .ok()
}

// contract: OBX-025
#[test]
fn the_outbox_migration_leaves_the_schedules_table_alone() {
    let outbox = MIGRATIONS
        .iter()
        .find(|m| m.name == "outbox_delivery")
        .expect("the outbox migration is embedded");
    // Revival is a library call: the outbox's migration adds no schedule
    // action kind and does not rebuild the schedules table or its checks.
    let before = schedules_ddl(outbox.version - 1);
    let after = schedules_ddl(outbox.version);
    assert!(before.is_some());
    assert_eq!(before, after);
    let sql = outbox.sql.to_lowercase();
    assert!(!sql.contains("schedules") && !sql.contains("action_kind"));
}
