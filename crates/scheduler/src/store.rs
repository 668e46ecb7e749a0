//! The storage seam: [`ScheduleStore`], implemented on SQLite
//! ([`crate::Schedules`]) and PostgreSQL ([`crate::PgSchedules`]), and the
//! decisions both share (what `apply` changes, what enabling computes), so
//! the two stores differ only in the SQL that executes them.

use lifecycle_core::reasons::ScheduleReasons;
use lifecycle_core::{
    Actor, CoreError, Decision, InitialCommand, PolicyRegistry, Reason, TransitionCommand,
    decide_initial,
};
use serde::Serialize;
use serde_json::json;

use crate::error::Error;
use crate::model::{Micros, ScheduleSpec, Trigger};

/// A stored schedule.
#[derive(Debug, Clone, Serialize)]
pub struct Schedule {
    /// Its id.
    pub id: String,
    /// `enabled` or `disabled`.
    pub status: String,
    /// Its definition.
    pub spec: ScheduleSpec,
    /// When it is next due (none: a spent one-shot).
    pub next_fire_at: Option<Micros>,
    /// When it last fired.
    pub last_fire_at: Option<Micros>,
}

/// One row of `schedule_runs`.
#[derive(Debug, Clone, Serialize)]
pub struct ScheduleRun {
    /// Its id.
    pub id: String,
    /// The schedule.
    pub schedule_id: Option<String>,
    /// Its status.
    pub status: String,
    /// Its reason code.
    pub reason: Option<String>,
    /// The instant it was due.
    pub due_at: Option<Micros>,
    /// When it was detected (a missed fire: at the restart's preamble).
    pub detected_at: Option<Micros>,
    /// The session it started.
    pub session_id: Option<String>,
    /// The reason's JSON.
    pub reason_json: Option<String>,
}

/// What `apply` changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ApplyReport {
    /// Names created.
    pub created: Vec<String>,
    /// Names whose definition changed.
    pub updated: Vec<String>,
    /// Names left as they were.
    pub unchanged: Vec<String>,
    /// Names deleted (stored but absent from the set).
    pub deleted: Vec<String>,
}

/// A run to start under its schedule's concurrency cap
/// ([`ScheduleStore::claim_run`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunStart {
    /// The new schedule_run row's id.
    pub run_id: String,
    /// The schedule.
    pub schedule_id: String,
    /// At most this many of the schedule's runs may be `running`.
    pub max_concurrent: u32,
    /// The instant it was due.
    pub due_at: Micros,
    /// When it fired (the row's `detected_at`).
    pub fired_at: Micros,
    /// The session the run will record.
    pub session_id: String,
    /// Who claims it (written to the row's `leased_by`): the scheduler's
    /// role and process, so a later start can tell a run whose starter
    /// still lives from one a dead daemon left.
    pub claimed_by: Option<String>,
}

/// A `running` run, as a starting scheduler's preamble judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningRun {
    /// Its id.
    pub id: String,
    /// The session it started.
    pub session_id: Option<String>,
    /// Who claimed it ([`RunStart::claimed_by`]).
    pub claimed_by: Option<String>,
}

/// What [`ScheduleStore::claim_run`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Claim {
    /// The run is recorded `running`.
    Started,
    /// The cap's worth of runs was `running` (this many, as counted inside
    /// the claim's transaction); nothing was written.
    Full {
        /// The runs counted `running`.
        running: u32,
    },
}

/// Which fire [`ScheduleStore::fire`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FireKind {
    /// A due slot: the schedule moves from the slot ([`RunStart::due_at`])
    /// to `next` in the same transaction as the slot's row, guarded on the
    /// slot (a schedule no longer enabled at that slot writes nothing).
    Slot {
        /// The next due instant (none: a spent one-shot).
        next: Option<Micros>,
    },
    /// A fire by hand (`trigger`): no slot, the schedule is not moved.
    Trigger,
}

/// What [`ScheduleStore::fire`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fired {
    /// The run is recorded `running`.
    Started,
    /// The cap's worth of runs was `running` (this many, as counted inside
    /// the fire's transaction): the row is recorded `skipped` with
    /// `schedule.skipped.overlap`.
    Skipped {
        /// The runs counted `running`.
        running: u32,
    },
    /// The schedule no longer stood at the slot (changed, disabled,
    /// deleted, or fired by another process): nothing was written.
    Moved,
}

/// One missed fire's row ([`ScheduleStore::record_missed`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MissedRow {
    /// The row's id.
    pub run_id: String,
    /// The instant it was due.
    pub due_at: Micros,
    /// Its reason's metadata.
    pub reason_json: serde_json::Value,
}

