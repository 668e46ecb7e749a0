//! `lionrt state import --from-lionagi [PATH]`: brings sessions, their
//! messages, invocations, schedules and schedule runs, each with its status
//! history, over from a state.db written by the original lionagi (0.36.0
//! schema; without PATH, li's own store at `$LIONAGI_HOME/state.db`, else
//! `~/.lionagi/state.db`), and reports everything it did not bring. The
//! target is the SQLite file or the PostgreSQL schema `--db` names (the
//! same reads, the same rows; only the statements differ).
//!
//! The source is recognised first (`state_sqlite::recognise`, which changes
//! nothing) and must be lionagi's store by its `schema_meta` lineage; it is
//! never opened in place: its file (and `-wal`, when there is one) is copied
//! to a temporary directory and read from there, so the original's file is
//! not touched even by SQLite's WAL recovery, and every error names the
//! user's file, never the copy. The import is one transaction: all of it
//! or nothing. A dry run writes nothing anywhere: it reads the target only
//! when it is a lionrt store already, and never creates it. Importing twice
//! changes nothing (every row is found already in the target).
//!
//! What maps, and how:
//! - a session row keeps its id, status, reason, times (lionagi's float
//!   seconds become integer microseconds), usage, model, provider, project,
//!   agent name, phase and kind (`invocation_kind`); lionagi's `name`,
//!   `cc_session_id`, `source_kind`, `run_id` and `effort` go into
//!   `node_metadata` next to its own keys, with `"imported_from":
//!   "lionagi"`;
//! - its messages are the ids in its progression, in that order, with role
//!   and content (JSON text, as stored);
//! - an invocation keeps its id, status, reason and times; its skill,
//!   plugin, prompt, session count and metadata go into its reason JSON;
//! - a schedule comes when lionrt can run it (an agent target on an interval
//!   or cron trigger, with a provider lionrt knows), always disabled;
//! - a schedule run comes once it has ended, pointing at its schedule when
//!   that came too (lionagi's schedule id stays in its reason JSON);
//! - each status history keeps from/to status, reason, actor and time;
//!   evidence and metadata go into the reason JSON.
//!
//! Skipped, and counted in the report: a row whose id is already in the
//! target, a row whose status lionrt's policy does not know, a schedule
//! lionrt cannot run, an open schedule run, progression entries with no
//! message row, messages no imported session reaches, transitions of
//! entities not brought, and the rows of every other non-empty lionagi
//! table (branches, projects, shows, ...).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use rusqlite::types::ValueRef;
use serde_json::{Map, Value, json};
use state_sqlite::{Engine, EngineConfig, ReadOnlyEngine, Store};

use crate::out;

/// The tables a lionagi state.db must have to be imported.
const REQUIRED: [&str; 5] = [
    "sessions",
    "messages",
    "progressions",
    "status_transitions",
    "schema_meta",
];

/// Tables whose rows are imported (in part) or are bookkeeping; every other
/// non-empty table is reported as not imported.
const HANDLED: [&str; 9] = [
    "sessions",
    "messages",
    "progressions",
    "status_transitions",
    "schema_meta",
    "message_types",
    "invocations",
    "schedules",
    "schedule_runs",
];

/// lionrt's actor types; any other lionagi `source` becomes `system`.
const ACTOR_TYPES: [&str; 7] = [
    "executor",
    "agent",
    "admin",
    "system",
    "scheduler",
    "operator",
    "webhook",
];

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// The original lionagi state.db to read (never modified: a copy is
    /// read); without PATH, li's own store ($LIONAGI_HOME/state.db, else
    /// ~/.lionagi/state.db).
    #[arg(long = "from-lionagi", value_name = "PATH", num_args = 0..=1)]
    from: Option<Option<PathBuf>>,
    /// Read and report, write nothing.
    #[arg(long)]
    dry_run: bool,
}

/// What an import did and did not bring over.
#[derive(Debug, Default, serde::Serialize)]
struct Report {
    sessions_imported: u64,
    messages_imported: u64,
    transitions_imported: u64,
    /// Session id -> why it was skipped.
    sessions_skipped: BTreeMap<String, String>,
    invocations_imported: u64,
    schedules_imported: u64,
    schedule_runs_imported: u64,
    /// Invocation id -> why it was skipped.
    invocations_skipped: BTreeMap<String, String>,
    /// Schedule id -> why it was skipped.
    schedules_skipped: BTreeMap<String, String>,
    /// Schedule run id -> why it was skipped.
    schedule_runs_skipped: BTreeMap<String, String>,
    /// Progression entries naming no message row.
    messages_missing: u64,
    /// Message rows no imported session reaches.
    messages_not_in_a_session: u64,
    /// Status transitions not brought over (their entity was not), by type.
    transitions_skipped: BTreeMap<String, u64>,
    /// Rows of other lionagi tables, by table.
    tables_not_imported: BTreeMap<String, u64>,
    dry_run: bool,
    /// Transitions brought, by entity type (for the count left behind).
    #[serde(skip)]
    brought: BTreeMap<String, u64>,
}

/// One lionagi session row, as read.
struct Session {
    id: String,
    status: Option<String>,
    progression_id: String,
    columns: Map<String, Value>,
}

