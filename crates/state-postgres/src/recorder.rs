//! `SessionRecorder` for the PostgreSQL store: session start and end, plain
//! column updates, messages, and the reads a runner and a sweep need.

use std::collections::BTreeMap;

use lifecycle_core::{
    Actor, CompatOptions, CoreError, Expected, MetadataUpdate, Outcome, OutcomeKind, Reason,
    SESSION_COLUMNS, SessionEnd, SessionRecorder, SessionSnapshot, SessionStart, TransitionCommand,
    columns as col, merge_metadata_key,
};
use postgres::types::Type;
use postgres::{GenericClient, Row, Transaction};
use serde_json::Value;

use crate::error::PgStoreError;
use crate::service::{PgStore, Step};
use crate::sql::Sql;
use crate::time::{next_version, now_micros};
use crate::values::{bind, read};

/// Columns a snapshot reports in their own fields, not in `columns`.
const OWN_FIELDS: &[&str] = &[
    "id",
    "status",
    "updated_at",
    "status_reason_code",
    "messages",
];

const SELECT: &str = "SELECT s.*, (SELECT count(*) FROM messages m WHERE m.session_id = s.id) AS messages FROM sessions s";

fn snapshot(row: &Row) -> Result<SessionSnapshot, PgStoreError> {
    let mut columns = BTreeMap::new();
    for (i, c) in row.columns().iter().enumerate() {
        if OWN_FIELDS.contains(&c.name()) {
            continue;
        }
        let value = read(row, i)?;
        if !value.is_null() {
            columns.insert(c.name().to_owned(), value);
        }
    }
    Ok(SessionSnapshot {
        id: row.try_get("id")?,
        status: row.try_get("status")?,
        version: row.try_get("updated_at")?,
        reason_code: row.try_get("status_reason_code")?,
        columns,
        messages: u64::try_from(row.try_get::<_, i64>("messages")?).unwrap_or(0),
    })
}

impl PgStore {
    /// Writes `columns` (already allowlisted) on the session and bumps its
    /// version; returns whether a row was updated.
    fn set_columns(
        &self,
        tx: &mut impl GenericClient,
        session_id: &str,
        columns: &[(&str, Value)],
    ) -> Result<bool, PgStoreError> {
        let mut sql = Sql::new("UPDATE sessions SET ");
        let now = sql.bind(now_micros(), Type::INT8);
        let mut set = format!("updated_at = GREATEST(updated_at + 1, {now})");
        for (c, v) in columns {
            let ty = self
                .engine()
                .column_type("sessions", c)
                .cloned()
                .ok_or_else(|| PgStoreError::ColumnNotAllowed {
                    entity_type: "session".into(),
                    column: (*c).to_owned(),
                })?;
            let p = sql.bind_param(bind(c, &ty, v)?);
            set.push_str(&format!(", {c} = {p}"));
        }
        sql.push(&set);
        let id = sql.bind(session_id.to_owned(), Type::TEXT);
        sql.push(&format!(" WHERE id = {id} RETURNING id"));
        Ok(!sql.query_client(tx)?.is_empty())
    }

    /// Writes session columns as a plain SET; columns outside
    /// [`SESSION_COLUMNS`] are refused before any SQL.
    pub fn update_session(
        &self,
        session_id: &str,
        columns: &BTreeMap<String, Value>,
    ) -> Result<bool, PgStoreError> {
        if let Some(bad) = columns
            .keys()
            .find(|c| !SESSION_COLUMNS.contains(&c.as_str()))
        {
            return Err(PgStoreError::ColumnNotAllowed {
                entity_type: "session".into(),
                column: bad.clone(),
            });
        }
        let cols: Vec<(&str, Value)> = columns
            .iter()
            .map(|(c, v)| (c.as_str(), v.clone()))
            .collect();
        self.run(("session", session_id), |tx, _| {
            Ok(Step::Commit(self.set_columns(tx, session_id, &cols)?, None))
        })
    }

