//! [`Schedules`]: the schedule tables of one SQLite state file.
//!
//! Definitions are written with plain SQL inside one `BEGIN IMMEDIATE`
//! transaction (so `apply` of a whole set is atomic), each status change
//! appending its `status_transitions` row in the same transaction. A run
//! starts by a claim: the count of the schedule's `running` runs and the
//! insert of the new row (decided by the schedule_run policy, written with
//! its history row) in one `BEGIN IMMEDIATE` transaction, so concurrent
//! claims serialise on SQLite's write lock and the cap holds. Skipped runs
//! are created, and every run is ended, through the lifecycle store
//! (`Store::create` / `Store::transition`).

use lifecycle_core::{Actor, OutcomeKind};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::json;
use state_sqlite::Store;

use crate::error::Error;
use crate::model::{Micros, ScheduleSpec};
use crate::store::{
    ApplyReport, ApplyStep, CREATED, Claim, DELETED, FireKind, Fired, MissedRow, RunStart,
    RunningRun, Schedule, ScheduleRun, ScheduleStore, StartRow, check_create, decode,
    enable_change, end_command, initial_row, initial_status, missed_row, new_id, overlap_row,
    plan_apply, run_reason, start_row, to_json, validate_set,
};

/// The schedule tables of one SQLite state file.
#[derive(Debug)]
pub struct Schedules {
    store: Store,
    actor: Actor,
}

const SELECT: &str = "SELECT id, status, spec_json, next_fire_at, last_fire_at FROM schedules";

/// A schedule's `running` runs.
const COUNT_RUNNING: &str =
    "SELECT count(*) FROM schedule_runs WHERE schedule_id = ?1 AND status = 'running'";

impl Schedules {
    /// Schedules of `store`, changed by `actor`.
    pub fn new(store: Store, actor: Actor) -> Self {
        Self { store, actor }
    }

    /// The lifecycle store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn conn(&self) -> Result<state_sqlite::Conn, Error> {
        Ok(self.store.engine().conn()?)
    }

    fn get_or_missing(&self, name: &str) -> Result<Schedule, Error> {
        self.get(name)?
            .ok_or_else(|| Error::NotFound(name.to_owned()))
    }
}

impl ScheduleStore for Schedules {
    fn create(&self, spec: &ScheduleSpec, now: Micros) -> Result<Schedule, Error> {
        check_create(spec, now)?;
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if find(&tx, &spec.name)?.is_some() {
            return Err(Error::Exists(spec.name.clone()));
        }
        insert(&tx, spec, now, &self.actor)?;
        tx.commit()?;
        drop(conn);
        self.get_or_missing(&spec.name)
    }

    fn list(&self) -> Result<Vec<Schedule>, Error> {
        list_in(&*self.conn()?)
    }

    fn get(&self, name: &str) -> Result<Option<Schedule>, Error> {
        find(&*self.conn()?, name)
    }

