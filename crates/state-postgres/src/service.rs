//! The transition service: `decide()` executed in one transaction whose
//! write is a compare-and-swap `UPDATE … WHERE status = ANY($n) AND
//! updated_at = $m` with the history append in the same statement.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use lifecycle_core::{
    Actor, CompatOptions, CoreError, Decision, EXECUTION_ENTITIES, InitialCommand, LifecycleStore,
    Outcome, OutcomeKind, Policy, PolicyRegistry, Reason, RowSnapshot, TerminalEvent, TerminalSink,
    TransitionCommand, TransitionRecord, WritePlan, decide_initial, decide_with, default_registry,
};
use postgres::Transaction;
use postgres::types::Type;
use serde_json::{Value, json};

use crate::engine::PgEngine;
use crate::error::{PgStoreError, is_retryable};
use crate::sql::Sql;
use crate::time::{next_version, now_micros};
use crate::values::{bind, normalize, read};

/// How many times one call runs its transaction again after a lost CAS, a
/// serialization failure or a deadlock before giving up.
pub const MAX_ATTEMPTS: u32 = 16;

/// The guarded, audited lifecycle store over PostgreSQL.
#[derive(Clone)]
pub struct PgStore {
    engine: PgEngine,
    registry: Arc<PolicyRegistry>,
    sinks: Vec<Arc<dyn TerminalSink>>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("engine", &self.engine)
            .field("sinks", &self.sinks.len())
            .finish_non_exhaustive()
    }
}

/// One row of `admin_events`: an override or a rejection.
#[derive(Debug, Clone, PartialEq)]
pub struct AdminEvent {
    /// Row id.
    pub id: i64,
    /// `transition.override`, `transition.rejected`, `dispatch.purge`...
    pub kind: String,
    /// Entity type.
    pub entity_type: Option<String>,
    /// Entity id.
    pub entity_id: Option<String>,
    /// Actor type.
    pub actor_type: String,
    /// Actor id.
    pub actor_id: String,
    /// Details.
    pub detail: Value,
    /// When, microseconds since the epoch.
    pub created_at: i64,
}

/// What one transaction attempt decided.
pub(crate) enum Step<T> {
    /// Commit, then hand `terminal` to the sinks.
    Commit(T, Option<Box<TransitionRecord>>),
    /// Roll back and return.
    Rollback(T),
    /// The row changed between the read and the CAS: run again.
    Retry,
}

/// How [`read_row`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lock {
    /// A plain read; the CAS catches a concurrent change.
    None,
    /// `FOR UPDATE SKIP LOCKED`: a row another transaction holds reads as
    /// absent (the caller tells locked from missing).
    SkipLocked,
    /// `FOR UPDATE`: wait for the row and hold it to the commit, so the CAS
    /// cannot lose. [`PgStore::run`] asks for it after a lost CAS, so
    /// writers racing on one hot row make progress instead of all losing
    /// again and again.
    Update,
}

fn outcome(
    result: OutcomeKind,
    previous: Option<String>,
    current: Option<String>,
    id: Option<i64>,
) -> Outcome {
    Outcome {
        result,
        previous_status: previous,
        current_status: current,
        transition_id: id,
    }
}

fn reason_json(reason: &Reason) -> String {
    json!({"evidence_refs": reason.evidence_refs, "metadata": reason.metadata}).to_string()
}

impl PgStore {
    /// A store over `engine` with the default (sealed) policies.
    pub fn new(engine: PgEngine) -> Self {
        PgStore {
            engine,
            registry: Arc::new(default_registry().clone()),
            sinks: Vec::new(),
        }
    }

    /// Adds a sink called strictly after commit for every terminal
    /// transition of an execution entity; its errors and panics are logged
    /// and swallowed.
    pub fn add_terminal_sink(&mut self, sink: Arc<dyn TerminalSink>) {
        self.sinks.push(sink);
    }

    /// The engine.
    pub fn engine(&self) -> &PgEngine {
        &self.engine
    }

