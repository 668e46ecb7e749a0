//! The transcript mirror's writes: sessions, branches, progressions and
//! messages mirrored from another program's transcript (Claude Code, Codex).
//!
//! The mirror is just another writer to the store. Its SQL lives here, not
//! in the mirror crate, because the store owns its queries and the session
//! row must be created through the guarded transition service (history row
//! included) inside the same transaction as the scaffold. The crate that
//! reads transcripts defines the seam ([`MirrorStore`], implemented below)
//! and only builds [`MirrorBatch`]es.
//!
//! - [`Store::mirror_session`] writes one batch in one `BEGIN IMMEDIATE`
//!   transaction. Scaffold writes run on every call, in dependency order:
//!   progression, session, branch; each is insert-or-ignore, so a pass that
//!   died half-way is repaired by the next and an existing row is never
//!   overwritten. Messages are upserts keyed by their deterministic id;
//!   progression appends dedupe on the (progression, message) key. It never
//!   changes a session's status.
//! - [`Store::reconcile_mirror_session`] (in `mirror/reconcile.rs`) owns the
//!   live/idle status, judged from `last_message_at` only.
//! - [`Store::link_session_lineage`] (in `mirror/lineage.rs`) stores where a
//!   continued conversation came from.

mod lineage;
mod reconcile;

use lifecycle_core::{CompatOptions, Expected, OutcomeKind, Reason, TransitionCommand};
use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::Value;

use transcript_mirror::MirrorStore;
pub use transcript_mirror::{
    LineageOutcome, MIRROR_KIND, MIRROR_RECONCILE_ID, MIRROR_WRITER_ID, MirrorBatch, MirrorCursor,
    MirrorMessage, MirrorSession, MirrorWrite, REACTIVATION_JUSTIFICATION, ReconcileAction,
    mirror_reconciler, mirror_writer,
};

use crate::error::StoreError;
use crate::service::{Store, TxOps};
use crate::time::{next_version, now_micros};

impl Store {
    /// Writes one mirror batch in one `BEGIN IMMEDIATE` transaction (see
    /// the module docs for the order and semantics). Re-running a batch
    /// already written adds no row.
    pub fn mirror_session(&self, batch: &MirrorBatch<'_>) -> Result<MirrorWrite, StoreError> {
        self.with_tx(|tx, ops| {
            // A batch (up to ~1.5 MiB of messages plus their index pages)
            // outgrows the default 2 MiB page cache: SQLite then spills
            // dirty pages to the WAL mid-transaction and reads them back
            // (2440 writes and 1182 reads for the bench's transcript instead
            // of 1896 and 632). The batch is bounded, so this transaction
            // gets a 16 MiB cache (it applies at once, unlike cache_spill)
            // and the connection's own size is restored after it. The
            // statement cache is widened so this call's statements (about
            // 25 with the transition service's) are not re-prepared.
            tx.set_prepared_statement_cache_capacity(64);
            let cache: i64 = tx.query_row("PRAGMA cache_size", [], |r| r.get(0))?;
            tx.execute_batch("PRAGMA cache_size = -16384")?;
            let result = mirror_session_in(tx, ops, batch);
            tx.execute_batch(&format!("PRAGMA cache_size = {cache}"))?;
            result
        })
    }

    /// Records a batch that produced no message: its event uuids and the
    /// cursor, without creating any scaffold (a transcript holding only
    /// summaries or snapshots creates no session).
    pub fn advance_mirror_cursor(
        &self,
        cursor: &MirrorCursor,
        event_uuids: &[String],
    ) -> Result<(), StoreError> {
        self.with_tx(|tx, _| {
            write_events(tx, event_uuids, &cursor.session_id)?;
            write_cursor(tx, cursor, now_micros())?;
            Ok(((), None))
        })
    }

