//! Read-side queries for people and tools: session lists and details,
//! messages (with a cursor for following), what is in flight, store
//! statistics, id-prefix resolution, and the maintenance verbs
//! (checkpoint, vacuum, retention prune).
//!
//! Every read works on any connection, read-only ones included; only
//! [`checkpoint`], [`vacuum`] and [`prune`] (without `dry_run`) write.

use lifecycle_core::{COUNTED_TABLES, default_registry};
pub use lifecycle_core::{
    InFlight, MessageRow, OpenEntity, PruneReport, SessionFilter, SessionRow,
};
use rusqlite::{Connection, OptionalExtension, params_from_iter};
use serde::Serialize;
use serde_json::json;

use crate::admin::{NewAdminEvent, record_admin_event};
use crate::error::StoreError;
use crate::migrate::schema_version;

/// How many candidates an ambiguous-prefix error names at most.
const CANDIDATES: usize = lifecycle_core::ID_CANDIDATES;

const SESSION_SELECT: &str = "SELECT s.id, s.status, s.status_reason_code, s.status_reason_summary, s.kind, \
     s.provider, s.model, s.cwd, s.pid, s.owner_pid, s.created_at, s.updated_at, s.ended_at, \
     s.last_message_at, s.input_tokens, s.output_tokens, s.total_cost_usd, s.num_turns, \
     s.duration_ms, (SELECT count(*) FROM messages m WHERE m.session_id = s.id) FROM sessions s";

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    let mut row = SessionRow::new(r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(10)?);
    row.reason_code = r.get(2)?;
    row.reason_summary = r.get(3)?;
    row.kind = r.get(4)?;
    row.provider = r.get(5)?;
    row.model = r.get(6)?;
    row.cwd = r.get(7)?;
    row.pid = r.get(8)?;
    row.owner_pid = r.get(9)?;
    row.updated_at = r.get(11)?;
    row.ended_at = r.get(12)?;
    row.last_message_at = r.get(13)?;
    row.input_tokens = r.get(14)?;
    row.output_tokens = r.get(15)?;
    row.total_cost_usd = r.get(16)?;
    row.num_turns = r.get(17)?;
    row.duration_ms = r.get(18)?;
    row.messages = r.get(19)?;
    Ok(row)
}

/// The session policy's terminal statuses.
fn terminal_session_statuses() -> Result<Vec<String>, StoreError> {
    default_registry().get("session")?;
    Ok(lifecycle_core::terminal_session_statuses())
}

