//! Delivery acknowledgements: a named consumer's reconciliation of terminal
//! transitions. The push path (terminal sinks) records nothing here; only a
//! consumer that delivered an event writes its row. Nothing in this module
//! ever expires, deletes or auto-acknowledges an event.

use std::collections::BTreeSet;

use lifecycle_core::{EXECUTION_ENTITIES, PolicyRegistry, TransitionRecord};
use rusqlite::{Connection, params, params_from_iter};

use crate::error::StoreError;
use crate::query::{HISTORY_COLUMNS, record};
use crate::time::now_micros;

/// The partial index over terminal moves of execution entities (migration
/// 0009). SQLite uses a partial index only for a query that repeats its
/// `WHERE` term, so [`undelivered`] adds that term (see [`terminal_term`]).
pub const TERMINAL_INDEX: &str = "status_transitions_terminal";

/// The literal term `st.to_status IN ('a', 'b', ...)` over the terminal
/// statuses of every execution entity in `registry`, sorted and without
/// repeats: with the default policies, the very predicate of
/// [`TERMINAL_INDEX`], so the planner may use that index. It is implied by
/// the per-entity clauses of the query, so it never changes a result; with
/// other policies it only makes the index unusable. The statuses are
/// policy vocabulary, never input, and are inlined only when each is a
/// plain lowercase identifier (otherwise no term, and no index).
fn terminal_term(registry: &PolicyRegistry) -> Option<String> {
    let union: BTreeSet<&str> = EXECUTION_ENTITIES
        .iter()
        .filter_map(|entity| registry.get(entity).ok())
        .flat_map(|policy| policy.terminal_statuses())
        .collect();
    let plain = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    if union.is_empty() || !union.iter().all(|s| plain(s)) {
        return None;
    }
    let literals: Vec<String> = union.iter().map(|s| format!("'{s}'")).collect();
    Some(format!("st.to_status IN ({})", literals.join(", ")))
}

/// The SQL of [`undelivered`] for `registry` and its bound values (the
/// consumer first), or `None` when no execution entity has a terminal
/// status.
fn undelivered_sql(registry: &PolicyRegistry, consumer: &str) -> Option<(String, Vec<String>)> {
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
        return None;
    }
    let columns = HISTORY_COLUMNS
        .split(", ")
        .map(|c| format!("st.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let indexed = terminal_term(registry).map_or_else(String::new, |t| format!("{t} AND "));
    let sql = format!(
        "SELECT {columns} FROM status_transitions st
         WHERE {indexed}({})
           AND (st.from_status IS NULL OR st.from_status != st.to_status)
           AND NOT EXISTS (SELECT 1 FROM transition_deliveries d
                           WHERE d.consumer = ?1 AND d.transition_id = st.id)
         ORDER BY st.id",
        clauses.join(" OR ")
    );
    Some((sql, values))
}

/// Terminal transitions on execution entities with no delivery row for
/// `consumer` (a read-only anti-join; no age filter on either side), oldest
/// first.
pub fn undelivered(
    conn: &Connection,
    registry: &PolicyRegistry,
    consumer: &str,
) -> Result<Vec<TransitionRecord>, StoreError> {
    let Some((sql, values)) = undelivered_sql(registry, consumer) else {
        return Ok(Vec::new());
    };
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(params_from_iter(values), record)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The `EXPLAIN QUERY PLAN` detail lines of [`undelivered`]'s query for
/// `registry`, in plan order (empty when it would run no query): lets a
/// test check that the query searches [`TERMINAL_INDEX`].
pub fn undelivered_plan(
    conn: &Connection,
    registry: &PolicyRegistry,
) -> Result<Vec<String>, StoreError> {
    let Some((sql, values)) = undelivered_sql(registry, "") else {
        return Ok(Vec::new());
    };
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
    let rows = stmt.query_map(params_from_iter(values), |r| r.get::<_, String>(3))?;
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