    /// The stored cursor of a transcript file.
    pub fn mirror_cursor(&self, path: &str) -> Result<Option<MirrorCursor>, StoreError> {
        let conn = self.engine().conn()?;
        Ok(conn
            .prepare_cached(
                "SELECT path, source, session_id, byte_offset, first_event_seen, pending_parent_uuid
                 FROM mirror_cursors WHERE path = ?1",
            )?
            .query_row([path], |r| {
                Ok(MirrorCursor {
                    path: r.get(0)?,
                    source: r.get(1)?,
                    session_id: r.get(2)?,
                    byte_offset: r.get(3)?,
                    first_event_seen: r.get(4)?,
                    pending_parent_uuid: r.get(5)?,
                })
            })
            .optional()?)
    }

    /// Moves a file's cursor back to the start (the file shrank: it was
    /// replaced, so it is read again; deterministic ids keep that
    /// duplicate-free).
    pub fn rewind_mirror_cursor(&self, path: &str) -> Result<(), StoreError> {
        let conn = self.engine().conn()?;
        conn.execute(
            "UPDATE mirror_cursors SET byte_offset = 0, updated_at = ?2 WHERE path = ?1",
            params![path, now_micros()],
        )?;
        Ok(())
    }

    /// Forgets a file's unresolved lineage pointer (linked, or found to be
    /// in the same session).
    pub fn clear_pending_lineage(&self, path: &str) -> Result<(), StoreError> {
        let conn = self.engine().conn()?;
        conn.execute(
            "UPDATE mirror_cursors SET pending_parent_uuid = NULL WHERE path = ?1",
            [path],
        )?;
        Ok(())
    }
}

type TxResult<T> = Result<(T, Option<lifecycle_core::TransitionRecord>), StoreError>;

/// The body of [`Store::mirror_session`], inside its transaction.
fn mirror_session_in(
    tx: &Transaction<'_>,
    ops: &TxOps<'_>,
    batch: &MirrorBatch<'_>,
) -> TxResult<MirrorWrite> {
    let s = batch.session;
    let now = now_micros();
    let mut w = MirrorWrite {
        progression_created: tx
            .prepare_cached("INSERT OR IGNORE INTO progressions (id, created_at) VALUES (?1, ?2)")?
            .execute(params![s.progression_id, now])?
            > 0,
        ..MirrorWrite::default()
    };
    let exists: Option<Option<String>> = tx
        .prepare_cached("SELECT project FROM sessions WHERE id = ?1")?
        .query_row([&s.session_id], |r| r.get(0))
        .optional()?;
    match exists {
        None => {
            // Created through the transition service so the row
            // starts with its history entry; under the IMMEDIATE
            // lock, "absent, so insert" is insert-or-ignore.
            let mut cmd = TransitionCommand::new(
                "session",
                &s.session_id,
                "running",
                Reason::new("run.started.ok"),
                mirror_writer(),
            );
            cmd.expected_statuses.insert(Expected::NoRow);
            let opts = CompatOptions {
                enforce_edges: false,
                ..CompatOptions::default()
            };
            let (outcome, _) = ops.transition(tx, &cmd, &opts)?;
            w.session_created = outcome.result == OutcomeKind::Applied;
            if w.session_created {
                describe_new_session(tx, s)?;
            }
        }
        Some(project) => {
            w.project_backfilled = backfill(tx, s, project.is_none())?;
        }
    }
    w.branch_created =
        tx.prepare_cached(
            "INSERT OR IGNORE INTO branches (id, session_id, progression_id, created_at)
             VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![
            s.branch_id,
            s.session_id,
            s.progression_id,
            s.started_at.unwrap_or(now)
        ])? > 0;
    write_messages(tx, batch, &mut w)?;
    write_events(tx, batch.event_uuids, &s.session_id)?;
    if let Some(c) = batch.cursor {
        write_cursor(tx, c, now)?;
    }
    Ok((w, None))
}

/// Row counts per multi-row statement: a batch of n rows runs as
/// statements of 64, 16, 4 and 1 rows (a few cached statements, and far
/// fewer executions than one per row, which costs more than the row).
const CHUNKS: [usize; 4] = [64, 16, 4, 1];

/// `(start, len)` pieces of `n` rows, largest first.
fn chunks(n: usize) -> impl Iterator<Item = (usize, usize)> {
    let mut start = 0;
    std::iter::from_fn(move || {
        let len = CHUNKS.into_iter().find(|&c| c <= n - start)?;
        start += len;
        Some((start - len, len))
    })
}

