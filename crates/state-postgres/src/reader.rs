//! [`StateReader`] and [`SessionRetention`] for the PostgreSQL store: the
//! read-side tools (session listings and messages, health, row counts,
//! what is in flight, prefix resolution) and the retention prune, on the
//! same rows the recorder writes. A store over a read-only engine serves
//! every read.

use lifecycle_core::{
    Actor, COUNTED_TABLES, ID_CANDIDATES, IdMatch, MessageRow, OpenEntity, PruneReport, RowCounts,
    SessionActivity, SessionFilter, SessionRetention, SessionRow, StateReader, TransitionRecord,
    terminal_session_statuses,
};
use postgres::types::Type;
use postgres::{GenericClient, Row, Transaction};
use serde_json::json;

use crate::error::PgStoreError;
use crate::migrate::schema_version;
use crate::service::{PgStore, Step, admin_event};
use crate::sql::Sql;

const SESSION_SELECT: &str = "SELECT s.id, s.status, s.status_reason_code, s.status_reason_summary, s.kind, \
     s.provider, s.model, s.cwd, s.pid, s.owner_pid, s.created_at, s.updated_at, s.ended_at, \
     s.last_message_at, s.input_tokens, s.output_tokens, s.total_cost_usd, s.num_turns, \
     s.duration_ms, (SELECT count(*) FROM messages m WHERE m.session_id = s.id) FROM sessions s";

/// Per-session rows (by `session_id`) a prune removes with its sessions:
/// the transcript mirror's branches and event marks (migration 0004) and
/// session controls (deleted only where the table exists).
const PER_SESSION: &[&str] = &["branches", "mirror_events", "session_controls"];

fn session_row(r: &Row) -> Result<SessionRow, PgStoreError> {
    let mut row = SessionRow::new(
        r.try_get::<_, String>(0)?,
        r.try_get::<_, String>(1)?,
        r.try_get(10)?,
    );
    row.reason_code = r.try_get(2)?;
    row.reason_summary = r.try_get(3)?;
    row.kind = r.try_get(4)?;
    row.provider = r.try_get(5)?;
    row.model = r.try_get(6)?;
    row.cwd = r.try_get(7)?;
    row.pid = r.try_get(8)?;
    row.owner_pid = r.try_get(9)?;
    row.updated_at = r.try_get(11)?;
    row.ended_at = r.try_get(12)?;
    row.last_message_at = r.try_get(13)?;
    row.input_tokens = r.try_get(14)?;
    row.output_tokens = r.try_get(15)?;
    row.total_cost_usd = r.try_get(16)?;
    row.num_turns = r.try_get(17)?;
    row.duration_ms = r.try_get(18)?;
    row.messages = r.try_get(19)?;
    Ok(row)
}

/// Whether `table` exists in the connection's schema.
fn has_table(client: &mut impl GenericClient, table: &str) -> Result<bool, PgStoreError> {
    Ok(client
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])?
        .try_get(0)?)
}

impl PgStore {
    /// The schema's version (the highest applied migration).
    pub fn schema_version(&self) -> Result<u32, PgStoreError> {
        let mut conn = self.engine().conn()?;
        schema_version(&mut conn, self.engine().schema())
    }

    /// The server's version string (`SHOW server_version`).
    pub fn server_version(&self) -> Result<String, PgStoreError> {
        let mut conn = self.engine().conn()?;
        Ok(conn.query_one("SHOW server_version", &[])?.try_get(0)?)
    }

    /// The bytes the schema's tables take on the server, indexes and
    /// TOAST included.
    pub fn schema_bytes(&self) -> Result<i64, PgStoreError> {
        let mut conn = self.engine().conn()?;
        let row = conn.query_one(
            "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relkind = 'r'",
            &[&self.engine().schema()],
        )?;
        Ok(row.try_get(0)?)
    }

    /// `VACUUM (ANALYZE)` on every table of the schema: the server reclaims
    /// dead rows and refreshes the planner's statistics. Returns the
    /// tables vacuumed.
    pub fn vacuum_analyze(&self) -> Result<Vec<String>, PgStoreError> {
        let mut conn = self.engine().conn()?;
        let tables: Vec<String> = conn
            .query(
                "SELECT c.relname::text FROM pg_class c
                 JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY 1",
                &[&self.engine().schema()],
            )?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?;
        for t in &tables {
            // The names come from the catalogue of a checked schema name;
            // quoted all the same. VACUUM cannot run inside a transaction
            // block, so each is its own statement.
            conn.batch_execute(&format!(
                "VACUUM (ANALYZE) {}.\"{}\"",
                self.engine().schema(),
                t.replace('"', "\"\"")
            ))?;
        }
        Ok(tables)
    }
}

