//! [`PgSchedules`]: the schedule tables of one PostgreSQL schema, shared by
//! many hosts.
//!
//! Definitions change inside one transaction that first takes
//! `LOCK TABLE schedules IN SHARE ROW EXCLUSIVE MODE` (the lock conflicts
//! with itself, so two hosts' `apply`/`create` run one after the other, as
//! SQLite's `BEGIN IMMEDIATE` makes them; plain reads go on), each status
//! change appending its `status_transitions` row in the same transaction.
//! A run starts by a claim: one transaction locks the schedule's row
//! (`SELECT … FOR UPDATE`), counts its `running` runs and, under the cap,
//! inserts the new row (decided by the schedule_run policy) with its
//! history row, so claims on one schedule from any host run one after the
//! other and the cap holds. Skipped runs are created, and every run is
//! ended, through [`PgStore`]'s guarded transitions.
//! The tick's `advance` is a compare-and-swap on the due instant it read
//! (`IS NOT DISTINCT FROM`), so a definition changed meanwhile wins.
//!
//! The `postgres` driver runs a runtime of its own and panics when it
//! blocks on an async runtime's thread; every method here detects that:
//! on a multi-thread runtime it runs in place through
//! `tokio::task::block_in_place` (the worker hands its other tasks on), on
//! a current-thread runtime on one long-lived worker thread of this value
//! (started on first need, ended with it), so the scheduler may call it
//! from its tick and from its run tasks alike. Dropping the store there is
//! safe too (state-postgres closes its connections off the runtime).

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock, mpsc};

use lifecycle_core::{Actor, OutcomeKind};
use postgres::GenericClient;
use postgres::types::ToSql;
use state_postgres::{PgStore, TickLock};
use tokio::runtime::RuntimeFlavor;

use crate::error::Error;
use crate::model::{Micros, ScheduleSpec};
use crate::store::{
    ApplyReport, ApplyStep, CREATED, Claim, DELETED, FireKind, Fired, MissedRow, RunStart,
    RunningRun, Schedule, ScheduleRun, ScheduleStore, StartRow, check_create, decode,
    enable_change, end_command, initial_row, initial_status, missed_row, new_id, overlap_row,
    plan_apply, run_reason, start_row, to_json, validate_set,
};

/// The name of the scheduler's advisory tick lock.
pub const TICK_LOCK: &str = "scheduler";

/// The schedule tables of one PostgreSQL schema.
#[derive(Debug)]
pub struct PgSchedules {
    ctx: Arc<Ctx>,
    worker: Worker,
}

/// What a store call needs, shared with the worker thread.
#[derive(Debug)]
struct Ctx {
    store: PgStore,
    actor: Actor,
}

impl Ctx {
    fn conn(&self) -> Result<state_postgres::PgConn, Error> {
        Ok(self.store.engine().conn()?)
    }

    /// Runs `f` in one transaction holding the definitions' lock.
    fn definitions<T>(
        &self,
        f: impl FnOnce(&mut postgres::Transaction<'_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut conn = self.conn()?;
        let mut tx = conn.transaction()?;
        tx.batch_execute("LOCK TABLE schedules IN SHARE ROW EXCLUSIVE MODE")?;
        let out = f(&mut tx)?;
        tx.commit()?;
        Ok(out)
    }
}

const SELECT: &str = "SELECT id, status, spec_json, next_fire_at, last_fire_at FROM schedules";

type Job = Box<dyn FnOnce() + Send>;

/// The long-lived thread that runs the store's calls for a current-thread
/// runtime, one after the other; it ends when its value is dropped.
#[derive(Debug, Default)]
struct Worker {
    jobs: OnceLock<mpsc::Sender<Job>>,
}

impl Worker {
    fn sender(&self) -> Result<&mpsc::Sender<Job>, Error> {
        if let Some(tx) = self.jobs.get() {
            return Ok(tx);
        }
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("pg-schedules".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job();
                }
            })
            .map_err(|e| Error::Worker(e.to_string()))?;
        // Two first callers at once: the loser's thread ends at once (its
        // sender is dropped here).
        Ok(self.jobs.get_or_init(|| tx))
    }

    /// Runs `f` on the worker and waits for its result (a panic in `f` is
    /// resumed here; the worker lives on).
    fn run<T: Send + 'static>(
        &self,
        ctx: Arc<Ctx>,
        f: impl FnOnce(&Ctx) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let (done, result) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            let out = std::panic::catch_unwind(AssertUnwindSafe(|| f(&ctx)));
            let _ = done.send(out);
        });
        self.sender()?
            .send(job)
            .map_err(|_| Error::Worker("it has stopped".into()))?;
        match result.recv() {
            Ok(Ok(out)) => out,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(Error::Worker("it dropped the call".into())),
        }
    }
}