pub(crate) fn run(db: &Path, json: bool, args: ImportArgs) -> Result<ExitCode> {
    let Some(from) = args.from.clone() else {
        bail!(
            "give --from-lionagi [PATH] (without PATH: li's own store, {})",
            crate::dbpath::lionagi_db().display()
        );
    };
    let from = from.unwrap_or_else(crate::dbpath::lionagi_db);
    // What the source is, recognised without changing it: only lionagi's
    // store is read.
    match state_sqlite::recognise(&from)? {
        state_sqlite::StoreKind::Lionagi { .. } => {}
        state_sqlite::StoreKind::Missing => bail!(
            "no lionagi store at {} (li keeps it at $LIONAGI_HOME/state.db, else ~/.lionagi/state.db; give --from-lionagi PATH)",
            from.display()
        ),
        kind => bail!(
            "{} is {}, not lionagi's store",
            from.display(),
            kind.describe()
        ),
    }
    if crate::pg::url(db).is_none() && same_file(&from, db) {
        bail!(
            "--db {} is the lionagi store itself; lionrt imports into its own store (leave --db out for {})",
            db.display(),
            crate::dbpath::own_db_with(|n| std::env::var_os(n)).display()
        );
    }
    let snapshot = tempfile::tempdir().context("creating a temporary directory")?;
    let source = copy_source(&from, snapshot.path())?;
    // Every error reading the copy names the user's file, never the copy.
    let named = |e: anyhow::Error| e.context(format!("reading {}", from.display()));
    let src = ReadOnlyEngine::open(&source, Duration::from_secs(5)).map_err(|e| {
        named(anyhow::anyhow!(
            "{}",
            e.to_string()
                .replace(&source.display().to_string(), &from.display().to_string())
        ))
    })?;
    let src = src.conn().map_err(|e| named(e.into()))?;
    let check: String = src
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(|e| named(e.into()))?;
    if check != "ok" {
        bail!(
            "{} is damaged (SQLite's quick_check: {check}); nothing was imported",
            from.display()
        );
    }
    let tables: BTreeSet<String> = {
        let mut stmt = src.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
        stmt.query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<_, _>>()?
    };
    for table in REQUIRED {
        if !tables.contains(table) {
            bail!(
                "{} is not a lionagi state.db: it has no {table} table",
                from.display()
            );
        }
    }
    let has_progression = src
        .prepare("SELECT progression_id FROM sessions LIMIT 0")
        .is_ok();
    if !has_progression {
        bail!(
            "{} is not a lionagi state.db: its sessions have no progression_id",
            from.display()
        );
    }
    let report = match crate::pg::url(db) {
        Some(url) => {
            let store = crate::pg::open(&url)?;
            let mut conn = store.engine().conn()?;
            let target = PgTarget {
                tx: conn.transaction()?,
            };
            import_into(target, &src, &tables, args.dry_run).map_err(named)?
        }
        None if args.dry_run => {
            // A dry run writes nothing anywhere: the target is only read
            // (when it is a lionrt store already), never created.
            let reader = match state_sqlite::recognise(db)? {
                state_sqlite::StoreKind::Lionrt { .. } => Some(crate::view::open_read(db)?),
                _ => None,
            };
            let target = DryTarget {
                conn: reader.as_ref().map(|(_, c)| &**c),
                messages: BTreeSet::new(),
            };
            import_into(target, &src, &tables, true).map_err(named)?
        }
        None => {
            crate::dbpath::ensure_parent(db)?;
            let store = Store::new(Engine::create(db, EngineConfig::default())?);
            let mut conn = store.engine().conn()?;
            let target = SqliteTarget {
                tx: conn.transaction()?,
            };
            import_into(target, &src, &tables, false).map_err(named)?
        }
    };
    print(json, &from, &report);
    Ok(ExitCode::SUCCESS)
}

/// Whether two paths name one file (both must exist to be the same).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// A dry run's target: reads the existing lionrt store (if any) to tell
/// what is already there, and writes nothing.
struct DryTarget<'c> {
    conn: Option<&'c rusqlite::Connection>,
    messages: BTreeSet<String>,
}

impl Target for DryTarget<'_> {
    fn has_session(&mut self, id: &str) -> Result<bool> {
        match self.conn {
            Some(c) => Ok(c.query_row(
                "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1)",
                [id],
                |r| r.get(0),
            )?),
            None => Ok(false),
        }
    }

    fn insert_session(&mut self, _s: &NewSession) -> Result<()> {
        Ok(())
    }

    fn insert_message(
        &mut self,
        id: &str,
        _session: &str,
        _role: &str,
        _content: &str,
        _at: i64,
    ) -> Result<bool> {
        let there = match self.conn {
            Some(c) => c.query_row(
                "SELECT EXISTS (SELECT 1 FROM messages WHERE id = ?1)",
                [id],
                |r| r.get::<_, bool>(0),
            )?,
            None => false,
        };
        Ok(!there && self.messages.insert(id.to_owned()))
    }

    fn insert_transition(&mut self, _t: &NewTransition<'_>) -> Result<()> {
        Ok(())
    }

    fn has_row(&mut self, table: &str, id: &str) -> Result<bool> {
        match self.conn {
            Some(c) => Ok(c.query_row(
                &format!("SELECT EXISTS (SELECT 1 FROM {table} WHERE id = ?1)"),
                [id],
                |r| r.get(0),
            )?),
            None => Ok(false),
        }
    }

    fn insert_row(&mut self, _table: &str, _row: &[(&str, Val)]) -> Result<()> {
        Ok(())
    }

    fn finish(self, _commit: bool) -> Result<()> {
        Ok(())
    }
}

