//! The PostgreSQL [`OutboxStore`]: claims lock the row with `FOR UPDATE SKIP
//! LOCKED` (a row another host holds is a conflict for the loser, never a
//! wait) and compare-and-swap on the pre-claim attempt counter; enqueues
//! and reschedules `NOTIFY` the schema's channel so that waiting scanners
//! ([`DueListener`]) wake.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use lifecycle_core::reasons::DispatchReasons;
use lifecycle_core::{
    Actor, ActorType, CoreError, Decision, InitialCommand, OutcomeKind, Reason, TransitionRecord,
    decide_initial,
};
use outbox::{
    AuditRecord, DispatchMove, DispatchRow, DispatchStatus, ENTITY, Enqueued, ListQuery,
    MoveOutcome, NewDispatch, OutboxStore, PurgeReport, PurgeSelection,
};
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::Type;
use postgres::{GenericClient, Row, Transaction};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::error::PgStoreError;
use crate::offload::OwnClient;
use crate::service::{Lock, PgStore, Step, admin_event};
use crate::sql::Sql;
use crate::time::{next_version, now_micros};

const COLUMNS: &str = "id, status, attempt, max_attempts, next_attempt_at, last_error, dedup_key, \
     payload, deliver_to, template_json, ack_required, expires_at, created_at, updated_at";

/// The outbox over a [`PgStore`]'s schema.
#[derive(Debug, Clone)]
pub struct PgOutbox {
    store: PgStore,
    channel: String,
}

/// The `NOTIFY` channel of a schema's outbox (a plain identifier: a fixed
/// prefix and a digest of the schema name).
pub fn due_channel(schema: &str) -> String {
    let digest = Sha256::digest(schema.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("lionrt_due_{hex}")
}

fn malformed(id: &str, detail: impl Into<String>) -> PgStoreError {
    PgStoreError::MalformedRow {
        entity_type: ENTITY.to_owned(),
        entity_id: id.to_owned(),
        detail: detail.into(),
    }
}

fn row_of(r: &Row) -> Result<DispatchRow, PgStoreError> {
    let id: String = r.try_get(0)?;
    let status: String = r.try_get(1)?;
    let status = status
        .parse::<DispatchStatus>()
        .map_err(|e| malformed(&id, e.to_string()))?;
    let template = r
        .try_get::<_, Option<String>>(9)?
        .map(|t| serde_json::from_str(&t))
        .transpose()
        .map_err(|e| malformed(&id, format!("template_json: {e}")))?;
    let attempt = u32::try_from(r.try_get::<_, i64>(2)?).map_err(|_| malformed(&id, "attempt"))?;
    let max_attempts =
        u32::try_from(r.try_get::<_, i64>(3)?).map_err(|_| malformed(&id, "max_attempts"))?;
    Ok(DispatchRow {
        status,
        attempt,
        max_attempts,
        next_attempt_at: r.try_get(4)?,
        last_error: r.try_get(5)?,
        dedup_key: r.try_get(6)?,
        payload: r.try_get::<_, Option<String>>(7)?.unwrap_or_default(),
        deliver_to: r.try_get(8)?,
        template,
        ack_required: r.try_get(10)?,
        expires_at: r.try_get(11)?,
        created_at: r.try_get(12)?,
        updated_at: r.try_get(13)?,
        id,
    })
}

fn rows(client: &mut impl GenericClient, sql: &Sql) -> Result<Vec<DispatchRow>, PgStoreError> {
    sql.query_client(client)?.iter().map(row_of).collect()
}

fn statuses(list: &[DispatchStatus]) -> Vec<String> {
    list.iter().map(|s| s.as_str().to_owned()).collect()
}

impl PgOutbox {
    /// An outbox over `store`.
    pub fn new(store: PgStore) -> Self {
        let channel = due_channel(store.engine().schema());
        PgOutbox { store, channel }
    }

    /// The underlying store.
    pub fn store(&self) -> &PgStore {
        &self.store
    }

    /// The schema's `NOTIFY` channel.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    fn notify(&self, tx: &mut Transaction<'_>, at: Option<i64>) -> Result<(), PgStoreError> {
        let payload = at.map_or_else(String::new, |a| a.to_string());
        tx.execute("SELECT pg_notify($1, $2)", &[&self.channel, &payload])?;
        Ok(())
    }

    /// The earliest instant (µs) at which a row is or becomes due, if any
    /// row can: the smallest pending `next_attempt_at` or `expires_at` and
    /// the smallest delivering lease.
    pub fn next_due_at(&self) -> Result<Option<i64>, PgStoreError> {
        let mut conn = self.store.engine().conn()?;
        next_due_at(&mut *conn)
    }

    /// A listener for this outbox's channel, on a connection of its own.
    pub fn listener(&self) -> Result<DueListener, PgStoreError> {
        let mut client = self.store.engine().connect_direct()?;
        client.batch_execute(&format!("LISTEN {}", self.channel))?;
        Ok(DueListener {
            client: OwnClient::new(client),
        })
    }
}