    /// The policy registry.
    pub fn registry(&self) -> &PolicyRegistry {
        &self.registry
    }

    pub(crate) fn policy(&self, entity_type: &str) -> Result<Arc<Policy>, PgStoreError> {
        Ok(Arc::clone(self.registry.get(entity_type)?))
    }

    /// Runs `f` in a transaction, again on a lost CAS, a serialization
    /// failure or a deadlock (nothing of a failed attempt committed), at
    /// most [`MAX_ATTEMPTS`] times; notifies sinks after commit. `f` is
    /// told how to read its row: a plain read first, [`Lock::Update`] once
    /// a CAS was lost (optimistic first, pessimistic under contention).
    pub(crate) fn run<T>(
        &self,
        what: (&str, &str),
        mut f: impl FnMut(&mut Transaction<'_>, Lock) -> Result<Step<T>, PgStoreError>,
    ) -> Result<T, PgStoreError> {
        let mut conn = self.engine.conn()?;
        let mut last_err = None;
        let mut read = Lock::None;
        for attempt in 1..=MAX_ATTEMPTS {
            let mut tx = conn.transaction()?;
            let step = match f(&mut tx, read) {
                Ok(step) => step,
                Err(PgStoreError::Postgres(e)) if is_retryable(&e) => {
                    drop(tx);
                    tracing::debug!(attempt, error = %e, "transaction retried");
                    last_err = Some(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            match step {
                Step::Retry => {
                    drop(tx);
                    read = Lock::Update;
                    tracing::debug!(attempt, entity = what.1, "cas lost; transaction retried");
                }
                Step::Rollback(v) => {
                    tx.rollback()?;
                    return Ok(v);
                }
                Step::Commit(v, terminal) => {
                    match tx.commit() {
                        Ok(()) => {}
                        Err(e) if is_retryable(&e) => {
                            last_err = Some(e);
                            continue;
                        }
                        Err(e) => return Err(e.into()),
                    }
                    drop(conn);
                    if let Some(t) = terminal {
                        self.notify(&TerminalEvent { transition: *t });
                    }
                    return Ok(v);
                }
            }
        }
        Err(match last_err {
            Some(source) => PgStoreError::Serialization {
                attempts: MAX_ATTEMPTS,
                source,
            },
            None => PgStoreError::Contention {
                entity_type: what.0.to_owned(),
                entity_id: what.1.to_owned(),
                attempts: MAX_ATTEMPTS,
            },
        })
    }

    fn notify(&self, event: &TerminalEvent) {
        for sink in &self.sinks {
            match catch_unwind(AssertUnwindSafe(|| sink.on_terminal(event))) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(transition_id = event.transition.id, error = %e, "terminal sink failed")
                }
                Err(_) => tracing::warn!(
                    transition_id = event.transition.id,
                    "terminal sink panicked"
                ),
            }
        }
    }

    /// Reads the row inside `tx`: status, version and the named guard
    /// columns (declared patch fields only: they reach SQL text).
    pub(crate) fn read_row(
        &self,
        tx: &mut Transaction<'_>,
        policy: &Policy,
        id: &str,
        columns: &[&str],
        lock: Lock,
    ) -> Result<Option<RowSnapshot>, PgStoreError> {
        if let Some(bad) = columns.iter().find(|c| !policy.is_patch_field(c)) {
            return Err(CoreError::UnknownColumn {
                entity_type: policy.entity_type().to_owned(),
                column: (*bad).to_owned(),
            }
            .into());
        }
        let mut sql = Sql::new("SELECT status, updated_at");
        for c in columns {
            sql.push(", ");
            sql.push(c);
        }
        let p = sql.bind(id.to_owned(), Type::TEXT);
        sql.push(&format!(" FROM {} WHERE id = {p}", policy.table()));
        match lock {
            Lock::None => {}
            Lock::SkipLocked => sql.push(" FOR UPDATE SKIP LOCKED"),
            Lock::Update => sql.push(" FOR UPDATE"),
        }
        let rows = sql.query(tx)?;
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        let mut snapshot = RowSnapshot {
            status: r.try_get(0)?,
            version: r.try_get(1)?,
            columns: BTreeMap::new(),
        };
        for (i, c) in columns.iter().enumerate() {
            snapshot.columns.insert((*c).to_owned(), read(r, i + 2)?);
        }
        Ok(Some(snapshot))
    }

    fn column_type(&self, policy: &Policy, column: &str) -> Result<Type, PgStoreError> {
        self.engine
            .column_type(policy.table(), column)
            .cloned()
            .ok_or_else(|| {
                CoreError::UnknownColumn {
                    entity_type: policy.entity_type().to_owned(),
                    column: column.to_owned(),
                }
                .into()
            })
    }

    /// Executes a write plan: the INSERT or the CAS UPDATE and the history
    /// append as one statement, so the history row exists exactly when the
    /// row write matched. A CAS matching nothing is [`Step::Retry`].
    #[allow(clippy::too_many_arguments, reason = "the plan's full context")]
    pub(crate) fn execute_plan(
        &self,
        tx: &mut Transaction<'_>,
        policy: &Policy,
        entity_id: &str,
        plan: &WritePlan,
        reason: &Reason,
        actor: &Actor,
        row_version: i64,
    ) -> Result<Step<Outcome>, PgStoreError> {
        let version = next_version(row_version);
        let table = policy.table();
        let mut sql = Sql::default();
        let mut sets: Vec<(String, String)> = Vec::new();
        sets.push((
            "status".into(),
            sql.bind(plan.to_status.clone(), Type::TEXT),
        ));
        sets.push(("updated_at".into(), sql.bind(version, Type::INT8)));
        if plan.write_reason_columns {
            sets.push((
                "status_reason_code".into(),
                sql.bind(reason.code.clone(), Type::TEXT),
            ));
            sets.push((
                "status_reason_summary".into(),
                sql.bind(reason.summary.clone(), Type::TEXT),
            ));
            sets.push((
                "status_reason_json".into(),
                sql.bind(reason_json(reason), Type::TEXT),
            ));
        }
        for (c, v) in &plan.patch {
            let ty = self.column_type(policy, c)?;
            sets.push((c.clone(), sql.bind_param(bind(c, &ty, v)?)));
        }
        let id_p = sql.bind(entity_id.to_owned(), Type::TEXT);
        let write = match &plan.from_status {
            None => {
                let created = sql.bind(version, Type::INT8);
                let (names, marks): (Vec<&str>, Vec<&str>) =
                    sets.iter().map(|(c, p)| (c.as_str(), p.as_str())).unzip();
                format!(
                    "INSERT INTO {table} (id, created_at, {}) VALUES ({id_p}, {created}, {})
                     ON CONFLICT (id) DO NOTHING RETURNING id",
                    names.join(", "),
                    marks.join(", ")
                )
            }
            Some(from) => {
                let assigns: Vec<String> = sets.iter().map(|(c, p)| format!("{c} = {p}")).collect();
                let expected = sql.bind(vec![from.clone()], Type::TEXT_ARRAY);
                let ver = sql.bind(row_version, Type::INT8);
                let mut w = format!(
                    "UPDATE {table} SET {} WHERE id = {id_p} AND status = ANY({expected}) AND updated_at = {ver}",
                    assigns.join(", ")
                );
                for (c, v) in &plan.guard {
                    let ty = self.column_type(policy, c)?;
                    let p = sql.bind_param(bind(c, &ty, &normalize(&ty, v))?);
                    w.push_str(&format!(" AND {c} IS NOT DISTINCT FROM {p}"));
                }
                w.push_str(" RETURNING id");
                w
            }
        };
        let override_json = plan.override_used.as_ref().map(|o| {
            json!({"actor": {"type": o.actor.kind, "id": o.actor.id}, "justification": o.justification}).to_string()
        });
        let h = [
            sql.bind(policy.entity_type().to_owned(), Type::TEXT),
            sql.bind(plan.from_status.clone(), Type::TEXT),
            sql.bind(reason.code.clone(), Type::TEXT),
            sql.bind(reason.summary.clone(), Type::TEXT),
            sql.bind(reason_json(reason), Type::TEXT),
            sql.bind(actor.kind.as_str().to_owned(), Type::TEXT),
            sql.bind(actor.id.clone(), Type::TEXT),
            sql.bind(override_json, Type::TEXT),
        ];
        sql.text = format!(
            "WITH w AS ({write})
             INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status,
                reason_code, reason_summary, reason_json, actor_type, actor_id, override_json, created_at)
             SELECT {}, w.id, {}, {}, {}, {}, {}, {}, {}, {}, {} FROM w RETURNING id",
            h[0], h[1], sets[0].1, h[2], h[3], h[4], h[5], h[6], h[7], sets[1].1
        );
        let rows = sql.query(tx)?;
        let Some(r) = rows.first() else {
            return Ok(Step::Retry);
        };
        let record = TransitionRecord {
            id: r.try_get(0)?,
            entity_type: policy.entity_type().to_owned(),
            entity_id: entity_id.to_owned(),
            from_status: plan.from_status.clone(),
            to_status: plan.to_status.clone(),
            reason_code: reason.code.clone(),
            reason_summary: reason.summary.clone(),
            actor_type: actor.kind.as_str().to_owned(),
            actor_id: actor.id.clone(),
            overridden: plan.override_used.is_some(),
            created_at: version,
        };
        if let Some(o) = &plan.override_used {
            admin_event(
                tx,
                "transition.override",
                Some(policy.entity_type()),
                Some(entity_id),
                &o.actor,
                &json!({
                    "transition_id": record.id,
                    "from_status": plan.from_status,
                    "to_status": plan.to_status,
                    "reason_code": reason.code,
                    "requested_by": {"type": actor.kind, "id": actor.id},
                    "justification": o.justification,
                }),
            )?;
        }
        let terminal = (policy.is_terminal(&plan.to_status)
            && EXECUTION_ENTITIES.contains(&policy.entity_type())
            && plan.from_status.as_deref() != Some(plan.to_status.as_str()))
        .then(|| Box::new(record.clone()));
        Ok(Step::Commit(
            outcome(
                OutcomeKind::Applied,
                plan.from_status.clone(),
                Some(plan.to_status.clone()),
                Some(record.id),
            ),
            terminal,
        ))
    }

    /// Decides and executes one transition inside `tx` on a row already
    /// read (`row`).
    pub(crate) fn transition_on(
        &self,
        tx: &mut Transaction<'_>,
        policy: &Policy,
        row: Option<&RowSnapshot>,
        cmd: &TransitionCommand,
        opts: &CompatOptions,
    ) -> Result<Step<Outcome>, PgStoreError> {
        let normalized;
        let opts = if opts.extra_guard.is_empty() {
            opts
        } else {
            let mut guard = BTreeMap::new();
            for (k, v) in &opts.extra_guard {
                let ty = self.column_type(policy, k)?;
                guard.insert(k.clone(), normalize(&ty, v));
            }
            normalized = CompatOptions {
                extra_guard: guard,
                ..opts.clone()
            };
            &normalized
        };
        let previous = row.map(|r| r.status.clone());
        match decide_with(policy, row, cmd, opts)? {
            Decision::Write(plan) => self.execute_plan(
                tx,
                policy,
                &cmd.entity_id,
                &plan,
                &cmd.reason,
                &cmd.actor,
                row.map_or(0, |r| r.version),
            ),
            Decision::Noop { status } => Ok(Step::Commit(
                outcome(
                    OutcomeKind::Applied,
                    Some(status.clone()),
                    Some(status),
                    None,
                ),
                None,
            )),
            Decision::Conflict { current_status } => Ok(Step::Rollback(outcome(
                OutcomeKind::Conflict,
                current_status.clone(),
                current_status,
                None,
            ))),
            Decision::Reject {
                current_status,
                rejection,
            } => {
                admin_event(
                    tx,
                    "transition.rejected",
                    Some(policy.entity_type()),
                    Some(&cmd.entity_id),
                    &cmd.actor,
                    &json!({
                        "rejection": rejection.as_str(),
                        "from_status": current_status,
                        "to_status": cmd.to_status,
                        "reason_code": cmd.reason.code,
                    }),
                )?;
                Ok(Step::Commit(
                    outcome(OutcomeKind::Rejected, previous.clone(), previous, None),
                    None,
                ))
            }
        }
    }

    /// Reads, decides and executes one transition inside `tx`.
    pub(crate) fn transition_in(
        &self,
        tx: &mut Transaction<'_>,
        policy: &Policy,
        cmd: &TransitionCommand,
        opts: &CompatOptions,
        lock: Lock,
    ) -> Result<Step<Outcome>, PgStoreError> {
        let guard_cols: Vec<&str> = opts.extra_guard.keys().map(String::as_str).collect();
        let row = self.read_row(tx, policy, &cmd.entity_id, &guard_cols, lock)?;
        self.transition_on(tx, policy, row.as_ref(), cmd, opts)
    }

    /// Creates an entity in an initial status (history row from None).
    pub fn create(&self, cmd: &InitialCommand) -> Result<Outcome, PgStoreError> {
        let policy = self.policy(&cmd.entity_type)?;
        self.run((&cmd.entity_type, &cmd.entity_id), |tx, lock| {
            let row = self.read_row(tx, &policy, &cmd.entity_id, &[], lock)?;
            match decide_initial(&policy, row.as_ref(), cmd)? {
                Decision::Write(plan) => self.execute_plan(
                    tx,
                    &policy,
                    &cmd.entity_id,
                    &plan,
                    &cmd.reason,
                    &cmd.actor,
                    0,
                ),
                Decision::Conflict { current_status } => Ok(Step::Rollback(outcome(
                    OutcomeKind::Conflict,
                    current_status.clone(),
                    current_status,
                    None,
                ))),
                other => Err(PgStoreError::Rule(CoreError::InvalidPolicy(format!(
                    "unexpected decision {other:?}"
                )))),
            }
        })
    }

    /// Applies a public transition command: edges enforced, undeclared
    /// moves and terminal exits rejected (with an audit row) unless
    /// overridden.
    pub fn transition(&self, cmd: &TransitionCommand) -> Result<Outcome, PgStoreError> {
        let policy = self.policy(&cmd.entity_type)?;
        let opts = CompatOptions::default();
        self.run((&cmd.entity_type, &cmd.entity_id), |tx, lock| {
            self.transition_in(tx, &policy, cmd, &opts, lock)
        })
    }

    /// The entity's history, oldest first.
    pub fn history(
        &self,
        entity_type: &str,
        entity_id: &str,
    ) -> Result<Vec<TransitionRecord>, PgStoreError> {
        self.policy(entity_type)?;
        let mut conn = self.engine.conn()?;
        let rows = conn.query(
            "SELECT id, entity_type, entity_id, from_status, to_status, reason_code,
                reason_summary, actor_type, actor_id, override_json IS NOT NULL, created_at
             FROM status_transitions WHERE entity_type = $1 AND entity_id = $2 ORDER BY id",
            &[&entity_type, &entity_id],
        )?;
        rows.iter()
            .map(|r| {
                Ok(TransitionRecord {
                    id: r.try_get(0)?,
                    entity_type: r.try_get(1)?,
                    entity_id: r.try_get(2)?,
                    from_status: r.try_get(3)?,
                    to_status: r.try_get(4)?,
                    reason_code: r.try_get(5)?,
                    reason_summary: r.try_get(6)?,
                    actor_type: r.try_get(7)?,
                    actor_id: r.try_get(8)?,
                    overridden: r.try_get(9)?,
                    created_at: r.try_get(10)?,
                })
            })
            .collect()
    }

    /// The row's status and version, if it exists.
    pub fn status_of(
        &self,
        entity_type: &str,
        entity_id: &str,
    ) -> Result<Option<(String, i64)>, PgStoreError> {
        let policy = self.policy(entity_type)?;
        let mut conn = self.engine.conn()?;
        let row = conn.query_opt(
            &format!(
                "SELECT status, updated_at FROM {} WHERE id = $1",
                policy.table()
            ),
            &[&entity_id],
        )?;
        Ok(match row {
            Some(r) => Some((r.try_get(0)?, r.try_get(1)?)),
            None => None,
        })
    }

    /// Admin events (overrides, rejections) for an entity, oldest first.
    pub fn admin_events(
        &self,
        entity_type: &str,
        entity_id: &str,
    ) -> Result<Vec<AdminEvent>, PgStoreError> {
        let mut conn = self.engine.conn()?;
        let rows = conn.query(
            "SELECT id, kind, entity_type, entity_id, actor_type, actor_id, detail_json, created_at
             FROM admin_events WHERE entity_type = $1 AND entity_id = $2 ORDER BY id",
            &[&entity_type, &entity_id],
        )?;
        rows.iter()
            .map(|r| {
                Ok(AdminEvent {
                    id: r.try_get(0)?,
                    kind: r.try_get(1)?,
                    entity_type: r.try_get(2)?,
                    entity_id: r.try_get(3)?,
                    actor_type: r.try_get(4)?,
                    actor_id: r.try_get(5)?,
                    detail: serde_json::from_str(&r.try_get::<_, String>(6)?)?,
                    created_at: r.try_get(7)?,
                })
            })
            .collect()
    }

    /// Appends `admin_events` rows for a decision made outside the
    /// transition service (a forwarded MCP server refused, say): one row
    /// per `(entity_id, detail)`, all with `kind`, `entity_type` and
    /// `actor`, in one transaction (all or none). The PostgreSQL
    /// counterpart of `state_sqlite::admin::record_admin_event`.
    ///
    /// # Errors
    ///
    /// [`PgStoreError`] when no connection is had or PostgreSQL refuses
    /// an insert or the commit.
    pub fn record_admin_events<'a>(
        &self,
        kind: &str,
        entity_type: &str,
        actor: &Actor,
        events: impl IntoIterator<Item = (&'a str, &'a Value)>,
    ) -> Result<(), PgStoreError> {
        let mut conn = self.engine.conn()?;
        let mut tx = conn.transaction()?;
        for (entity_id, detail) in events {
            admin_event(
                &mut tx,
                kind,
                Some(entity_type),
                Some(entity_id),
                actor,
                detail,
            )?;
        }
        tx.commit()?;
        Ok(())
    }
}

/// Appends one `admin_events` row inside `tx`.
pub(crate) fn admin_event(
    tx: &mut Transaction<'_>,
    kind: &str,
    entity_type: Option<&str>,
    entity_id: Option<&str>,
    actor: &Actor,
    detail: &Value,
) -> Result<(), PgStoreError> {
    tx.execute(
        "INSERT INTO admin_events (kind, entity_type, entity_id, actor_type, actor_id, detail_json, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[
            &kind,
            &entity_type,
            &entity_id,
            &actor.kind.as_str(),
            &actor.id,
            &detail.to_string(),
            &now_micros(),
        ],
    )?;
    Ok(())
}

impl LifecycleStore for PgStore {
    type Error = PgStoreError;

    fn create(&self, cmd: &InitialCommand) -> Result<Outcome, PgStoreError> {
        PgStore::create(self, cmd)
    }

    fn transition(&self, cmd: &TransitionCommand) -> Result<Outcome, PgStoreError> {
        PgStore::transition(self, cmd)
    }

    fn history(
        &self,
        entity_type: &str,
        entity_id: &str,
    ) -> Result<Vec<TransitionRecord>, PgStoreError> {
        PgStore::history(self, entity_type, entity_id)
    }
}
