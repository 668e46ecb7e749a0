//! Schedules and their runs in the SQLite state file.
//!
//! Definitions are written with plain SQL inside one `BEGIN IMMEDIATE`
//! transaction (so `apply` of a whole set is atomic), each status change
//! appending its `status_transitions` row in the same transaction. Runs are
//! created and ended through the lifecycle store (`Store::create` /
//! `Store::transition`), so every run status obeys the schedule_run policy.

use lifecycle_core::{Actor, InitialCommand, OutcomeKind, Reason, TransitionCommand};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;
use serde_json::json;
use state_sqlite::Store;

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

/// The schedule tables of one state file.
#[derive(Debug)]
pub struct Schedules {
    store: Store,
    actor: Actor,
}

const SELECT: &str = "SELECT id, status, spec_json, next_fire_at, last_fire_at FROM schedules";

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

    /// Creates one schedule (validated first); its first due instant is
    /// computed from `now`.
    pub fn create(&self, spec: &ScheduleSpec, now: Micros) -> Result<Schedule, Error> {
        spec.validate()?;
        if let Trigger::Once { .. } = spec.trigger
            && spec.next_after(now, now)?.is_none()
        {
            return Err(Error::Invalid {
                name: spec.name.clone(),
                reason: "the one-shot instant is in the past".into(),
            });
        }
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if find(&tx, &spec.name)?.is_some() {
            return Err(Error::Exists(spec.name.clone()));
        }
        insert(&tx, spec, now, &self.actor)?;
        tx.commit()?;
        drop(conn);
        self.get(&spec.name)?
            .ok_or_else(|| Error::NotFound(spec.name.clone()))
    }

    /// Every live (not deleted) schedule, by name.
    pub fn list(&self) -> Result<Vec<Schedule>, Error> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(&format!(
            "{SELECT} WHERE status != 'deleted' AND name IS NOT NULL ORDER BY name"
        ))?;
        let rows = stmt.query_map([], raw)?.collect::<Result<Vec<_>, _>>()?;
        rows.into_iter().map(decode).collect()
    }

    /// One live schedule by name or id.
    pub fn get(&self, name: &str) -> Result<Option<Schedule>, Error> {
        let conn = self.conn()?;
        find(&conn, name)
    }

    /// Enables or disables a schedule. Enabling recomputes the next due
    /// instant from `now` (fires while disabled are not missed fires).
    pub fn set_enabled(&self, name: &str, enabled: bool, now: Micros) -> Result<Schedule, Error> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let s = find(&tx, name)?.ok_or_else(|| Error::NotFound(name.to_owned()))?;
        let to = if enabled { "enabled" } else { "disabled" };
        if s.status != to {
            let (code, next) = if enabled {
                // A one-shot whose instant passed stays spent.
                let next = match s.spec.trigger {
                    Trigger::Once { .. } => s.spec.next_after(now, now)?,
                    _ => s.spec.first_due(now)?,
                };
                ("schedule_definition.enabled.observed", next)
            } else {
                ("schedule_definition.disabled.manual", s.next_fire_at)
            };
            move_status(&tx, &s.id, &s.status, to, code, &self.actor, now)?;
            tx.execute(
                "UPDATE schedules SET next_fire_at = ?2 WHERE id = ?1",
                params![s.id, next],
            )?;
        }
        tx.commit()?;
        drop(conn);
        self.get(name)?
            .ok_or_else(|| Error::NotFound(name.to_owned()))
    }

    /// Deletes a schedule (its runs stay, its name is freed).
    pub fn delete(&self, name: &str, now: Micros) -> Result<Schedule, Error> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let s = find(&tx, name)?.ok_or_else(|| Error::NotFound(name.to_owned()))?;
        delete_in(&tx, &s, &self.actor, now)?;
        tx.commit()?;
        Ok(s)
    }

    /// Reconciles the stored schedules with `set` in ONE transaction:
    /// creates the new names, updates the changed definitions (the next due
    /// instant recomputed), deletes names not in the set. Every definition
    /// is validated before anything is written; any failure writes nothing.
    pub fn apply(&self, set: &[ScheduleSpec], now: Micros) -> Result<ApplyReport, Error> {
        validate_set(set)?;
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut report = ApplyReport::default();
        let existing: Vec<Schedule> = {
            let mut stmt = tx.prepare(&format!(
                "{SELECT} WHERE status != 'deleted' AND name IS NOT NULL ORDER BY name"
            ))?;
            let rows = stmt.query_map([], raw)?.collect::<Result<Vec<_>, _>>()?;
            rows.into_iter().map(decode).collect::<Result<_, _>>()?
        };
        for spec in set {
            match existing.iter().find(|s| s.spec.name == spec.name) {
                None => {
                    insert(&tx, spec, now, &self.actor)?;
                    report.created.push(spec.name.clone());
                }
                Some(s) if s.spec == *spec => report.unchanged.push(spec.name.clone()),
                Some(s) => {
                    let to = if spec.enabled { "enabled" } else { "disabled" };
                    if s.status != to {
                        let code = if spec.enabled {
                            "schedule_definition.enabled.observed"
                        } else {
                            "schedule_definition.disabled.declared"
                        };
                        move_status(&tx, &s.id, &s.status, to, code, &self.actor, now)?;
                    }
                    let next = if s.spec.trigger == spec.trigger && s.status == to {
                        s.next_fire_at
                    } else {
                        spec.first_due(now)?
                    };
                    tx.execute(
                        "UPDATE schedules SET spec_json = ?2, next_fire_at = ?3, updated_at = ?4 WHERE id = ?1",
                        params![s.id, to_json(spec), next, now],
                    )?;
                    report.updated.push(spec.name.clone());
                }
            }
        }
        for s in &existing {
            if !set.iter().any(|n| n.name == s.spec.name) {
                delete_in(&tx, s, &self.actor, now)?;
                report.deleted.push(s.spec.name.clone());
            }
        }
        tx.commit()?;
        Ok(report)
    }

    /// The runs of a schedule (all runs with `None`), newest first.
    pub fn runs(&self, schedule: Option<&str>, limit: u32) -> Result<Vec<ScheduleRun>, Error> {
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

    /// Enabled schedules due at `now` (`next_fire_at <= now`).
    pub fn due(&self, now: Micros) -> Result<Vec<Schedule>, Error> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "{SELECT} WHERE status = 'enabled' AND next_fire_at <= ?1 ORDER BY next_fire_at, id"
        ))?;
        let rows = stmt.query_map([now], raw)?.collect::<Result<Vec<_>, _>>()?;
        rows.into_iter().map(decode).collect()
    }

    /// How many runs of `schedule_id` are `running`.
    pub fn running_count(&self, schedule_id: &str) -> Result<u32, Error> {
        let conn = self.conn()?;
        Ok(conn.query_row(
            "SELECT count(*) FROM schedule_runs WHERE schedule_id = ?1 AND status = 'running'",
            [schedule_id],
            |r| r.get(0),
        )?)
    }

    /// Moves the schedule to its next due instant (guarded on the one it
    /// had, so a concurrent edit wins) and stamps its last fire.
    pub fn advance(
        &self,
        id: &str,
        from: Option<Micros>,
        next: Option<Micros>,
        fired_at: Option<Micros>,
    ) -> Result<bool, Error> {
        let conn = self.conn()?;
        let n = conn.execute(
            "UPDATE schedules SET next_fire_at = ?3, last_fire_at = coalesce(?4, last_fire_at)
             WHERE id = ?1 AND next_fire_at IS ?2",
            params![id, from, next, fired_at],
        )?;
        Ok(n == 1)
    }

    /// Records a run row: `running` (fired) or `skipped` (with `reason`),
    /// through the lifecycle store, then its due/detected instants and
    /// session.
    #[allow(clippy::too_many_arguments, reason = "one row's columns")]
    pub fn record_run(
        &self,
        run_id: &str,
        schedule_id: &str,
        status: &str,
        reason: &str,
        reason_json: serde_json::Value,
        due_at: Micros,
        detected_at: Micros,
        session_id: Option<&str>,
        actor: &Actor,
    ) -> Result<(), Error> {
        let mut r = Reason::new(reason);
        if let serde_json::Value::Object(map) = reason_json {
            r.metadata = map.into_iter().collect();
        }
        let out = self.store.create(&InitialCommand {
            entity_type: "schedule_run".into(),
            entity_id: run_id.into(),
            status: status.into(),
            reason: r,
            actor: actor.clone(),
            patch: Default::default(),
        })?;
        if out.result != OutcomeKind::Applied {
            return Err(Error::Exists(run_id.to_owned()));
        }
        self.conn()?.execute(
            "UPDATE schedule_runs SET schedule_id = ?2, due_at = ?3, detected_at = ?4, session_id = ?5 WHERE id = ?1",
            params![run_id, schedule_id, due_at, detected_at, session_id],
        )?;
        Ok(())
    }

    /// Ends a `running` run (guarded: a run already ended is left alone).
    pub fn end_run(
        &self,
        run_id: &str,
        status: &str,
        reason: &str,
        ended_at: Micros,
        error: Option<&str>,
        actor: &Actor,
    ) -> Result<bool, Error> {
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
        Ok(self.store.transition(&cmd)?.result == OutcomeKind::Applied)
    }

    /// `running` runs with the session each started.
    pub fn running_runs(&self) -> Result<Vec<(String, Option<String>)>, Error> {
        let conn = self.conn()?;
        let mut stmt =
            conn.prepare("SELECT id, session_id FROM schedule_runs WHERE status = 'running'")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}