/// Where schedules and their runs live. Definitions change in one
/// transaction each (`apply`: one for the whole set), every status change
/// with its `status_transitions` row; a run starts by [`Self::claim_run`]
/// (its row decided by the schedule_run policy), skipped runs are created
/// and every run is ended through the lifecycle store, so every run status
/// obeys that policy.
///
/// Every method blocks on the database: call it off an async runtime's
/// worker (the PostgreSQL store moves off it by itself, through
/// `block_in_place` or its worker thread, as its driver runs a runtime of
/// its own).
pub trait ScheduleStore: Send + Sync + std::fmt::Debug {
    /// Creates one schedule (validated first); its first due instant is
    /// computed from `now`.
    fn create(&self, spec: &ScheduleSpec, now: Micros) -> Result<Schedule, Error>;

    /// Every live (not deleted) schedule, by name.
    fn list(&self) -> Result<Vec<Schedule>, Error>;

    /// One live schedule by name or id.
    fn get(&self, name: &str) -> Result<Option<Schedule>, Error>;

    /// Enables or disables a schedule. Enabling recomputes the next due
    /// instant from `now` (fires while disabled are not missed fires).
    fn set_enabled(&self, name: &str, enabled: bool, now: Micros) -> Result<Schedule, Error>;

    /// Deletes a schedule (its runs stay, its name is freed).
    fn delete(&self, name: &str, now: Micros) -> Result<Schedule, Error>;

    /// Reconciles the stored schedules with `set` in ONE transaction:
    /// creates the new names, updates the changed definitions (the next due
    /// instant recomputed), deletes names not in the set. Every definition
    /// is validated before anything is written; any failure writes nothing.
    fn apply(&self, set: &[ScheduleSpec], now: Micros) -> Result<ApplyReport, Error>;

    /// The runs of a schedule (all runs with `None`), newest first.
    fn runs(&self, schedule: Option<&str>, limit: u32) -> Result<Vec<ScheduleRun>, Error>;

    /// Enabled schedules due at `now` (`next_fire_at <= now`).
    fn due(&self, now: Micros) -> Result<Vec<Schedule>, Error>;

    /// How many runs of `schedule_id` are `running`.
    fn running_count(&self, schedule_id: &str) -> Result<u32, Error>;

    /// Fires once, as ONE transaction: for a [`FireKind::Slot`] the
    /// schedule first moves from the slot to its next due instant (guarded
    /// on the slot and on `enabled`: otherwise nothing is written,
    /// [`Fired::Moved`]) and stamps its last fire; then, under the cap
    /// (counted as in [`Self::claim_run`]), the fire's row is written
    /// `running` ([`Fired::Started`]), else `skipped` with
    /// `schedule.skipped.overlap` ([`Fired::Skipped`]), each with its
    /// history row and its due/detected instants. A process killed at any
    /// instant leaves the slot either where it was with no row, or moved
    /// with exactly its one row.
    fn fire(&self, start: &RunStart, kind: FireKind, actor: &Actor) -> Result<Fired, Error>;

    /// Records the missed fires of a schedule standing at `from`, as ONE
    /// transaction: the schedule moves to `next` (guarded on `from`:
    /// `false`, nothing written, when it no longer stands there) and every
    /// row of `missed` is written `skipped` with
    /// `schedule.skipped.missed_fire`, detected at `detected_at`.
    #[allow(clippy::too_many_arguments, reason = "one move and its rows")]
    fn record_missed(
        &self,
        schedule_id: &str,
        from: Micros,
        next: Option<Micros>,
        missed: &[MissedRow],
        detected_at: Micros,
        actor: &Actor,
    ) -> Result<bool, Error>;

    /// Starts a run under its schedule's concurrency cap, as ONE atomic
    /// step: the count of the schedule's `running` runs and the insert of
    /// the new `running` row (with its history row, its due/detected
    /// instants and its session) happen in one transaction that no other
    /// claim on the same schedule can interleave with (SQLite: `BEGIN
    /// IMMEDIATE`; PostgreSQL: the schedule's row locked `FOR UPDATE`).
    /// So however many ticks, triggers and processes claim at once, at most
    /// `max_concurrent` runs are ever `running`. [`Claim::Full`] writes
    /// nothing: the caller records the skip. This is the only way a run
    /// becomes `running`.
    fn claim_run(&self, start: &RunStart, actor: &Actor) -> Result<Claim, Error>;