/// `head` followed by `rows` value groups, row `r` written by `group(r)`
/// (numbered parameters, so a value shared by every row is bound once),
/// built once per (statement, size).
fn multi_row(
    cache: &'static std::sync::OnceLock<[String; 4]>,
    head: &str,
    group: fn(usize) -> String,
    rows: usize,
) -> &'static str {
    let all = cache.get_or_init(|| {
        CHUNKS.map(|n| {
            let groups: Vec<String> = (0..n).map(group).collect();
            format!("{head} {}", groups.join(", "))
        })
    });
    let i = CHUNKS.iter().position(|&c| c == rows).unwrap_or(3);
    &all[i]
}

/// Records which session holds each event uuid.
fn write_events(
    tx: &Transaction<'_>,
    uuids: &[String],
    session_id: &str,
) -> Result<(), StoreError> {
    static SQL: std::sync::OnceLock<[String; 4]> = std::sync::OnceLock::new();
    let mut params: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(1 + CHUNKS[0]);
    let mut held: Option<(usize, rusqlite::CachedStatement<'_>)> = None;
    for (start, len) in chunks(uuids.len()) {
        let stmt = match &mut held {
            Some((n, stmt)) if *n == len => stmt,
            _ => {
                // ?1 is the session; row r's uuid is ?(2 + r).
                let sql = multi_row(
                    &SQL,
                    "INSERT OR IGNORE INTO mirror_events (event_uuid, session_id) VALUES",
                    |r| format!("(?{}, ?1)", 2 + r),
                    len,
                );
                &mut held.insert((len, tx.prepare_cached(sql)?)).1
            }
        };
        params.clear();
        params.push(&session_id);
        for u in &uuids[start..start + len] {
            params.push(u);
        }
        stmt.execute(rusqlite::params_from_iter(params.iter()))?;
    }
    Ok(())
}

/// Upserts a file cursor. The offset only moves forward (two writers
/// racing on one file cannot move it back); the lineage pointer is kept
/// until cleared.
fn write_cursor(tx: &Transaction<'_>, c: &MirrorCursor, now: i64) -> Result<(), StoreError> {
    tx.prepare_cached(
        "INSERT INTO mirror_cursors
            (path, source, session_id, byte_offset, first_event_seen, pending_parent_uuid, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (path) DO UPDATE SET
            source = excluded.source,
            session_id = excluded.session_id,
            byte_offset = MAX(byte_offset, excluded.byte_offset),
            first_event_seen = MAX(first_event_seen, excluded.first_event_seen),
            pending_parent_uuid = COALESCE(excluded.pending_parent_uuid, pending_parent_uuid),
            updated_at = excluded.updated_at",
    )?
    .execute(params![
        c.path,
        c.source,
        c.session_id,
        c.byte_offset,
        c.first_event_seen,
        c.pending_parent_uuid,
        now
    ])?;
    Ok(())
}

/// Fills the descriptive columns of a session row created just now.
fn describe_new_session(tx: &Transaction<'_>, s: &MirrorSession) -> Result<(), StoreError> {
    let meta = s.node_metadata.as_ref().map(Value::to_string);
    tx.prepare_cached(
        "UPDATE sessions SET kind = ?2, project = ?3, model = ?4, agent_name = ?5,
            provider = ?6, cwd = ?7, node_metadata = ?8, progression_id = ?9,
            created_at = COALESCE(?10, created_at)
         WHERE id = ?1",
    )?
    .execute(params![
        s.session_id,
        MIRROR_KIND,
        s.project,
        s.model,
        s.agent_name,
        s.provider,
        s.cwd,
        meta,
        s.progression_id,
        s.started_at
    ])?;
    Ok(())
}

/// Fills NULL descriptive columns of an existing row (never overwrites a
/// value, never touches last_message_at). Returns whether the project was
/// backfilled.
fn backfill(
    tx: &Transaction<'_>,
    s: &MirrorSession,
    project_missing: bool,
) -> Result<bool, StoreError> {
    let project = s.project.as_ref().filter(|_| project_missing);
    let version: i64 = tx
        .prepare_cached("SELECT updated_at FROM sessions WHERE id = ?1")?
        .query_row([&s.session_id], |r| r.get(0))?;
    let changed = tx
        .prepare_cached(
            "UPDATE sessions SET
                project = COALESCE(project, ?2),
                model = COALESCE(model, ?3),
                cwd = COALESCE(cwd, ?4),
                progression_id = COALESCE(progression_id, ?5),
                updated_at = ?6
             WHERE id = ?1 AND (
                (project IS NULL AND ?2 IS NOT NULL)
                OR (model IS NULL AND ?3 IS NOT NULL)
                OR (cwd IS NULL AND ?4 IS NOT NULL)
                OR (progression_id IS NULL AND ?5 IS NOT NULL))",
        )?
        .execute(params![
            s.session_id,
            project,
            s.model,
            s.cwd,
            s.progression_id,
            next_version(version)
        ])?;
    Ok(changed > 0 && project.is_some())
}

impl MirrorStore for Store {
    type Error = StoreError;

    fn mirror_session(&self, batch: &MirrorBatch<'_>) -> Result<MirrorWrite, StoreError> {
        Store::mirror_session(self, batch)
    }

    fn advance_mirror_cursor(
        &self,
        cursor: &MirrorCursor,
        event_uuids: &[String],
    ) -> Result<(), StoreError> {
        Store::advance_mirror_cursor(self, cursor, event_uuids)
    }

    fn mirror_cursor(&self, path: &str) -> Result<Option<MirrorCursor>, StoreError> {
        Store::mirror_cursor(self, path)
    }

    fn rewind_mirror_cursor(&self, path: &str) -> Result<(), StoreError> {
        Store::rewind_mirror_cursor(self, path)
    }

    fn clear_pending_lineage(&self, path: &str) -> Result<(), StoreError> {
        Store::clear_pending_lineage(self, path)
    }

    fn link_session_lineage(
        &self,
        child: &str,
        parent_event_uuid: &str,
    ) -> Result<LineageOutcome, StoreError> {
        Store::link_session_lineage(self, child, parent_event_uuid)
    }

    fn mirror_sessions_to_reconcile(
        &self,
        now: i64,
        live_window: i64,
    ) -> Result<Vec<String>, StoreError> {
        Store::mirror_sessions_to_reconcile(self, now, live_window)
    }

    fn reconcile_mirror_session(
        &self,
        session_id: &str,
        now: i64,
        live_window: i64,
    ) -> Result<ReconcileAction, StoreError> {
        Store::reconcile_mirror_session(self, session_id, now, live_window)
    }
}

/// Where the appends of one batch stand.
struct Appends<'a> {
    next: i64,
    newest: Option<i64>,
    first: Option<&'a str>,
    last: Option<&'a str>,
}

impl<'a> Appends<'a> {
    /// Nothing appended yet; the next position is `next`.
    fn starting_at(next: i64) -> Self {
        Appends {
            next,
            newest: None,
            first: None,
            last: None,
        }
    }

    /// A message created at `created_at` was inserted.
    fn inserted(&mut self, created_at: i64) {
        self.newest = Some(self.newest.map_or(created_at, |n| n.max(created_at)));
    }

    /// `rows` were all inserted and appended at `next..`.
    fn record(&mut self, rows: &'a [MirrorMessage]) {
        for m in rows {
            self.inserted(m.created_at);
        }
        self.next += rows.len() as i64;
        if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
            self.first.get_or_insert(first.id.as_str());
            self.last = Some(last.id.as_str());
        }
    }
}

