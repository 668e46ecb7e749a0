//! The transcript mirror's writes: sessions, branches, progressions and
//! messages mirrored from another program's transcript (Claude Code, Codex).
//!
//! The mirror is just another writer to the store. Its SQL lives here, not
//! in the mirror crate, because the store owns its queries and the session
//! row must be created through the guarded transition service (history row
//! included) inside the same transaction as the scaffold. The crate that
//! reads transcripts only builds [`MirrorBatch`]es.
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

use lifecycle_core::{
    Actor, ActorType, CompatOptions, Expected, OutcomeKind, Reason, TransitionCommand,
};
use rusqlite::{OptionalExtension, Transaction, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use lineage::LineageOutcome;
pub use reconcile::{REACTIVATION_JUSTIFICATION, ReconcileAction};

use crate::error::StoreError;
use crate::service::Store;
use crate::time::{next_version, now_micros};

/// The `kind` of a mirrored session. Only sessions of this kind are
/// reconciled or linked by the mirror.
pub const MIRROR_KIND: &str = "mirrored";

/// The actor id that creates mirrored sessions.
pub const MIRROR_WRITER_ID: &str = "transcript-mirror";

/// The recorded automated override identity: the system actor that moves
/// mirror sessions between running and completed and, through the audited
/// override path, back out of a terminal status.
pub const MIRROR_RECONCILE_ID: &str = "claude-mirror-reconcile";

/// The system actor that creates mirrored sessions.
pub fn mirror_writer() -> Actor {
    Actor::new(ActorType::System, MIRROR_WRITER_ID)
}

/// The system actor that reconciles mirrored sessions (see
/// [`MIRROR_RECONCILE_ID`]).
pub fn mirror_reconciler() -> Actor {
    Actor::new(ActorType::System, MIRROR_RECONCILE_ID)
}

/// The scaffold of one mirrored session: the rows that must exist before
/// its messages. Fields are written only when a row is created (or, for the
/// descriptive columns, when the stored value is still NULL).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MirrorSession {
    /// Session id.
    pub session_id: String,
    /// Its branch id.
    pub branch_id: String,
    /// The branch's progression id.
    pub progression_id: String,
    /// Project (backfilled onto an existing session that has none).
    pub project: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Agent name, e.g. `claude-code`.
    pub agent_name: Option<String>,
    /// Provider, e.g. `claude`.
    pub provider: Option<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// node_metadata for a new row (a JSON object).
    pub node_metadata: Option<Value>,
    /// When the transcript started, microseconds since the epoch (the new
    /// row's created_at; now when unknown).
    pub started_at: Option<i64>,
}

/// One mirrored message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorMessage {
    /// Deterministic id (derived from the transcript event).
    pub id: String,
    /// Role: user, assistant or action.
    pub role: String,
    /// Content, a JSON text.
    pub content: String,
    /// The event's time, microseconds since the epoch.
    pub created_at: i64,
}

/// How far a transcript file has been read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorCursor {
    /// The file path.
    pub path: String,
    /// `claude` or `codex`.
    pub source: String,
    /// The session the file mirrors into.
    pub session_id: String,
    /// Bytes consumed (a line boundary).
    pub byte_offset: i64,
    /// Whether the transcript's first conversation event has been read
    /// (its parentUuid is the lineage pointer).
    pub first_event_seen: bool,
    /// The transcript's first parentUuid while its lineage is unresolved.
    pub pending_parent_uuid: Option<String>,
}

/// One write: the scaffold, the messages, the event uuids seen and the
/// cursor after them, committed together.
#[derive(Debug, Clone, Copy)]
pub struct MirrorBatch<'a> {
    /// The scaffold.
    pub session: &'a MirrorSession,
    /// Messages in transcript order.
    pub messages: &'a [MirrorMessage],
    /// Transcript event uuids this batch covered (for lineage lookups).
    pub event_uuids: &'a [String],
    /// The file cursor after this batch.
    pub cursor: Option<&'a MirrorCursor>,
}