    /// Rewrites one key of the session's `node_metadata` object, keeping
    /// the others (see `SessionRecorder::update_session_metadata`): the row
    /// is read `FOR UPDATE`, so a concurrent writer waits for this
    /// transaction and then reads what it wrote; no key is lost.
    pub fn update_session_metadata(
        &self,
        session_id: &str,
        key: &str,
        update: &mut dyn FnMut(Option<&Value>) -> Option<Value>,
    ) -> Result<MetadataUpdate, PgStoreError> {
        self.run(("session", session_id), |tx, _| {
            let row = tx.query_typed_opt(
                "SELECT node_metadata, updated_at FROM sessions WHERE id = $1 FOR UPDATE",
                &[(&session_id, Type::TEXT)],
            )?;
            let Some(row) = row else {
                return Ok(Step::Rollback(MetadataUpdate::NotFound));
            };
            let stored: Option<String> = row.try_get(0)?;
            let version: i64 = row.try_get(1)?;
            let (outcome, text) = merge_metadata_key(stored.as_deref(), key, &mut *update);
            let Some(text) = text else {
                return Ok(Step::Rollback(outcome));
            };
            tx.execute_typed(
                "UPDATE sessions SET node_metadata = $2, updated_at = $3 WHERE id = $1",
                &[
                    (&session_id, Type::TEXT),
                    (&text, Type::TEXT),
                    (&next_version(version), Type::INT8),
                ],
            )?;
            Ok(Step::Commit(outcome, None))
        })
    }

    /// Records a session start: creates the row in `running` (or moves an
    /// existing non-running row there through the `update_status` rules)
    /// and persists every provenance field given, in one transaction.
    pub fn persist_session_start(
        &self,
        start: &SessionStart,
        actor: &Actor,
    ) -> Result<Outcome, PgStoreError> {
        let policy = self.policy("session")?;
        let opts = CompatOptions {
            enforce_edges: false,
            raise_on_unguarded_conflict: true,
            ..CompatOptions::default()
        };
        let text = |v: &Option<String>| v.clone().map(Value::from);
        let owner = start.owner.as_ref();
        let given: Vec<(&str, Value)> = [
            ("kind", text(&start.kind)),
            ("project", text(&start.project)),
            ("model", text(&start.model)),
            ("agent_name", text(&start.agent_name)),
            ("provider", text(&start.provider)),
            ("cwd", text(&start.cwd)),
            ("pid", start.pid.map(Value::from)),
            ("invocation_id", text(&start.invocation_id)),
            (col::OWNER_PID, owner.map(|o| Value::from(o.pid))),
            (
                col::OWNER_START_TIME,
                owner.and_then(|o| o.start_time).map(Value::from),
            ),
            (
                col::OWNER_BOOT_ID,
                owner.and_then(|o| o.boot_id.clone()).map(Value::from),
            ),
            (
                col::OWNER_HOST_ID,
                owner.and_then(|o| o.host_id.clone()).map(Value::from),
            ),
        ]
        .into_iter()
        .filter_map(|(c, v)| v.map(|v| (c, v)))
        .collect();
        self.run(("session", &start.session_id), |tx, lock| {
            let row = self.read_row(tx, &policy, &start.session_id, &[], lock)?;
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
            let step = self.transition_on(tx, &policy, row.as_ref(), &cmd, &opts)?;
            if let Step::Commit(out, _) = &step
                && out.result == OutcomeKind::Applied
            {
                self.set_columns(tx, &start.session_id, &given)?;
            }
            Ok(step)
        })
    }

    /// Records a session end: on a terminal row only the usage fields are
    /// written; otherwise the terminal transition with ended_at and usage.
    pub fn persist_session_end(
        &self,
        end: &SessionEnd,
        actor: &Actor,
    ) -> Result<Outcome, PgStoreError> {
        let policy = self.policy("session")?;
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
        self.run(("session", &end.session_id), |tx, lock| {
            let row = self
                .read_row(tx, &policy, &end.session_id, &[], lock)?
                .ok_or_else(|| CoreError::NotFound {
                    entity_type: "session".into(),
                    entity_id: end.session_id.clone(),
                })?;
            if policy.is_terminal(&row.status) {
                self.set_columns(tx, &end.session_id, &usage)?;
                let unchanged = Outcome {
                    result: OutcomeKind::Applied,
                    previous_status: Some(row.status.clone()),
                    current_status: Some(row.status),
                    transition_id: None,
                };
                return Ok(Step::Commit(unchanged, None));
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
            Ok(
                match self.transition_on(
                    tx,
                    &policy,
                    Some(&row),
                    &cmd,
                    &CompatOptions::default(),
                )? {
                    // Our own read is the expectation: a conflict means the
                    // row moved since, so read again.
                    Step::Rollback(o) if o.result == OutcomeKind::Conflict => Step::Retry,
                    other => other,
                },
            )
        })
    }

    /// Records one message (insert-or-ignore by id) and moves the session's
    /// liveness clock forward; returns whether the message was new.
    pub fn record_message(
        &self,
        session_id: &str,
        message_id: &str,
        role: &str,
        content: &str,
        at: i64,
    ) -> Result<bool, PgStoreError> {
        self.run(("session", session_id), |tx: &mut Transaction<'_>, _| {
            let added = tx.execute(
                "INSERT INTO messages (id, session_id, role, content, created_at)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
                &[&message_id, &session_id, &role, &content, &at],
            )?;
            if added > 0 {
                tx.execute(
                    "UPDATE sessions SET last_message_at = GREATEST(COALESCE(last_message_at, 0), $2)
                     WHERE id = $1",
                    &[&session_id, &at],
                )?;
            }
            Ok(Step::Commit(added > 0, None))
        })
    }

