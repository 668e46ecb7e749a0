//! [`StateReader`] and [`SessionRetention`] for the SQLite store: the
//! engines (read-only or not) and [`Store`] read through the
//! [`crate::overview`] queries on one pooled connection per call.

use lifecycle_core::{
    Actor, IdMatch, MessageRow, OpenEntity, PruneReport, RowCounts, SessionActivity, SessionFilter,
    SessionRetention, SessionRow, StateReader, TransitionRecord,
};
use rusqlite::Connection;

use crate::engine::{Engine, ReadOnlyEngine};
use crate::error::StoreError;
use crate::migrate::schema_version;
use crate::overview;
use crate::service::Store;

fn match_id(conn: &Connection, entity_type: &str, prefix: &str) -> Result<IdMatch, StoreError> {
    match overview::resolve_id(conn, entity_type, prefix) {
        Ok(id) => Ok(IdMatch::One(id)),
        Err(StoreError::NoSuchId { .. }) => Ok(IdMatch::None),
        Err(StoreError::AmbiguousId { candidates, .. }) => Ok(IdMatch::Several(candidates)),
        Err(e) => Err(e),
    }
}

fn session_activity(conn: &Connection) -> Result<Vec<SessionActivity>, StoreError> {
    // From migration 0002 on, a session carries its leg's spawn record;
    // older files only have the agent pid. The owner's host came with 0008.
    let host: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_table_info('sessions') WHERE name = 'owner_host_id')",
        [],
        |r| r.get(0),
    )?;
    let host = if host { "s.owner_host_id" } else { "NULL" };
    let sql = if schema_version(conn)? >= 2 {
        format!(
            "SELECT s.id, s.status, s.kind, COALESCE(s.leg_pid, s.pid), s.leg_create_time,
                    COALESCE(s.last_message_at, s.created_at),
                    (SELECT count(*) FROM messages m WHERE m.session_id = s.id), {host}
             FROM sessions s ORDER BY s.created_at, s.id"
        )
    } else {
        "SELECT s.id, s.status, s.kind, s.pid, NULL,
                COALESCE(s.last_message_at, s.created_at),
                (SELECT count(*) FROM messages m WHERE m.session_id = s.id), NULL
         FROM sessions s ORDER BY s.created_at, s.id"
            .to_owned()
    };
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map([], |r| {
        let mut a = SessionActivity::new(r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(5)?);
        a.kind = r.get(2)?;
        a.pid = r.get(3)?;
        a.leg_create_time = r.get(4)?;
        a.messages = r.get(6)?;
        a.owner_host_id = r.get(7)?;
        Ok(a)
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn row_counts(conn: &Connection) -> Result<RowCounts, StoreError> {
    let stats = overview::stats(conn)?;
    Ok(RowCounts::new(
        stats.schema_version,
        stats.tables,
        stats.sessions_by_status,
    ))
}

/// Implements [`StateReader`] for a type with `conn()`.
macro_rules! reader {
    ($ty:ty, $conn:expr) => {
        impl StateReader for $ty {
            type Error = StoreError;

            fn sessions(&self, filter: &SessionFilter) -> Result<Vec<SessionRow>, StoreError> {
                overview::sessions(&*$conn(self)?, filter)
            }

            fn session_row(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
                overview::session(&*$conn(self)?, id)
            }

            fn match_id(&self, entity_type: &str, prefix: &str) -> Result<IdMatch, StoreError> {
                match_id(&*$conn(self)?, entity_type, prefix)
            }

            fn messages(
                &self,
                session_id: &str,
                after_seq: i64,
                limit: u32,
            ) -> Result<Vec<MessageRow>, StoreError> {
                overview::messages(&*$conn(self)?, session_id, after_seq, limit)
            }

            fn open_entities(&self, entity_type: &str) -> Result<Vec<OpenEntity>, StoreError> {
                overview::open_entities(&*$conn(self)?, entity_type)
            }

            fn sessions_of_invocation(&self, invocation: &str) -> Result<Vec<String>, StoreError> {
                overview::sessions_of_invocation(&*$conn(self)?, invocation)
            }

            fn transitions(
                &self,
                entity_type: &str,
                entity_id: &str,
            ) -> Result<Vec<TransitionRecord>, StoreError> {
                crate::query::history(&*$conn(self)?, entity_type, entity_id)
            }

            fn session_activity(&self) -> Result<Vec<SessionActivity>, StoreError> {
                session_activity(&*$conn(self)?)
            }

            fn row_counts(&self) -> Result<RowCounts, StoreError> {
                row_counts(&*$conn(self)?)
            }
        }
    };
}

reader!(ReadOnlyEngine, ReadOnlyEngine::conn);
reader!(Engine, Engine::conn);
reader!(Store, |s: &Store| s.engine().conn());

impl SessionRetention for Store {
    fn prune_sessions(
        &self,
        before: i64,
        dry_run: bool,
        actor: &Actor,
    ) -> Result<PruneReport, StoreError> {
        let mut conn = self.engine().conn()?;
        overview::prune(
            &mut conn,
            before,
            dry_run,
            (actor.kind.as_str(), actor.id.as_str()),
        )
    }
}
