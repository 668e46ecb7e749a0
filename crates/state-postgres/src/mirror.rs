//! The transcript mirror's writes on PostgreSQL: [`MirrorStore`] for
//! [`PgStore`], with the semantics state-sqlite's implementation has
//! (SQL-052..068; the seam's docs in `transcript_mirror` list them).
//!
//! - [`PgStore::mirror_session`] is one transaction (run again, whole, on a
//!   lost race or a serialization failure: every write in it is
//!   idempotent). Scaffold writes run on every call in the stated order —
//!   progression, session, branch — each insert-or-ignore (`ON CONFLICT DO
//!   NOTHING`); the session row is created through the guarded transition
//!   service, history row included. A session created by another host
//!   between our read and our insert makes the insert match nothing, and
//!   the transaction runs again on the existing row.
//! - Where SQLite's `BEGIN IMMEDIATE` serialises writers, here the
//!   progression row is read `FOR UPDATE` before any append: writers of
//!   one progression queue there, so positions stay dense when two hosts
//!   mirror one transcript at once, and each message id is appended once
//!   (the primary key; a conflicting insert waits for the other
//!   transaction and is then ignored).
//! - Rows go in one statement per table per batch (`UNNEST` of arrays,
//!   `RETURNING` what was inserted): a batch is a handful of round trips,
//!   whatever its size.

use lifecycle_core::{CompatOptions, Expected, OutcomeKind, Reason, TransitionCommand};
use postgres::Transaction;
use postgres::types::Type;
use serde_json::{Map, Value, json};
use transcript_mirror::{
    LineageOutcome, MIRROR_KIND, MirrorBatch, MirrorCursor, MirrorSession, MirrorStore,
    MirrorWrite, ReconcileAction, ReconcilePlan, mirror_writer, reconcile_applied, reconcile_plan,
};

use crate::error::PgStoreError;
use crate::service::{Lock, PgStore, Step};
use crate::time::{next_version, now_micros};

impl PgStore {
    /// Writes one mirror batch in one transaction (see the module docs).
    /// Re-running a batch already written adds no row.
    pub fn mirror_session(&self, batch: &MirrorBatch<'_>) -> Result<MirrorWrite, PgStoreError> {
        let policy = self.policy("session")?;
        let s = batch.session;
        self.run(("session", &s.session_id), |tx, lock| {
            let now = now_micros();
            let mut w = MirrorWrite {
                progression_created: tx.execute_typed(
                    "INSERT INTO progressions (id, created_at) VALUES ($1, $2)
                     ON CONFLICT (id) DO NOTHING",
                    &[(&s.progression_id, Type::TEXT), (&now, Type::INT8)],
                )? > 0,
                ..MirrorWrite::default()
            };
            let sql = match lock {
                Lock::None => "SELECT project, updated_at FROM sessions WHERE id = $1",
                _ => "SELECT project, updated_at FROM sessions WHERE id = $1 FOR UPDATE",
            };
            let row = tx.query_typed_opt(sql, &[(&s.session_id, Type::TEXT)])?;
            match row {
                None => {
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
                    match self.transition_on(tx, &policy, None, &cmd, &opts)? {
                        Step::Commit(out, _) => {
                            w.session_created = out.result == OutcomeKind::Applied;
                        }
                        Step::Rollback(_) => {}
                        // Another host created it since our read.
                        Step::Retry => return Ok(Step::Retry),
                    }
                    if w.session_created {
                        describe_new_session(tx, s)?;
                    }
                }
                Some(row) => {
                    let project: Option<String> = row.try_get(0)?;
                    let version: i64 = row.try_get(1)?;
                    w.project_backfilled = backfill(tx, s, project.is_none(), version)?;
                }
            }
            w.branch_created = tx.execute_typed(
                "INSERT INTO branches (id, session_id, progression_id, created_at)
                 VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING",
                &[
                    (&s.branch_id, Type::TEXT),
                    (&s.session_id, Type::TEXT),
                    (&s.progression_id, Type::TEXT),
                    (&s.started_at.unwrap_or(now), Type::INT8),
                ],
            )? > 0;
            write_messages(tx, batch, &mut w)?;
            write_events(tx, batch.event_uuids, &s.session_id)?;
            if let Some(c) = batch.cursor {
                write_cursor(tx, c, now)?;
            }
            Ok(Step::Commit(w, None))
        })
    }

