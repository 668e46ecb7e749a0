//! The transition service: `decide()` executed in one `BEGIN IMMEDIATE`
//! transaction, plus the two compatibility surfaces.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use lifecycle_core::{
    Actor, CompatOptions, CoreError, Decision, EXECUTION_ENTITIES, Expected, InitialCommand,
    LifecycleStore, Outcome, OutcomeKind, Override, Policy, PolicyRegistry, Reason, RowSnapshot,
    TerminalEvent, TerminalSink, TransitionCommand, TransitionRecord, WritePlan, ZeroRows,
    decide_initial, decide_with, default_registry,
};
use rusqlite::types::Value as SqlValue;
use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params, params_from_iter};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::engine::Engine;
use crate::error::StoreError;
use crate::sqlval::{normalize, to_json, to_sql};
use crate::time::{next_version, now_micros};

/// The guarded, audited lifecycle store over SQLite.
#[derive(Clone)]
pub struct Store {
    engine: Engine,
    registry: Arc<PolicyRegistry>,
    sinks: Vec<Arc<dyn TerminalSink>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("engine", &self.engine)
            .field("sinks", &self.sinks.len())
            .finish_non_exhaustive()
    }
}

/// One row of `admin_events`: an override or a rejection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdminEvent {
    /// Row id.
    pub id: i64,
    /// `transition.override` or `transition.rejected`.
    pub kind: String,
    /// Entity type.
    pub entity_type: Option<String>,
    /// Entity id.
    pub entity_id: Option<String>,
    /// Actor type.
    pub actor_type: String,
    /// Actor id.
    pub actor_id: String,
    /// Details (statuses, reason, justification or rejection).
    pub detail: Value,
    /// When, microseconds since the epoch.
    pub created_at: i64,
}

/// The `update_status`-style request: no edge enforcement, override allowed.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusUpdate {
    /// Entity type.
    pub entity_type: String,
    /// Entity id.
    pub entity_id: String,
    /// Target status.
    pub to_status: String,
    /// Why.
    pub reason: Reason,
    /// Who.
    pub actor: Actor,
    /// Escape hatch for leaving a terminal status.
    pub override_: Option<Override>,
    /// Extra patch columns.
    pub patch: BTreeMap<String, Value>,
}

/// The legacy dispatch/schedule_run transition request. It has no override
/// field: this surface never overrides and never returns "rejected".
#[derive(Debug, Clone, PartialEq)]
pub struct LegacyTransitionRequest {
    /// `dispatch` or `schedule_run`.
    pub entity_type: String,
    /// Entity id.
    pub entity_id: String,
    /// The status the caller read (compare-and-swap).
    pub from_status: String,
    /// Target status.
    pub to_status: String,
    /// Why.
    pub reason: Reason,
    /// Who.
    pub actor: Actor,
    /// Extra `column = expected` guards (allowlisted columns only).
    pub guard: BTreeMap<String, Value>,
    /// Extra `column = value` assignments (allowlisted columns only).
    pub patch: BTreeMap<String, Value>,
}

/// The legacy result shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacyTransitionResult {
    /// Whether the move was applied (false: conflict).
    pub ok: bool,
    /// The status before.
    pub previous_status: Option<String>,
    /// The status now.
    pub current_status: Option<String>,
    /// The history row written.
    pub transition_id: Option<i64>,
}

/// Columns the legacy surface lets callers name in guards and patches. They
/// are interpolated into SQL text, so caller-supplied keys never reach it
/// unchecked.
pub const LEGACY_COLUMNS: &[(&str, &[&str])] = &[
    ("dispatch", &["attempt", "next_attempt_at", "last_error"]),
    (
        "schedule_run",
        &[
            "ended_at",
            "exit_code",
            "error_detail",
            "invocation_id",
            "queued_at",
            "leased_by",
            "lease_expires_at",
            "lease_attempts",
        ],
    ),
];

