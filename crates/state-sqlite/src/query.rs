//! Read queries shared by the store and the read-only tools.

use lifecycle_core::TransitionRecord;
use rusqlite::Connection;

use crate::error::StoreError;

pub(crate) const HISTORY_COLUMNS: &str = "id, entity_type, entity_id, from_status, to_status, reason_code, \
     reason_summary, actor_type, actor_id, override_json IS NOT NULL, created_at";

pub(crate) fn record(r: &rusqlite::Row<'_>) -> rusqlite::Result<TransitionRecord> {
    Ok(TransitionRecord {
        id: r.get(0)?,
        entity_type: r.get(1)?,
        entity_id: r.get(2)?,
        from_status: r.get(3)?,
        to_status: r.get(4)?,
        reason_code: r.get(5)?,
        reason_summary: r.get(6)?,
        actor_type: r.get(7)?,
        actor_id: r.get(8)?,
        overridden: r.get(9)?,
        created_at: r.get(10)?,
    })
}

/// An entity's history, oldest first, on any connection (read-only ones
/// included).
pub fn history(
    conn: &Connection,
    entity_type: &str,
    entity_id: &str,
) -> Result<Vec<TransitionRecord>, StoreError> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {HISTORY_COLUMNS} FROM status_transitions WHERE entity_type = ?1 AND entity_id = ?2 ORDER BY id"
    ))?;
    let rows = stmt.query_map([entity_type, entity_id], record)?;
    Ok(rows.collect::<Result<_, _>>()?)
}