impl StateReader for PgStore {
    type Error = PgStoreError;

    fn sessions(&self, filter: &SessionFilter) -> Result<Vec<SessionRow>, PgStoreError> {
        let mut sql = Sql::new(SESSION_SELECT);
        let mut clauses = Vec::new();
        if let Some(status) = &filter.status {
            let p = sql.bind(status.clone(), Type::TEXT);
            clauses.push(format!("s.status = {p}"));
        }
        if let Some(since) = filter.since {
            let p = sql.bind(since, Type::INT8);
            clauses.push(format!("s.created_at >= {p}"));
        }
        if filter.open_only {
            let p = sql.bind(terminal_session_statuses(), Type::TEXT_ARRAY);
            clauses.push(format!("NOT (s.status = ANY({p}))"));
        }
        if !clauses.is_empty() {
            sql.push(" WHERE ");
            sql.push(&clauses.join(" AND "));
        }
        sql.push(" ORDER BY s.created_at DESC, s.id COLLATE \"C\" DESC");
        if let Some(limit) = filter.limit {
            let p = sql.bind(i64::from(limit), Type::INT8);
            sql.push(&format!(" LIMIT {p}"));
        }
        let mut conn = self.engine().conn()?;
        sql.query_client(&mut *conn)?
            .iter()
            .map(session_row)
            .collect()
    }

    fn session_row(&self, id: &str) -> Result<Option<SessionRow>, PgStoreError> {
        let mut conn = self.engine().conn()?;
        let rows = conn.query(&format!("{SESSION_SELECT} WHERE s.id = $1"), &[&id])?;
        rows.first().map(session_row).transpose()
    }

    fn match_id(&self, entity_type: &str, prefix: &str) -> Result<IdMatch, PgStoreError> {
        let table = self.policy(entity_type)?.table().to_owned();
        let mut conn = self.engine().conn()?;
        let exact = conn
            .query_opt(&format!("SELECT 1 FROM {table} WHERE id = $1"), &[&prefix])?
            .is_some();
        if exact {
            return Ok(IdMatch::One(prefix.to_owned()));
        }
        let limit = i64::try_from(ID_CANDIDATES).unwrap_or(i64::MAX);
        let ids: Vec<String> = conn
            .query(
                &format!(
                    "SELECT id FROM {table} WHERE starts_with(id, $1)
                     ORDER BY id COLLATE \"C\" LIMIT $2"
                ),
                &[&prefix, &limit],
            )?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?;
        Ok(IdMatch::from_candidates(false, prefix, ids))
    }