enum Step {
    Commit {
        outcome: Outcome,
        terminal: Option<Box<TransitionRecord>>,
    },
    Rollback(Outcome),
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

pub(crate) fn read_row(
    tx: &Transaction<'_>,
    policy: &Policy,
    id: &str,
    columns: &[&str],
) -> Result<Option<RowSnapshot>, StoreError> {
    // Column names reach SQL text: only declared patch fields may.
    if let Some(bad) = columns.iter().find(|c| !policy.is_patch_field(c)) {
        return Err(CoreError::UnknownColumn {
            entity_type: policy.entity_type().to_owned(),
            column: (*bad).to_owned(),
        }
        .into());
    }
    let mut sql = String::from("SELECT status, updated_at");
    for c in columns {
        sql.push_str(", ");
        sql.push_str(c);
    }
    sql.push_str(&format!(" FROM {} WHERE id = ?1", policy.table()));
    Ok(tx
        .prepare_cached(&sql)?
        .query_row([id], |r| {
            let mut snapshot = RowSnapshot {
                status: r.get(0)?,
                version: r.get(1)?,
                columns: BTreeMap::new(),
            };
            for (i, c) in columns.iter().enumerate() {
                snapshot
                    .columns
                    .insert((*c).to_owned(), to_json(r.get_ref(i + 2)?));
            }
            Ok(snapshot)
        })
        .optional()?)
}

pub(crate) fn append_history(
    tx: &Transaction<'_>,
    entity_type: &str,
    entity_id: &str,
    plan: &WritePlan,
    reason: &Reason,
    actor: &Actor,
    at: i64,
) -> Result<TransitionRecord, StoreError> {
    let override_json = plan.override_used.as_ref().map(|o| {
        json!({"actor": {"type": o.actor.kind, "id": o.actor.id}, "justification": o.justification}).to_string()
    });
    tx.prepare_cached(
        "INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status, reason_code,
            reason_summary, reason_json, actor_type, actor_id, override_json, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
            entity_type,
            entity_id,
            plan.from_status,
            plan.to_status,
            reason.code,
            reason.summary,
            reason_json(reason),
            actor.kind.as_str(),
            actor.id,
            override_json,
            at
        ])?;
    Ok(TransitionRecord {
        id: tx.last_insert_rowid(),
        entity_type: entity_type.to_owned(),
        entity_id: entity_id.to_owned(),
        from_status: plan.from_status.clone(),
        to_status: plan.to_status.clone(),
        reason_code: reason.code.clone(),
        reason_summary: reason.summary.clone(),
        actor_type: actor.kind.as_str().to_owned(),
        actor_id: actor.id.clone(),
        overridden: plan.override_used.is_some(),
        created_at: at,
    })
}

pub(crate) fn admin_event(
    tx: &Transaction<'_>,
    kind: &str,
    entity_type: &str,
    entity_id: &str,
    actor: &Actor,
    detail: Value,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO admin_events (kind, entity_type, entity_id, actor_type, actor_id, detail_json, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![kind, entity_type, entity_id, actor.kind.as_str(), actor.id, detail.to_string(), now_micros()],
    )?;
    Ok(())
}