/// Upserts the messages, appends them to the progression (deduplicated),
/// moves the branch's first/last pointers and the liveness clock.
///
/// The usual case is a batch of rows that are all new: it is written
/// under one savepoint in multi-row `INSERT OR IGNORE`s (64, 16, 4 rows
/// each), and each statement's change count proves every row of it was
/// new. When one was not (a re-read, a second writer, an id repeated in
/// the batch), the batch is rolled back to that savepoint and written by
/// [`write_chunks`], which tells new rows from existing ones (updated in
/// place) and keeps positions dense. One savepoint per batch instead of
/// one per chunk: every chunk's savepoint copied the pages the previous
/// chunk had just written into the statement journal again.
fn write_messages(
    tx: &Transaction<'_>,
    batch: &MirrorBatch<'_>,
    w: &mut MirrorWrite,
) -> Result<(), StoreError> {
    if batch.messages.is_empty() {
        return Ok(());
    }
    let s = batch.session;
    let first_position: i64 = tx
        .prepare_cached("SELECT next_position FROM progressions WHERE id = ?1")?
        .query_row([&s.progression_id], |r| r.get(0))?;
    let mut at = Appends::starting_at(first_position);
    tx.prepare_cached("SAVEPOINT mirror_batch")?.execute([])?;
    if append_all_new(tx, s, batch.messages, &mut at)? {
        tx.prepare_cached("RELEASE mirror_batch")?.execute([])?;
        w.messages_added += batch.messages.len();
    } else {
        tx.prepare_cached("ROLLBACK TO mirror_batch")?.execute([])?;
        tx.prepare_cached("RELEASE mirror_batch")?.execute([])?;
        at = Appends::starting_at(first_position);
        write_chunks(tx, s, batch.messages, w, &mut at)?;
    }
    if at.next != first_position {
        tx.prepare_cached("UPDATE progressions SET next_position = ?2 WHERE id = ?1")?
            .execute(params![s.progression_id, at.next])?;
    }
    if let Some(t) = at.newest {
        tx.prepare_cached(
            "UPDATE sessions SET last_message_at = MAX(COALESCE(last_message_at, 0), ?2) WHERE id = ?1",
        )?
        .execute(params![s.session_id, t])?;
    }
    if let (Some(first), Some(last)) = (at.first, at.last) {
        tx.prepare_cached(
            "UPDATE branches SET first_msg_id = COALESCE(first_msg_id, ?2), last_msg_id = ?3 WHERE id = ?1",
        )?
        .execute(params![s.branch_id, first, last])?;
    }
    Ok(())
}