/// Reads the lionagi source and writes into `target`, in its one
/// transaction (rolled back on a dry run).
fn import_into<T: Target>(
    mut target: T,
    src: &rusqlite::Connection,
    tables: &BTreeSet<String>,
    dry_run: bool,
) -> Result<Report> {
    let policy = lifecycle_core::default_registry().get("session")?;
    let known: BTreeSet<String> = policy.statuses().iter().cloned().collect();
    let mut report = Report {
        dry_run,
        ..Report::default()
    };

    let sessions = read_sessions(src)?;
    let mut reached: BTreeSet<String> = BTreeSet::new();
    for s in &sessions {
        // Counted as reached even when skipped: a skipped session's
        // messages are reported with the session, not again as strays.
        let ids = progression(src, &s.progression_id)?;
        reached.extend(ids.iter().cloned());
        if target.has_session(&s.id)? {
            report
                .sessions_skipped
                .insert(s.id.clone(), "already in the target".into());
            already_there(src, &mut report, "session", &s.id)?;
            continue;
        }
        let Some(status) = s.status.as_ref().filter(|st| known.contains(*st)) else {
            report.sessions_skipped.insert(
                s.id.clone(),
                format!("status {:?} is not a lionrt session status", s.status),
            );
            continue;
        };
        target.insert_session(&new_session(s, status))?;
        report.sessions_imported += 1;
        for id in &ids {
            let row = src.query_row(
                "SELECT role, CAST(content AS TEXT), created_at FROM messages WHERE id = ?1",
                [id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, f64>(2)?,
                    ))
                },
            );
            let (role, content, at) = match row {
                Ok(row) => row,
                Err(rusqlite::Error::QueryReturnedNoRows) => {
                    report.messages_missing += 1;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let added = target.insert_message(id, &s.id, &role, &content, micros(at))?;
            report.messages_imported += u64::from(added);
        }
        let n = copy_history(src, &mut target, "session", &s.id)?;
        report.transitions_imported += n;
        *report.brought.entry("session".into()).or_default() += n;
    }

    let total_messages: i64 = src.query_row("SELECT count(*) FROM messages", [], |r| r.get(0))?;
    let in_messages: i64 = {
        let mut n = 0;
        for id in &reached {
            let exists: bool = src.query_row(
                "SELECT EXISTS (SELECT 1 FROM messages WHERE id = ?1)",
                [id],
                |r| r.get(0),
            )?;
            n += i64::from(exists);
        }
        n
    };
    report.messages_not_in_a_session = u64::try_from(total_messages - in_messages).unwrap_or(0);
    others(src, &mut target, tables, &mut report)?;
    {
        let mut stmt = src
            .prepare("SELECT entity_type, count(*) FROM status_transitions GROUP BY entity_type")?;
        for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
            let (kind, n) = row?;
            let brought = report.brought.get(&kind).copied().unwrap_or(0);
            let left = u64::try_from(n).unwrap_or(0).saturating_sub(brought);
            if left > 0 {
                report.transitions_skipped.insert(kind, left);
            }
        }
    }
    for table in tables.iter().filter(|t| !HANDLED.contains(&t.as_str())) {
        if table.starts_with("sqlite_") {
            continue;
        }
        let n: i64 = src.query_row(&format!("SELECT count(*) FROM \"{table}\""), [], |r| {
            r.get(0)
        })?;
        if n > 0 {
            report
                .tables_not_imported
                .insert(table.clone(), u64::try_from(n).unwrap_or(0));
        }
    }
    target.finish(!dry_run)?;
    Ok(report)
}

/// Copies the database file (and its `-wal`) into `dir`.
fn copy_source(from: &Path, dir: &Path) -> Result<PathBuf> {
    if !from.is_file() {
        bail!("{} is not a file", from.display());
    }
    let to = dir.join("lionagi-state.db");
    std::fs::copy(from, &to).with_context(|| format!("copying {}", from.display()))?;
    let mut wal = from.as_os_str().to_owned();
    wal.push("-wal");
    let wal = PathBuf::from(wal);
    if wal.is_file() {
        std::fs::copy(&wal, dir.join("lionagi-state.db-wal"))
            .with_context(|| format!("copying {}", wal.display()))?;
    }
    Ok(to)
}

/// Float seconds (lionagi) to integer microseconds (lionrt).
fn micros(seconds: f64) -> i64 {
    // `as` saturates on overflow and maps NaN to 0: no panic on odd input.
    (seconds * 1_000_000.0).round() as i64
}

