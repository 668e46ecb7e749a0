//! Delivery acknowledgements: a named consumer's reconciliation of terminal
//! transitions. The push path (terminal sinks) records nothing here; only a
//! consumer that delivered an event writes its row. Nothing in this module
//! ever expires, deletes or auto-acknowledges an event.

use lifecycle_core::{EXECUTION_ENTITIES, PolicyRegistry, TransitionRecord};
use rusqlite::{Connection, params, params_from_iter};

use crate::error::StoreError;
use crate::query::{HISTORY_COLUMNS, record};
use crate::time::now_micros;

/// Terminal transitions on execution entities with no delivery row for
/// `consumer` (a read-only anti-join; no age filter on either side), oldest
/// first.
pub fn undelivered(
    conn: &Connection,
    registry: &PolicyRegistry,
    consumer: &str,
) -> Result<Vec<TransitionRecord>, StoreError> {
    let mut clauses = Vec::new();
    let mut values: Vec<String> = vec![consumer.to_owned()];
    for entity in EXECUTION_ENTITIES {
        let Ok(policy) = registry.get(entity) else {
            continue;
        };
        let terminal: Vec<&str> = policy.terminal_statuses().collect();
        if terminal.is_empty() {
            continue;
        }
        values.push(entity.to_owned());
        let mut clause = format!("(st.entity_type = ?{} AND st.to_status IN (", values.len());
        for (i, status) in terminal.iter().enumerate() {
            values.push((*status).to_owned());
            if i > 0 {
                clause.push_str(", ");
            }
            clause.push_str(&format!("?{}", values.len()));
        }
        clause.push_str("))");
        clauses.push(clause);
    }
    if clauses.is_empty() {
        return Ok(Vec::new());
    }
    let columns = HISTORY_COLUMNS
        .split(", ")
        .map(|c| format!("st.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT {columns} FROM status_transitions st
         WHERE ({})
           AND (st.from_status IS NULL OR st.from_status != st.to_status)
           AND NOT EXISTS (SELECT 1 FROM transition_deliveries d
                           WHERE d.consumer = ?1 AND d.transition_id = st.id)
         ORDER BY st.id",
        clauses.join(" OR ")
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(params_from_iter(values), record)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Records that `consumer` delivered `transition_id`. Idempotent.
pub fn record_delivery(
    conn: &Connection,
    consumer: &str,
    transition_id: i64,
) -> Result<(), StoreError> {
    conn.execute(
        "INSERT OR IGNORE INTO transition_deliveries (consumer, transition_id, delivered_at) VALUES (?1, ?2, ?3)",
        params![consumer, transition_id, now_micros()],
    )?;
    Ok(())
}