/// Inserts `rows` and appends them at `at.next..` in multi-row
/// statements, as long as every row of every statement is new. Returns
/// false at the first statement that met an existing row (the caller
/// rolls back what this wrote). The statements of one size are fetched
/// from the cache once and run for every chunk of that size.
fn append_all_new<'a>(
    tx: &Transaction<'_>,
    s: &MirrorSession,
    rows: &'a [MirrorMessage],
    at: &mut Appends<'a>,
) -> Result<bool, StoreError> {
    let mut held: Option<(usize, ChunkStatements<'_>)> = None;
    for (start, len) in chunks(rows.len()) {
        let chunk = &rows[start..start + len];
        let stmts = match &mut held {
            Some((n, stmts)) if *n == len => stmts,
            _ => &mut held.insert((len, ChunkStatements::new(tx, len)?)).1,
        };
        if !stmts.insert(s, chunk, at.next)? {
            return Ok(false);
        }
        at.record(chunk);
    }
    Ok(true)
}

/// The multi-row insert into messages and append to progression_items
/// for chunks of one size.
struct ChunkStatements<'c> {
    messages: rusqlite::CachedStatement<'c>,
    items: rusqlite::CachedStatement<'c>,
}

impl<'c> ChunkStatements<'c> {
    fn new(tx: &'c Transaction<'_>, len: usize) -> Result<Self, StoreError> {
        static MESSAGES: std::sync::OnceLock<[String; 4]> = std::sync::OnceLock::new();
        static ITEMS: std::sync::OnceLock<[String; 4]> = std::sync::OnceLock::new();
        // ?1 session, ?2 branch; row r: id, role, content, created_at at
        // ?(3 + 4r)..?(6 + 4r).
        let messages = multi_row(
            &MESSAGES,
            "INSERT OR IGNORE INTO messages (id, session_id, branch_id, role, content, created_at) VALUES",
            |r| {
                let p = 3 + 4 * r;
                format!("(?{p}, ?1, ?2, ?{}, ?{}, ?{})", p + 1, p + 2, p + 3)
            },
            len,
        );
        // ?1 progression, ?2 the first position; row r: message id ?(3 + r)
        // at position ?2 + r.
        let items = multi_row(
            &ITEMS,
            "INSERT OR IGNORE INTO progression_items (progression_id, message_id, position) VALUES",
            |r| format!("(?1, ?{}, ?2 + {r})", 3 + r),
            len,
        );
        Ok(ChunkStatements {
            messages: tx.prepare_cached(messages)?,
            items: tx.prepare_cached(items)?,
        })
    }

