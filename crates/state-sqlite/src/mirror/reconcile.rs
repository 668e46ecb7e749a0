//! Live/idle status of mirrored sessions, judged from `last_message_at`.
//!
//! A mirror session's `completed` means dormant, not finished: when its
//! transcript resumes, the next reconcile brings it back to `running`.
//! Liveness is read from `last_message_at` (the newest mirrored message's
//! time) and never from `updated_at`, which every status write bumps: keyed
//! off it, a session just marked completed would read as fresh and flip
//! back to running on the next pass.

use rusqlite::{OptionalExtension, params};
use transcript_mirror::{
    MIRROR_KIND, ReconcileAction, ReconcilePlan, reconcile_applied, reconcile_plan,
};

use crate::error::StoreError;
use crate::service::Store;

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
        let cmd = match reconcile_plan(
            session_id,
            &status,
            version,
            last_message_at,
            now,
            live_window,
        ) {
            ReconcilePlan::Done(action) => return Ok(action),
            ReconcilePlan::Transition(cmd) => cmd,
        };
        let out = self.transition(&cmd)?;
        Ok(match out.result {
            lifecycle_core::OutcomeKind::Applied => reconcile_applied(&cmd, &status),
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