    fn set_enabled(&self, name: &str, enabled: bool, now: Micros) -> Result<Schedule, Error> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let s = find(&tx, name)?.ok_or_else(|| Error::NotFound(name.to_owned()))?;
        if let Some((to, code, next)) = enable_change(&s, enabled, now)? {
            move_status(&tx, &s.id, &s.status, to, code, &self.actor, now)?;
            tx.execute(
                "UPDATE schedules SET next_fire_at = ?2 WHERE id = ?1",
                params![s.id, next],
            )?;
        }
        tx.commit()?;
        drop(conn);
        self.get_or_missing(name)
    }

    fn delete(&self, name: &str, now: Micros) -> Result<Schedule, Error> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let s = find(&tx, name)?.ok_or_else(|| Error::NotFound(name.to_owned()))?;
        delete_in(&tx, &s, &self.actor, now)?;
        tx.commit()?;
        Ok(s)
    }

    fn apply(&self, set: &[ScheduleSpec], now: Micros) -> Result<ApplyReport, Error> {
        validate_set(set)?;
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing = list_in(&tx)?;
        let (steps, report) = plan_apply(&existing, set, now)?;
        for step in steps {
            match step {
                ApplyStep::Create(spec) => insert(&tx, spec, now, &self.actor)?,
                ApplyStep::Update {
                    stored,
                    spec,
                    status,
                    next,
                } => {
                    if let Some((to, code)) = status {
                        move_status(&tx, &stored.id, &stored.status, to, code, &self.actor, now)?;
                    }
                    tx.execute(
                        "UPDATE schedules SET spec_json = ?2, next_fire_at = ?3, updated_at = ?4 WHERE id = ?1",
                        params![stored.id, to_json(spec), next, now],
                    )?;
                }
                ApplyStep::Delete(s) => delete_in(&tx, s, &self.actor, now)?,
            }
        }
        tx.commit()?;
        Ok(report)
    }

    fn runs(&self, schedule: Option<&str>, limit: u32) -> Result<Vec<ScheduleRun>, Error> {
        let conn = self.conn()?;
        let id = match schedule {
            Some(n) => Some(
                find(&conn, n)?
                    .map(|s| s.id)
                    .unwrap_or_else(|| n.to_owned()),
            ),
            None => None,
        };
        let mut stmt = conn.prepare(
            "SELECT id, schedule_id, status, status_reason_code, due_at, detected_at, session_id, status_reason_json
             FROM schedule_runs WHERE (?1 IS NULL OR schedule_id = ?1)
             ORDER BY created_at DESC, id DESC LIMIT ?2",
        )?;
        let rows = stmt
            .query_map(params![id, limit], |r| {
                Ok(ScheduleRun {
                    id: r.get(0)?,
                    schedule_id: r.get(1)?,
                    status: r.get(2)?,
                    reason: r.get(3)?,
                    due_at: r.get(4)?,
                    detected_at: r.get(5)?,
                    session_id: r.get(6)?,
                    reason_json: r.get(7)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    fn due(&self, now: Micros) -> Result<Vec<Schedule>, Error> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "{SELECT} WHERE status = 'enabled' AND next_fire_at <= ?1 ORDER BY next_fire_at, id"
        ))?;
        let rows = stmt.query_map([now], raw)?.collect::<Result<Vec<_>, _>>()?;
        rows.into_iter()
            .map(|r| decode(r.0, r.1, r.2, r.3, r.4))
            .collect()
    }

    fn running_count(&self, schedule_id: &str) -> Result<u32, Error> {
        let conn = self.conn()?;
        Ok(conn.query_row(COUNT_RUNNING, [schedule_id], |r| r.get(0))?)
    }

    fn fire(&self, start: &RunStart, kind: FireKind, actor: &Actor) -> Result<Fired, Error> {
        let registry = self.store.registry();
        let running_row = start_row(registry, start, actor)?;
        let mut conn = self.conn()?;
        // IMMEDIATE: the write lock is taken before the move and the count,
        // so no other writer (another fire or claim, in any process) runs
        // between them and the insert.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let FireKind::Slot { next } = kind {
            let moved = tx.execute(
                "UPDATE schedules SET next_fire_at = ?3, last_fire_at = ?4
                 WHERE id = ?1 AND next_fire_at IS ?2 AND status = 'enabled'",
                params![start.schedule_id, start.due_at, next, start.fired_at],
            )?;
            if moved != 1 {
                return Ok(Fired::Moved); // rolled back: nothing written
            }
        }
        let running: u32 = tx.query_row(COUNT_RUNNING, [&start.schedule_id], |r| r.get(0))?;
        let fired = if running < start.max_concurrent {
            let new = NewRun {
                start,
                row: &running_row,
                session_id: Some(&start.session_id),
                claimed_by: start.claimed_by.as_deref(),
            };
            insert_run(&tx, &new, actor)?;
            Fired::Started
        } else {
            let row = overlap_row(registry, start, running, actor)?;
            let new = NewRun {
                start,
                row: &row,
                session_id: None,
                claimed_by: None,
            };
            insert_run(&tx, &new, actor)?;
            Fired::Skipped { running }
        };
        tx.commit()?;
        Ok(fired)
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
        let registry = self.store.registry();
        let rows = missed
            .iter()
            .map(|m| missed_row(registry, m, actor))
            .collect::<Result<Vec<_>, _>>()?;
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let moved = tx.execute(
            "UPDATE schedules SET next_fire_at = ?3 WHERE id = ?1 AND next_fire_at IS ?2",
            params![schedule_id, from, next],
        )?;
        if moved != 1 {
            return Ok(false);
        }
        for (m, row) in missed.iter().zip(&rows) {
            insert_row(
                &tx,
                &m.run_id,
                row,
                (schedule_id, m.due_at, detected_at),
                (None, None),
                actor,
            )?;
        }
        tx.commit()?;
        Ok(true)
    }

    fn claim_run(&self, start: &RunStart, actor: &Actor) -> Result<Claim, Error> {
        let row = start_row(self.store.registry(), start, actor)?;
        let mut conn = self.conn()?;
        // IMMEDIATE: the write lock is taken before the count, so no other
        // writer (another claim, in any process) runs between the count and
        // the insert.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let running: u32 = tx.query_row(COUNT_RUNNING, [&start.schedule_id], |r| r.get(0))?;
        if running >= start.max_concurrent {
            return Ok(Claim::Full { running }); // rolled back: nothing written
        }
        let new = NewRun {
            start,
            row: &row,
            session_id: Some(&start.session_id),
            claimed_by: start.claimed_by.as_deref(),
        };
        insert_run(&tx, &new, actor)?;
        tx.commit()?;
        Ok(Claim::Started)
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
            self.store.registry(),
            run_id,
            "skipped",
            run_reason(reason, reason_json),
            actor,
        )?;
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        insert_row(
            &tx,
            run_id,
            &row,
            (schedule_id, due_at, detected_at),
            (None, None),
            actor,
        )?;
        tx.commit()?;
        Ok(())
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
        Ok(self.store.transition(&cmd)?.result == OutcomeKind::Applied)
    }

    fn running_claims(&self) -> Result<Vec<RunningRun>, Error> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(
            "SELECT id, session_id, leased_by FROM schedule_runs WHERE status = 'running'",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RunningRun {
                    id: r.get(0)?,
                    session_id: r.get(1)?,
                    claimed_by: r.get(2)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    fn session_status(&self, session_id: &str) -> Result<Option<(String, Option<String>)>, Error> {
        let conn = self.conn()?;
        Ok(conn
            .query_row(
                "SELECT status, status_reason_code FROM sessions WHERE id = ?1",
                [session_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }
}

type Raw = (String, String, Option<String>, Option<i64>, Option<i64>);

fn raw(r: &rusqlite::Row<'_>) -> rusqlite::Result<Raw> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

fn list_in(conn: &Connection) -> Result<Vec<Schedule>, Error> {
    let mut stmt = conn.prepare(&format!(
        "{SELECT} WHERE status != 'deleted' AND name IS NOT NULL ORDER BY name"
    ))?;
    let rows = stmt.query_map([], raw)?.collect::<Result<Vec<_>, _>>()?;
    rows.into_iter()
        .map(|r| decode(r.0, r.1, r.2, r.3, r.4))
        .collect()
}

fn find(conn: &Connection, name: &str) -> Result<Option<Schedule>, Error> {
    let row = conn
        .query_row(
            &format!(
                "{SELECT} WHERE status != 'deleted' AND (name = ?1 OR id = ?1) ORDER BY name = ?1 DESC LIMIT 1"
            ),
            [name],
            raw,
        )
        .optional()?;
    row.map(|r| decode(r.0, r.1, r.2, r.3, r.4)).transpose()
}

fn insert(tx: &Connection, spec: &ScheduleSpec, now: Micros, actor: &Actor) -> Result<(), Error> {
    let id = new_id(spec, now);
    let status = initial_status(spec);
    let next = spec.first_due(now)?;
    tx.execute(
        "INSERT INTO schedules (id, status, status_reason_code, created_at, updated_at, name, spec_json, next_fire_at)
         VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7)",
        params![id, status, CREATED, now, spec.name, to_json(spec), next],
    )?;
    history(tx, &id, None, status, CREATED, actor, now)
}

fn delete_in(tx: &Connection, s: &Schedule, actor: &Actor, now: Micros) -> Result<(), Error> {
    move_status(tx, &s.id, &s.status, "deleted", DELETED, actor, now)?;
    tx.execute(
        "UPDATE schedules SET name = NULL, next_fire_at = NULL WHERE id = ?1",
        [&s.id],
    )?;
    Ok(())
}

fn move_status(
    tx: &Connection,
    id: &str,
    from: &str,
    to: &str,
    code: &str,
    actor: &Actor,
    now: Micros,
) -> Result<(), Error> {
    tx.execute(
        "UPDATE schedules SET status = ?2, status_reason_code = ?3, updated_at = ?4 WHERE id = ?1",
        params![id, to, code, now],
    )?;
    history(tx, id, Some(from), to, code, actor, now)
}

fn history(
    tx: &Connection,
    id: &str,
    from: Option<&str>,
    to: &str,
    code: &str,
    actor: &Actor,
    now: Micros,
) -> Result<(), Error> {
    tx.execute(
        "INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status, reason_code, reason_json, actor_type, actor_id, created_at)
         VALUES ('schedule', ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            id,
            from,
            to,
            code,
            json!({}).to_string(),
            actor.kind.as_str(),
            actor.id,
            now
        ],
    )?;
    Ok(())
}

/// A fire's new row.
struct NewRun<'a> {
    start: &'a RunStart,
    row: &'a StartRow,
    session_id: Option<&'a str>,
    claimed_by: Option<&'a str>,
}

fn insert_run(tx: &Connection, new: &NewRun<'_>, actor: &Actor) -> Result<(), Error> {
    let s = new.start;
    insert_row(
        tx,
        &s.run_id,
        new.row,
        (&s.schedule_id, s.due_at, s.fired_at),
        (new.session_id, new.claimed_by),
        actor,
    )
}

/// Inserts one schedule_runs row decided as `row` (its schedule, due and
/// detected instants in `at`, its session and claimer in `by`) and its
/// history row; [`Error::Exists`] when the id is taken.
fn insert_row(
    tx: &Connection,
    run_id: &str,
    row: &StartRow,
    at: (&str, Micros, Micros),
    by: (Option<&str>, Option<&str>),
    actor: &Actor,
) -> Result<(), Error> {
    let (code, summary, reason_json) = row.reason_columns();
    let inserted = tx.execute(
        "INSERT OR IGNORE INTO schedule_runs (id, status, status_reason_code, status_reason_summary,
            status_reason_json, created_at, updated_at, schedule_id, due_at, detected_at, session_id,
            leased_by)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            run_id,
            row.status,
            code,
            summary,
            reason_json,
            row.version,
            at.0,
            at.1,
            at.2,
            by.0,
            by.1
        ],
    )?;
    if inserted != 1 {
        return Err(Error::Exists(run_id.to_owned()));
    }
    tx.execute(
        "INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status, reason_code,
            reason_summary, reason_json, actor_type, actor_id, override_json, created_at)
         VALUES ('schedule_run', ?1, NULL, ?2, ?3, ?4, ?5, ?6, ?7, NULL, ?8)",
        params![
            run_id,
            row.status,
            row.reason.code,
            row.reason.summary,
            row.reason_json,
            actor.kind.as_str(),
            actor.id,
            row.version
        ],
    )?;
    Ok(())
}