    /// Records a batch that produced no message: its event uuids and the
    /// cursor, without creating any scaffold.
    pub fn advance_mirror_cursor(
        &self,
        cursor: &MirrorCursor,
        event_uuids: &[String],
    ) -> Result<(), PgStoreError> {
        self.run(("mirror_cursor", &cursor.path), |tx, _| {
            write_events(tx, event_uuids, &cursor.session_id)?;
            write_cursor(tx, cursor, now_micros())?;
            Ok(Step::Commit((), None))
        })
    }

    /// The stored cursor of a transcript file.
    pub fn mirror_cursor(&self, path: &str) -> Result<Option<MirrorCursor>, PgStoreError> {
        let mut conn = self.engine().conn()?;
        let row = conn.query_typed_opt(
            "SELECT path, source, session_id, byte_offset, first_event_seen, pending_parent_uuid
             FROM mirror_cursors WHERE path = $1",
            &[(&path, Type::TEXT)],
        )?;
        Ok(match row {
            Some(r) => Some(MirrorCursor {
                path: r.try_get(0)?,
                source: r.try_get(1)?,
                session_id: r.try_get(2)?,
                byte_offset: r.try_get(3)?,
                first_event_seen: r.try_get::<_, i64>(4)? != 0,
                pending_parent_uuid: r.try_get(5)?,
            }),
            None => None,
        })
    }

    /// Moves a file's cursor back to the start (the file was replaced).
    pub fn rewind_mirror_cursor(&self, path: &str) -> Result<(), PgStoreError> {
        let mut conn = self.engine().conn()?;
        conn.execute_typed(
            "UPDATE mirror_cursors SET byte_offset = 0, updated_at = $2 WHERE path = $1",
            &[(&path, Type::TEXT), (&now_micros(), Type::INT8)],
        )?;
        Ok(())
    }

    /// Forgets a file's unresolved lineage pointer.
    pub fn clear_pending_lineage(&self, path: &str) -> Result<(), PgStoreError> {
        let mut conn = self.engine().conn()?;
        conn.execute_typed(
            "UPDATE mirror_cursors SET pending_parent_uuid = NULL WHERE path = $1",
            &[(&path, Type::TEXT)],
        )?;
        Ok(())
    }

    /// Links `child` to the session holding the event `parent_event_uuid`:
    /// writes only node_metadata's `lineage` key (other keys are kept),
    /// never moves `last_message_at`, and writes nothing when the same
    /// link is already there.
    pub fn link_session_lineage(
        &self,
        child: &str,
        parent_event_uuid: &str,
    ) -> Result<LineageOutcome, PgStoreError> {
        self.run(("session", child), |tx, _| {
            let row = tx.query_typed_opt(
                "SELECT node_metadata, updated_at FROM sessions WHERE id = $1 FOR UPDATE",
                &[(&child, Type::TEXT)],
            )?;
            let Some(row) = row else {
                return Ok(Step::Rollback(LineageOutcome::NoChild));
            };
            let meta: Option<String> = row.try_get(0)?;
            let version: i64 = row.try_get(1)?;
            let holders: Vec<String> = tx
                .query_typed(
                    "SELECT session_id FROM mirror_events WHERE event_uuid = $1 ORDER BY session_id",
                    &[(&parent_event_uuid, Type::TEXT)],
                )?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<_, _>>()?;
            if holders.iter().any(|h| h == child) {
                return Ok(Step::Rollback(LineageOutcome::SameSession));
            }
            let Some(parent) = holders.into_iter().next() else {
                return Ok(Step::Rollback(LineageOutcome::Unresolved));
            };
            let mut object = match meta.as_deref().map(serde_json::from_str::<Value>) {
                Some(Ok(Value::Object(m))) => m,
                _ => Map::new(),
            };
            let link = json!({"parent_session_id": parent, "parent_event_uuid": parent_event_uuid});
            let written = object.get("lineage") != Some(&link);
            if written {
                object.insert("lineage".into(), link);
                tx.execute_typed(
                    "UPDATE sessions SET node_metadata = $2, updated_at = $3 WHERE id = $1",
                    &[
                        (&child, Type::TEXT),
                        (&Value::Object(object).to_string(), Type::TEXT),
                        (&next_version(version), Type::INT8),
                    ],
                )?;
            }
            Ok(Step::Commit(
                LineageOutcome::Linked {
                    parent_session_id: parent,
                    written,
                },
                None,
            ))
        })
    }