/// Sessions matching `filter`, newest first.
///
/// # Errors
///
/// [`StoreError`] when SQLite refuses the query.
pub fn sessions(conn: &Connection, filter: &SessionFilter) -> Result<Vec<SessionRow>, StoreError> {
    let mut clauses = Vec::new();
    let mut values: Vec<rusqlite::types::Value> = Vec::new();
    if let Some(status) = &filter.status {
        values.push(status.clone().into());
        clauses.push(format!("s.status = ?{}", values.len()));
    }
    if let Some(since) = filter.since {
        values.push(since.into());
        clauses.push(format!("s.created_at >= ?{}", values.len()));
    }
    if filter.open_only {
        let mut marks = Vec::new();
        for t in terminal_session_statuses()? {
            values.push(t.into());
            marks.push(format!("?{}", values.len()));
        }
        clauses.push(format!("s.status NOT IN ({})", marks.join(", ")));
    }
    let mut sql = SESSION_SELECT.to_owned();
    if !clauses.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&clauses.join(" AND "));
    }
    sql.push_str(" ORDER BY s.created_at DESC, s.id DESC");
    if let Some(limit) = filter.limit {
        values.push(i64::from(limit).into());
        sql.push_str(&format!(" LIMIT ?{}", values.len()));
    }
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(params_from_iter(values), session_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// One session by exact id.
///
/// # Errors
///
/// [`StoreError`] when SQLite refuses the query.
pub fn session(conn: &Connection, id: &str) -> Result<Option<SessionRow>, StoreError> {
    Ok(conn
        .query_row(
            &format!("{SESSION_SELECT} WHERE s.id = ?1"),
            [id],
            session_row,
        )
        .optional()?)
}

/// Resolves an id or a unique id prefix of `entity_type` to the full id.
/// An exact match always wins; a prefix matching several ids is refused
/// with [`StoreError::AmbiguousId`], one matching none with
/// [`StoreError::NoSuchId`].
///
/// # Errors
///
/// As above, [`StoreError::Rule`] for an unknown entity type, or a SQLite
/// error.
pub fn resolve_id(
    conn: &Connection,
    entity_type: &str,
    prefix: &str,
) -> Result<String, StoreError> {
    let policy = default_registry().get(entity_type)?;
    let table = policy.table();
    let exact: Option<String> = conn
        .query_row(
            &format!("SELECT id FROM {table} WHERE id = ?1"),
            [prefix],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = exact {
        return Ok(id);
    }
    // A range scan on the primary key: [prefix, the next string after
    // every string starting with prefix). BINARY collation compares UTF-8
    // bytes, which orders like code points.
    let sql = match prefix_upper(prefix) {
        Some(_) => format!(
            "SELECT id FROM {table} WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT {CANDIDATES}"
        ),
        None => format!("SELECT id FROM {table} WHERE id >= ?1 ORDER BY id LIMIT {CANDIDATES}"),
    };
    let mut stmt = conn.prepare(&sql)?;
    let ids: Vec<String> = match prefix_upper(prefix) {
        Some(upper) => stmt
            .query_map([prefix, upper.as_str()], |r| r.get(0))?
            .collect::<Result<_, _>>()?,
        None => stmt
            .query_map([prefix], |r| r.get(0))?
            .collect::<Result<_, _>>()?,
    };
    match ids.as_slice() {
        [] => Err(StoreError::NoSuchId {
            entity_type: entity_type.to_owned(),
            prefix: prefix.to_owned(),
        }),
        [one] => Ok(one.clone()),
        _ => Err(StoreError::AmbiguousId {
            entity_type: entity_type.to_owned(),
            prefix: prefix.to_owned(),
            candidates: ids,
        }),
    }
}

/// The least string greater than every string that starts with `prefix`
/// (its last character incremented, dropping trailing `char::MAX`), or
/// `None` when there is none (an empty prefix, or only `char::MAX`).
fn prefix_upper(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The session's messages recorded after `after_seq` (0 for all), in the
/// order they were written, at most `limit`.
///
/// # Errors
///
/// [`StoreError`] when SQLite refuses the query.
pub fn messages(
    conn: &Connection,
    session_id: &str,
    after_seq: i64,
    limit: u32,
) -> Result<Vec<MessageRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT rowid, id, branch_id, role, content, created_at FROM messages
         WHERE session_id = ?1 AND rowid > ?2 ORDER BY rowid LIMIT ?3",
    )?;
    let rows = stmt.query_map(rusqlite::params![session_id, after_seq, limit], |r| {
        let mut m = MessageRow::new(
            r.get(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(3)?,
            r.get::<_, String>(4)?,
            r.get(5)?,
        );
        m.branch_id = r.get(2)?;
        Ok(m)
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What is in flight right now.
///
/// # Errors
///
/// [`StoreError`] when SQLite refuses a query.
pub fn in_flight(conn: &Connection) -> Result<InFlight, StoreError> {
    let sessions = sessions(conn, &SessionFilter::open())?;
    let mut others = Vec::new();
    for policy in default_registry().iter() {
        if policy.entity_type() == "session" {
            continue;
        }
        others.extend(open_entities(conn, policy.entity_type())?);
    }
    Ok(InFlight::new(sessions, others))
}

/// The entities of `entity_type` not in a terminal status, oldest change
/// first.
///
/// # Errors
///
/// [`StoreError`] for an unknown entity type or when SQLite refuses.
pub fn open_entities(conn: &Connection, entity_type: &str) -> Result<Vec<OpenEntity>, StoreError> {
    let policy = default_registry().get(entity_type)?;
    let mut others = Vec::new();
    {
        let terminal: Vec<rusqlite::types::Value> = policy
            .terminal_statuses()
            .map(|s| s.to_owned().into())
            .collect();
        let marks: Vec<String> = (1..=terminal.len()).map(|i| format!("?{i}")).collect();
        let sql = format!(
            "SELECT id, status, updated_at FROM {} WHERE status NOT IN ({}) ORDER BY updated_at",
            policy.table(),
            if marks.is_empty() {
                "NULL".to_owned()
            } else {
                marks.join(", ")
            }
        );
        let mut stmt = conn.prepare(&sql)?;
        let rows = stmt.query_map(params_from_iter(terminal), |r| {
            Ok(OpenEntity::new(
                policy.entity_type(),
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get(2)?,
            ))
        })?;
        for row in rows {
            others.push(row?);
        }
    }
    Ok(others)
}

/// The entities whose id is `id` or starts with it, across every entity
/// type, as `(entity_type, id)` pairs: what `lifecycle RUN_ID` shows.
///
/// # Errors
///
/// [`StoreError`] when SQLite refuses a query.
pub fn entities_with_id(conn: &Connection, id: &str) -> Result<Vec<(String, String)>, StoreError> {
    let mut found = Vec::new();
    for policy in default_registry().iter() {
        match resolve_id(conn, policy.entity_type(), id) {
            Ok(full) => found.push((policy.entity_type().to_owned(), full)),
            Err(StoreError::NoSuchId { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(found)
}

/// The sessions of an invocation (`sessions.invocation_id`), oldest first.
///
/// # Errors
///
/// [`StoreError`] when SQLite refuses the query.
pub fn sessions_of_invocation(
    conn: &Connection,
    invocation: &str,
) -> Result<Vec<String>, StoreError> {
    let mut stmt =
        conn.prepare("SELECT id FROM sessions WHERE invocation_id = ?1 ORDER BY created_at, id")?;
    let rows = stmt.query_map([invocation], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Size and content of the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Stats {
    /// The schema version.
    pub schema_version: u32,
    /// The journal mode.
    pub journal_mode: String,
    /// Page size in bytes.
    pub page_size: i64,
    /// Pages in the file.
    pub page_count: i64,
    /// Free pages (reclaimed by `vacuum`).
    pub freelist_count: i64,
    /// Rows per table, by table name.
    pub tables: Vec<(String, i64)>,
    /// Sessions per status.
    pub sessions_by_status: Vec<(String, i64)>,
}

/// The tables [`stats`] counts.
const COUNTED: &[&str] = COUNTED_TABLES;

/// Counts and sizes.
///
/// # Errors
///
/// [`StoreError`] when SQLite refuses a query.
pub fn stats(conn: &Connection) -> Result<Stats, StoreError> {
    let pragma = |name: &str| -> Result<i64, StoreError> {
        Ok(conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))?)
    };
    let mut tables = Vec::new();
    for table in COUNTED {
        let n: i64 = conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))?;
        tables.push(((*table).to_owned(), n));
    }
    let mut stmt =
        conn.prepare("SELECT status, count(*) FROM sessions GROUP BY status ORDER BY status")?;
    let sessions_by_status = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(Stats {
        schema_version: schema_version(conn)?,
        journal_mode: conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?,
        page_size: pragma("page_size")?,
        page_count: pragma("page_count")?,
        freelist_count: pragma("freelist_count")?,
        tables,
        sessions_by_status,
    })
}

/// What a WAL checkpoint did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Checkpoint {
    /// Whether a reader or writer kept it from finishing.
    pub busy: bool,
    /// Frames in the WAL.
    pub log_frames: i64,
    /// Frames moved into the database.
    pub checkpointed_frames: i64,
}

/// `PRAGMA wal_checkpoint(TRUNCATE)`: moves the WAL into the database and
/// truncates it (when no reader holds it).
///
/// # Errors
///
/// [`StoreError`] when SQLite refuses.
pub fn checkpoint(conn: &Connection) -> Result<Checkpoint, StoreError> {
    Ok(conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
        Ok(Checkpoint {
            busy: r.get::<_, i64>(0)? != 0,
            log_frames: r.get(1)?,
            checkpointed_frames: r.get(2)?,
        })
    })?)
}

/// `VACUUM`: rewrites the file without free pages; returns the page counts
/// before and after.
///
/// # Errors
///
/// [`StoreError`] when SQLite refuses (another writer, say).
pub fn vacuum(conn: &Connection) -> Result<(i64, i64), StoreError> {
    let pages = || -> Result<i64, StoreError> {
        Ok(conn.query_row("PRAGMA page_count", [], |r| r.get(0))?)
    };
    let before = pages()?;
    conn.execute_batch("VACUUM")?;
    Ok((before, pages()?))
}

/// Retention: removes sessions in a terminal status that ended (or last
/// changed) before `before` (microseconds), with their messages, branches,
/// progressions, mirror marks and controls. Open sessions are never
/// touched, and `status_transitions` is kept (the audit trail outlives the
/// rows). One `admin_events` row records the prune, dry runs included.
///
/// # Errors
///
/// [`StoreError`] when SQLite refuses; the deletion is one transaction.
pub fn prune(
    conn: &mut Connection,
    before: i64,
    dry_run: bool,
    actor: (&str, &str),
) -> Result<PruneReport, StoreError> {
    let terminal = terminal_session_statuses()?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS prune_ids (id TEXT PRIMARY KEY); DELETE FROM prune_ids;",
    )?;
    let marks: Vec<String> = (2..terminal.len() + 2).map(|i| format!("?{i}")).collect();
    let mut values: Vec<rusqlite::types::Value> = vec![before.into()];
    values.extend(terminal.into_iter().map(Into::into));
    tx.execute(
        &format!(
            "INSERT INTO prune_ids SELECT id FROM sessions
             WHERE COALESCE(ended_at, updated_at) < ?1 AND status IN ({})",
            marks.join(", ")
        ),
        params_from_iter(values),
    )?;
    let sessions: i64 = tx.query_row("SELECT count(*) FROM prune_ids", [], |r| r.get(0))?;
    let messages: i64 = tx.query_row(
        "SELECT count(*) FROM messages WHERE session_id IN (SELECT id FROM prune_ids)",
        [],
        |r| r.get(0),
    )?;
    if !dry_run {
        tx.execute_batch(
            "DELETE FROM branches WHERE session_id IN (SELECT id FROM prune_ids);
             DELETE FROM progression_items WHERE progression_id IN
                 (SELECT progression_id FROM sessions WHERE id IN (SELECT id FROM prune_ids));
             DELETE FROM progressions WHERE id IN
                 (SELECT progression_id FROM sessions WHERE id IN (SELECT id FROM prune_ids));
             DELETE FROM messages WHERE session_id IN (SELECT id FROM prune_ids);
             DELETE FROM mirror_events WHERE session_id IN (SELECT id FROM prune_ids);
             DELETE FROM session_controls WHERE session_id IN (SELECT id FROM prune_ids);
             DELETE FROM sessions WHERE id IN (SELECT id FROM prune_ids);",
        )?;
    }
    tx.execute_batch("DELETE FROM prune_ids;")?;
    let report = PruneReport::new(
        u64::try_from(sessions).unwrap_or(0),
        u64::try_from(messages).unwrap_or(0),
        dry_run,
    );
    record_admin_event(
        &tx,
        &NewAdminEvent {
            kind: "state.prune",
            entity_type: Some("session"),
            entity_id: None,
            actor_type: actor.0,
            actor_id: actor.1,
            detail: &json!({"before": before, "dry_run": dry_run,
                "sessions": report.sessions, "messages": report.messages}),
        },
    )?;
    tx.commit()?;
    Ok(report)
}