    /// One session as a snapshot, or `None`.
    pub fn session(&self, session_id: &str) -> Result<Option<SessionSnapshot>, PgStoreError> {
        let mut conn = self.engine().conn()?;
        let rows = conn.query(&format!("{SELECT} WHERE s.id = $1"), &[&session_id])?;
        rows.first().map(snapshot).transpose()
    }

    /// Every session whose status is not terminal, oldest first.
    pub fn open_sessions(&self) -> Result<Vec<SessionSnapshot>, PgStoreError> {
        let policy = self.policy("session")?;
        let open: Vec<String> = policy
            .statuses()
            .iter()
            .filter(|s| !policy.is_terminal(s))
            .cloned()
            .collect();
        let mut conn = self.engine().conn()?;
        let rows = conn.query(
            &format!("{SELECT} WHERE s.status = ANY($1) ORDER BY s.created_at, s.id COLLATE \"C\""),
            &[&open],
        )?;
        rows.iter().map(snapshot).collect()
    }

    /// The ids of sessions starting with `prefix`, sorted bytewise, at most
    /// `limit`.
    pub fn session_ids_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, PgStoreError> {
        let mut conn = self.engine().conn()?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = conn.query(
            "SELECT id FROM sessions WHERE left(id, length($1)) = $1
             ORDER BY id COLLATE \"C\" LIMIT $2",
            &[&prefix, &limit],
        )?;
        rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
    }
}

impl SessionRecorder for PgStore {
    fn persist_session_start(
        &self,
        start: &SessionStart,
        actor: &Actor,
    ) -> Result<Outcome, PgStoreError> {
        PgStore::persist_session_start(self, start, actor)
    }

    fn persist_session_end(
        &self,
        end: &SessionEnd,
        actor: &Actor,
    ) -> Result<Outcome, PgStoreError> {
        PgStore::persist_session_end(self, end, actor)
    }

    fn record_message(
        &self,
        session_id: &str,
        message_id: &str,
        role: &str,
        content: &str,
        at: i64,
    ) -> Result<bool, PgStoreError> {
        PgStore::record_message(self, session_id, message_id, role, content, at)
    }

    fn update_session(
        &self,
        session_id: &str,
        columns: &BTreeMap<String, Value>,
    ) -> Result<bool, PgStoreError> {
        PgStore::update_session(self, session_id, columns)
    }

    fn update_session_metadata(
        &self,
        session_id: &str,
        key: &str,
        update: &mut dyn FnMut(Option<&Value>) -> Option<Value>,
    ) -> Result<MetadataUpdate, PgStoreError> {
        PgStore::update_session_metadata(self, session_id, key, update)
    }

    fn session(&self, session_id: &str) -> Result<Option<SessionSnapshot>, PgStoreError> {
        PgStore::session(self, session_id)
    }

    fn open_sessions(&self) -> Result<Vec<SessionSnapshot>, PgStoreError> {
        PgStore::open_sessions(self)
    }

    fn session_ids_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, PgStoreError> {
        PgStore::session_ids_with_prefix(self, prefix, limit)
    }

    /// A server database: every host pointed at it records sessions here.
    fn shared_by_hosts(&self) -> bool {
        true
    }
}
