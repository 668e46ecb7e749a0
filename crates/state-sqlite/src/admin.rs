//! Appending audit rows to `admin_events` for decisions made outside the
//! transition service (an MCP tool refused at registration, say).
//!
//! The transition service writes its own override and rejection rows inside
//! its transaction; this is the one entry point for everyone else, so the
//! column list lives in one place.

use rusqlite::{Connection, params};
use serde_json::Value;

use crate::error::StoreError;
use crate::time::now_micros;

/// One audit row to append. `detail` is stored as JSON text.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAdminEvent<'a> {
    /// What happened, e.g. `mcp.tool_denied`.
    pub kind: &'a str,
    /// The kind of thing it happened to, e.g. `mcp_tool`.
    pub entity_type: Option<&'a str>,
    /// Which one.
    pub entity_id: Option<&'a str>,
    /// Who decided (`system`, `operator`, ...).
    pub actor_type: &'a str,
    /// Their id.
    pub actor_id: &'a str,
    /// Structured details.
    pub detail: &'a Value,
}

/// Appends `event` with the current time; returns the row id.
///
/// # Errors
///
/// [`StoreError`] when SQLite refuses the insert.
pub fn record_admin_event(conn: &Connection, event: &NewAdminEvent<'_>) -> Result<i64, StoreError> {
    conn.execute(
        "INSERT INTO admin_events (kind, entity_type, entity_id, actor_type, actor_id, detail_json, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            event.kind,
            event.entity_type,
            event.entity_id,
            event.actor_type,
            event.actor_id,
            event.detail.to_string(),
            now_micros()
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// The `admin_events` rows of one kind, oldest first, as
/// `(entity_id, detail)` pairs.
///
/// # Errors
///
/// [`StoreError`] when SQLite refuses the query or a row's detail is not
/// JSON.
pub fn admin_events_of_kind(
    conn: &Connection,
    kind: &str,
) -> Result<Vec<(Option<String>, Value)>, StoreError> {
    let mut stmt = conn
        .prepare("SELECT entity_id, detail_json FROM admin_events WHERE kind = ?1 ORDER BY id")?;
    let rows = stmt.query_map([kind], |r| {
        Ok((r.get::<_, Option<String>>(0)?, r.get::<_, String>(1)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (entity_id, detail) = row?;
        let detail = serde_json::from_str(&detail).unwrap_or(Value::String(detail));
        out.push((entity_id, detail));
    }
    Ok(out)
}