    /// Records a `skipped` run row (with `reason`), its history row and its
    /// due/detected instants in one transaction.
    #[allow(clippy::too_many_arguments, reason = "one row's columns")]
    fn record_skip(
        &self,
        run_id: &str,
        schedule_id: &str,
        reason: &str,
        reason_json: serde_json::Value,
        due_at: Micros,
        detected_at: Micros,
        actor: &Actor,
    ) -> Result<(), Error>;

    /// Ends a `running` run (guarded: a run already ended is left alone).
    fn end_run(
        &self,
        run_id: &str,
        status: &str,
        reason: &str,
        ended_at: Micros,
        error: Option<&str>,
        actor: &Actor,
    ) -> Result<bool, Error>;

    /// `running` runs with the session each started and who claimed it.
    fn running_claims(&self) -> Result<Vec<RunningRun>, Error>;

    /// A session's status and reason code (`None`: no such session).
    fn session_status(&self, session_id: &str) -> Result<Option<(String, Option<String>)>, Error>;
}

/// Parses a declarative set (a JSON array or `{"schedules": [...]}`) and
/// validates it: every definition, and no name twice.
pub fn parse_set(text: &str) -> Result<Vec<ScheduleSpec>, Error> {
    const SHAPE: &str = "a JSON array of schedules, or an object {\"schedules\": [...]}";
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::BadSet(format!("the file is not JSON ({e}); expected {SHAPE}")))?;
    let items = match value {
        serde_json::Value::Array(items) => items,
        serde_json::Value::Object(mut map) => match map.remove("schedules") {
            Some(serde_json::Value::Array(items)) => items,
            Some(other) => {
                return Err(Error::BadSet(format!(
                    "\"schedules\" is {}, not an array of schedules",
                    kind(&other)
                )));
            }
            None => {
                let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
                keys.truncate(8);
                return Err(Error::BadSet(format!(
                    "an object without a \"schedules\" member (its keys: {}); expected {SHAPE}",
                    if keys.is_empty() {
                        "none".to_owned()
                    } else {
                        keys.join(", ")
                    }
                )));
            }
        },
        other => {
            return Err(Error::BadSet(format!(
                "the file holds {}; expected {SHAPE}",
                kind(&other)
            )));
        }
    };
    let mut set = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let name = item
            .get("name")
            .and_then(serde_json::Value::as_str)
            .map_or_else(String::new, |n| format!(" ({n:?})"));
        let spec = serde_json::from_value::<ScheduleSpec>(item)
            .map_err(|e| Error::BadSet(format!("schedule #{}{name}: {e}", i + 1)))?;
        set.push(spec);
    }
    validate_set(&set)?;
    Ok(set)
}

/// A JSON value's kind, for messages.
fn kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

pub(crate) fn validate_set(set: &[ScheduleSpec]) -> Result<(), Error> {
    for (i, s) in set.iter().enumerate() {
        s.validate()?;
        if set[..i].iter().any(|o| o.name == s.name) {
            return Err(Error::Invalid {
                name: s.name.clone(),
                reason: "the name appears twice in the set".into(),
            });
        }
    }
    Ok(())
}

/// `create`'s checks before any write: the definition, and a one-shot
/// still ahead.
pub(crate) fn check_create(spec: &ScheduleSpec, now: Micros) -> Result<(), Error> {
    spec.validate()?;
    if let Trigger::Once { .. } = spec.trigger
        && spec.next_after(now, now)?.is_none()
    {
        return Err(Error::Invalid {
            name: spec.name.clone(),
            reason: "the one-shot instant is in the past".into(),
        });
    }
    Ok(())
}

/// A new schedule's id.
pub(crate) fn new_id(spec: &ScheduleSpec, now: Micros) -> String {
    format!("sch-{}-{now}", spec.name)
}

/// A new schedule's status.
pub(crate) fn initial_status(spec: &ScheduleSpec) -> &'static str {
    if spec.enabled { "enabled" } else { "disabled" }
}

/// The reason code of a created schedule.
pub(crate) const CREATED: &str = "schedule_definition.created.observed";
/// The reason code of a deleted schedule.
pub(crate) const DELETED: &str = "schedule_definition.deleted.observed";

/// A status move: the new status, its reason code and the next due instant.
pub(crate) type Move = (&'static str, &'static str, Option<Micros>);