    /// Mirrored sessions a reconcile should look at: every running one and
    /// every one with a message inside the live window.
    pub fn mirror_sessions_to_reconcile(
        &self,
        now: i64,
        live_window: i64,
    ) -> Result<Vec<String>, PgStoreError> {
        let mut conn = self.engine().conn()?;
        let rows = conn.query_typed(
            "SELECT id FROM sessions WHERE kind = $1 AND (status = 'running' OR last_message_at >= $2)
             ORDER BY id",
            &[
                (&MIRROR_KIND, Type::TEXT),
                (&now.saturating_sub(live_window), Type::INT8),
            ],
        )?;
        Ok(rows
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?)
    }

    /// Reconciles one mirrored session's status with its liveness at `now`
    /// (`transcript_mirror::reconcile_plan`): liveness from
    /// `last_message_at` only, completed means dormant, reactivation
    /// through the audited override.
    pub fn reconcile_mirror_session(
        &self,
        session_id: &str,
        now: i64,
        live_window: i64,
    ) -> Result<ReconcileAction, PgStoreError> {
        let row = {
            let mut conn = self.engine().conn()?;
            conn.query_typed_opt(
                "SELECT status, updated_at, last_message_at, kind FROM sessions WHERE id = $1",
                &[(&session_id, Type::TEXT)],
            )?
        };
        let Some(row) = row else {
            return Ok(ReconcileAction::NotMirrored);
        };
        let status: String = row.try_get(0)?;
        let version: i64 = row.try_get(1)?;
        let last_message_at: Option<i64> = row.try_get(2)?;
        let kind: Option<String> = row.try_get(3)?;
        if kind.as_deref() != Some(MIRROR_KIND) {
            return Ok(ReconcileAction::NotMirrored);
        }
        let cmd = match reconcile_plan(
            session_id,
            &status,
            version,
            last_message_at,
            now,
            live_window,
        ) {
            ReconcilePlan::Done(action) => return Ok(action),
            ReconcilePlan::Transition(cmd) => cmd,
        };
        let out = self.transition(&cmd)?;
        Ok(match out.result {
            OutcomeKind::Applied => reconcile_applied(&cmd, &status),
            _ => ReconcileAction::Conflict,
        })
    }
}

/// Fills the descriptive columns of a session row created just now.
fn describe_new_session(tx: &mut Transaction<'_>, s: &MirrorSession) -> Result<(), PgStoreError> {
    let meta = s.node_metadata.as_ref().map(Value::to_string);
    tx.execute_typed(
        "UPDATE sessions SET kind = $2, project = $3, model = $4, agent_name = $5,
            provider = $6, cwd = $7, node_metadata = $8, progression_id = $9,
            created_at = COALESCE($10, created_at)
         WHERE id = $1",
        &[
            (&s.session_id, Type::TEXT),
            (&MIRROR_KIND, Type::TEXT),
            (&s.project, Type::TEXT),
            (&s.model, Type::TEXT),
            (&s.agent_name, Type::TEXT),
            (&s.provider, Type::TEXT),
            (&s.cwd, Type::TEXT),
            (&meta, Type::TEXT),
            (&s.progression_id, Type::TEXT),
            (&s.started_at, Type::INT8),
        ],
    )?;
    Ok(())
}

/// Fills NULL descriptive columns of an existing row (never overwrites a
/// value, never touches last_message_at). Returns whether the project was
/// backfilled.
fn backfill(
    tx: &mut Transaction<'_>,
    s: &MirrorSession,
    project_missing: bool,
    version: i64,
) -> Result<bool, PgStoreError> {
    let project = s.project.as_ref().filter(|_| project_missing);
    let changed = tx.execute_typed(
        "UPDATE sessions SET
            project = COALESCE(project, $2),
            model = COALESCE(model, $3),
            cwd = COALESCE(cwd, $4),
            progression_id = COALESCE(progression_id, $5),
            updated_at = GREATEST(updated_at + 1, $6)
         WHERE id = $1 AND (
            (project IS NULL AND $2::text IS NOT NULL)
            OR (model IS NULL AND $3::text IS NOT NULL)
            OR (cwd IS NULL AND $4::text IS NOT NULL)
            OR (progression_id IS NULL AND $5::text IS NOT NULL))",
        &[
            (&s.session_id, Type::TEXT),
            (&project, Type::TEXT),
            (&s.model, Type::TEXT),
            (&s.cwd, Type::TEXT),
            (&s.progression_id, Type::TEXT),
            (&next_version(version), Type::INT8),
        ],
    )?;
    Ok(changed > 0 && project.is_some())
}

