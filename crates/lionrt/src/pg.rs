//! `--db postgres://…` (or `host=… dbname=…`): the commands run on
//! PostgreSQL through `state-postgres` — `run` and `kill` on its session
//! recorder, `outbox` on its outbox, and `sessions`, `state`, `monitor`
//! and `lifecycle` on its read seam (read-only engine for the reads) and
//! lifecycle store, and `state import` writes into it. A verb that only
//! means something for a SQLite file (`state checkpoint`) says so; the
//! commands in [`check`]'s list refuse such a `--db` before touching it.
//! The connection string is only ever shown redacted ([`DbUrl`]).

use std::path::Path;

use anyhow::{Result, bail};
use state_postgres::{DbUrl, PgConfig, PgEngine, PgStore};

use crate::{Cli, Command};

/// The schema the tables live in (`LIONRT_PG_SCHEMA`, default `lionrt`).
const SCHEMA_VAR: &str = "LIONRT_PG_SCHEMA";

/// The PostgreSQL connection string `--db` names, if it names one.
pub(crate) fn url(db: &Path) -> Option<DbUrl> {
    db.to_str()
        .filter(|s| DbUrl::looks_like_postgres(s))
        .map(DbUrl::new)
}

/// Refuses a PostgreSQL `--db` on a command that only works on SQLite, so
/// that the string never reaches a file path (or an error naming one).
pub(crate) fn check(cli: &Cli) -> Result<()> {
    let Some(url) = url(&cli.db) else {
        return Ok(());
    };
    if let Some(name) = refuses_postgres(&cli.command) {
        bail!("`lionrt {name}` does not take a PostgreSQL --db yet ({url})");
    }
    Ok(())
}

/// The commands that do not take a PostgreSQL `--db` yet: none now (the
/// last, `mirror`, runs on either store), kept as the one place to list
/// such a command.
fn refuses_postgres(_command: &Command) -> Option<&'static str> {
    None
}

/// The schema the tables live in.
pub(crate) fn schema() -> String {
    std::env::var(SCHEMA_VAR).unwrap_or_else(|_| "lionrt".to_owned())
}

/// Opens the PostgreSQL store `url` names (migrating its schema).
pub(crate) fn open(url: &DbUrl) -> Result<PgStore> {
    let engine = PgEngine::open(&PgConfig::new(url.clone()).with_schema(schema()))?;
    Ok(PgStore::new(engine))
}

/// Where `--db` is, safe to print: a file's path, or a server URL with
/// its password masked.
pub(crate) fn shown(db: &Path) -> String {
    match url(db) {
        Some(url) => url.to_string(),
        None => db.display().to_string(),
    }
}
