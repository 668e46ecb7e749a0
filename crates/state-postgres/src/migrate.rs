//! Embedded, numbered migrations with recorded checksums, applied under an
//! advisory lock so that many hosts opening one database at once apply each
//! migration exactly once.

use postgres::Client;
use sha2::{Digest, Sha256};

use crate::engine::identifier;
use crate::error::PgStoreError;
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
        name: "read_side",
        sql: include_str!("../migrations/0002_read_side.sql"),
    },
    Migration {
        version: 3,
        name: "schedules",
        sql: include_str!("../migrations/0003_schedules.sql"),
    },
    Migration {
        version: 4,
        name: "transcript_mirror",
        sql: include_str!("../migrations/0004_transcript_mirror.sql"),
    },
    Migration {
        version: 5,
        name: "session_owner_host",
        sql: include_str!("../migrations/0005_session_owner_host.sql"),
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

fn known() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// A stable 64-bit advisory-lock key for `name` in `schema`.
pub(crate) fn lock_key(schema: &str, name: &str) -> i64 {
    let digest = Sha256::digest(format!("lionrt:{schema}:{name}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

/// Creates `schema` if needed and applies every pending migration in one
/// transaction holding the schema's migration lock; verifies the checksums
/// of those already applied. Returns the versions applied now.
pub fn migrate(client: &mut Client, schema: &str) -> Result<Vec<u32>, PgStoreError> {
    identifier("schema", schema)?;
    let mut tx = client.transaction()?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1)",
        &[&lock_key(schema, "migrate")],
    )?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema};
         CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
            version BIGINT PRIMARY KEY NOT NULL,
            name TEXT NOT NULL,
            checksum TEXT NOT NULL,
            applied_at BIGINT NOT NULL
         );"
    ))?;
    let mut applied = Vec::new();
    for m in MIGRATIONS {
        let existing = tx.query_opt(
            &format!("SELECT checksum FROM {schema}.schema_migrations WHERE version = $1"),
            &[&i64::from(m.version)],
        )?;
        match existing {
            Some(row) if row.get::<_, String>(0) == m.checksum() => {}
            Some(_) => return Err(PgStoreError::MigrationChecksum { version: m.version }),
            None => {
                tx.batch_execute(&format!("SET LOCAL search_path = {schema}"))?;
                tx.batch_execute(m.sql)?;
                tx.execute(
                    &format!(
                        "INSERT INTO {schema}.schema_migrations (version, name, checksum, applied_at)
                         VALUES ($1, $2, $3, $4)"
                    ),
                    &[
                        &i64::from(m.version),
                        &m.name,
                        &m.checksum(),
                        &now_micros(),
                    ],
                )?;
                applied.push(m.version);
            }
        }
    }
    let found = max_version(&mut tx, schema)?;
    if found > known() {
        return Err(PgStoreError::SchemaTooNew {
            found,
            known: known(),
        });
    }
    tx.commit()?;
    Ok(applied)
}

fn max_version(tx: &mut impl postgres::GenericClient, schema: &str) -> Result<u32, PgStoreError> {
    let v: Option<i64> = tx
        .query_one(
            &format!("SELECT MAX(version) FROM {schema}.schema_migrations"),
            &[],
        )?
        .get(0);
    Ok(v.and_then(|v| u32::try_from(v).ok()).unwrap_or(0))
}

/// The highest applied migration in `schema`, or 0 when it has none.
pub fn schema_version(client: &mut Client, schema: &str) -> Result<u32, PgStoreError> {
    identifier("schema", schema)?;
    let exists = client
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL",
            &[&format!("{schema}.schema_migrations")],
        )?
        .get::<_, bool>(0);
    if !exists {
        return Ok(0);
    }
    max_version(client, schema)
}

/// The read-only open's check: the schema is migrated, not newer than
/// this build, and every applied migration has the embedded checksum.
pub(crate) fn check_schema(client: &mut Client, schema: &str) -> Result<(), PgStoreError> {
    let found = schema_version(client, schema)?;
    if found == 0 {
        return Err(PgStoreError::NotMigrated {
            schema: schema.to_owned(),
        });
    }
    if found > known() {
        return Err(PgStoreError::SchemaTooNew {
            found,
            known: known(),
        });
    }
    let rows = client.query(
        &format!("SELECT version, checksum FROM {schema}.schema_migrations"),
        &[],
    )?;
    for r in rows {
        let version: i64 = r.get(0);
        let sum: String = r.get(1);
        if let Some(m) = MIGRATIONS.iter().find(|m| i64::from(m.version) == version)
            && m.checksum() != sum
        {
            return Err(PgStoreError::MigrationChecksum { version: m.version });
        }
    }
    if found < known() {
        return Err(PgStoreError::NotMigrated {
            schema: schema.to_owned(),
        });
    }
    Ok(())
}