/// Records which session holds each event uuid (one statement).
fn write_events(
    tx: &mut Transaction<'_>,
    uuids: &[String],
    session_id: &str,
) -> Result<(), PgStoreError> {
    if uuids.is_empty() {
        return Ok(());
    }
    tx.execute_typed(
        "INSERT INTO mirror_events (event_uuid, session_id)
         SELECT u, $2 FROM UNNEST($1::text[]) AS u
         ON CONFLICT DO NOTHING",
        &[(&uuids, Type::TEXT_ARRAY), (&session_id, Type::TEXT)],
    )?;
    Ok(())
}

/// Upserts a file cursor. The offset only moves forward (two writers
/// racing on one file cannot move it back); the lineage pointer is kept
/// until cleared.
fn write_cursor(tx: &mut Transaction<'_>, c: &MirrorCursor, now: i64) -> Result<(), PgStoreError> {
    tx.execute_typed(
        "INSERT INTO mirror_cursors
            (path, source, session_id, byte_offset, first_event_seen, pending_parent_uuid, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (path) DO UPDATE SET
            source = excluded.source,
            session_id = excluded.session_id,
            byte_offset = GREATEST(mirror_cursors.byte_offset, excluded.byte_offset),
            first_event_seen = GREATEST(mirror_cursors.first_event_seen, excluded.first_event_seen),
            pending_parent_uuid = COALESCE(excluded.pending_parent_uuid, mirror_cursors.pending_parent_uuid),
            updated_at = excluded.updated_at",
        &[
            (&c.path, Type::TEXT),
            (&c.source, Type::TEXT),
            (&c.session_id, Type::TEXT),
            (&c.byte_offset, Type::INT8),
            (&i64::from(c.first_event_seen), Type::INT8),
            (&c.pending_parent_uuid, Type::TEXT),
            (&now, Type::INT8),
        ],
    )?;
    Ok(())
}

/// Upserts the messages, appends them to the progression (deduplicated,
/// dense positions), moves the branch's first/last pointers and the
/// liveness clock.
fn write_messages(
    tx: &mut Transaction<'_>,
    batch: &MirrorBatch<'_>,
    w: &mut MirrorWrite,
) -> Result<(), PgStoreError> {
    let s = batch.session;
    let messages = batch.messages;
    if messages.is_empty() {
        return Ok(());
    }
    // Writers of this progression queue here (see the module docs).
    let first_position: i64 = tx
        .query_typed_one(
            "SELECT next_position FROM progressions WHERE id = $1 FOR UPDATE",
            &[(&s.progression_id, Type::TEXT)],
        )?
        .try_get(0)?;
    let ids: Vec<&str> = messages.iter().map(|m| m.id.as_str()).collect();
    let roles: Vec<&str> = messages.iter().map(|m| m.role.as_str()).collect();
    let contents: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
    let times: Vec<i64> = messages.iter().map(|m| m.created_at).collect();
    let inserted = tx.query_typed(
        "INSERT INTO messages (id, session_id, branch_id, role, content, created_at)
         SELECT u.id, $5, $6, u.role, u.content, u.created_at
         FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int8[])
              AS u(id, role, content, created_at)
         ON CONFLICT (id) DO NOTHING RETURNING id",
        &[
            (&ids, Type::TEXT_ARRAY),
            (&roles, Type::TEXT_ARRAY),
            (&contents, Type::TEXT_ARRAY),
            (&times, Type::INT8_ARRAY),
            (&s.session_id, Type::TEXT),
            (&s.branch_id, Type::TEXT),
        ],
    )?;
    let mut added: std::collections::HashSet<String> = inserted
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    let mut newest: Option<i64> = None;
    let mut stale = Vec::new();
    for m in messages {
        if added.remove(&m.id) {
            w.messages_added += 1;
            newest = Some(newest.map_or(m.created_at, |n| n.max(m.created_at)));
        } else {
            stale.push(m);
        }
    }
    for m in stale {
        w.messages_updated += usize::try_from(tx.execute_typed(
            "UPDATE messages SET role = $2, content = $3
             WHERE id = $1 AND (role IS DISTINCT FROM $2 OR content IS DISTINCT FROM $3)",
            &[
                (&m.id, Type::TEXT),
                (&m.role, Type::TEXT),
                (&m.content, Type::TEXT),
            ],
        )?)
        .unwrap_or(usize::MAX);
    }
    // Appends at first_position + i in transcript order; an id already in
    // the progression (or twice in the batch) is ignored and the rows
    // after it are renumbered so positions stay dense.
    let appended_rows = tx.query_typed(
        "INSERT INTO progression_items (progression_id, message_id, position)
         SELECT $1, u.id, $2 + u.ord - 1 FROM UNNEST($3::text[]) WITH ORDINALITY AS u(id, ord)
         ON CONFLICT DO NOTHING RETURNING message_id",
        &[
            (&s.progression_id, Type::TEXT),
            (&first_position, Type::INT8),
            (&ids, Type::TEXT_ARRAY),
        ],
    )?;
    let mut appended: std::collections::HashSet<String> = appended_rows
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    let mut next = first_position;
    let mut first_appended: Option<&str> = None;
    let mut last_appended: Option<&str> = None;
    let mut moved_ids: Vec<&str> = Vec::new();
    let mut moved_positions: Vec<i64> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if !appended.remove(&m.id) {
            continue;
        }
        let tried = first_position + i64::try_from(i).unwrap_or(i64::MAX);
        if tried != next {
            moved_ids.push(&m.id);
            moved_positions.push(next);
        }
        next += 1;
        first_appended.get_or_insert(m.id.as_str());
        last_appended = Some(m.id.as_str());
    }
    if !moved_ids.is_empty() {
        tx.execute_typed(
            "UPDATE progression_items p SET position = u.position
             FROM UNNEST($2::text[], $3::int8[]) AS u(id, position)
             WHERE p.progression_id = $1 AND p.message_id = u.id",
            &[
                (&s.progression_id, Type::TEXT),
                (&moved_ids, Type::TEXT_ARRAY),
                (&moved_positions, Type::INT8_ARRAY),
            ],
        )?;
    }
    if next != first_position {
        tx.execute_typed(
            "UPDATE progressions SET next_position = $2 WHERE id = $1",
            &[(&s.progression_id, Type::TEXT), (&next, Type::INT8)],
        )?;
    }
    if let Some(at) = newest {
        tx.execute_typed(
            "UPDATE sessions SET last_message_at = GREATEST(COALESCE(last_message_at, 0), $2)
             WHERE id = $1",
            &[(&s.session_id, Type::TEXT), (&at, Type::INT8)],
        )?;
    }
    if let (Some(first), Some(last)) = (first_appended, last_appended) {
        tx.execute_typed(
            "UPDATE branches SET first_msg_id = COALESCE(first_msg_id, $2), last_msg_id = $3
             WHERE id = $1",
            &[
                (&s.branch_id, Type::TEXT),
                (&first, Type::TEXT),
                (&last, Type::TEXT),
            ],
        )?;
    }
    Ok(())
}