fn next_due_at(client: &mut impl GenericClient) -> Result<Option<i64>, PgStoreError> {
    let row = client.query_one(
        "SELECT LEAST(
            (SELECT min(next_attempt_at) FROM dispatch_outbox WHERE status IN ('pending', 'delivering')),
            (SELECT min(expires_at) FROM dispatch_outbox WHERE status = 'pending'),
            (SELECT min(0::bigint) FROM dispatch_outbox WHERE status = 'pending' AND next_attempt_at IS NULL))",
        &[],
    )?;
    Ok(row.try_get(0)?)
}

/// Waits for outbox rows to become due: woken by the `NOTIFY` an enqueue or
/// a reschedule sends (on commit), and by the clock reaching the earliest
/// stored due instant. Holds one connection that `LISTEN`s (safe to drop
/// inside a tokio runtime: it is closed off the runtime's thread).
pub struct DueListener {
    client: OwnClient,
}

impl std::fmt::Debug for DueListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DueListener")
    }
}

impl DueListener {
    /// Returns `true` as soon as some row is due (at once if one already
    /// is), `false` when `timeout` passes first. Uses the system clock.
    pub fn wait_for_due(&mut self, timeout: Duration) -> Result<bool, PgStoreError> {
        let deadline = Instant::now() + timeout;
        loop {
            // Drain what arrived: the query below sees every commit that
            // notified before it.
            while self.client.notifications().iter().next()?.is_some() {}
            let next = next_due_at(&mut *self.client)?;
            let now = now_micros();
            if next.is_some_and(|n| n <= now) {
                return Ok(true);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            let until_due = next.map_or(left, |n| {
                Duration::from_micros(u64::try_from(n - now).unwrap_or(0))
            });
            let wait = left.min(until_due).max(Duration::from_millis(1));
            let _woken = self.client.notifications().timeout_iter(wait).next()?;
        }
    }
}

impl OutboxStore for PgOutbox {
    type Error = PgStoreError;