/// Every row of a query, as JSON objects (blobs become null).
fn read_rows(src: &rusqlite::Connection, sql: &str) -> Result<Vec<Map<String, Value>>> {
    let mut stmt = src.prepare(sql)?;
    let names: Vec<String> = stmt
        .column_names()
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let rows = stmt.query_map([], |r| {
        let mut columns = Map::new();
        for (i, name) in names.iter().enumerate() {
            let value = match r.get_ref(i)? {
                ValueRef::Null | ValueRef::Blob(_) => Value::Null,
                ValueRef::Integer(n) => json!(n),
                ValueRef::Real(f) => json!(f),
                ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into()),
            };
            columns.insert(name.clone(), value);
        }
        Ok(columns)
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn text(row: &Map<String, Value>, key: &str) -> Option<String> {
    row.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn time(row: &Map<String, Value>, key: &str) -> Option<i64> {
    row.get(key).and_then(Value::as_f64).map(micros)
}

/// A stored JSON text column, parsed (else as it is).
fn parsed(row: &Map<String, Value>, key: &str) -> Value {
    match row.get(key) {
        Some(Value::String(t)) => {
            serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone()))
        }
        Some(v) => v.clone(),
        None => Value::Null,
    }
}

/// The statuses of `entity_type` in lionrt's policy, and its terminal ones.
fn statuses(entity_type: &str) -> Result<(BTreeSet<String>, BTreeSet<String>)> {
    let policy = lifecycle_core::default_registry().get(entity_type)?;
    Ok((
        policy.statuses().iter().cloned().collect(),
        policy.terminal_statuses().map(str::to_owned).collect(),
    ))
}

/// Brings invocations, schedules and schedule runs, each with its status
/// history. An invocation comes as it is (its skill, plugin, prompt and
/// metadata in its reason JSON). A schedule comes only when lionrt can run
/// it (an agent target, on an interval or a cron trigger, with a provider
/// lionrt knows), and always disabled: lionagi's scheduler may still own
/// it, and enabling it here is the user's call. A schedule run comes when
/// it has ended (an open one belongs to lionagi's scheduler), pointing at
/// its schedule when that came too.
fn others<T: Target>(
    src: &rusqlite::Connection,
    target: &mut T,
    tables: &BTreeSet<String>,
    report: &mut Report,
) -> Result<()> {
    let history = |target: &mut T, report: &mut Report, kind: &str, id: &str| -> Result<()> {
        let n = copy_history(src, target, kind, id)?;
        report.transitions_imported += n;
        *report.brought.entry(kind.into()).or_default() += n;
        Ok(())
    };
    if tables.contains("invocations") {
        let (known, _) = statuses("invocation")?;
        for row in read_rows(src, "SELECT * FROM invocations ORDER BY created_at, id")? {
            let id = text(&row, "id").unwrap_or_default();
            let status = text(&row, "status").unwrap_or_default();
            if target.has_row("invocations", &id)? {
                already_there(src, report, "invocation", &id)?;
                report
                    .invocations_skipped
                    .insert(id, "already in the target".into());
                continue;
            }
            if !known.contains(&status) {
                report.invocations_skipped.insert(
                    id,
                    format!("status {status:?} is not a lionrt invocation status"),
                );
                continue;
            }
            let created = time(&row, "created_at").unwrap_or(0);
            let reason = json!({
                "imported_from": "lionagi",
                "skill": row.get("skill"),
                "plugin": row.get("plugin"),
                "prompt": row.get("prompt"),
                "started_at": time(&row, "started_at"),
                "session_count": row.get("session_count"),
                "node_metadata": parsed(&row, "node_metadata"),
                "evidence_refs": parsed(&row, "status_evidence_refs"),
            });
            target.insert_row(
                "invocations",
                &[
                    ("id", Val::Text(Some(id.clone()))),
                    ("status", Val::Text(Some(status))),
                    (
                        "status_reason_code",
                        Val::Text(text(&row, "status_reason_code")),
                    ),
                    (
                        "status_reason_summary",
                        Val::Text(text(&row, "status_reason_summary")),
                    ),
                    ("status_reason_json", Val::Text(Some(reason.to_string()))),
                    ("created_at", Val::Int(Some(created))),
                    (
                        "updated_at",
                        Val::Int(Some(time(&row, "updated_at").unwrap_or(created))),
                    ),
                    ("ended_at", Val::Int(time(&row, "ended_at"))),
                ],
            )?;
            report.invocations_imported += 1;
            history(target, report, "invocation", &id)?;
        }
    }
    let mut schedules_here = BTreeSet::new();
    if tables.contains("schedules") {
        for row in read_rows(src, "SELECT * FROM schedules ORDER BY created_at, id")? {
            let id = text(&row, "id").unwrap_or_default();
            if target.has_row("schedules", &id)? {
                already_there(src, report, "schedule", &id)?;
                report
                    .schedules_skipped
                    .insert(id.clone(), "already in the target".into());
                schedules_here.insert(id);
                continue;
            }
            let spec = match schedule_spec(&row) {
                Ok(spec) => spec,
                Err(why) => {
                    report.schedules_skipped.insert(id, why);
                    continue;
                }
            };
            let created = time(&row, "created_at").unwrap_or(0);
            target.insert_row(
                "schedules",
                &[
                    ("id", Val::Text(Some(id.clone()))),
                    ("status", Val::Text(Some("disabled".into()))),
                    (
                        "status_reason_code",
                        Val::Text(Some("schedule_definition.created.observed".into())),
                    ),
                    (
                        "status_reason_json",
                        Val::Text(Some(
                            json!({"imported_from": "lionagi", "lionagi_name": row.get("name")})
                                .to_string(),
                        )),
                    ),
                    ("created_at", Val::Int(Some(created))),
                    (
                        "updated_at",
                        Val::Int(Some(time(&row, "updated_at").unwrap_or(created))),
                    ),
                    ("name", Val::Text(Some(spec.name.clone()))),
                    ("spec_json", Val::Text(Some(serde_json::to_string(&spec)?))),
                    ("last_fire_at", Val::Int(time(&row, "last_fired_at"))),
                ],
            )?;
            report.schedules_imported += 1;
            schedules_here.insert(id.clone());
            history(target, report, "schedule", &id)?;
        }
    }
    if tables.contains("schedule_runs") {
        let (known, terminal) = statuses("schedule_run")?;
        for row in read_rows(src, "SELECT * FROM schedule_runs ORDER BY created_at, id")? {
            let id = text(&row, "id").unwrap_or_default();
            let status = text(&row, "status").unwrap_or_default();
            if target.has_row("schedule_runs", &id)? {
                already_there(src, report, "schedule_run", &id)?;
                report
                    .schedule_runs_skipped
                    .insert(id, "already in the target".into());
                continue;
            }
            if !known.contains(&status) {
                report.schedule_runs_skipped.insert(
                    id,
                    format!("status {status:?} is not a lionrt schedule run status"),
                );
                continue;
            }
            if !terminal.contains(&status) {
                report.schedule_runs_skipped.insert(
                    id,
                    format!("still {status} in lionagi (its scheduler owns an open run)"),
                );
                continue;
            }
            let schedule = text(&row, "schedule_id");
            let linked = schedule.clone().filter(|s| schedules_here.contains(s));
            let created = time(&row, "created_at").unwrap_or(0);
            let reason = json!({
                "imported_from": "lionagi",
                "lionagi_schedule_id": schedule,
                "trigger_context": parsed(&row, "trigger_context"),
                "action_kind": row.get("action_kind"),
                "action_args": parsed(&row, "action_args"),
                "evidence_refs": parsed(&row, "status_evidence_refs"),
            });
            target.insert_row(
                "schedule_runs",
                &[
                    ("id", Val::Text(Some(id.clone()))),
                    ("schedule_id", Val::Text(linked)),
                    ("status", Val::Text(Some(status))),
                    (
                        "status_reason_code",
                        Val::Text(text(&row, "status_reason_code")),
                    ),
                    (
                        "status_reason_summary",
                        Val::Text(text(&row, "status_reason_summary")),
                    ),
                    ("status_reason_json", Val::Text(Some(reason.to_string()))),
                    ("created_at", Val::Int(Some(created))),
                    (
                        "updated_at",
                        Val::Int(Some(time(&row, "updated_at").unwrap_or(created))),
                    ),
                    ("ended_at", Val::Int(time(&row, "ended_at"))),
                    (
                        "exit_code",
                        Val::Int(row.get("exit_code").and_then(Value::as_i64)),
                    ),
                    ("error_detail", Val::Text(text(&row, "error_detail"))),
                    ("invocation_id", Val::Text(text(&row, "invocation_id"))),
                    ("due_at", Val::Int(time(&row, "fired_at"))),
                    ("detected_at", Val::Int(time(&row, "fired_at"))),
                ],
            )?;
            report.schedule_runs_imported += 1;
            history(target, report, "schedule_run", &id)?;
        }
    }
    Ok(())
}

/// A lionagi schedule as a lionrt schedule spec (disabled), or why it
/// cannot be one.
fn schedule_spec(row: &Map<String, Value>) -> std::result::Result<scheduler::ScheduleSpec, String> {
    let kind = text(row, "action_kind").unwrap_or_default();
    if kind != "agent" {
        return Err(format!(
            "its action is {kind:?}; lionrt schedules run agents only"
        ));
    }
    let trigger = match text(row, "trigger_type").as_deref() {
        Some("interval") => {
            json!({"interval": {"seconds": row.get("interval_sec").and_then(Value::as_u64).unwrap_or(0)}})
        }
        Some("cron") => json!({"cron": {
            "expr": text(row, "cron_expr").unwrap_or_default(),
            "tz": text(row, "effective_timezone").or_else(|| text(row, "resolved_timezone")).unwrap_or_else(|| "UTC".into()),
        }}),
        other => {
            return Err(format!(
                "its trigger is {other:?}; lionrt imports interval and cron triggers"
            ));
        }
    };
    let hint = format!(
        "{} {}",
        text(row, "action_agent").unwrap_or_default(),
        text(row, "action_model").unwrap_or_default()
    )
    .to_lowercase();
    let provider = [
        ("claude", "claude"),
        ("codex", "codex"),
        ("gpt", "codex"),
        ("gemini", "gemini"),
    ]
    .iter()
    .find(|(needle, _)| hint.contains(needle))
    .map(|(_, p)| *p)
    .ok_or_else(|| {
        format!(
            "no provider lionrt knows in its agent and model ({})",
            hint.trim()
        )
    })?;
    let name: String = text(row, "name")
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '.'
            }
        })
        .collect();
    let spec = json!({
        "name": name,
        "trigger": trigger,
        "run": {
            "provider": provider,
            "prompt": text(row, "action_prompt").unwrap_or_default(),
            "workspace": text(row, "action_cwd").unwrap_or_default(),
            "model": text(row, "action_model"),
        },
        "missed_fire": if text(row, "missed_fire_policy").as_deref() == Some("run_once") { "run_once" } else { "skip" },
        "enabled": false,
    });
    let spec: scheduler::ScheduleSpec =
        serde_json::from_value(spec).map_err(|e| format!("not a lionrt schedule: {e}"))?;
    spec.validate()
        .map_err(|e| format!("not a lionrt schedule: {e}"))?;
    Ok(spec)
}

