//! The store `--db` names, for the read-side verbs (`sessions`, `state
//! health|stats|history`, `monitor`, `lifecycle`): a SQLite file opened
//! read-only, or a PostgreSQL schema through a read-only engine. Both read
//! through lifecycle-core's [`StateReader`], so each verb is written once;
//! [`Backend`] adds only what differs (where the store is, and the facts
//! of its storage). A server URL is only ever shown redacted.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lifecycle_core::StateReader;
use serde_json::{Value, json};
use state_postgres::{PgConfig, PgEngine, PgStore};
use state_sqlite::ReadOnlyEngine;

/// Facts about the storage under a store, for `state health` and `state
/// stats`: JSON members and `label value` lines.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// Whether the storage checks passed (e.g. SQLite's integrity check).
    pub(crate) ok: bool,
    /// Members of the `--json` object.
    pub(crate) json: Vec<(&'static str, Value)>,
    /// Lines for people, as (label, value).
    pub(crate) lines: Vec<(&'static str, String)>,
}

impl Facts {
    fn add(&mut self, key: &'static str, label: &'static str, value: Value, text: String) {
        self.json.push((key, value));
        self.lines.push((label, text));
    }
}

/// A store the read-side verbs read.
pub(crate) trait Backend {
    /// The reader.
    type Reader: StateReader;
    /// The reader.
    fn reader(&self) -> &Self::Reader;
    /// Where the store is, safe to print (a path, or the redacted URL
    /// with its schema).
    fn location(&self) -> String;
    /// The storage's facts for `state health`.
    fn health_facts(&self) -> Result<Facts>;
    /// The storage's facts for `state stats` (the `stats` object's extra
    /// members, and lines).
    fn stats_facts(&self) -> Result<Facts>;
    /// The session's `node_metadata` column, as stored.
    fn node_metadata(&self, session: &str) -> Result<Option<String>>;
}

/// A SQLite file, read-only.
pub(crate) struct Sqlite {
    engine: ReadOnlyEngine,
    path: PathBuf,
}

impl Sqlite {
    /// Opens `db` read-only (no write or PRAGMA reaches the file).
    pub(crate) fn open(db: &Path) -> Result<Self> {
        let (engine, _conn) = crate::view::open_read(db)?;
        Ok(Sqlite {
            engine,
            path: db.to_owned(),
        })
    }
}

fn side_file(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

impl Backend for Sqlite {
    type Reader = ReadOnlyEngine;

    fn reader(&self) -> &ReadOnlyEngine {
        &self.engine
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn health_facts(&self) -> Result<Facts> {
        let conn = self.engine.conn()?;
        let integrity: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        let journal: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        let version = state_sqlite::schema_version(&conn)?;
        let sqlite = state_sqlite::linked_sqlite_version();
        let fixed = state_sqlite::has_wal_reset_fix(sqlite);
        let mut f = Facts {
            ok: integrity == "ok",
            ..Facts::default()
        };
        f.add(
            "integrity",
            "integrity",
            json!(integrity),
            integrity.clone(),
        );
        f.add("journal_mode", "journal", json!(journal), journal.clone());
        f.add(
            "schema_version",
            "schema",
            json!(version),
            format!("version {version}"),
        );
        f.add(
            "sqlite",
            "sqlite",
            json!(sqlite),
            format!(
                "{sqlite}{}",
                if fixed {
                    ""
                } else {
                    " (lacks the WAL-reset fix!)"
                }
            ),
        );
        f.json.push(("wal_reset_fix", json!(fixed)));
        Ok(f)
    }

    fn stats_facts(&self) -> Result<Facts> {
        let conn = self.engine.conn()?;
        let stats = state_sqlite::overview::stats(&conn)?;
        let size = std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0);
        let wal = std::fs::metadata(side_file(&self.path, "-wal"))
            .map(|m| m.len())
            .unwrap_or(0);
        let mut f = Facts {
            ok: true,
            ..Facts::default()
        };
        f.json.push(("file_bytes", json!(size)));
        f.json.push(("wal_bytes", json!(wal)));
        f.json.push(("journal_mode", json!(stats.journal_mode)));
        f.json.push(("page_size", json!(stats.page_size)));
        f.json.push(("page_count", json!(stats.page_count)));
        f.json.push(("freelist_count", json!(stats.freelist_count)));
        f.lines.push(("journal", stats.journal_mode.clone()));
        f.lines.push((
            "file",
            format!(
                "{size} bytes ({} pages of {}, {} free), WAL {wal} bytes",
                stats.page_count, stats.page_size, stats.freelist_count
            ),
        ));
        Ok(f)
    }

    fn node_metadata(&self, session: &str) -> Result<Option<String>> {
        use rusqlite::OptionalExtension;
        let conn = self.engine.conn()?;
        let meta: Option<Option<String>> = conn
            .query_row(
                "SELECT node_metadata FROM sessions WHERE id = ?1",
                [session],
                |r| r.get(0),
            )
            .optional()?;
        Ok(meta.flatten())
    }
}

/// A PostgreSQL schema, read-only.
pub(crate) struct Postgres {
    store: PgStore,
}

impl Postgres {
    /// Opens the schema `url` names read-only: every transaction is
    /// read-only, and the schema is checked, never migrated.
    pub(crate) fn open(url: &state_postgres::DbUrl) -> Result<Self> {
        let config = PgConfig::new(url.clone()).with_schema(crate::pg::schema());
        let engine = PgEngine::open_read_only(&config).with_context(|| {
            format!(
                "reading {url} (schema {}; `lionrt state init` creates or migrates it)",
                config.schema
            )
        })?;
        Ok(Postgres {
            store: PgStore::new(engine),
        })
    }

    /// The read-only store itself (for `serve`).
    pub(crate) fn into_store(self) -> PgStore {
        self.store
    }
}

impl Backend for Postgres {
    type Reader = PgStore;

    fn reader(&self) -> &PgStore {
        &self.store
    }

    fn location(&self) -> String {
        let engine = self.store.engine();
        format!("{} (schema {})", engine.url(), engine.schema())
    }

    fn health_facts(&self) -> Result<Facts> {
        let version = self.store.schema_version()?;
        let server = self.store.server_version()?;
        let schema = self.store.engine().schema().to_owned();
        // The read-only open checked the schema: migrated, not newer than
        // this build, every applied migration with its embedded checksum.
        let mut f = Facts {
            ok: true,
            ..Facts::default()
        };
        f.add(
            "server_version",
            "server",
            json!(server),
            format!("PostgreSQL {server}"),
        );
        f.add("schema", "pg schema", json!(schema), schema.clone());
        f.add(
            "schema_version",
            "schema",
            json!(version),
            format!("version {version} (checksums verified)"),
        );
        Ok(f)
    }

    fn stats_facts(&self) -> Result<Facts> {
        let bytes = self.store.schema_bytes()?;
        let server = self.store.server_version()?;
        let schema = self.store.engine().schema().to_owned();
        let mut f = Facts {
            ok: true,
            ..Facts::default()
        };
        f.json.push(("server_version", json!(server)));
        f.json.push(("schema", json!(schema)));
        f.json.push(("relation_bytes", json!(bytes)));
        f.lines.push(("server", format!("PostgreSQL {server}")));
        f.lines.push((
            "tables",
            format!("{bytes} bytes in schema {schema} (indexes included)"),
        ));
        Ok(f)
    }

    fn node_metadata(&self, session: &str) -> Result<Option<String>> {
        Ok(self.store.session(session)?.and_then(|s| {
            s.columns
                .get("node_metadata")
                .and_then(Value::as_str)
                .map(str::to_owned)
        }))
    }
}

/// Runs `$body` with `$b` bound to the read-side backend `--db` names.
macro_rules! with_backend {
    ($db:expr, |$b:ident| $body:expr) => {
        match $crate::pg::url($db) {
            Some(url) => {
                let $b = &$crate::backend::Postgres::open(&url)?;
                $body
            }
            None => {
                let $b = &$crate::backend::Sqlite::open($db)?;
                $body
            }
        }
    };
}
pub(crate) use with_backend;
