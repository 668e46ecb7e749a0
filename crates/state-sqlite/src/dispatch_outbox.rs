//! The SQLite [`OutboxStore`]: the `dispatch_outbox` table, moved only
//! through the guarded transition path.
//!
//! It lives here rather than in the outbox crate because an enqueue (row plus
//! creation history), a move with a new deadline and a purge with its audit
//! row must each commit as one transaction, and the transaction helpers that
//! run `decide()` inside a caller's transaction are private to this crate.
//! Exposing them would put rusqlite transactions into the public API.

use std::collections::BTreeMap;

use lifecycle_core::reasons::DispatchReasons;
use lifecycle_core::{
    Actor, ActorType, CoreError, Decision, InitialCommand, OutcomeKind, Reason, TransitionRecord,
    decide_initial,
};
use outbox::{
    AuditRecord, DispatchMove, DispatchRow, DispatchStatus, ENTITY, Enqueued, ListQuery,
    MoveOutcome, NewDispatch, OutboxStore, PurgeReport, PurgeSelection,
};
use rusqlite::types::Value as SqlValue;
use rusqlite::{OptionalExtension, Row, Transaction, params, params_from_iter};
use serde_json::{Value, json};

use crate::error::StoreError;
use crate::service::{Store, append_history};
use crate::time::{next_version, now_micros};

const COLUMNS: &str = "id, status, attempt, max_attempts, next_attempt_at, last_error, dedup_key, \
     payload, deliver_to, template_json, ack_required, expires_at, created_at, updated_at";

/// The outbox over a [`Store`]'s database.
#[derive(Debug, Clone)]
pub struct SqliteOutbox {
    store: Store,
}

impl SqliteOutbox {
    /// An outbox over `store` (its registry must hold the default `dispatch`
    /// policy).
    pub fn new(store: Store) -> Self {
        SqliteOutbox { store }
    }

    /// The underlying store.
    pub fn store(&self) -> &Store {
        &self.store
    }
}

fn malformed(id: &str, detail: impl Into<String>) -> StoreError {
    StoreError::MalformedRow {
        entity_type: ENTITY.to_owned(),
        entity_id: id.to_owned(),
        detail: detail.into(),
    }
}

fn row_of(r: &Row<'_>) -> rusqlite::Result<Result<DispatchRow, StoreError>> {
    let id: String = r.get(0)?;
    let status: String = r.get(1)?;
    let template: Option<String> = r.get(9)?;
    let attempt: i64 = r.get(2)?;
    let max_attempts: i64 = r.get(3)?;
    let built = (|| {
        let status = status
            .parse::<DispatchStatus>()
            .map_err(|e| malformed(&id, e.to_string()))?;
        let template = template
            .map(|t| serde_json::from_str(&t))
            .transpose()
            .map_err(|e| malformed(&id, format!("template_json: {e}")))?;
        let attempt = u32::try_from(attempt).map_err(|_| malformed(&id, "attempt"))?;
        let max_attempts =
            u32::try_from(max_attempts).map_err(|_| malformed(&id, "max_attempts"))?;
        Ok::<_, StoreError>((status, template, attempt, max_attempts))
    })();
    let (status, template, attempt, max_attempts) = match built {
        Ok(v) => v,
        Err(e) => return Ok(Err(e)),
    };
    Ok(Ok(DispatchRow {
        status,
        attempt,
        max_attempts,
        next_attempt_at: r.get(4)?,
        last_error: r.get(5)?,
        dedup_key: r.get(6)?,
        payload: r.get::<_, Option<String>>(7)?.unwrap_or_default(),
        deliver_to: r.get(8)?,
        template,
        ack_required: r.get(10)?,
        expires_at: r.get(11)?,
        created_at: r.get(12)?,
        updated_at: r.get(13)?,
        id,
    }))
}

fn query_rows(
    conn: &rusqlite::Connection,
    sql: &str,
    values: Vec<SqlValue>,
) -> Result<Vec<DispatchRow>, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(params_from_iter(values), row_of)?;
    let mut out = Vec::new();
    for row in rows {
        out.push(row??);
    }
    Ok(out)
}

fn status_list(statuses: &[DispatchStatus], first: usize) -> (String, Vec<SqlValue>) {
    let marks: Vec<String> = (0..statuses.len())
        .map(|i| format!("?{}", first + i))
        .collect();
    let values = statuses
        .iter()
        .map(|s| SqlValue::Text(s.as_str().to_owned()))
        .collect();
    (marks.join(", "), values)
}

fn selection_where(selection: &PurgeSelection) -> (String, Vec<SqlValue>) {
    let (marks, mut values) = status_list(&selection.statuses(), 1);
    let mut sql = format!("status IN ({marks})");
    if let Some(before) = selection.before() {
        values.push(SqlValue::Integer(before));
        sql.push_str(&format!(" AND updated_at < ?{}", values.len()));
    }
    (sql, values)
}