    fn messages(
        &self,
        session_id: &str,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<MessageRow>, PgStoreError> {
        let mut conn = self.engine().conn()?;
        let rows = conn.query(
            "SELECT seq, id, branch_id, role, content, created_at FROM messages
             WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
            &[&session_id, &after_seq, &i64::from(limit)],
        )?;
        rows.iter()
            .map(|r| {
                let mut m = MessageRow::new(
                    r.try_get(0)?,
                    r.try_get::<_, String>(1)?,
                    r.try_get::<_, String>(3)?,
                    r.try_get::<_, String>(4)?,
                    r.try_get(5)?,
                );
                m.branch_id = r.try_get(2)?;
                Ok(m)
            })
            .collect()
    }

    fn open_entities(&self, entity_type: &str) -> Result<Vec<OpenEntity>, PgStoreError> {
        let policy = self.policy(entity_type)?;
        let terminal: Vec<String> = policy.terminal_statuses().map(str::to_owned).collect();
        let mut conn = self.engine().conn()?;
        let rows = conn.query(
            &format!(
                "SELECT id, status, updated_at FROM {} WHERE NOT (status = ANY($1))
                 ORDER BY updated_at, id COLLATE \"C\"",
                policy.table()
            ),
            &[&terminal],
        )?;
        rows.iter()
            .map(|r| {
                Ok(OpenEntity::new(
                    policy.entity_type(),
                    r.try_get::<_, String>(0)?,
                    r.try_get::<_, String>(1)?,
                    r.try_get(2)?,
                ))
            })
            .collect()
    }

    fn sessions_of_invocation(&self, invocation: &str) -> Result<Vec<String>, PgStoreError> {
        let mut conn = self.engine().conn()?;
        let rows = conn.query(
            "SELECT id FROM sessions WHERE invocation_id = $1 ORDER BY created_at, id COLLATE \"C\"",
            &[&invocation],
        )?;
        rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
    }

    fn transitions(
        &self,
        entity_type: &str,
        entity_id: &str,
    ) -> Result<Vec<TransitionRecord>, PgStoreError> {
        self.history(entity_type, entity_id)
    }

    fn session_activity(&self) -> Result<Vec<SessionActivity>, PgStoreError> {
        let mut conn = self.engine().conn()?;
        let rows = conn.query(
            "SELECT s.id, s.status, s.kind, COALESCE(s.leg_pid, s.pid), s.leg_create_time,
                    COALESCE(s.last_message_at, s.created_at),
                    (SELECT count(*) FROM messages m WHERE m.session_id = s.id),
                    s.owner_host_id
             FROM sessions s ORDER BY s.created_at, s.id COLLATE \"C\"",
            &[],
        )?;
        rows.iter()
            .map(|r| {
                let mut a = SessionActivity::new(
                    r.try_get::<_, String>(0)?,
                    r.try_get::<_, String>(1)?,
                    r.try_get(5)?,
                );
                a.kind = r.try_get(2)?;
                a.pid = r.try_get(3)?;
                a.leg_create_time = r.try_get(4)?;
                a.messages = r.try_get(6)?;
                a.owner_host_id = r.try_get(7)?;
                Ok(a)
            })
            .collect()
    }

    fn row_counts(&self) -> Result<RowCounts, PgStoreError> {
        let mut conn = self.engine().conn()?;
        let version = schema_version(&mut conn, self.engine().schema())?;
        let mut tables = Vec::new();
        for table in COUNTED_TABLES {
            if has_table(&mut *conn, table)? {
                let n: i64 = conn
                    .query_one(&format!("SELECT count(*) FROM {table}"), &[])?
                    .try_get(0)?;
                tables.push(((*table).to_owned(), n));
            }
        }
        let by_status = conn
            .query(
                "SELECT status, count(*) FROM sessions GROUP BY status ORDER BY status COLLATE \"C\"",
                &[],
            )?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<_, PgStoreError>>()?;
        Ok(RowCounts::new(version, tables, by_status))
    }
}

impl SessionRetention for PgStore {
    fn prune_sessions(
        &self,
        before: i64,
        dry_run: bool,
        actor: &Actor,
    ) -> Result<PruneReport, PgStoreError> {
        let terminal = terminal_session_statuses();
        self.run(("session", "*prune*"), |tx: &mut Transaction<'_>, _| {
            // The rows are locked to the commit: a session reopened (moved
            // out of its terminal status) meanwhile waits, and is then no
            // longer in the set of a later prune.
            let ids: Vec<String> = tx
                .query(
                    "SELECT id FROM sessions
                     WHERE COALESCE(ended_at, updated_at) < $1 AND status = ANY($2)
                     ORDER BY id COLLATE \"C\" FOR UPDATE",
                    &[&before, &terminal],
                )?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<_, _>>()?;
            let messages: i64 = tx
                .query_one(
                    "SELECT count(*) FROM messages WHERE session_id = ANY($1)",
                    &[&ids],
                )?
                .try_get(0)?;
            if !dry_run {
                // A session's progression (its ordered message ids) goes
                // with it, read off the rows before they are deleted.
                if has_table(tx, "progressions")? {
                    tx.execute(
                        "DELETE FROM progression_items WHERE progression_id IN
                            (SELECT progression_id FROM sessions WHERE id = ANY($1))",
                        &[&ids],
                    )?;
                    tx.execute(
                        "DELETE FROM progressions WHERE id IN
                            (SELECT progression_id FROM sessions WHERE id = ANY($1))",
                        &[&ids],
                    )?;
                }
                tx.execute("DELETE FROM messages WHERE session_id = ANY($1)", &[&ids])?;
                for table in PER_SESSION {
                    if has_table(tx, table)? {
                        tx.execute(
                            &format!("DELETE FROM {table} WHERE session_id = ANY($1)"),
                            &[&ids],
                        )?;
                    }
                }
                tx.execute("DELETE FROM sessions WHERE id = ANY($1)", &[&ids])?;
            }
            let report = PruneReport::new(
                u64::try_from(ids.len()).unwrap_or(0),
                u64::try_from(messages).unwrap_or(0),
                dry_run,
            );
            admin_event(
                tx,
                "state.prune",
                Some("session"),
                None,
                actor,
                &json!({"before": before, "dry_run": dry_run,
                    "sessions": report.sessions, "messages": report.messages}),
            )?;
            Ok(Step::Commit(report, None))
        })
    }
}