/// What enabling or disabling `s` changes, or `None` when it already has
/// that status.
pub(crate) fn enable_change(
    s: &Schedule,
    enabled: bool,
    now: Micros,
) -> Result<Option<Move>, Error> {
    let to = if enabled { "enabled" } else { "disabled" };
    if s.status == to {
        return Ok(None);
    }
    Ok(Some(if enabled {
        // A one-shot whose instant passed stays spent.
        let next = match s.spec.trigger {
            Trigger::Once { .. } => s.spec.next_after(now, now)?,
            _ => s.spec.first_due(now)?,
        };
        (to, "schedule_definition.enabled.observed", next)
    } else {
        (to, "schedule_definition.disabled.manual", s.next_fire_at)
    }))
}

/// One write of an `apply`.
pub(crate) enum ApplyStep<'a> {
    /// A new name.
    Create(&'a ScheduleSpec),
    /// A changed definition: its new spec, a status move `(to, code)` if
    /// any, and its next due instant.
    Update {
        /// The stored schedule.
        stored: &'a Schedule,
        /// The new definition.
        spec: &'a ScheduleSpec,
        /// The status move.
        status: Option<(&'static str, &'static str)>,
        /// The next due instant.
        next: Option<Micros>,
    },
    /// A name absent from the set.
    Delete(&'a Schedule),
}

/// What [`ScheduleStore::apply`] of `set` over the live schedules
/// `existing` would create, update, keep and delete, with nothing written:
/// the preview of `lionrt schedule apply --dry-run`. Validates the set.
pub fn preview_apply(
    existing: &[Schedule],
    set: &[ScheduleSpec],
    now: Micros,
) -> Result<ApplyReport, Error> {
    plan_apply(existing, set, now).map(|(_, report)| report)
}

/// `set` plus every live schedule of `existing` it does not name, as that
/// schedule stands: applying the result creates and updates what `set`
/// says and deletes nothing (`lionrt schedule apply` without `--prune`).
pub fn keep_unlisted(existing: &[Schedule], set: &[ScheduleSpec]) -> Vec<ScheduleSpec> {
    let mut out = set.to_vec();
    out.extend(
        existing
            .iter()
            .filter(|s| !set.iter().any(|n| n.name == s.spec.name))
            .map(|s| s.spec.clone()),
    );
    out
}

/// What `apply` of `set` over the live schedules `existing` writes, and
/// its report. Validates the set first.
pub(crate) fn plan_apply<'a>(
    existing: &'a [Schedule],
    set: &'a [ScheduleSpec],
    now: Micros,
) -> Result<(Vec<ApplyStep<'a>>, ApplyReport), Error> {
    validate_set(set)?;
    let mut steps = Vec::new();
    let mut report = ApplyReport::default();
    for spec in set {
        match existing.iter().find(|s| s.spec.name == spec.name) {
            None => {
                steps.push(ApplyStep::Create(spec));
                report.created.push(spec.name.clone());
            }
            Some(s) if s.spec == *spec => report.unchanged.push(spec.name.clone()),
            Some(s) => {
                let to = initial_status(spec);
                let status = (s.status != to).then_some(if spec.enabled {
                    (to, "schedule_definition.enabled.observed")
                } else {
                    (to, "schedule_definition.disabled.declared")
                });
                let next = if s.spec.trigger == spec.trigger && s.status == to {
                    s.next_fire_at
                } else {
                    spec.first_due(now)?
                };
                steps.push(ApplyStep::Update {
                    stored: s,
                    spec,
                    status,
                    next,
                });
                report.updated.push(spec.name.clone());
            }
        }
    }
    for s in existing {
        if !set.iter().any(|n| n.name == s.spec.name) {
            steps.push(ApplyStep::Delete(s));
            report.deleted.push(s.spec.name.clone());
        }
    }
    Ok((steps, report))
}

/// A stored row back into a [`Schedule`].
pub(crate) fn decode(
    id: String,
    status: String,
    spec: Option<String>,
    next_fire_at: Option<Micros>,
    last_fire_at: Option<Micros>,
) -> Result<Schedule, Error> {
    let spec: ScheduleSpec =
        serde_json::from_str(spec.as_deref().unwrap_or("null")).map_err(|source| {
            Error::Stored {
                id: id.clone(),
                source,
            }
        })?;
    Ok(Schedule {
        id,
        status,
        spec,
        next_fire_at,
        last_fire_at,
    })
}

/// A definition as stored.
pub(crate) fn to_json(spec: &ScheduleSpec) -> String {
    serde_json::to_string(spec).unwrap_or_else(|_| "null".to_owned())
}

/// A run's reason with its metadata.
pub(crate) fn run_reason(reason: &str, reason_json: serde_json::Value) -> Reason {
    let mut r = Reason::new(reason);
    if let serde_json::Value::Object(map) = reason_json {
        r.metadata = map.into_iter().collect();
    }
    r
}