/// Executes a write plan: history append, then the guarded UPDATE (or the
/// INSERT), so a zero-row UPDATE rolls the append back with it.
fn execute_plan(
    tx: &Transaction<'_>,
    policy: &Policy,
    entity_id: &str,
    plan: &WritePlan,
    reason: &Reason,
    actor: &Actor,
    row_version: i64,
) -> Result<Step, StoreError> {
    let version = next_version(row_version);
    // A savepoint scopes the append to this plan, so a zero-row UPDATE undoes
    // it even when the caller's transaction goes on (persist hooks).
    tx.prepare_cached("SAVEPOINT write_plan")?.execute([])?;
    let record = append_history(
        tx,
        policy.entity_type(),
        entity_id,
        plan,
        reason,
        actor,
        version,
    )?;
    let mut cols: Vec<(&str, SqlValue)> = vec![
        ("status", SqlValue::Text(plan.to_status.clone())),
        ("updated_at", SqlValue::Integer(version)),
    ];
    if plan.write_reason_columns {
        cols.push(("status_reason_code", SqlValue::Text(reason.code.clone())));
        cols.push((
            "status_reason_summary",
            SqlValue::Text(reason.summary.clone()),
        ));
        cols.push(("status_reason_json", SqlValue::Text(reason_json(reason))));
    }
    for (c, v) in &plan.patch {
        cols.push((c.as_str(), to_sql(v)));
    }
    let changed = match &plan.from_status {
        None => {
            cols.push(("created_at", SqlValue::Integer(version)));
            cols.push(("id", SqlValue::Text(entity_id.to_owned())));
            let names: Vec<&str> = cols.iter().map(|(c, _)| *c).collect();
            let marks: Vec<String> = (1..=cols.len()).map(|i| format!("?{i}")).collect();
            let sql = format!(
                "INSERT INTO {} ({}) VALUES ({})",
                policy.table(),
                names.join(", "),
                marks.join(", ")
            );
            tx.prepare_cached(&sql)?
                .execute(params_from_iter(cols.into_iter().map(|(_, v)| v)))?
        }
        Some(from) => {
            let mut sql = format!("UPDATE {} SET ", policy.table());
            let mut values: Vec<SqlValue> = Vec::new();
            for (i, (c, v)) in cols.into_iter().enumerate() {
                if i > 0 {
                    sql.push_str(", ");
                }
                values.push(v);
                sql.push_str(&format!("{c} = ?{}", values.len()));
            }
            values.push(SqlValue::Text(entity_id.to_owned()));
            sql.push_str(&format!(" WHERE id = ?{}", values.len()));
            values.push(SqlValue::Text(from.clone()));
            sql.push_str(&format!(" AND status = ?{}", values.len()));
            if let Some(v) = plan.expected_version {
                values.push(SqlValue::Integer(v));
                sql.push_str(&format!(" AND updated_at = ?{}", values.len()));
            }
            for (c, v) in &plan.guard {
                values.push(to_sql(v));
                sql.push_str(&format!(" AND {c} IS ?{}", values.len()));
            }
            tx.prepare_cached(&sql)?.execute(params_from_iter(values))?
        }
    };
    if changed == 0 {
        tx.execute_batch("ROLLBACK TO write_plan; RELEASE write_plan")?;
        return match plan.zero_rows() {
            ZeroRows::Anomaly => Err(StoreError::StorageAnomaly {
                entity_type: policy.entity_type().to_owned(),
                entity_id: entity_id.to_owned(),
            }),
            ZeroRows::Conflict => Ok(Step::Rollback(outcome(
                OutcomeKind::Conflict,
                plan.from_status.clone(),
                plan.from_status.clone(),
                None,
            ))),
        };
    }
    tx.prepare_cached("RELEASE write_plan")?.execute([])?;
    if let Some(o) = &plan.override_used {
        admin_event(
            tx,
            "transition.override",
            policy.entity_type(),
            entity_id,
            &o.actor,
            json!({
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
    Ok(Step::Commit {
        outcome: outcome(
            OutcomeKind::Applied,
            plan.from_status.clone(),
            Some(plan.to_status.clone()),
            Some(record.id),
        ),
        terminal,
    })
}

/// Decides and executes one transition inside `tx`.
fn transition_in(
    tx: &Transaction<'_>,
    policy: &Policy,
    cmd: &TransitionCommand,
    opts: &CompatOptions,
) -> Result<Step, StoreError> {
    let guard_cols: Vec<&str> = opts.extra_guard.keys().map(String::as_str).collect();
    let row = read_row(tx, policy, &cmd.entity_id, &guard_cols)?;
    let normalized;
    let opts = if opts.extra_guard.is_empty() {
        opts
    } else {
        normalized = CompatOptions {
            extra_guard: opts
                .extra_guard
                .iter()
                .map(|(k, v)| (k.clone(), normalize(v)))
                .collect(),
            ..opts.clone()
        };
        &normalized
    };
    let previous = row.as_ref().map(|r| r.status.clone());
    match decide_with(policy, row.as_ref(), cmd, opts)? {
        Decision::Write(plan) => execute_plan(
            tx,
            policy,
            &cmd.entity_id,
            &plan,
            &cmd.reason,
            &cmd.actor,
            row.as_ref().map_or(0, |r| r.version),
        ),
        Decision::Noop { status } => Ok(Step::Commit {
            outcome: outcome(
                OutcomeKind::Applied,
                Some(status.clone()),
                Some(status),
                None,
            ),
            terminal: None,
        }),
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
                policy.entity_type(),
                &cmd.entity_id,
                &cmd.actor,
                json!({
                    "rejection": rejection.as_str(),
                    "from_status": current_status,
                    "to_status": cmd.to_status,
                    "reason_code": cmd.reason.code,
                }),
            )?;
            Ok(Step::Commit {
                outcome: outcome(OutcomeKind::Rejected, previous.clone(), previous, None),
                terminal: None,
            })
        }
    }
}

impl Store {
    /// A store over `engine` with the default (sealed) policies.
    pub fn new(engine: Engine) -> Self {
        Store {
            engine,
            registry: Arc::new(default_registry().clone()),
            sinks: Vec::new(),
        }
    }

    /// A store with a custom registry (its tables must exist).
    pub fn with_registry(engine: Engine, registry: Arc<PolicyRegistry>) -> Self {
        Store {
            engine,
            registry,
            sinks: Vec::new(),
        }
    }

    /// Adds a sink called strictly after commit for every terminal transition
    /// of an execution entity. Its errors and panics are logged and
    /// swallowed: the committed write stands.
    pub fn add_terminal_sink(&mut self, sink: Arc<dyn TerminalSink>) {
        self.sinks.push(sink);
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The policy registry.
    pub fn registry(&self) -> &PolicyRegistry {
        &self.registry
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction, commits or rolls back
    /// per its step, then notifies sinks after commit.
    fn run<F>(&self, f: F) -> Result<Outcome, StoreError>
    where
        F: FnOnce(&Transaction<'_>) -> Result<Step, StoreError>,
    {
        let mut conn = self.engine.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let step = f(&tx)?;
        match step {
            Step::Rollback(outcome) => {
                tx.rollback()?;
                Ok(outcome)
            }
            Step::Commit { outcome, terminal } => {
                tx.commit()?;
                drop(conn);
                if let Some(record) = terminal {
                    self.notify(&TerminalEvent {
                        transition: *record,
                    });
                }
                Ok(outcome)
            }
        }
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

    fn policy(&self, entity_type: &str) -> Result<Arc<Policy>, StoreError> {
        Ok(Arc::clone(self.registry.get(entity_type)?))
    }

    /// Creates an entity in an initial status (history row from None).
    pub fn create(&self, cmd: &InitialCommand) -> Result<Outcome, StoreError> {
        let policy = self.policy(&cmd.entity_type)?;
        self.run(|tx| {
            let row = read_row(tx, &policy, &cmd.entity_id, &[])?;
            match decide_initial(&policy, row.as_ref(), cmd)? {
                Decision::Write(plan) => execute_plan(
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
                other => Err(StoreError::Rule(CoreError::InvalidPolicy(format!(
                    "unexpected decision {other:?}"
                )))),
            }
        })
    }

    /// Applies a public transition command: edges enforced, undeclared moves
    /// and terminal exits rejected (with an audit row) unless overridden.
    pub fn transition(&self, cmd: &TransitionCommand) -> Result<Outcome, StoreError> {
        let policy = self.policy(&cmd.entity_type)?;
        self.run(|tx| transition_in(tx, &policy, cmd, &CompatOptions::default()))
    }

    /// The `update_status` compatibility surface: vocabulary and
    /// terminal-exit rules apply, the edge graph does not; an unguarded
    /// UPDATE matching no row is a [`StoreError::StorageAnomaly`], rolled
    /// back inside the transaction.
    pub fn update_status(&self, req: &StatusUpdate) -> Result<Outcome, StoreError> {
        let policy = self.policy(&req.entity_type)?;
        let cmd = TransitionCommand {
            entity_type: req.entity_type.clone(),
            entity_id: req.entity_id.clone(),
            to_status: req.to_status.clone(),
            reason: req.reason.clone(),
            actor: req.actor.clone(),
            expected_statuses: Default::default(),
            expected_version: None,
            patch: req.patch.clone(),
            override_: req.override_.clone(),
        };
        let opts = CompatOptions {
            enforce_edges: false,
            raise_on_unguarded_conflict: true,
            ..CompatOptions::default()
        };
        self.run(|tx| transition_in(tx, &policy, &cmd, &opts))
    }

    /// The legacy dispatch/schedule_run surface: compare-and-swap on
    /// `from_status` plus allowlisted guards, undeclared edges raise, reason
    /// columns untouched. Entity type and columns are checked before any SQL.
    pub fn legacy_transition(
        &self,
        req: &LegacyTransitionRequest,
    ) -> Result<LegacyTransitionResult, StoreError> {
        let allowed = LEGACY_COLUMNS
            .iter()
            .find(|(e, _)| *e == req.entity_type)
            .map(|(_, cols)| *cols)
            .ok_or_else(|| StoreError::UnsupportedEntity(req.entity_type.clone()))?;
        if let Some(bad) = req
            .guard
            .keys()
            .chain(req.patch.keys())
            .find(|c| !allowed.contains(&c.as_str()))
        {
            return Err(StoreError::ColumnNotAllowed {
                entity_type: req.entity_type.clone(),
                column: bad.clone(),
            });
        }
        let policy = self.policy(&req.entity_type)?;
        let cmd = TransitionCommand {
            entity_type: req.entity_type.clone(),
            entity_id: req.entity_id.clone(),
            to_status: req.to_status.clone(),
            reason: req.reason.clone(),
            actor: req.actor.clone(),
            expected_statuses: [Expected::Status(req.from_status.clone())]
                .into_iter()
                .collect(),
            expected_version: None,
            patch: req.patch.clone(),
            override_: None,
        };
        let opts = CompatOptions {
            extra_guard: req.guard.clone(),
            enforce_edges: true,
            raise_on_undeclared_edge: true,
            raise_on_unguarded_conflict: false,
            write_reason_columns: false,
        };
        let out = self.run(|tx| transition_in(tx, &policy, &cmd, &opts))?;
        Ok(LegacyTransitionResult {
            ok: out.result == OutcomeKind::Applied,
            previous_status: out.previous_status,
            current_status: out.current_status,
            transition_id: out.transition_id,
        })
    }

    /// The entity's history, oldest first.
    pub fn history(
        &self,
        entity_type: &str,
        entity_id: &str,
    ) -> Result<Vec<TransitionRecord>, StoreError> {
        self.policy(entity_type)?;
        let conn = self.engine.conn()?;
        crate::query::history(&conn, entity_type, entity_id)
    }

    /// The row's status and version, if it exists.
    pub fn status_of(
        &self,
        entity_type: &str,
        entity_id: &str,
    ) -> Result<Option<(String, i64)>, StoreError> {
        let policy = self.policy(entity_type)?;
        let conn = self.engine.conn()?;
        Ok(conn
            .query_row(
                &format!(
                    "SELECT status, updated_at FROM {} WHERE id = ?1",
                    policy.table()
                ),
                [entity_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    /// Admin events (overrides, rejections) for an entity, oldest first.
    pub fn admin_events(
        &self,
        entity_type: &str,
        entity_id: &str,
    ) -> Result<Vec<AdminEvent>, StoreError> {
        let conn = self.engine.conn()?;
        let mut stmt = conn.prepare(
            "SELECT id, kind, entity_type, entity_id, actor_type, actor_id, detail_json, created_at
             FROM admin_events WHERE entity_type = ?1 AND entity_id = ?2 ORDER BY id",
        )?;
        let rows = stmt.query_map([entity_type, entity_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, String>(6)?,
                r.get::<_, i64>(7)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, kind, entity_type, entity_id, actor_type, actor_id, detail, created_at) = row?;
            out.push(AdminEvent {
                id,
                kind,
                entity_type,
                entity_id,
                actor_type,
                actor_id,
                detail: serde_json::from_str(&detail)?,
                created_at,
            });
        }
        Ok(out)
    }

    /// Runs `f` with a transition helper inside one IMMEDIATE transaction
    /// (used by the persist hooks to pair a transition with other writes).
    pub(crate) fn with_tx<T>(
        &self,
        f: impl FnOnce(
            &Transaction<'_>,
            &TxOps<'_>,
        ) -> Result<(T, Option<TransitionRecord>), StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.engine.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let ops = TxOps { store: self };
        let (value, terminal) = f(&tx, &ops)?;
        tx.commit()?;
        drop(conn);
        if let Some(record) = terminal {
            self.notify(&TerminalEvent { transition: record });
        }
        Ok(value)
    }
}

/// Transition operations usable inside [`Store::with_tx`].
pub(crate) struct TxOps<'a> {
    store: &'a Store,
}

impl TxOps<'_> {
    pub(crate) fn policy(&self, entity_type: &str) -> Result<Arc<Policy>, StoreError> {
        self.store.policy(entity_type)
    }

    /// One transition inside the caller's transaction. A conflict is an
    /// outcome; the caller decides whether to go on.
    pub(crate) fn transition(
        &self,
        tx: &Transaction<'_>,
        cmd: &TransitionCommand,
        opts: &CompatOptions,
    ) -> Result<(Outcome, Option<TransitionRecord>), StoreError> {
        let policy = self.policy(&cmd.entity_type)?;
        match transition_in(tx, &policy, cmd, opts)? {
            Step::Commit { outcome, terminal } => Ok((outcome, terminal.map(|t| *t))),
            Step::Rollback(outcome) => Ok((outcome, None)),
        }
    }
}

impl LifecycleStore for Store {
    type Error = StoreError;

    fn create(&self, cmd: &InitialCommand) -> Result<Outcome, StoreError> {
        Store::create(self, cmd)
    }

    fn transition(&self, cmd: &TransitionCommand) -> Result<Outcome, StoreError> {
        Store::transition(self, cmd)
    }

    fn history(
        &self,
        entity_type: &str,
        entity_id: &str,
    ) -> Result<Vec<TransitionRecord>, StoreError> {
        Store::history(self, entity_type, entity_id)
    }
}