/// What one [`Store::mirror_session`] call wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorWrite {
    /// The progression row was created now.
    pub progression_created: bool,
    /// The session row was created now.
    pub session_created: bool,
    /// The branch row was created now.
    pub branch_created: bool,
    /// An existing session without a project got one.
    pub project_backfilled: bool,
    /// Messages inserted.
    pub messages_added: usize,
    /// Existing messages whose content or role changed.
    pub messages_updated: usize,
}

impl Store {
    /// Writes one mirror batch in one `BEGIN IMMEDIATE` transaction (see
    /// the module docs for the order and semantics). Re-running a batch
    /// already written adds no row.
    pub fn mirror_session(&self, batch: &MirrorBatch<'_>) -> Result<MirrorWrite, StoreError> {
        self.with_tx(|tx, ops| {
            let s = batch.session;
            let now = now_micros();
            let mut w = MirrorWrite {
                progression_created: tx
                    .prepare_cached(
                        "INSERT OR IGNORE INTO progressions (id, created_at) VALUES (?1, ?2)",
                    )?
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

/// Records which session holds each event uuid, 64 rows per statement
/// (one statement per row costs more than the row).
fn write_events(
    tx: &Transaction<'_>,
    uuids: &[String],
    session_id: &str,
) -> Result<(), StoreError> {
    const CHUNK: usize = 64;
    let mut chunks = uuids.chunks_exact(CHUNK);
    if uuids.len() >= CHUNK {
        let mut sql =
            String::from("INSERT OR IGNORE INTO mirror_events (event_uuid, session_id) VALUES ");
        for i in 0..CHUNK {
            if i > 0 {
                sql.push(',');
            }
            sql.push_str(&format!("(?{}, ?{})", 2 * i + 1, 2 * i + 2));
        }
        let mut stmt = tx.prepare_cached(&sql)?;
        for chunk in chunks.by_ref() {
            let values = chunk.iter().flat_map(|u| [u.as_str(), session_id]);
            stmt.execute(rusqlite::params_from_iter(values))?;
        }
    }
    let mut one = tx.prepare_cached(
        "INSERT OR IGNORE INTO mirror_events (event_uuid, session_id) VALUES (?1, ?2)",
    )?;
    for uuid in chunks.remainder() {
        one.execute(params![uuid, session_id])?;
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

/// Upserts the messages, appends them to the progression (deduplicated),
/// moves the branch's first/last pointers and the liveness clock.
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
    let mut next = first_position;
    let mut insert = tx.prepare_cached(
        "INSERT OR IGNORE INTO messages (id, session_id, branch_id, role, content, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut update = tx.prepare_cached(
        "UPDATE messages SET role = ?2, content = ?3 WHERE id = ?1 AND (role IS NOT ?2 OR content IS NOT ?3)",
    )?;
    let mut append = tx.prepare_cached(
        "INSERT OR IGNORE INTO progression_items (progression_id, message_id, position) VALUES (?1, ?2, ?3)",
    )?;
    let mut newest: Option<i64> = None;
    let mut first_appended: Option<&str> = None;
    let mut last_appended: Option<&str> = None;
    for m in batch.messages {
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
            newest = Some(newest.map_or(m.created_at, |n| n.max(m.created_at)));
        } else {
            w.messages_updated += update.execute(params![m.id, m.role, m.content])?;
        }
        if append.execute(params![s.progression_id, m.id, next])? > 0 {
            next += 1;
            first_appended.get_or_insert(m.id.as_str());
            last_appended = Some(m.id.as_str());
        }
    }
    if next != first_position {
        tx.prepare_cached("UPDATE progressions SET next_position = ?2 WHERE id = ?1")?
            .execute(params![s.progression_id, next])?;
    }
    if let Some(at) = newest {
        tx.prepare_cached(
            "UPDATE sessions SET last_message_at = MAX(COALESCE(last_message_at, 0), ?2) WHERE id = ?1",
        )?
        .execute(params![s.session_id, at])?;
    }
    if let (Some(first), Some(last)) = (first_appended, last_appended) {
        tx.prepare_cached(
            "UPDATE branches SET first_msg_id = COALESCE(first_msg_id, ?2), last_msg_id = ?3 WHERE id = ?1",
        )?
        .execute(params![s.branch_id, first, last])?;
    }
    Ok(())
}
