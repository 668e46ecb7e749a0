//! Live/idle status of mirrored sessions, judged from `last_message_at`.
//!
//! A mirror session's `completed` means dormant, not finished: when its
//! transcript resumes, the next reconcile brings it back to `running`.
//! Liveness is read from `last_message_at` (the newest mirrored message's
//! time) and never from `updated_at`, which every status write bumps: keyed
//! off it, a session just marked completed would read as fresh and flip
//! back to running on the next pass.

use lifecycle_core::{OutcomeKind, Override, Reason, TransitionCommand};
use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{MIRROR_KIND, mirror_reconciler};
use crate::error::StoreError;
use crate::service::Store;

/// The justification recorded on a reactivation override.
pub const REACTIVATION_JUSTIFICATION: &str =
    "mirror session terminal reactivation: transcript resumed within live_window";

/// What one reconcile did to a mirrored session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
#[non_exhaustive]
pub enum ReconcileAction {
    /// Nothing to do (live and running, or idle and completed).
    Unchanged,
    /// Idle and running: moved to completed.
    Completed,
    /// Live again: moved from a terminal status back to running through the
    /// audited override path.
    Reactivated {
        /// The terminal status it left.
        from: String,
    },
    /// Idle on a terminal status other than completed: left as it is.
    LeftTerminal {
        /// That status.
        status: String,
    },
    /// Another writer moved the row first; nothing written.
    Conflict,
    /// No such session, or not a mirrored one.
    NotMirrored,
}

impl Store {
    /// Reconciles one mirrored session's status with its liveness at `now`:
    /// live when its newest message is less than `live_window` old (both in
    /// microseconds). Only sessions of kind [`MIRROR_KIND`] are touched.
    pub fn reconcile_mirror_session(
        &self,
        session_id: &str,
        now: i64,
        live_window: i64,
    ) -> Result<ReconcileAction, StoreError> {
        let row: Option<(String, i64, Option<i64>, Option<String>)> = {
            let conn = self.engine().conn()?;
            conn.prepare_cached(
                "SELECT status, updated_at, last_message_at, kind FROM sessions WHERE id = ?1",
            )?
            .query_row([session_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()?
        };
        let Some((status, version, last_message_at, kind)) = row else {
            return Ok(ReconcileAction::NotMirrored);
        };
        if kind.as_deref() != Some(MIRROR_KIND) {
            return Ok(ReconcileAction::NotMirrored);
        }
        let live = last_message_at.is_some_and(|t| now.saturating_sub(t) < live_window);
        let actor = mirror_reconciler();
        let cmd = match (live, status.as_str()) {
            (true, "running") | (false, "completed") => return Ok(ReconcileAction::Unchanged),
            (false, "running") => TransitionCommand::new(
                "session",
                session_id,
                "completed",
                Reason::new("run.completed.ok").with_summary("mirror session became idle"),
                actor,
            )
            .with_patch("ended_at", Value::from(last_message_at.unwrap_or(now)))
            .with_patch("ended_at_is_approximate", Value::from(1)),
            (false, _) => return Ok(ReconcileAction::LeftTerminal { status }),
            (true, _) => TransitionCommand::new(
                "session",
                session_id,
                "running",
                Reason::new("run.started.ok").with_summary(
                    "mirror session reactivated because transcript resumed within live_window",
                ),
                actor.clone(),
            )
            .with_patch("ended_at", Value::Null)
            .with_override(Override {
                actor,
                justification: REACTIVATION_JUSTIFICATION.into(),
            }),
        };
        let to = cmd.to_status.clone();
        let out = self.transition(&cmd.expecting(status.clone()).with_version(version))?;
        Ok(match out.result {
            OutcomeKind::Applied if to == "running" => {
                ReconcileAction::Reactivated { from: status }
            }
            OutcomeKind::Applied => ReconcileAction::Completed,
            _ => ReconcileAction::Conflict,
        })
    }

    /// Mirrored sessions a reconcile pass should look at: every running one
    /// (it may have gone idle) and every one with a message inside the live
    /// window (it may have resumed).
    pub fn mirror_sessions_to_reconcile(
        &self,
        now: i64,
        live_window: i64,
    ) -> Result<Vec<String>, StoreError> {
        let conn = self.engine().conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT id FROM sessions WHERE kind = ?1 AND (status = 'running' OR last_message_at >= ?2)
             ORDER BY id",
        )?;
        let rows = stmt.query_map(params![MIRROR_KIND, now.saturating_sub(live_window)], |r| {
            r.get(0)
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
