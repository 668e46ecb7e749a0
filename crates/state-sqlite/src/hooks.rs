//! Session start/end persistence hooks and the plain session update
//! (the `SessionRecorder` seam's writes).

use std::collections::BTreeMap;

use lifecycle_core::{
    Actor, CompatOptions, Expected, MetadataUpdate, Outcome, OutcomeKind, Reason, SessionEnd,
    SessionStart, TransitionCommand, columns as col, merge_metadata_key,
};
use rusqlite::types::Value as SqlValue;
use rusqlite::{OptionalExtension, params, params_from_iter};
use serde_json::Value;

use crate::error::StoreError;
use crate::service::Store;
use crate::sqlval::to_sql;
use crate::time::next_version;

/// Session columns [`Store::update_session`] may set, beyond status (the
/// seam's allowlist, shared with every recorder).
pub use lifecycle_core::SESSION_COLUMNS;

fn set_columns(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    columns: &[(&str, SqlValue)],
) -> Result<usize, StoreError> {
    let version: Option<i64> = tx
        .query_row(
            "SELECT updated_at FROM sessions WHERE id = ?1",
            [session_id],
            |r| r.get(0),
        )
        .optional()?;
    let Some(version) = version else { return Ok(0) };
    let mut sql = String::from("UPDATE sessions SET updated_at = ?1");
    let mut values = vec![SqlValue::Integer(next_version(version))];
    for (c, v) in columns {
        values.push(v.clone());
        sql.push_str(&format!(", {c} = ?{}", values.len()));
    }
    values.push(SqlValue::Text(session_id.to_owned()));
    sql.push_str(&format!(" WHERE id = ?{}", values.len()));
    Ok(tx.execute(&sql, params_from_iter(values))?)
}

fn opt_text(v: &Option<String>) -> SqlValue {
    v.clone().map_or(SqlValue::Null, SqlValue::Text)
}

impl Store {
    /// Writes the given session columns as a plain SET (no merge: writing
    /// node_metadata replaces the stored value). Columns outside
    /// [`SESSION_COLUMNS`] are refused before any SQL. Returns whether a row
    /// was updated.
    pub fn update_session(
        &self,
        session_id: &str,
        columns: &BTreeMap<String, Value>,
    ) -> Result<bool, StoreError> {
        if let Some(bad) = columns
            .keys()
            .find(|c| !SESSION_COLUMNS.contains(&c.as_str()))
        {
            return Err(StoreError::ColumnNotAllowed {
                entity_type: "session".into(),
                column: bad.clone(),
            });
        }
        let cols: Vec<(&str, SqlValue)> = columns
            .iter()
            .map(|(c, v)| (c.as_str(), to_sql(v)))
            .collect();
        self.with_tx(|tx, _| Ok((set_columns(tx, session_id, &cols)? > 0, None)))
    }