impl PgSchedules {
    /// Schedules of `store`, changed by `actor`.
    pub fn new(store: PgStore, actor: Actor) -> Self {
        Self {
            ctx: Arc::new(Ctx { store, actor }),
            worker: Worker::default(),
        }
    }

    /// The lifecycle store.
    pub fn store(&self) -> &PgStore {
        &self.ctx.store
    }

    /// Runs `f` here on a plain thread, in place (`block_in_place`) on a
    /// multi-thread runtime, on the worker thread on a current-thread one:
    /// never where the driver's own `block_on` would panic.
    fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Ctx) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        match tokio::runtime::Handle::try_current() {
            Err(_) => f(&self.ctx),
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| f(&self.ctx))
            }
            Ok(_) => self.worker.run(Arc::clone(&self.ctx), f),
        }
    }

    /// Takes the advisory tick lock of this schema without waiting: one
    /// ticking daemon per schema, whatever the number of hosts. The server
    /// releases it when the holder's connection ends (even by SIGKILL).
    /// [`Error::AdvisoryLocked`] when another session holds it.
    pub fn tick_lock(&self) -> Result<TickLock, Error> {
        self.call(|c| {
            TickLock::try_acquire(c.store.engine(), TICK_LOCK)?
                .ok_or_else(|| Error::AdvisoryLocked(c.store.engine().schema().to_owned()))
        })
    }
}

impl ScheduleStore for PgSchedules {
    fn create(&self, spec: &ScheduleSpec, now: Micros) -> Result<Schedule, Error> {
        check_create(spec, now)?;
        let spec = spec.clone();
        self.call(move |c| {
            c.definitions(|tx| {
                if find(tx, &spec.name)?.is_some() {
                    return Err(Error::Exists(spec.name.clone()));
                }
                insert(tx, &spec, now, &c.actor)?;
                find(tx, &spec.name)?.ok_or_else(|| Error::NotFound(spec.name.clone()))
            })
        })
    }

    fn list(&self) -> Result<Vec<Schedule>, Error> {
        self.call(|c| list_in(&mut *c.conn()?))
    }

    fn get(&self, name: &str) -> Result<Option<Schedule>, Error> {
        let name = name.to_owned();
        self.call(move |c| find(&mut *c.conn()?, &name))
    }

    fn set_enabled(&self, name: &str, enabled: bool, now: Micros) -> Result<Schedule, Error> {
        let name = name.to_owned();
        self.call(move |c| {
            c.definitions(|tx| {
                let s = find(tx, &name)?.ok_or_else(|| Error::NotFound(name.clone()))?;
                if let Some((to, code, next)) = enable_change(&s, enabled, now)? {
                    move_status(tx, &s.id, &s.status, to, code, &c.actor, now)?;
                    tx.execute(
                        "UPDATE schedules SET next_fire_at = $2 WHERE id = $1",
                        &[&s.id, &next],
                    )?;
                }
                find(tx, &name)?.ok_or_else(|| Error::NotFound(name.clone()))
            })
        })
    }

    fn delete(&self, name: &str, now: Micros) -> Result<Schedule, Error> {
        let name = name.to_owned();
        self.call(move |c| {
            c.definitions(|tx| {
                let s = find(tx, &name)?.ok_or_else(|| Error::NotFound(name.clone()))?;
                delete_in(tx, &s, &c.actor, now)?;
                Ok(s)
            })
        })
    }

    fn apply(&self, set: &[ScheduleSpec], now: Micros) -> Result<ApplyReport, Error> {
        validate_set(set)?;
        let set = set.to_vec();
        self.call(move |c| c.definitions(|tx| {
            let existing = list_in(tx)?;
            let (steps, report) = plan_apply(&existing, &set, now)?;
            for step in steps {
                match step {
                    ApplyStep::Create(spec) => insert(tx, spec, now, &c.actor)?,
                    ApplyStep::Update {
                        stored,
                        spec,
                        status,
                        next,
                    } => {
                        if let Some((to, code)) = status {
                            move_status(tx, &stored.id, &stored.status, to, code, &c.actor, now)?;
                        }
                        tx.execute(
                            "UPDATE schedules SET spec_json = $2, next_fire_at = $3, updated_at = $4 WHERE id = $1",
                            &[&stored.id, &to_json(spec), &next, &now],
                        )?;
                    }
                    ApplyStep::Delete(s) => delete_in(tx, s, &c.actor, now)?,
                }
            }
            Ok(report)
        }))
    }

