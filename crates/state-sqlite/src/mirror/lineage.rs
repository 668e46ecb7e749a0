//! Lineage links between mirrored sessions.
//!
//! A continued conversation (after compaction, `--resume`, or a fresh window
//! picking up an earlier thread) starts a new transcript whose first event
//! points, through `parentUuid`, at an event of the session it continues.
//! When that event was mirrored into a different session, the child's
//! node_metadata gets `{"lineage": {"parent_session_id", "parent_event_uuid"}}`.

use rusqlite::{OptionalExtension, params};
use serde_json::{Map, Value, json};
use transcript_mirror::LineageOutcome;

use crate::error::StoreError;
use crate::service::Store;
use crate::time::next_version;

impl Store {
    /// Links `child` to the session holding the event `parent_event_uuid`.
    /// Writes only node_metadata's `lineage` key (other keys are kept) and
    /// never moves `last_message_at`; linking again finds the same value and
    /// writes nothing.
    pub fn link_session_lineage(
        &self,
        child: &str,
        parent_event_uuid: &str,
    ) -> Result<LineageOutcome, StoreError> {
        self.with_tx(|tx, _| {
            let row: Option<(Option<String>, i64)> = tx
                .prepare_cached("SELECT node_metadata, updated_at FROM sessions WHERE id = ?1")?
                .query_row([child], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            let Some((meta, version)) = row else {
                return Ok((LineageOutcome::NoChild, None));
            };
            let holders: Vec<String> = tx
                .prepare_cached(
                    "SELECT session_id FROM mirror_events WHERE event_uuid = ?1 ORDER BY session_id",
                )?
                .query_map([parent_event_uuid], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            if holders.iter().any(|h| h == child) {
                return Ok((LineageOutcome::SameSession, None));
            }
            let Some(parent) = holders.into_iter().next() else {
                return Ok((LineageOutcome::Unresolved, None));
            };
            let mut object = match meta.as_deref().map(serde_json::from_str::<Value>) {
                Some(Ok(Value::Object(m))) => m,
                _ => Map::new(),
            };
            let link = json!({"parent_session_id": parent, "parent_event_uuid": parent_event_uuid});
            let written = object.get("lineage") != Some(&link);
            if written {
                object.insert("lineage".into(), link);
                tx.prepare_cached(
                    "UPDATE sessions SET node_metadata = ?2, updated_at = ?3 WHERE id = ?1",
                )?
                .execute(params![
                    child,
                    Value::Object(object).to_string(),
                    next_version(version)
                ])?;
            }
            Ok((
                LineageOutcome::Linked {
                    parent_session_id: parent,
                    written,
                },
                None,
            ))
        })
    }
}
