//! `lionrt state stats|checkpoint|vacuum|prune`: looking after the store
//! file (the original's `li state` maintenance verbs).

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use serde_json::json;
use state_sqlite::overview;

use crate::out;
use crate::view;

pub(crate) fn stats(db: &Path, json: bool) -> Result<ExitCode> {
    let (_engine, conn) = view::open_read(db)?;
    let stats = overview::stats(&conn)?;
    let size = std::fs::metadata(db).map(|m| m.len()).unwrap_or(0);
    let wal = std::fs::metadata(wal_path(db))
        .map(|m| m.len())
        .unwrap_or(0);
    if json {
        out::json(&json!({
            "db": db, "file_bytes": size, "wal_bytes": wal, "stats": stats,
        }));
        return Ok(ExitCode::SUCCESS);
    }
    out::line(format!("database   {}", db.display()));
    out::line(format!("schema     version {}", stats.schema_version));
    out::line(format!("journal    {}", stats.journal_mode));
    out::line(format!(
        "file       {size} bytes ({} pages of {}, {} free), WAL {wal} bytes",
        stats.page_count, stats.page_size, stats.freelist_count
    ));
    out::line("");
    out::line(format!("{:<22} {:>10}", "TABLE", "ROWS"));
    for (table, n) in &stats.tables {
        out::line(format!("{table:<22} {n:>10}"));
    }
    if !stats.sessions_by_status.is_empty() {
        out::line("");
        out::line(format!("{:<22} {:>10}", "SESSION STATUS", "SESSIONS"));
        for (status, n) in &stats.sessions_by_status {
            out::line(format!("{status:<22} {n:>10}"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn wal_path(db: &Path) -> std::path::PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    name.into()
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

pub(crate) fn prune(
    db: &Path,
    json: bool,
    older_than: Duration,
    dry_run: bool,
) -> Result<ExitCode> {
    let engine = writable(db)?;
    let mut conn = engine.conn()?;
    let actor = format!("lionrt-{}", std::process::id());
    let report = overview::prune(
        &mut conn,
        view::micros_ago(older_than),
        dry_run,
        ("operator", &actor),
    )?;
    if json {
        out::json(&json!({"db": db, "older_than_secs": older_than.as_secs(), "prune": report}));
    } else {
        out::line(format!(
            "{} {} session(s) and {} message(s) ended more than {} ago",
            if dry_run { "would prune" } else { "pruned" },
            report.sessions,
            report.messages,
            view::short_duration(older_than)
        ));
    }
    Ok(ExitCode::SUCCESS)
}