    fn runs(&self, schedule: Option<&str>, limit: u32) -> Result<Vec<ScheduleRun>, Error> {
        let schedule = schedule.map(str::to_owned);
        self.call(move |c| {
            let mut conn = c.conn()?;
            let id = match schedule {
                Some(n) => Some(
                    find(&mut *conn, &n)?
                        .map(|s| s.id)
                        .unwrap_or(n),
                ),
                None => None,
            };
            let rows = conn.query(
                "SELECT id, schedule_id, status, status_reason_code, due_at, detected_at, session_id, status_reason_json
                 FROM schedule_runs WHERE ($1::text IS NULL OR schedule_id = $1)
                 ORDER BY created_at DESC, id DESC LIMIT $2",
                &[&id, &i64::from(limit)],
            )?;
            rows.iter()
                .map(|r| {
                    Ok(ScheduleRun {
                        id: r.try_get(0)?,
                        schedule_id: r.try_get(1)?,
                        status: r.try_get(2)?,
                        reason: r.try_get(3)?,
                        due_at: r.try_get(4)?,
                        detected_at: r.try_get(5)?,
                        session_id: r.try_get(6)?,
                        reason_json: r.try_get(7)?,
                    })
                })
                .collect()
        })
    }

    fn due(&self, now: Micros) -> Result<Vec<Schedule>, Error> {
        self.call(move |c| {
            let rows = c.conn()?.query(
                &format!(
                    "{SELECT} WHERE status = 'enabled' AND next_fire_at <= $1 ORDER BY next_fire_at, id"
                ),
                &[&now],
            )?;
            rows.iter().map(row).collect()
        })
    }

    fn running_count(&self, schedule_id: &str) -> Result<u32, Error> {
        let schedule_id = schedule_id.to_owned();
        self.call(move |c| count_running(&mut *c.conn()?, &schedule_id))
    }

    fn fire(&self, start: &RunStart, kind: FireKind, actor: &Actor) -> Result<Fired, Error> {
        let registry = self.ctx.store.registry();
        let running_row = start_row(registry, start, actor)?;
        // The overlap row's metadata names the count: it is decided in the
        // transaction.
        let start = start.clone();
        let actor = actor.clone();
        self.call(move |c| {
            let mut conn = c.conn()?;
            let mut tx = conn.transaction()?;
            // The move locks the schedule's row (as the claim's FOR UPDATE
            // does), so fires and claims on it from any host run one after
            // the other; a concurrent move that won leaves this one
            // matching no row.
            let locked = match kind {
                FireKind::Slot { next } => tx.execute(
                    "UPDATE schedules SET next_fire_at = $3, last_fire_at = $4
                     WHERE id = $1 AND next_fire_at IS NOT DISTINCT FROM $2 AND status = 'enabled'",
                    &[&start.schedule_id, &start.due_at, &next, &start.fired_at],
                )?,
                FireKind::Trigger => tx
                    .query_opt(
                        "SELECT id FROM schedules WHERE id = $1 FOR UPDATE",
                        &[&start.schedule_id],
                    )?
                    .map_or(0, |_| 1),
            };
            if locked != 1 {
                return match kind {
                    FireKind::Trigger => Err(Error::NotFound(start.schedule_id)),
                    _ => Ok(Fired::Moved), // rolled back: nothing written
                };
            }
            let running = count_running(&mut tx, &start.schedule_id)?;
            let fired = if running < start.max_concurrent {
                insert_run(
                    &mut tx,
                    &start,
                    &running_row,
                    (Some(&start.session_id), start.claimed_by.as_deref()),
                    &actor,
                )?;
                Fired::Started
            } else {
                let row = overlap_row(c.store.registry(), &start, running, &actor)?;
                insert_run(&mut tx, &start, &row, (None, None), &actor)?;
                Fired::Skipped { running }
            };
            tx.commit()?;
            Ok(fired)
        })
    }

    fn record_missed(
        &self,
        schedule_id: &str,
        from: Micros,
        next: Option<Micros>,
        missed: &[MissedRow],
        detected_at: Micros,
        actor: &Actor,
    ) -> Result<bool, Error> {
        let registry = self.ctx.store.registry();
        let rows = missed
            .iter()
            .map(|m| missed_row(registry, m, actor).map(|row| (m.run_id.clone(), m.due_at, row)))
            .collect::<Result<Vec<_>, _>>()?;
        let schedule_id = schedule_id.to_owned();
        let actor = actor.clone();
        self.call(move |c| {
            let mut conn = c.conn()?;
            let mut tx = conn.transaction()?;
            let moved = tx.execute(
                "UPDATE schedules SET next_fire_at = $3
                 WHERE id = $1 AND next_fire_at IS NOT DISTINCT FROM $2",
                &[&schedule_id, &from, &next],
            )?;
            if moved != 1 {
                return Ok(false);
            }
            for (run_id, due_at, row) in &rows {
                insert_row(
                    &mut tx,
                    run_id,
                    row,
                    (&schedule_id, *due_at, detected_at),
                    (None, None),
                    &actor,
                )?;
            }
            tx.commit()?;
            Ok(true)
        })
    }