fn insert_audit(
    tx: &Transaction<'_>,
    kind: &str,
    entity_id: Option<&str>,
    actor: &Actor,
    detail: &Value,
) -> Result<(), StoreError> {
    tx.prepare_cached(
        "INSERT INTO admin_events (kind, entity_type, entity_id, actor_type, actor_id, detail_json, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        kind,
        ENTITY,
        entity_id,
        actor.kind.as_str(),
        actor.id,
        detail.to_string(),
        now_micros()
    ])?;
    Ok(())
}

impl OutboxStore for SqliteOutbox {
    type Error = StoreError;

    fn enqueue(
        &self,
        id: &str,
        new: &NewDispatch,
        actor: &Actor,
        now: i64,
    ) -> Result<Enqueued, StoreError> {
        let policy = self.store.registry().get(ENTITY)?.clone();
        let next = new.not_before.unwrap_or(now);
        let cmd = InitialCommand {
            entity_type: ENTITY.to_owned(),
            entity_id: id.to_owned(),
            status: DispatchStatus::Pending.as_str().to_owned(),
            reason: Reason::new(DispatchReasons::PENDING_ENQUEUED),
            actor: actor.clone(),
            patch: BTreeMap::from([
                ("attempt".to_owned(), json!(0)),
                ("next_attempt_at".to_owned(), json!(next)),
            ]),
        };
        // The rules (vocabulary, reason, columns) are decided before any
        // write; the row and its delivery columns then go in one INSERT.
        let Decision::Write(plan) = decide_initial(&policy, None, &cmd)? else {
            return Err(CoreError::InvalidPolicy("initial dispatch decision".into()).into());
        };
        let template = new
            .template
            .as_ref()
            .map(serde_json::to_string)
            .transpose()?;
        self.store.with_tx(|tx, _| {
            let version = next_version(0);
            let inserted = tx
                .prepare_cached(
                    "INSERT INTO dispatch_outbox (id, status, created_at, updated_at, attempt,
                        next_attempt_at, dedup_key, payload, deliver_to, template_json,
                        max_attempts, ack_required, expires_at)
                     VALUES (?1, 'pending', ?2, ?2, 0, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                     ON CONFLICT (dedup_key) DO NOTHING",
                )?
                .execute(params![
                    id,
                    version,
                    next,
                    new.dedup_key,
                    new.payload,
                    new.deliver_to,
                    template,
                    new.max_attempts,
                    new.ack_required,
                    new.expires_at
                ])?;
            if inserted == 0 {
                let existing: String = tx
                    .prepare_cached("SELECT id FROM dispatch_outbox WHERE dedup_key = ?1")?
                    .query_row([&new.dedup_key], |r| r.get(0))?;
                return Ok((
                    Enqueued {
                        id: existing,
                        created: false,
                    },
                    None,
                ));
            }
            append_history(tx, ENTITY, id, &plan, &cmd.reason, actor, version)?;
            Ok((
                Enqueued {
                    id: id.to_owned(),
                    created: true,
                },
                None,
            ))
        })
    }

    fn get(&self, id: &str) -> Result<Option<DispatchRow>, StoreError> {
        let conn = self.store.engine().conn()?;
        let sql = format!("SELECT {COLUMNS} FROM dispatch_outbox WHERE id = ?1");
        let mut rows = query_rows(&conn, &sql, vec![SqlValue::Text(id.to_owned())])?;
        Ok(rows.pop())
    }