fn read_sessions(src: &rusqlite::Connection) -> Result<Vec<Session>> {
    let mut stmt = src.prepare("SELECT * FROM sessions ORDER BY created_at, id")?;
    let names: Vec<String> = stmt
        .column_names()
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let rows = stmt.query_map([], |r| {
        let mut columns = Map::new();
        for (i, name) in names.iter().enumerate() {
            let value = match r.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(n) => json!(n),
                ValueRef::Real(f) => json!(f),
                ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into()),
                ValueRef::Blob(_) => Value::Null,
            };
            columns.insert(name.clone(), value);
        }
        Ok(columns)
    })?;
    let mut out = Vec::new();
    for columns in rows {
        let columns = columns?;
        let text = |k: &str| columns.get(k).and_then(Value::as_str).map(str::to_owned);
        out.push(Session {
            id: text("id").unwrap_or_default(),
            status: text("status"),
            progression_id: text("progression_id").unwrap_or_default(),
            columns,
        });
    }
    Ok(out)
}

/// The message ids of a progression, in order; an unreadable collection is
/// no ids.
fn progression(src: &rusqlite::Connection, id: &str) -> Result<Vec<String>> {
    let raw: Option<String> = match src.query_row(
        "SELECT collection FROM progressions WHERE id = ?1",
        [id],
        |r| r.get(0),
    ) {
        Ok(raw) => raw,
        Err(rusqlite::Error::QueryReturnedNoRows) => None,
        Err(e) => return Err(e.into()),
    };
    let ids = raw
        .and_then(|t| serde_json::from_str::<Vec<Value>>(&t).ok())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    Ok(ids)
}