    /// Inserts `rows` (as many as this statement's size) and appends them
    /// at positions `next..`; true when every row was new in both tables.
    fn insert(
        &mut self,
        s: &MirrorSession,
        rows: &[MirrorMessage],
        next: i64,
    ) -> Result<bool, StoreError> {
        let len = rows.len();
        let mut params: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(2 + 4 * len);
        params.extend_from_slice(&[&s.session_id as &dyn rusqlite::ToSql, &s.branch_id]);
        for m in rows {
            params.extend_from_slice(&[
                &m.id as &dyn rusqlite::ToSql,
                &m.role,
                &m.content,
                &m.created_at,
            ]);
        }
        let inserted = self
            .messages
            .execute(rusqlite::params_from_iter(params.iter()))?;
        if inserted != len {
            return Ok(false);
        }
        params.clear();
        params.extend_from_slice(&[&s.progression_id as &dyn rusqlite::ToSql, &next]);
        for m in rows {
            params.push(&m.id);
        }
        let appended = self
            .items
            .execute(rusqlite::params_from_iter(params.iter()))?;
        Ok(appended == len)
    }
}

/// The careful path: each chunk under its own savepoint, multi-row when
/// every row of it is new, else rolled back to the savepoint and written
/// one row at a time.
fn write_chunks<'a>(
    tx: &Transaction<'_>,
    s: &MirrorSession,
    rows: &'a [MirrorMessage],
    w: &mut MirrorWrite,
    at: &mut Appends<'a>,
) -> Result<(), StoreError> {
    for (start, len) in chunks(rows.len()) {
        let chunk = &rows[start..start + len];
        if len > 1 {
            tx.prepare_cached("SAVEPOINT mirror_chunk")?.execute([])?;
            if ChunkStatements::new(tx, len)?.insert(s, chunk, at.next)? {
                tx.prepare_cached("RELEASE mirror_chunk")?.execute([])?;
                w.messages_added += len;
                at.record(chunk);
                continue;
            }
            tx.prepare_cached("ROLLBACK TO mirror_chunk")?.execute([])?;
            tx.prepare_cached("RELEASE mirror_chunk")?.execute([])?;
        }
        rows_one_by_one(tx, s, chunk, w, at)?;
    }
    Ok(())
}

/// The row-by-row path: insert or update each message, append each id not
/// yet in the progression at the next position.
fn rows_one_by_one<'a>(
    tx: &Transaction<'_>,
    s: &MirrorSession,
    rows: &'a [MirrorMessage],
    w: &mut MirrorWrite,
    at: &mut Appends<'a>,
) -> Result<(), StoreError> {
    let mut insert = tx.prepare_cached(
        "INSERT OR IGNORE INTO messages (id, session_id, branch_id, role, content, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut append = tx.prepare_cached(
        "INSERT OR IGNORE INTO progression_items (progression_id, message_id, position) VALUES (?1, ?2, ?3)",
    )?;
    for m in rows {
        let added = insert.execute(params![
            m.id,
            s.session_id,
            s.branch_id,
            m.role,
            m.content,
            m.created_at
        ])? > 0;
        if added {
            w.messages_added += 1;
            at.inserted(m.created_at);
        } else {
            w.messages_updated += tx
                .prepare_cached(
                    "UPDATE messages SET role = ?2, content = ?3
                     WHERE id = ?1 AND (role IS NOT ?2 OR content IS NOT ?3)",
                )?
                .execute(params![m.id, m.role, m.content])?;
        }
        if append.execute(params![s.progression_id, m.id, at.next])? > 0 {
            at.next += 1;
            at.first.get_or_insert(m.id.as_str());
            at.last = Some(m.id.as_str());
        }
    }
    Ok(())
}