impl MirrorStore for PgStore {
    type Error = PgStoreError;

    fn mirror_session(&self, batch: &MirrorBatch<'_>) -> Result<MirrorWrite, PgStoreError> {
        PgStore::mirror_session(self, batch)
    }

    fn advance_mirror_cursor(
        &self,
        cursor: &MirrorCursor,
        event_uuids: &[String],
    ) -> Result<(), PgStoreError> {
        PgStore::advance_mirror_cursor(self, cursor, event_uuids)
    }

    fn mirror_cursor(&self, path: &str) -> Result<Option<MirrorCursor>, PgStoreError> {
        PgStore::mirror_cursor(self, path)
    }

    fn rewind_mirror_cursor(&self, path: &str) -> Result<(), PgStoreError> {
        PgStore::rewind_mirror_cursor(self, path)
    }

    fn clear_pending_lineage(&self, path: &str) -> Result<(), PgStoreError> {
        PgStore::clear_pending_lineage(self, path)
    }

    fn link_session_lineage(
        &self,
        child: &str,
        parent_event_uuid: &str,
    ) -> Result<LineageOutcome, PgStoreError> {
        PgStore::link_session_lineage(self, child, parent_event_uuid)
    }

    fn mirror_sessions_to_reconcile(
        &self,
        now: i64,
        live_window: i64,
    ) -> Result<Vec<String>, PgStoreError> {
        PgStore::mirror_sessions_to_reconcile(self, now, live_window)
    }

    fn reconcile_mirror_session(
        &self,
        session_id: &str,
        now: i64,
        live_window: i64,
    ) -> Result<ReconcileAction, PgStoreError> {
        PgStore::reconcile_mirror_session(self, session_id, now, live_window)
    }
}