/// A session row to write, as the target's columns.
struct NewSession {
    id: String,
    status: String,
    reason_code: Option<String>,
    reason_summary: Option<String>,
    created_at: i64,
    updated_at: i64,
    ended_at: Option<i64>,
    ended_at_is_approximate: Option<i64>,
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
    total_cost_usd: Option<f64>,
    num_turns: Option<i64>,
    duration_ms: Option<i64>,
    current_phase: Option<String>,
    node_metadata: String,
    kind: Option<String>,
    project: Option<String>,
    model: Option<String>,
    agent_name: Option<String>,
    provider: Option<String>,
    last_message_at: Option<i64>,
}

fn new_session(s: &Session, status: &str) -> NewSession {
    let c = &s.columns;
    let text = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_owned);
    let time = |k: &str| c.get(k).and_then(Value::as_f64).map(micros);
    let int = |k: &str| c.get(k).and_then(Value::as_f64).map(|f| f as i64);
    let mut meta = text("node_metadata")
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default();
    meta.insert("imported_from".into(), json!("lionagi"));
    for key in [
        "name",
        "cc_session_id",
        "source_kind",
        "run_id",
        "effort",
        "user_label",
    ] {
        if let Some(v) = c.get(key).filter(|v| !v.is_null()) {
            meta.insert(key.into(), v.clone());
        }
    }
    let created = time("created_at").unwrap_or(0);
    NewSession {
        id: s.id.clone(),
        status: status.to_owned(),
        reason_code: text("status_reason_code"),
        reason_summary: text("status_reason_summary"),
        created_at: created,
        updated_at: time("updated_at").unwrap_or(created),
        ended_at: time("ended_at"),
        ended_at_is_approximate: int("ended_at_is_approximate"),
        input_tokens: int("input_tokens"),
        output_tokens: int("output_tokens"),
        total_cost_usd: c.get("total_cost_usd").and_then(Value::as_f64),
        num_turns: int("num_turns"),
        duration_ms: int("duration_ms"),
        current_phase: text("current_phase"),
        node_metadata: Value::Object(meta).to_string(),
        kind: text("invocation_kind"),
        project: text("project"),
        model: text("model"),
        agent_name: text("agent_name"),
        provider: text("provider"),
        last_message_at: time("last_message_at"),
    }
}

/// A status history row to write.
struct NewTransition<'a> {
    entity_type: &'a str,
    entity_id: &'a str,
    from: Option<String>,
    to: String,
    reason_code: String,
    reason_summary: String,
    reason_json: String,
    actor_type: &'a str,
    actor_id: String,
    created_at: i64,
}

/// Where an import writes: one transaction of the SQLite file or of the
/// PostgreSQL schema `--db` names. The rows go in as they are (an import
/// copies history, it does not replay it through the transition service).
trait Target {
    /// Whether the target already has this session.
    fn has_session(&mut self, id: &str) -> Result<bool>;
    /// Inserts a session row.
    fn insert_session(&mut self, s: &NewSession) -> Result<()>;
    /// Inserts a message unless its id is taken; whether it was inserted.
    fn insert_message(
        &mut self,
        id: &str,
        session: &str,
        role: &str,
        content: &str,
        at: i64,
    ) -> Result<bool>;
    /// Appends a status history row.
    fn insert_transition(&mut self, t: &NewTransition<'_>) -> Result<()>;
    /// Whether `table` has a row with this id.
    fn has_row(&mut self, table: &str, id: &str) -> Result<bool>;
    /// Inserts a row of text and integer columns into `table`.
    fn insert_row(&mut self, table: &str, row: &[(&str, Val)]) -> Result<()>;
    /// Commits, or rolls back (a dry run).
    fn finish(self, commit: bool) -> Result<()>;
}

/// A column value of [`Target::insert_row`].
#[derive(Debug, Clone)]
enum Val {
    Text(Option<String>),
    Int(Option<i64>),
}

/// `INSERT INTO table (a, b) VALUES (p1, p2)` with `param(i)` placeholders.
fn insert_sql(table: &str, row: &[(&str, Val)], param: impl Fn(usize) -> String) -> String {
    let names: Vec<&str> = row.iter().map(|(n, _)| *n).collect();
    let params: Vec<String> = (1..=row.len()).map(param).collect();
    format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        names.join(", "),
        params.join(", ")
    )
}

struct SqliteTarget<'c> {
    tx: rusqlite::Transaction<'c>,
}