/// The guarded transition that ends a `running` run.
pub(crate) fn end_command(
    run_id: &str,
    status: &str,
    reason: &str,
    ended_at: Micros,
    error: Option<&str>,
    actor: &Actor,
) -> TransitionCommand {
    let mut cmd = TransitionCommand::new(
        "schedule_run",
        run_id,
        status,
        Reason::new(reason),
        actor.clone(),
    )
    .expecting("running")
    .with_patch("ended_at", serde_json::Value::from(ended_at));
    if let Some(e) = error {
        cmd = cmd.with_patch("error_detail", serde_json::Value::from(e));
    }
    cmd
}

/// The `running` row a claim writes, as the lifecycle store would write
/// it: decided by the schedule_run policy (`decide_initial`: the status is
/// an initial one, the reason code is valid for the entity), with the same
/// columns (`status`, the version in `updated_at`/`created_at`, the
/// denormalised reason) and history row. The claim writes it with plain SQL
/// because the count must share its transaction, which the lifecycle
/// store's own `create` cannot join.
pub(crate) struct StartRow {
    /// The status written (`running`).
    pub(crate) status: String,
    /// The reason.
    pub(crate) reason: Reason,
    /// The reason's JSON, as the lifecycle stores write it.
    pub(crate) reason_json: String,
    /// Whether the policy denormalises the reason onto the row.
    pub(crate) reason_columns: bool,
    /// The row's version (`created_at` = `updated_at`, the history row's
    /// `created_at`).
    pub(crate) version: Micros,
}

impl StartRow {
    /// The reason columns of the row (`NULL`s when the policy has none).
    pub(crate) fn reason_columns(&self) -> (Option<&str>, Option<&str>, Option<&str>) {
        if self.reason_columns {
            (
                Some(&self.reason.code),
                Some(&self.reason.summary),
                Some(&self.reason_json),
            )
        } else {
            (None, None, None)
        }
    }
}

/// Decides the `running` row of `start` under `registry`'s schedule_run
/// policy.
pub(crate) fn start_row(
    registry: &PolicyRegistry,
    start: &RunStart,
    actor: &Actor,
) -> Result<StartRow, Error> {
    initial_row(
        registry,
        &start.run_id,
        "running",
        Reason::new(ScheduleReasons::FIRED_DUE),
        actor,
    )
}

/// Decides a new schedule_run row in `status` with `reason` under
/// `registry`'s policy (as the lifecycle store's `create` would).
pub(crate) fn initial_row(
    registry: &PolicyRegistry,
    run_id: &str,
    status: &str,
    reason: Reason,
    actor: &Actor,
) -> Result<StartRow, Error> {
    let cmd = InitialCommand {
        entity_type: "schedule_run".into(),
        entity_id: run_id.to_owned(),
        status: status.to_owned(),
        reason,
        actor: actor.clone(),
        patch: Default::default(),
    };
    let policy = registry.get(&cmd.entity_type)?;
    match decide_initial(policy, None, &cmd)? {
        Decision::Write(plan) if plan.patch.is_empty() && plan.override_used.is_none() => {
            let reason_json = json!({
                "evidence_refs": cmd.reason.evidence_refs,
                "metadata": cmd.reason.metadata,
            })
            .to_string();
            Ok(StartRow {
                status: plan.to_status,
                reason: cmd.reason,
                reason_json,
                reason_columns: plan.write_reason_columns,
                version: state_sqlite::now_micros(),
            })
        }
        other => Err(Error::Rule(CoreError::InvalidPolicy(format!(
            "writing a {status} schedule run: unexpected decision {other:?}"
        )))),
    }
}

/// The row of a fire refused by the cap.
pub(crate) fn overlap_row(
    registry: &PolicyRegistry,
    start: &RunStart,
    running: u32,
    actor: &Actor,
) -> Result<StartRow, Error> {
    initial_row(
        registry,
        &start.run_id,
        "skipped",
        run_reason(
            ScheduleReasons::SKIPPED_OVERLAP,
            json!({"running": running, "max_concurrent": start.max_concurrent}),
        ),
        actor,
    )
}

/// The row of a missed fire.
pub(crate) fn missed_row(
    registry: &PolicyRegistry,
    m: &MissedRow,
    actor: &Actor,
) -> Result<StartRow, Error> {
    initial_row(
        registry,
        &m.run_id,
        "skipped",
        run_reason(ScheduleReasons::SKIPPED_MISSED_FIRE, m.reason_json.clone()),
        actor,
    )
}
