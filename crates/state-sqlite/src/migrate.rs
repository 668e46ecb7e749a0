//! Embedded, numbered migrations with recorded checksums.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use sha2::{Digest, Sha256};

use crate::error::StoreError;
use crate::time::now_micros;

/// One embedded migration.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// Its number, starting at 1.
    pub version: u32,
    /// Its name.
    pub name: &'static str,
    /// Its SQL.
    pub sql: &'static str,
}

/// Every migration of this build, in order.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "initial",
        sql: include_str!("../migrations/0001_initial.sql"),
    },
    Migration {
        version: 2,
        name: "session_owner_and_spawn",
        sql: include_str!("../migrations/0002_session_owner_and_spawn.sql"),
    },
    Migration {
        version: 3,
        name: "outbox_delivery",
        sql: include_str!("../migrations/0003_outbox_delivery.sql"),
    },
    Migration {
        version: 5,
        name: "transcript_mirror",
        sql: include_str!("../migrations/0005_transcript_mirror.sql"),
    },
    Migration {
        version: 6,
        name: "schedules",
        sql: include_str!("../migrations/0006_schedules.sql"),
    },
    Migration {
        version: 8,
        name: "session_owner_host",
        sql: include_str!("../migrations/0008_session_owner_host.sql"),
    },
    Migration {
        version: 9,
        name: "history_rowid_terminal_index",
        sql: include_str!("../migrations/0009_history_rowid_terminal_index.sql"),
    },
];

impl Migration {
    /// The hex sha256 of the SQL text.
    pub fn checksum(&self) -> String {
        Sha256::digest(self.sql.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// Applies every pending migration, each in its own IMMEDIATE transaction;
/// verifies the checksums of those already applied. Returns the versions
/// applied now.
pub fn migrate(conn: &mut Connection) -> Result<Vec<u32>, StoreError> {
    let known = MIGRATIONS.last().map_or(0, |m| m.version);
    let mut applied = Vec::new();
    for m in MIGRATIONS {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // In the migration's own transaction: a first migration that fails
        // (on a file that is not lionrt's) leaves no table behind.
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_migrations (
                version INTEGER PRIMARY KEY NOT NULL,
                name TEXT NOT NULL,
                checksum TEXT NOT NULL,
                applied_at INTEGER NOT NULL
            )",
        )?;
        let existing: Option<String> = tx
            .query_row(
                "SELECT checksum FROM schema_migrations WHERE version = ?1",
                [m.version],
                |r| r.get(0),
            )
            .optional()?;
        match existing {
            Some(sum) if sum == m.checksum() => {}
            Some(_) => return Err(StoreError::MigrationChecksum { version: m.version }),
            None => {
                tx.execute_batch(m.sql)?;
                tx.execute(
                    "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?1, ?2, ?3, ?4)",
                    params![m.version, m.name, m.checksum(), now_micros()],
                )?;
                applied.push(m.version);
            }
        }
        tx.commit()?;
    }
    let found: Option<u32> =
        conn.query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
            r.get(0)
        })?;
    if let Some(found) = found.filter(|f| *f > known) {
        return Err(StoreError::SchemaTooNew { found, known });
    }
    Ok(applied)
}

/// The highest applied migration, or 0.
pub fn schema_version(conn: &Connection) -> Result<u32, StoreError> {
    let exists: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations')",
        [],
        |r| r.get(0),
    )?;
    if !exists {
        return Ok(0);
    }
    let v: Option<u32> = conn.query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
        r.get(0)
    })?;
    Ok(v.unwrap_or(0))
}