    /// Rewrites one key of the session's `node_metadata` object, keeping
    /// the others (see `SessionRecorder::update_session_metadata`). The
    /// read, `update` and the write are one `BEGIN IMMEDIATE` transaction:
    /// the write lock is held from the read on, so a concurrent writer's
    /// key is never lost.
    pub fn update_session_metadata(
        &self,
        session_id: &str,
        key: &str,
        update: &mut dyn FnMut(Option<&Value>) -> Option<Value>,
    ) -> Result<MetadataUpdate, StoreError> {
        self.with_tx(|tx, _| {
            let row: Option<(Option<String>, i64)> = tx
                .prepare_cached("SELECT node_metadata, updated_at FROM sessions WHERE id = ?1")?
                .query_row([session_id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            let Some((stored, version)) = row else {
                return Ok((MetadataUpdate::NotFound, None));
            };
            let (outcome, text) = merge_metadata_key(stored.as_deref(), key, update);
            if let Some(text) = text {
                tx.prepare_cached(
                    "UPDATE sessions SET node_metadata = ?2, updated_at = ?3 WHERE id = ?1",
                )?
                .execute(params![session_id, text, next_version(version)])?;
            }
            Ok((outcome, None))
        })
    }

    /// Records a session start: creates the row in `running` (or moves an
    /// existing non-running row there through the `update_status` rules)
    /// with the explicit reason, and persists every provenance field given.
    pub fn persist_session_start(
        &self,
        start: &SessionStart,
        actor: &Actor,
    ) -> Result<Outcome, StoreError> {
        self.with_tx(|tx, ops| {
            let policy = ops.policy("session")?;
            let row = crate::service::read_row(tx, &policy, &start.session_id, &[])?;
            let mut cmd = TransitionCommand::new(
                "session",
                &start.session_id,
                "running",
                Reason::new(&start.reason_code),
                actor.clone(),
            );
            if row.is_none() {
                cmd.expected_statuses.insert(Expected::NoRow);
            }
            let opts = CompatOptions {
                enforce_edges: false,
                raise_on_unguarded_conflict: true,
                ..CompatOptions::default()
            };
            let (outcome, terminal) = ops.transition(tx, &cmd, &opts)?;
            if outcome.result == OutcomeKind::Applied {
                let cols = [
                    ("kind", opt_text(&start.kind)),
                    ("project", opt_text(&start.project)),
                    ("model", opt_text(&start.model)),
                    ("agent_name", opt_text(&start.agent_name)),
                    ("provider", opt_text(&start.provider)),
                    ("cwd", opt_text(&start.cwd)),
                    ("pid", start.pid.map_or(SqlValue::Null, SqlValue::Integer)),
                    ("invocation_id", opt_text(&start.invocation_id)),
                    (
                        col::OWNER_PID,
                        start
                            .owner
                            .as_ref()
                            .map_or(SqlValue::Null, |o| SqlValue::Integer(o.pid)),
                    ),
                    (
                        col::OWNER_START_TIME,
                        start
                            .owner
                            .as_ref()
                            .and_then(|o| o.start_time)
                            .map_or(SqlValue::Null, SqlValue::Integer),
                    ),
                    (
                        col::OWNER_BOOT_ID,
                        opt_text(&start.owner.as_ref().and_then(|o| o.boot_id.clone())),
                    ),
                    (
                        col::OWNER_HOST_ID,
                        opt_text(&start.owner.as_ref().and_then(|o| o.host_id.clone())),
                    ),
                ];
                let given: Vec<(&str, SqlValue)> = cols
                    .into_iter()
                    .filter(|(_, v)| *v != SqlValue::Null)
                    .collect();
                set_columns(tx, &start.session_id, &given)?;
            }
            Ok((outcome, terminal))
        })
    }

    /// Records a session end. On a row that is already terminal only the
    /// usage fields are written: no status, reason, ended_at, node_metadata
    /// or history change, so a repeated end never clobbers the recorded
    /// status. Otherwise the terminal transition is made here, with ended_at
    /// and usage patched in the same write.
    pub fn persist_session_end(
        &self,
        end: &SessionEnd,
        actor: &Actor,
    ) -> Result<Outcome, StoreError> {
        let usage: Vec<(&str, Value)> = [
            ("input_tokens", end.usage.input_tokens.map(Value::from)),
            ("output_tokens", end.usage.output_tokens.map(Value::from)),
            ("total_cost_usd", end.usage.total_cost_usd.map(Value::from)),
            ("num_turns", end.usage.num_turns.map(Value::from)),
            ("duration_ms", end.usage.duration_ms.map(Value::from)),
        ]
        .into_iter()
        .filter_map(|(c, v)| v.map(|v| (c, v)))
        .collect();
        self.with_tx(|tx, ops| {
            let policy = ops.policy("session")?;
            let row =
                crate::service::read_row(tx, &policy, &end.session_id, &[])?.ok_or_else(|| {
                    lifecycle_core::CoreError::NotFound {
                        entity_type: "session".into(),
                        entity_id: end.session_id.clone(),
                    }
                })?;
            if policy.is_terminal(&row.status) {
                let cols: Vec<(&str, SqlValue)> =
                    usage.iter().map(|(c, v)| (*c, to_sql(v))).collect();
                set_columns(tx, &end.session_id, &cols)?;
                let unchanged = Outcome {
                    result: OutcomeKind::Applied,
                    previous_status: Some(row.status.clone()),
                    current_status: Some(row.status),
                    transition_id: None,
                };
                return Ok((unchanged, None));
            }
            let mut reason = Reason::new(&end.reason_code);
            if let Some(e) = &end.error {
                reason.summary = e.clone();
            }
            let mut cmd = TransitionCommand::new(
                "session",
                &end.session_id,
                &end.status,
                reason,
                actor.clone(),
            )
            .expecting(row.status.clone())
            .with_version(row.version)
            .with_patch("ended_at", Value::from(end.ended_at));
            for (c, v) in &usage {
                cmd = cmd.with_patch(*c, v.clone());
            }
            ops.transition(tx, &cmd, &CompatOptions::default())
        })
    }
}

impl Store {
    /// Records one message of a session (insert-or-ignore by its id, so
    /// re-recording the same message adds nothing) and moves the session's
    /// liveness clock (`last_message_at`) forward. Returns whether the
    /// message was new.
    pub fn record_message(
        &self,
        session_id: &str,
        message_id: &str,
        role: &str,
        content: &str,
        at: i64,
    ) -> Result<bool, StoreError> {
        self.with_tx(|tx, _| {
            let added = tx.execute(
                "INSERT OR IGNORE INTO messages (id, session_id, role, content, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![message_id, session_id, role, content, at],
            )?;
            if added > 0 {
                tx.execute(
                    "UPDATE sessions SET last_message_at = MAX(COALESCE(last_message_at, 0), ?2) WHERE id = ?1",
                    rusqlite::params![session_id, at],
                )?;
            }
            Ok((added > 0, None))
        })
    }
}