    fn claim_run(&self, start: &RunStart, actor: &Actor) -> Result<Claim, Error> {
        let row = start_row(self.ctx.store.registry(), start, actor)?;
        let start = start.clone();
        let actor = actor.clone();
        self.call(move |c| {
            let mut conn = c.conn()?;
            let mut tx = conn.transaction()?;
            // The schedule's row lock serialises the claims on it, on every
            // host; under READ COMMITTED the count below then sees every run
            // the previous holder inserted.
            if tx
                .query_opt(
                    "SELECT id FROM schedules WHERE id = $1 FOR UPDATE",
                    &[&start.schedule_id],
                )?
                .is_none()
            {
                return Err(Error::NotFound(start.schedule_id));
            }
            let running = count_running(&mut tx, &start.schedule_id)?;
            if running >= start.max_concurrent {
                return Ok(Claim::Full { running }); // rolled back: nothing written
            }
            insert_run(
                &mut tx,
                &start,
                &row,
                (Some(&start.session_id), start.claimed_by.as_deref()),
                &actor,
            )?;
            tx.commit()?;
            Ok(Claim::Started)
        })
    }

    fn record_skip(
        &self,
        run_id: &str,
        schedule_id: &str,
        reason: &str,
        reason_json: serde_json::Value,
        due_at: Micros,
        detected_at: Micros,
        actor: &Actor,
    ) -> Result<(), Error> {
        let row = initial_row(
            self.ctx.store.registry(),
            run_id,
            "skipped",
            run_reason(reason, reason_json),
            actor,
        )?;
        let run_id = run_id.to_owned();
        let schedule_id = schedule_id.to_owned();
        let actor = actor.clone();
        self.call(move |c| {
            let mut conn = c.conn()?;
            let mut tx = conn.transaction()?;
            insert_row(
                &mut tx,
                &run_id,
                &row,
                (&schedule_id, due_at, detected_at),
                (None, None),
                &actor,
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    fn end_run(
        &self,
        run_id: &str,
        status: &str,
        reason: &str,
        ended_at: Micros,
        error: Option<&str>,
        actor: &Actor,
    ) -> Result<bool, Error> {
        let cmd = end_command(run_id, status, reason, ended_at, error, actor);
        self.call(move |c| Ok(c.store.transition(&cmd)?.result == OutcomeKind::Applied))
    }

    fn running_claims(&self) -> Result<Vec<RunningRun>, Error> {
        self.call(|c| {
            let rows = c.conn()?.query(
                "SELECT id, session_id, leased_by FROM schedule_runs WHERE status = 'running'",
                &[],
            )?;
            rows.iter()
                .map(|r| {
                    Ok(RunningRun {
                        id: r.try_get(0)?,
                        session_id: r.try_get(1)?,
                        claimed_by: r.try_get(2)?,
                    })
                })
                .collect()
        })
    }

    fn session_status(&self, session_id: &str) -> Result<Option<(String, Option<String>)>, Error> {
        let session_id = session_id.to_owned();
        self.call(move |c| {
            let row = c.conn()?.query_opt(
                "SELECT status, status_reason_code FROM sessions WHERE id = $1",
                &[&session_id],
            )?;
            row.map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).transpose()
        })
    }
}

fn row(r: &postgres::Row) -> Result<Schedule, Error> {
    decode(
        r.try_get(0)?,
        r.try_get(1)?,
        r.try_get(2)?,
        r.try_get(3)?,
        r.try_get(4)?,
    )
}

/// A schedule's `running` runs.
fn count_running(c: &mut impl GenericClient, schedule_id: &str) -> Result<u32, Error> {
    let n: i64 = c
        .query_one(
            "SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status = 'running'",
            &[&schedule_id],
        )?
        .try_get(0)?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

fn list_in(c: &mut impl GenericClient) -> Result<Vec<Schedule>, Error> {
    let rows = c.query(
        &format!("{SELECT} WHERE status != 'deleted' AND name IS NOT NULL ORDER BY name"),
        &[],
    )?;
    rows.iter().map(row).collect()
}

fn find(c: &mut impl GenericClient, name: &str) -> Result<Option<Schedule>, Error> {
    c.query_opt(
        &format!(
            "{SELECT} WHERE status != 'deleted' AND (name = $1 OR id = $1)
             ORDER BY (name = $1) IS TRUE DESC LIMIT 1"
        ),
        &[&name],
    )?
    .as_ref()
    .map(row)
    .transpose()
}

fn insert(
    tx: &mut impl GenericClient,
    spec: &ScheduleSpec,
    now: Micros,
    actor: &Actor,
) -> Result<(), Error> {
    let id = new_id(spec, now);
    let status = initial_status(spec);
    let next = spec.first_due(now)?;
    tx.execute(
        "INSERT INTO schedules (id, status, status_reason_code, created_at, updated_at, name, spec_json, next_fire_at)
         VALUES ($1, $2, $3, $4, $4, $5, $6, $7)",
        &[&id, &status, &CREATED, &now, &spec.name, &to_json(spec), &next],
    )?;
    history(tx, &id, None, status, CREATED, actor, now)
}

fn delete_in(
    tx: &mut impl GenericClient,
    s: &Schedule,
    actor: &Actor,
    now: Micros,
) -> Result<(), Error> {
    move_status(tx, &s.id, &s.status, "deleted", DELETED, actor, now)?;
    tx.execute(
        "UPDATE schedules SET name = NULL, next_fire_at = NULL WHERE id = $1",
        &[&s.id],
    )?;
    Ok(())
}

fn move_status(
    tx: &mut impl GenericClient,
    id: &str,
    from: &str,
    to: &str,
    code: &str,
    actor: &Actor,
    now: Micros,
) -> Result<(), Error> {
    tx.execute(
        "UPDATE schedules SET status = $2, status_reason_code = $3, updated_at = $4 WHERE id = $1",
        &[&id, &to, &code, &now],
    )?;
    history(tx, id, Some(from), to, code, actor, now)
}

fn history(
    tx: &mut impl GenericClient,
    id: &str,
    from: Option<&str>,
    to: &str,
    code: &str,
    actor: &Actor,
    now: Micros,
) -> Result<(), Error> {
    let params: [&(dyn ToSql + Sync); 7] = [
        &id,
        &from,
        &to,
        &code,
        &actor.kind.as_str(),
        &actor.id,
        &now,
    ];
    tx.execute(
        "INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status, reason_code, reason_json, actor_type, actor_id, created_at)
         VALUES ('schedule', $1, $2, $3, $4, '{}', $5, $6, $7)",
        &params,
    )?;
    Ok(())
}

/// A fire's new row (its session and claimer in `by`).
fn insert_run(
    tx: &mut impl GenericClient,
    start: &RunStart,
    row: &StartRow,
    by: (Option<&str>, Option<&str>),
    actor: &Actor,
) -> Result<(), Error> {
    insert_row(
        tx,
        &start.run_id,
        row,
        (&start.schedule_id, start.due_at, start.fired_at),
        by,
        actor,
    )
}

/// Inserts one schedule_runs row decided as `row` (its schedule, due and
/// detected instants in `at`, its session and claimer in `by`) and its
/// history row, in one statement; [`Error::Exists`] when the id is taken.
fn insert_row(
    tx: &mut impl GenericClient,
    run_id: &str,
    row: &StartRow,
    at: (&str, Micros, Micros),
    by: (Option<&str>, Option<&str>),
    actor: &Actor,
) -> Result<(), Error> {
    let (code, summary, reason_json) = row.reason_columns();
    let kind = actor.kind.as_str();
    let params: [&(dyn ToSql + Sync); 16] = [
        &run_id,
        &row.status,
        &code,
        &summary,
        &reason_json,
        &row.version,
        &at.0,
        &at.1,
        &at.2,
        &by.0,
        &row.reason.code,
        &row.reason.summary,
        &row.reason_json,
        &kind,
        &actor.id,
        &by.1,
    ];
    let inserted = tx.query(
        "WITH w AS (
           INSERT INTO schedule_runs (id, status, status_reason_code, status_reason_summary,
              status_reason_json, created_at, updated_at, schedule_id, due_at, detected_at, session_id,
              leased_by)
           VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8, $9, $10, $16)
           ON CONFLICT (id) DO NOTHING RETURNING id)
         INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status, reason_code,
            reason_summary, reason_json, actor_type, actor_id, override_json, created_at)
         SELECT 'schedule_run', w.id, NULL, $2, $11, $12, $13, $14, $15, NULL, $6 FROM w
         RETURNING id",
        &params,
    )?;
    if inserted.is_empty() {
        return Err(Error::Exists(run_id.to_owned()));
    }
    Ok(())
}