    fn enqueue(
        &self,
        id: &str,
        new: &NewDispatch,
        actor: &Actor,
        now: i64,
    ) -> Result<Enqueued, PgStoreError> {
        let policy = self.store.policy(ENTITY)?;
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
        // The rules are decided before any write; the row and its delivery
        // columns then go in one INSERT with its history row.
        let Decision::Write(plan) = decide_initial(&policy, None, &cmd)? else {
            return Err(CoreError::InvalidPolicy("initial dispatch decision".into()).into());
        };
        let template = new
            .template
            .as_ref()
            .map(serde_json::to_string)
            .transpose()?;
        self.store.run((ENTITY, id), |tx, _| {
            let version = next_version(0);
            let inserted = tx.query(
                "INSERT INTO dispatch_outbox (id, status, created_at, updated_at, attempt,
                    next_attempt_at, dedup_key, payload, deliver_to, template_json,
                    max_attempts, ack_required, expires_at)
                 VALUES ($1, 'pending', $2, $2, 0, $3, $4, $5, $6, $7, $8, $9, $10)
                 ON CONFLICT (dedup_key) DO NOTHING RETURNING id",
                &[
                    &id,
                    &version,
                    &next,
                    &new.dedup_key,
                    &new.payload,
                    &new.deliver_to,
                    &template,
                    &i64::from(new.max_attempts),
                    &new.ack_required,
                    &new.expires_at,
                ],
            )?;
            if inserted.is_empty() {
                let existing = tx.query_opt(
                    "SELECT id FROM dispatch_outbox WHERE dedup_key = $1",
                    &[&new.dedup_key],
                )?;
                // The holder of the key may have been purged meanwhile.
                let Some(existing) = existing else {
                    return Ok(Step::Retry);
                };
                return Ok(Step::Rollback(Enqueued {
                    id: existing.try_get(0)?,
                    created: false,
                }));
            }
            tx.execute(
                "INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status,
                    reason_code, reason_summary, reason_json, actor_type, actor_id, created_at)
                 VALUES ($1, $2, NULL, $3, $4, '', $5, $6, $7, $8)",
                &[
                    &ENTITY,
                    &id,
                    &plan.to_status,
                    &cmd.reason.code,
                    &json!({"evidence_refs": [], "metadata": {}}).to_string(),
                    &actor.kind.as_str(),
                    &actor.id,
                    &version,
                ],
            )?;
            self.notify(tx, Some(next))?;
            Ok(Step::Commit(
                Enqueued {
                    id: id.to_owned(),
                    created: true,
                },
                None,
            ))
        })
    }

    fn get(&self, id: &str) -> Result<Option<DispatchRow>, PgStoreError> {
        let mut conn = self.store.engine().conn()?;
        let mut sql = Sql::new(format!("SELECT {COLUMNS} FROM dispatch_outbox WHERE id = "));
        let p = sql.bind(id.to_owned(), Type::TEXT);
        sql.push(&p);
        Ok(rows(&mut *conn, &sql)?.pop())
    }

    fn list(&self, query: &ListQuery) -> Result<Vec<DispatchRow>, PgStoreError> {
        let mut conn = self.store.engine().conn()?;
        let mut sql = Sql::new(format!("SELECT {COLUMNS} FROM dispatch_outbox"));
        if let Some(s) = query.status {
            let p = sql.bind(s.as_str().to_owned(), Type::TEXT);
            sql.push(&format!(" WHERE status = {p}"));
        }
        sql.push(" ORDER BY created_at, id COLLATE \"C\"");
        if let Some(limit) = query.limit {
            let p = sql.bind(i64::try_from(limit).unwrap_or(i64::MAX), Type::INT8);
            sql.push(&format!(" LIMIT {p}"));
        }
        rows(&mut *conn, &sql)
    }

    fn due(&self, now: i64, limit: usize) -> Result<Vec<DispatchRow>, PgStoreError> {
        let mut conn = self.store.engine().conn()?;
        let mut sql = Sql::default();
        let n = sql.bind(now, Type::INT8);
        let l = sql.bind(i64::try_from(limit).unwrap_or(i64::MAX), Type::INT8);
        // A plain snapshot: the claim, not this read, decides who sends.
        sql.push(&format!(
            "SELECT {COLUMNS} FROM dispatch_outbox
             WHERE (status IN ('pending', 'delivering') AND next_attempt_at <= {n})
                OR (status = 'pending' AND (next_attempt_at IS NULL OR expires_at <= {n}))
             ORDER BY next_attempt_at NULLS FIRST, id COLLATE \"C\" LIMIT {l}"
        ));
        rows(&mut *conn, &sql)
    }

    fn apply(&self, mv: &DispatchMove) -> Result<MoveOutcome, PgStoreError> {
        let policy = self.store.policy(ENTITY)?;
        let (cmd, opts) = (mv.command(), mv.guard());
        self.store.run((ENTITY, &mv.id), |tx, _| {
            let current =
                |tx: &mut Transaction<'_>| -> Result<Option<(DispatchStatus, u32)>, PgStoreError> {
                    let row = tx.query_opt(
                        "SELECT status, attempt FROM dispatch_outbox WHERE id = $1",
                        &[&mv.id],
                    )?;
                    let Some(row) = row else { return Ok(None) };
                    let status: String = row.try_get(0)?;
                    Ok(Some((
                        status
                            .parse()
                            .map_err(|e: outbox::OutboxError| malformed(&mv.id, e.to_string()))?,
                        u32::try_from(row.try_get::<_, i64>(1)?)
                            .map_err(|_| malformed(&mv.id, "attempt"))?,
                    )))
                };
            // A claim skips a row another host holds (that host is
            // mid-move: the loser does not wait). Every other move is made
            // by the claim's holder (the send's result), an operator or a
            // consumer: it waits for the row, as on SQLite, and the CAS on
            // the attempt decides. Skipping there would leave a sent row in
            // `delivering` whenever a rival scan merely looked at it, to be
            // sent again when the lease ran out.
            let lock = if mv.to == DispatchStatus::Delivering {
                Lock::SkipLocked
            } else {
                Lock::Update
            };
            let row = self
                .store
                .read_row(tx, &policy, &mv.id, &["attempt"], lock)?;
            let Some(row) = row else {
                // Locked by another host (a claim does not wait) or gone.
                return Ok(Step::Rollback(match current(tx)? {
                    Some((current, attempt)) => MoveOutcome::Conflict { current, attempt },
                    None => MoveOutcome::NotFound,
                }));
            };
            let step = self
                .store
                .transition_on(tx, &policy, Some(&row), &cmd, &opts)?;
            let (out, commit) = match step {
                Step::Retry => return Ok(Step::Retry),
                Step::Commit(o, _) => (o, true),
                Step::Rollback(o) => (o, false),
            };
            let result = match out.result {
                OutcomeKind::Applied => {
                    if let Some(expires_at) = mv.expires_at {
                        tx.execute(
                            "UPDATE dispatch_outbox SET expires_at = $1 WHERE id = $2",
                            &[&expires_at, &mv.id],
                        )?;
                    }
                    if mv.to == DispatchStatus::Pending {
                        let at = mv.patch.next_attempt_at.flatten();
                        self.notify(tx, at)?;
                    }
                    MoveOutcome::Applied {
                        transition_id: out.transition_id.unwrap_or_default(),
                    }
                }
                OutcomeKind::Conflict => {
                    let (current, attempt) =
                        current(tx)?.ok_or_else(|| malformed(&mv.id, "vanished under its lock"))?;
                    MoveOutcome::Conflict { current, attempt }
                }
                OutcomeKind::Rejected => MoveOutcome::Rejected {
                    current: current(tx)?
                        .ok_or_else(|| malformed(&mv.id, "vanished under its lock"))?
                        .0,
                },
            };
            Ok(if commit {
                Step::Commit(result, None)
            } else {
                Step::Rollback(result)
            })
        })
    }

    fn purge(&self, id: &str, actor: &Actor) -> Result<Option<DispatchStatus>, PgStoreError> {
        self.store.run((ENTITY, id), |tx, _| {
            let row = tx.query_opt(
                "DELETE FROM dispatch_outbox WHERE id = $1 RETURNING status",
                &[&id],
            )?;
            let Some(row) = row else {
                return Ok(Step::Rollback(None));
            };
            let status: DispatchStatus = row
                .try_get::<_, String>(0)?
                .parse()
                .map_err(|e: outbox::OutboxError| malformed(id, e.to_string()))?;
            admin_event(
                tx,
                "dispatch.purge",
                Some(ENTITY),
                Some(id),
                actor,
                &json!({"status": status}),
            )?;
            Ok(Step::Commit(Some(status), None))
        })
    }

    fn purge_many(
        &self,
        selection: &PurgeSelection,
        dry_run: bool,
        actor: &Actor,
    ) -> Result<PurgeReport, PgStoreError> {
        let wanted = statuses(&selection.statuses());
        let before = selection.before();
        self.store.run((ENTITY, "*"), |tx, _| {
            let filter = "status = ANY($1) AND ($2::bigint IS NULL OR updated_at < $2)";
            let mut ids: Vec<String> = if dry_run {
                tx.query(
                    &format!("SELECT id FROM dispatch_outbox WHERE {filter}"),
                    &[&wanted, &before],
                )?
            } else {
                tx.query(
                    &format!("DELETE FROM dispatch_outbox WHERE {filter} RETURNING id"),
                    &[&wanted, &before],
                )?
            }
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?;
            ids.sort();
            admin_event(
                tx,
                "dispatch.purge_bulk",
                Some(ENTITY),
                None,
                actor,
                &json!({
                    "status": selection.status(),
                    "statuses": selection.statuses(),
                    "before": before,
                    "dry_run": dry_run,
                    "count": ids.len(),
                    "ids": ids,
                }),
            )?;
            Ok(Step::Commit(PurgeReport { ids, dry_run }, None))
        })
    }

    fn sweep_terminal(&self, before: i64) -> Result<u64, PgStoreError> {
        let mut conn = self.store.engine().conn()?;
        Ok(conn.execute(
            "DELETE FROM dispatch_outbox WHERE status = ANY($1) AND updated_at < $2",
            &[&statuses(&DispatchStatus::TERMINAL), &before],
        )?)
    }

    fn history(&self, id: &str) -> Result<Vec<TransitionRecord>, PgStoreError> {
        self.store.history(ENTITY, id)
    }

    fn audit(&self) -> Result<Vec<AuditRecord>, PgStoreError> {
        let mut conn = self.store.engine().conn()?;
        let rows = conn.query(
            "SELECT kind, entity_id, actor_type, actor_id, detail_json FROM admin_events
             WHERE entity_type = $1 ORDER BY id",
            &[&ENTITY],
        )?;
        rows.iter()
            .map(|r| {
                let entity_id: Option<String> = r.try_get(1)?;
                let actor_type: String = r.try_get(2)?;
                let kind = ActorType::parse(&actor_type).map_err(|_| {
                    malformed(
                        entity_id.as_deref().unwrap_or(""),
                        format!("actor type {actor_type:?}"),
                    )
                })?;
                Ok(AuditRecord {
                    kind: r.try_get(0)?,
                    entity_id,
                    actor: Actor::new(kind, r.try_get::<_, String>(3)?),
                    detail: serde_json::from_str(&r.try_get::<_, String>(4)?)?,
                })
            })
            .collect()
    }
}