/// Parses a declarative set (a JSON array or `{"schedules": [...]}`) and
/// validates it: every definition, and no name twice.
pub fn parse_set(text: &str) -> Result<Vec<ScheduleSpec>, Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum SetFile {
        List(Vec<ScheduleSpec>),
        Wrapped { schedules: Vec<ScheduleSpec> },
    }
    let set = match serde_json::from_str::<SetFile>(text) {
        Ok(SetFile::List(l) | SetFile::Wrapped { schedules: l }) => l,
        Err(e) => {
            return Err(Error::Invalid {
                name: String::new(),
                reason: format!(
                    "not a schedule set (a JSON array of schedules, or {{\"schedules\": [...]}}): {e}"
                ),
            });
        }
    };
    validate_set(&set)?;
    Ok(set)
}

fn validate_set(set: &[ScheduleSpec]) -> Result<(), Error> {
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

type Raw = (String, String, Option<String>, Option<i64>, Option<i64>);

fn raw(r: &rusqlite::Row<'_>) -> rusqlite::Result<Raw> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

fn decode((id, status, spec, next, last): Raw) -> Result<Schedule, Error> {
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
        next_fire_at: next,
        last_fire_at: last,
    })
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
    row.map(decode).transpose()
}

fn to_json(spec: &ScheduleSpec) -> String {
    serde_json::to_string(spec).unwrap_or_else(|_| "null".to_owned())
}

fn insert(tx: &Connection, spec: &ScheduleSpec, now: Micros, actor: &Actor) -> Result<(), Error> {
    let id = format!("sch-{}-{now}", spec.name);
    let status = if spec.enabled { "enabled" } else { "disabled" };
    let next = spec.first_due(now)?;
    tx.execute(
        "INSERT INTO schedules (id, status, status_reason_code, created_at, updated_at, name, spec_json, next_fire_at)
         VALUES (?1, ?2, 'schedule_definition.created.observed', ?3, ?3, ?4, ?5, ?6)",
        params![id, status, now, spec.name, to_json(spec), next],
    )?;
    history(
        tx,
        &id,
        None,
        status,
        "schedule_definition.created.observed",
        actor,
        now,
    )
}

fn delete_in(tx: &Connection, s: &Schedule, actor: &Actor, now: Micros) -> Result<(), Error> {
    move_status(
        tx,
        &s.id,
        &s.status,
        "deleted",
        "schedule_definition.deleted.observed",
        actor,
        now,
    )?;
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
