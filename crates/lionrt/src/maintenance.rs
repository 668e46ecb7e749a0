//! `lionrt state stats|checkpoint|vacuum`: looking after the store (the
//! original's `li state` maintenance verbs). `stats` reads either store;
//! `checkpoint` and `vacuum` work on the SQLite file, and `vacuum` on a
//! PostgreSQL schema is the server's `VACUUM (ANALYZE)`. (`prune` is in
//! `state`, written once over `SessionRetention`.)

use anyhow::Result;
use lifecycle_core::StateReader;
use serde_json::json;
use state_sqlite::overview;
use std::path::Path;
use std::process::ExitCode;

use crate::backend::Backend;
use crate::out;

/// `state stats`: row counts and sessions per status on either store,
/// with the storage's own facts (a SQLite file's pages, a PostgreSQL
/// schema's size).
pub(crate) fn stats<B: Backend>(backend: &B, json: bool) -> Result<ExitCode> {
    let counts = backend.reader().row_counts()?;
    let facts = backend.stats_facts()?;
    if json {
        let mut stats = serde_json::Map::new();
        stats.insert("schema_version".into(), json!(counts.schema_version));
        for (k, v) in facts.json {
            stats.insert(k.into(), v);
        }
        stats.insert("tables".into(), json!(counts.tables));
        stats.insert(
            "sessions_by_status".into(),
            json!(counts.sessions_by_status),
        );
        // A file's sizes also sit beside `stats`, where they always were.
        let mut v = serde_json::Map::new();
        v.insert("db".into(), json!(backend.location()));
        for key in ["file_bytes", "wal_bytes"] {
            if let Some(x) = stats.remove(key) {
                v.insert(key.into(), x);
            }
        }
        v.insert("stats".into(), serde_json::Value::Object(stats));
        out::json(&serde_json::Value::Object(v));
        return Ok(ExitCode::SUCCESS);
    }
    out::line(format!("database   {}", backend.location()));
    out::line(format!("schema     version {}", counts.schema_version));
    for (label, text) in &facts.lines {
        out::line(format!("{label:<10} {text}"));
    }
    out::line("");
    out::line(format!("{:<22} {:>10}", "TABLE", "ROWS"));
    for (table, n) in &counts.tables {
        out::line(format!("{table:<22} {n:>10}"));
    }
    if !counts.sessions_by_status.is_empty() {
        out::line("");
        out::line(format!("{:<22} {:>10}", "SESSION STATUS", "SESSIONS"));
        for (status, n) in &counts.sessions_by_status {
            out::line(format!("{status:<22} {n:>10}"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `state vacuum` on PostgreSQL: `VACUUM (ANALYZE)` on the schema's tables.
pub(crate) fn vacuum_pg(store: &state_postgres::PgStore, json: bool) -> Result<ExitCode> {
    let tables = store.vacuum_analyze()?;
    let shown = format!(
        "{} (schema {})",
        store.engine().url(),
        store.engine().schema()
    );
    if json {
        out::json(&json!({"db": shown, "vacuumed": tables}));
    } else {
        out::line(format!(
            "vacuumed {shown}: {} table(s) vacuumed and analysed",
            tables.len()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

fn writable(db: &Path) -> Result<state_sqlite::Engine> {
    if !db.exists() {
        anyhow::bail!("no database at {}", db.display());
    }
    Ok(state_sqlite::Engine::open(
        db,
        state_sqlite::EngineConfig::default(),
    )?)
}

pub(crate) fn checkpoint(db: &Path, json: bool) -> Result<ExitCode> {
    let engine = writable(db)?;
    let conn = engine.conn()?;
    let done = overview::checkpoint(&conn)?;
    if json {
        out::json(&json!({"db": db, "checkpoint": done}));
    } else if done.busy {
        out::line(format!(
            "checkpoint incomplete: a reader or writer was busy ({} of {} frames moved)",
            done.checkpointed_frames, done.log_frames
        ));
    } else {
        out::line(format!(
            "checkpointed {} frame(s); WAL truncated",
            done.checkpointed_frames
        ));
    }
    Ok(if done.busy {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

pub(crate) fn vacuum(db: &Path, json: bool) -> Result<ExitCode> {
    let engine = writable(db)?;
    let conn = engine.conn()?;
    let (before, after) = overview::vacuum(&conn)?;
    if json {
        out::json(&json!({"db": db, "pages_before": before, "pages_after": after}));
    } else {
        out::line(format!(
            "vacuumed {}: {before} -> {after} pages",
            db.display()
        ));
    }
    Ok(ExitCode::SUCCESS)
}
