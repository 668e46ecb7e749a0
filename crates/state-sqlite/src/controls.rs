//! Session controls: operator requests (pause, resume, message) applied by a
//! poller with verb-classed ordering.
//!
//! - pause and resume are idempotent: applied first, stamped `applied`
//!   after; a crash in between re-applies harmlessly.
//! - message is not idempotent: stamped `applying` (committed) before the
//!   injection, finalised after; a crash leaves an `applying` row that the
//!   poller reports and never injects again.
//! - stop is reserved by the schema; the poller rejects it as unsupported
//!   and [`ControlVerb`] offers no way to enqueue it.

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::time::now_micros;

/// Verbs a caller may enqueue. `stop` is deliberately absent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "verb", content = "payload")]
pub enum ControlVerb {
    /// Pause the session.
    Pause,
    /// Resume it.
    Resume,
    /// Inject a message.
    Message(String),
}

/// Applies controls to a live session.
pub trait ControlApplier {
    /// Pauses (idempotent).
    fn pause(&mut self, session_id: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
    /// Resumes (idempotent).
    fn resume(&mut self, session_id: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
    /// Injects a message (not idempotent).
    fn inject(
        &mut self,
        session_id: &str,
        message: &str,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

/// What one poll did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollReport {
    /// Control ids applied and stamped.
    pub applied: Vec<i64>,
    /// Control ids rejected (unsupported verbs).
    pub rejected: Vec<i64>,
    /// Message controls left `applying` by an earlier crash: never
    /// re-injected, reported for an operator.
    pub stuck_applying: Vec<i64>,
}

/// Enqueues a control; returns its id.
pub fn enqueue_control(
    conn: &Connection,
    session_id: &str,
    verb: &ControlVerb,
) -> Result<i64, StoreError> {
    let (name, payload) = match verb {
        ControlVerb::Pause => ("pause", None),
        ControlVerb::Resume => ("resume", None),
        ControlVerb::Message(m) => ("message", Some(m.as_str())),
    };
    let now = now_micros();
    conn.execute(
        "INSERT INTO session_controls (session_id, verb, payload, state, created_at, updated_at)
         VALUES (?1, ?2, ?3, 'pending', ?4, ?4)",
        params![session_id, name, payload, now],
    )?;
    Ok(conn.last_insert_rowid())
}

fn stamp(conn: &Connection, id: i64, state: &str, detail: Option<&str>) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE session_controls SET state = ?2, detail = ?3, updated_at = ?4 WHERE id = ?1",
        params![id, state, detail, now_micros()],
    )?;
    Ok(())
}

/// Applies every pending control of `session_id` in order. Stops at the
/// first applier failure and returns it (the failed control stays pending,
/// or `applying` for a message).
pub fn poll_controls(
    conn: &Connection,
    session_id: &str,
    applier: &mut dyn ControlApplier,
) -> Result<PollReport, StoreError> {
    let rows: Vec<(i64, String, Option<String>, String)> = {
        let mut stmt = conn.prepare(
            "SELECT id, verb, payload, state FROM session_controls
             WHERE session_id = ?1 AND state IN ('pending', 'applying') ORDER BY id",
        )?;
        let rows = stmt.query_map([session_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
        rows.collect::<Result<_, _>>()?
    };
    let mut report = PollReport::default();
    for (id, verb, payload, state) in rows {
        if state == "applying" {
            report.stuck_applying.push(id);
            continue;
        }
        let failed = |source| StoreError::ControlFailed { id, source };
        match verb.as_str() {
            "pause" => {
                applier.pause(session_id).map_err(failed)?;
                stamp(conn, id, "applied", None)?;
            }
            "resume" => {
                applier.resume(session_id).map_err(failed)?;
                stamp(conn, id, "applied", None)?;
            }
            "message" => {
                stamp(conn, id, "applying", None)?;
                applier
                    .inject(session_id, payload.as_deref().unwrap_or_default())
                    .map_err(failed)?;
                stamp(conn, id, "applied", None)?;
            }
            _ => {
                stamp(conn, id, "rejected", Some("unsupported control verb"))?;
                report.rejected.push(id);
                continue;
            }
        }
        report.applied.push(id);
    }
    Ok(report)
}