    fn list(&self, query: &ListQuery) -> Result<Vec<DispatchRow>, StoreError> {
        let conn = self.store.engine().conn()?;
        let mut values = Vec::new();
        let mut sql = format!("SELECT {COLUMNS} FROM dispatch_outbox");
        if let Some(s) = query.status {
            values.push(SqlValue::Text(s.as_str().to_owned()));
            sql.push_str(" WHERE status = ?1");
        }
        sql.push_str(" ORDER BY created_at, id");
        if let Some(limit) = query.limit {
            values.push(SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
            sql.push_str(&format!(" LIMIT ?{}", values.len()));
        }
        query_rows(&conn, &sql, values)
    }

    fn due(&self, now: i64, limit: usize) -> Result<Vec<DispatchRow>, StoreError> {
        let conn = self.store.engine().conn()?;
        // Three index ranges (due pending, expired pending, lapsed leases);
        // a plain snapshot: the claim, not this read, decides who sends.
        let sql = format!(
            "SELECT {COLUMNS} FROM dispatch_outbox
             WHERE (status IN ('pending', 'delivering') AND next_attempt_at <= ?1)
                OR (status = 'pending' AND (next_attempt_at IS NULL OR expires_at <= ?1))
             ORDER BY next_attempt_at, id LIMIT ?2"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        query_rows(
            &conn,
            &sql,
            vec![SqlValue::Integer(now), SqlValue::Integer(limit)],
        )
    }

    fn apply(&self, mv: &DispatchMove) -> Result<MoveOutcome, StoreError> {
        let (cmd, opts) = (mv.command(), mv.guard());
        self.store.with_tx(|tx, ops| {
            let (outcome, _) = match ops.transition(tx, &cmd, &opts) {
                Ok(done) => done,
                Err(StoreError::Rule(CoreError::NotFound { .. })) => {
                    return Ok((MoveOutcome::NotFound, None));
                }
                Err(e) => return Err(e),
            };
            let current = || -> Result<(DispatchStatus, u32), StoreError> {
                let (status, attempt): (String, i64) = tx
                    .prepare_cached("SELECT status, attempt FROM dispatch_outbox WHERE id = ?1")?
                    .query_row([&mv.id], |r| Ok((r.get(0)?, r.get(1)?)))?;
                Ok((
                    status
                        .parse()
                        .map_err(|e: outbox::OutboxError| malformed(&mv.id, e.to_string()))?,
                    u32::try_from(attempt).map_err(|_| malformed(&mv.id, "attempt"))?,
                ))
            };
            let out = match outcome.result {
                OutcomeKind::Applied => {
                    if let Some(expires_at) = mv.expires_at {
                        tx.prepare_cached(
                            "UPDATE dispatch_outbox SET expires_at = ?1 WHERE id = ?2",
                        )?
                        .execute(params![expires_at, mv.id])?;
                    }
                    MoveOutcome::Applied {
                        transition_id: outcome.transition_id.unwrap_or_default(),
                    }
                }
                OutcomeKind::Conflict => {
                    let (current, attempt) = current()?;
                    MoveOutcome::Conflict { current, attempt }
                }
                _ => MoveOutcome::Rejected {
                    current: current()?.0,
                },
            };
            Ok((out, None))
        })
    }

    fn purge(&self, id: &str, actor: &Actor) -> Result<Option<DispatchStatus>, StoreError> {
        self.store.with_tx(|tx, _| {
            let status: Option<String> = tx
                .prepare_cached("SELECT status FROM dispatch_outbox WHERE id = ?1")?
                .query_row([id], |r| r.get(0))
                .optional()?;
            let Some(status) = status else {
                return Ok((None, None));
            };
            let status: DispatchStatus = status
                .parse()
                .map_err(|e: outbox::OutboxError| malformed(id, e.to_string()))?;
            tx.prepare_cached("DELETE FROM dispatch_outbox WHERE id = ?1")?
                .execute([id])?;
            insert_audit(
                tx,
                "dispatch.purge",
                Some(id),
                actor,
                &json!({"status": status}),
            )?;
            Ok((Some(status), None))
        })
    }

    fn purge_many(
        &self,
        selection: &PurgeSelection,
        dry_run: bool,
        actor: &Actor,
    ) -> Result<PurgeReport, StoreError> {
        let (clause, values) = selection_where(selection);
        self.store.with_tx(|tx, _| {
            let ids: Vec<String> = tx
                .prepare(&format!(
                    "SELECT id FROM dispatch_outbox WHERE {clause} ORDER BY id"
                ))?
                .query_map(params_from_iter(values.iter()), |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            if !dry_run {
                tx.prepare(&format!("DELETE FROM dispatch_outbox WHERE {clause}"))?
                    .execute(params_from_iter(values.iter()))?;
            }
            insert_audit(
                tx,
                "dispatch.purge_bulk",
                None,
                actor,
                &json!({
                    "status": selection.status(),
                    "statuses": selection.statuses(),
                    "before": selection.before(),
                    "dry_run": dry_run,
                    "count": ids.len(),
                    "ids": ids,
                }),
            )?;
            Ok((PurgeReport { ids, dry_run }, None))
        })
    }

    fn sweep_terminal(&self, before: i64) -> Result<u64, StoreError> {
        let (marks, mut values) = status_list(&DispatchStatus::TERMINAL, 1);
        values.push(SqlValue::Integer(before));
        let sql = format!(
            "DELETE FROM dispatch_outbox WHERE status IN ({marks}) AND updated_at < ?{}",
            values.len()
        );
        let conn = self.store.engine().conn()?;
        let n = conn.execute(&sql, params_from_iter(values))?;
        Ok(u64::try_from(n).unwrap_or(u64::MAX))
    }

    fn history(&self, id: &str) -> Result<Vec<TransitionRecord>, StoreError> {
        self.store.history(ENTITY, id)
    }

    fn audit(&self) -> Result<Vec<AuditRecord>, StoreError> {
        let conn = self.store.engine().conn()?;
        let mut stmt = conn.prepare(
            "SELECT kind, entity_id, actor_type, actor_id, detail_json FROM admin_events
             WHERE entity_type = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([ENTITY], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (kind, entity_id, actor_type, actor_id, detail) = row?;
            let kind_of = ActorType::ALL
                .into_iter()
                .find(|k| k.as_str() == actor_type)
                .ok_or_else(|| {
                    malformed(
                        entity_id.as_deref().unwrap_or(""),
                        format!("actor type {actor_type:?}"),
                    )
                })?;
            out.push(AuditRecord {
                kind,
                entity_id,
                actor: Actor::new(kind_of, actor_id),
                detail: serde_json::from_str(&detail)?,
            });
        }
        Ok(out)
    }
}