impl Target for SqliteTarget<'_> {
    fn has_session(&mut self, id: &str) -> Result<bool> {
        Ok(self.tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1)",
            [id],
            |r| r.get(0),
        )?)
    }

    fn insert_session(&mut self, s: &NewSession) -> Result<()> {
        self.tx.execute(
            "INSERT INTO sessions (id, status, status_reason_code, status_reason_summary,
                created_at, updated_at, ended_at, ended_at_is_approximate, input_tokens,
                output_tokens, total_cost_usd, num_turns, duration_ms, current_phase,
                node_metadata, kind, project, model, agent_name, provider, last_message_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                ?17, ?18, ?19, ?20, ?21)",
            rusqlite::params![
                s.id,
                s.status,
                s.reason_code,
                s.reason_summary,
                s.created_at,
                s.updated_at,
                s.ended_at,
                s.ended_at_is_approximate,
                s.input_tokens,
                s.output_tokens,
                s.total_cost_usd,
                s.num_turns,
                s.duration_ms,
                s.current_phase,
                s.node_metadata,
                s.kind,
                s.project,
                s.model,
                s.agent_name,
                s.provider,
                s.last_message_at,
            ],
        )?;
        Ok(())
    }

    fn insert_message(
        &mut self,
        id: &str,
        session: &str,
        role: &str,
        content: &str,
        at: i64,
    ) -> Result<bool> {
        let added = self.tx.execute(
            "INSERT OR IGNORE INTO messages (id, session_id, branch_id, role, content, created_at)
             VALUES (?1, ?2, NULL, ?3, ?4, ?5)",
            (id, session, role, content, at),
        )?;
        Ok(added > 0)
    }

    fn insert_transition(&mut self, t: &NewTransition<'_>) -> Result<()> {
        self.tx.execute(
            "INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status,
                reason_code, reason_summary, reason_json, actor_type, actor_id, created_at)
             VALUES (?10, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            rusqlite::params![
                t.entity_id,
                &t.from,
                &t.to,
                &t.reason_code,
                &t.reason_summary,
                &t.reason_json,
                t.actor_type,
                &t.actor_id,
                t.created_at,
                t.entity_type,
            ],
        )?;
        Ok(())
    }

    fn has_row(&mut self, table: &str, id: &str) -> Result<bool> {
        Ok(self.tx.query_row(
            &format!("SELECT EXISTS (SELECT 1 FROM {table} WHERE id = ?1)"),
            [id],
            |r| r.get(0),
        )?)
    }

    fn insert_row(&mut self, table: &str, row: &[(&str, Val)]) -> Result<()> {
        let sql = insert_sql(table, row, |i| format!("?{i}"));
        let values: Vec<rusqlite::types::Value> = row
            .iter()
            .map(|(_, v)| match v {
                Val::Text(t) => t
                    .clone()
                    .map_or(rusqlite::types::Value::Null, rusqlite::types::Value::Text),
                Val::Int(n) => n.map_or(
                    rusqlite::types::Value::Null,
                    rusqlite::types::Value::Integer,
                ),
            })
            .collect();
        self.tx.execute(&sql, rusqlite::params_from_iter(values))?;
        Ok(())
    }

    fn finish(self, commit: bool) -> Result<()> {
        if commit {
            self.tx.commit()?;
        } else {
            self.tx.rollback()?;
        }
        Ok(())
    }
}

struct PgTarget<'c> {
    tx: postgres::Transaction<'c>,
}

impl Target for PgTarget<'_> {
    fn has_session(&mut self, id: &str) -> Result<bool> {
        Ok(self
            .tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)",
                &[&id],
            )?
            .try_get(0)?)
    }

    fn insert_session(&mut self, s: &NewSession) -> Result<()> {
        self.tx.execute(
            "INSERT INTO sessions (id, status, status_reason_code, status_reason_summary,
                created_at, updated_at, ended_at, ended_at_is_approximate, input_tokens,
                output_tokens, total_cost_usd, num_turns, duration_ms, current_phase,
                node_metadata, kind, project, model, agent_name, provider, last_message_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                $17, $18, $19, $20, $21)",
            &[
                &s.id,
                &s.status,
                &s.reason_code,
                &s.reason_summary,
                &s.created_at,
                &s.updated_at,
                &s.ended_at,
                &s.ended_at_is_approximate,
                &s.input_tokens,
                &s.output_tokens,
                &s.total_cost_usd,
                &s.num_turns,
                &s.duration_ms,
                &s.current_phase,
                &s.node_metadata,
                &s.kind,
                &s.project,
                &s.model,
                &s.agent_name,
                &s.provider,
                &s.last_message_at,
            ],
        )?;
        Ok(())
    }

    fn insert_message(
        &mut self,
        id: &str,
        session: &str,
        role: &str,
        content: &str,
        at: i64,
    ) -> Result<bool> {
        let added = self.tx.execute(
            "INSERT INTO messages (id, session_id, branch_id, role, content, created_at)
             VALUES ($1, $2, NULL, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
            &[&id, &session, &role, &content, &at],
        )?;
        Ok(added > 0)
    }

    fn insert_transition(&mut self, t: &NewTransition<'_>) -> Result<()> {
        self.tx.execute(
            "INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status,
                reason_code, reason_summary, reason_json, actor_type, actor_id, created_at)
             VALUES ($10, $1, $2, $3, $4, $5, $6, $7, $8, $9)",
            &[
                &t.entity_id,
                &t.from,
                &t.to,
                &t.reason_code,
                &t.reason_summary,
                &t.reason_json,
                &t.actor_type,
                &t.actor_id,
                &t.created_at,
                &t.entity_type,
            ],
        )?;
        Ok(())
    }

    fn has_row(&mut self, table: &str, id: &str) -> Result<bool> {
        Ok(self
            .tx
            .query_one(
                &format!("SELECT EXISTS (SELECT 1 FROM {table} WHERE id = $1)"),
                &[&id],
            )?
            .try_get(0)?)
    }

    fn insert_row(&mut self, table: &str, row: &[(&str, Val)]) -> Result<()> {
        let sql = insert_sql(table, row, |i| format!("${i}"));
        let params: Vec<&(dyn postgres::types::ToSql + Sync)> = row
            .iter()
            .map(|(_, v)| match v {
                Val::Text(t) => t as &(dyn postgres::types::ToSql + Sync),
                Val::Int(n) => n as &(dyn postgres::types::ToSql + Sync),
            })
            .collect();
        self.tx.execute(&sql, &params)?;
        Ok(())
    }

    fn finish(self, commit: bool) -> Result<()> {
        if commit {
            self.tx.commit()?;
        } else {
            self.tx.rollback()?;
        }
        Ok(())
    }
}

