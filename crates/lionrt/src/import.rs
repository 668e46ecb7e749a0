//! `lionrt state import --from-lionagi PATH`: brings sessions, their
//! messages and their status history over from a state.db written by the
//! original lionagi (0.36.0 schema), and reports everything it did not
//! bring. The target is the SQLite file or the PostgreSQL schema `--db`
//! names (the same reads, the same rows; only the statements differ).
//!
//! The source is never opened in place: its file (and `-wal`, when there is
//! one) is copied to a temporary directory and read from there, so the
//! original's file is not touched even by SQLite's WAL recovery. The source
//! must have lionagi's `sessions`, `messages`, `progressions` and
//! `status_transitions` tables. The import is one transaction: all of it or
//! nothing.
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
//! - its status history keeps from/to status, reason, actor and time;
//!   evidence and metadata go into the reason JSON.
//!
//! Skipped, and counted in the report: a session whose id is already in the
//! target, a session whose status lionrt's session policy does not know,
//! progression entries with no message row, messages no imported session
//! reaches, transitions of other entity types, and the rows of every other
//! non-empty lionagi table (invocations, shows, schedules, ...).

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
const HANDLED: [&str; 6] = [
    "sessions",
    "messages",
    "progressions",
    "status_transitions",
    "schema_meta",
    "message_types",
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
    /// The original lionagi state.db to read (never modified: a copy is read).
    #[arg(long = "from-lionagi", value_name = "PATH")]
    from: PathBuf,
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
    /// Progression entries naming no message row.
    messages_missing: u64,
    /// Message rows no imported session reaches.
    messages_not_in_a_session: u64,
    /// Status transitions of entities other than sessions, by type.
    transitions_skipped: BTreeMap<String, u64>,
    /// Rows of other lionagi tables, by table.
    tables_not_imported: BTreeMap<String, u64>,
    dry_run: bool,
}

/// One lionagi session row, as read.
struct Session {
    id: String,
    status: Option<String>,
    progression_id: String,
    columns: Map<String, Value>,
}

pub(crate) fn run(db: &Path, json: bool, args: ImportArgs) -> Result<ExitCode> {
    let snapshot = tempfile::tempdir().context("creating a temporary directory")?;
    let source = copy_source(&args.from, snapshot.path())?;
    let src = ReadOnlyEngine::open(&source, Duration::from_secs(5))
        .with_context(|| format!("opening {}", args.from.display()))?;
    let src = src.conn()?;
    let tables: BTreeSet<String> = {
        let mut stmt = src.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
        stmt.query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<_, _>>()?
    };
    for table in REQUIRED {
        if !tables.contains(table) {
            bail!(
                "{} is not a lionagi state.db: it has no {table} table",
                args.from.display()
            );
        }
    }
    // lionagi stamps its stores `lineage = lionagi` in schema_meta, and its
    // sessions reach their messages through `progression_id`.
    let lineage: Option<String> = src
        .query_row(
            "SELECT value FROM schema_meta WHERE key = 'lineage'",
            [],
            |r| r.get(0),
        )
        .ok();
    let has_progression = src
        .prepare("SELECT progression_id FROM sessions LIMIT 0")
        .is_ok();
    if lineage.as_deref() != Some("lionagi") || !has_progression {
        bail!(
            "{} is not a lionagi state.db: its schema_meta has no lineage 'lionagi'",
            args.from.display()
        );
    }
    let report = match crate::pg::url(db) {
        Some(url) => {
            let store = crate::pg::open(&url)?;
            let mut conn = store.engine().conn()?;
            let target = PgTarget {
                tx: conn.transaction()?,
            };
            import_into(target, &src, &tables, args.dry_run)?
        }
        None => {
            let store = Store::new(Engine::create(db, EngineConfig::default())?);
            let mut conn = store.engine().conn()?;
            let target = SqliteTarget {
                tx: conn.transaction()?,
            };
            import_into(target, &src, &tables, args.dry_run)?
        }
    };
    print(json, &args.from, &report);
    Ok(ExitCode::SUCCESS)
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
        report.transitions_imported += copy_history(src, &mut target, &s.id)?;
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
    {
        let mut stmt = src.prepare(
            "SELECT entity_type, count(*) FROM status_transitions
             WHERE entity_type != 'session' GROUP BY entity_type",
        )?;
        for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
            let (kind, n) = row?;
            report
                .transitions_skipped
                .insert(kind, u64::try_from(n).unwrap_or(0));
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
    /// Commits, or rolls back (a dry run).
    fn finish(self, commit: bool) -> Result<()>;
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
             VALUES ('session', ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            (
                t.entity_id,
                &t.from,
                &t.to,
                &t.reason_code,
                &t.reason_summary,
                &t.reason_json,
                t.actor_type,
                &t.actor_id,
                t.created_at,
            ),
        )?;
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
             VALUES ('session', $1, $2, $3, $4, $5, $6, $7, $8, $9)",
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
            ],
        )?;
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

/// Copies one session's status history; the number of rows written.
fn copy_history<T: Target>(src: &rusqlite::Connection, target: &mut T, id: &str) -> Result<u64> {
    let mut stmt = src.prepare(
        "SELECT previous_status, status, reason_code, reason_summary,
                CAST(evidence_refs AS TEXT), source, actor, created_at, CAST(metadata AS TEXT)
         FROM status_transitions WHERE entity_type = 'session' AND entity_id = ?1
         ORDER BY created_at, id",
    )?;
    let rows = stmt.query_map([id], |r| {
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
    for (id, why) in &r.sessions_skipped {
        out::line(format!("skipped session {id}: {why}"));
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