/// Counts one entity's status history in the source as already brought (the
/// entity is in the target from an earlier import).
fn already_there(
    src: &rusqlite::Connection,
    report: &mut Report,
    kind: &str,
    id: &str,
) -> Result<()> {
    let n: i64 = src.query_row(
        "SELECT count(*) FROM status_transitions WHERE entity_type = ?1 AND entity_id = ?2",
        [kind, id],
        |r| r.get(0),
    )?;
    *report.brought.entry(kind.into()).or_default() += u64::try_from(n).unwrap_or(0);
    Ok(())
}

/// Copies one entity's status history; the number of rows written.
fn copy_history<T: Target>(
    src: &rusqlite::Connection,
    target: &mut T,
    entity_type: &str,
    id: &str,
) -> Result<u64> {
    let mut stmt = src.prepare(
        "SELECT previous_status, status, reason_code, reason_summary,
                CAST(evidence_refs AS TEXT), source, actor, created_at, CAST(metadata AS TEXT)
         FROM status_transitions WHERE entity_type = ?1 AND entity_id = ?2
         ORDER BY created_at, id",
    )?;
    let rows = stmt.query_map([entity_type, id], |r| {
        Ok((
            r.get::<_, Option<String>>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<String>>(2)?,
            r.get::<_, Option<String>>(3)?,
            r.get::<_, Option<String>>(4)?,
            r.get::<_, Option<String>>(5)?,
            r.get::<_, Option<String>>(6)?,
            r.get::<_, f64>(7)?,
            r.get::<_, Option<String>>(8)?,
        ))
    })?;
    let mut n = 0;
    for row in rows {
        let (from, to, code, summary, evidence, source, actor, at, metadata) = row?;
        let parse = |t: Option<String>| {
            t.and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .unwrap_or(Value::Null)
        };
        let reason_json = json!({
            "imported_from": "lionagi",
            "evidence_refs": parse(evidence),
            "metadata": parse(metadata),
        });
        let source = source.unwrap_or_default();
        let actor_type = if ACTOR_TYPES.contains(&source.as_str()) {
            source.as_str()
        } else {
            "system"
        };
        let actor_id = actor
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| "lionagi-import".to_owned());
        target.insert_transition(&NewTransition {
            entity_type,
            entity_id: id,
            from,
            to,
            reason_code: code.unwrap_or_else(|| "legacy.imported".to_owned()),
            reason_summary: summary.unwrap_or_default(),
            reason_json: reason_json.to_string(),
            actor_type,
            actor_id,
            created_at: micros(at),
        })?;
        n += 1;
    }
    Ok(n)
}

fn print(json: bool, from: &Path, r: &Report) {
    if json {
        out::json(&serde_json::to_value(r).unwrap_or(Value::Null));
        return;
    }
    let verb = if r.dry_run {
        "would import"
    } else {
        "imported"
    };
    out::line(format!(
        "{verb} from {}: {} session(s), {} message(s), {} status transition(s)",
        from.display(),
        r.sessions_imported,
        r.messages_imported,
        r.transitions_imported
    ));
    out::line(format!(
        "{verb}: {} invocation(s), {} schedule(s) (disabled), {} schedule run(s)",
        r.invocations_imported, r.schedules_imported, r.schedule_runs_imported
    ));
    for (what, skipped) in [
        ("session", &r.sessions_skipped),
        ("invocation", &r.invocations_skipped),
        ("schedule", &r.schedules_skipped),
        ("schedule run", &r.schedule_runs_skipped),
    ] {
        for (id, why) in skipped {
            out::line(format!("skipped {what} {id}: {why}"));
        }
    }
    if r.messages_missing > 0 {
        out::line(format!(
            "skipped {} progression entr(y/ies) with no message row",
            r.messages_missing
        ));
    }
    if r.messages_not_in_a_session > 0 {
        out::line(format!(
            "not imported: {} message(s) in no session",
            r.messages_not_in_a_session
        ));
    }
    for (kind, n) in &r.transitions_skipped {
        out::line(format!("not imported: {n} status transition(s) of {kind}"));
    }
    for (table, n) in &r.tables_not_imported {
        out::line(format!("not imported: {n} row(s) of table {table}"));
    }
}
