//! `SessionRecorder` for the SQLite store: the writes live in `hooks`, the
//! session reads a runner and a sweep need live here.

use std::collections::BTreeMap;

use lifecycle_core::{
    Actor, MetadataUpdate, Outcome, SessionEnd, SessionRecorder, SessionSnapshot, SessionStart,
};
use rusqlite::{OptionalExtension, Row};
use serde_json::Value;

use crate::error::StoreError;
use crate::service::Store;
use crate::sqlval::to_json;

/// Columns a snapshot reports in their own fields, not in `columns`.
const OWN_FIELDS: &[&str] = &[
    "id",
    "status",
    "updated_at",
    "status_reason_code",
    "messages",
];

const SELECT: &str = "SELECT s.*, (SELECT count(*) FROM messages m WHERE m.session_id = s.id) AS messages FROM sessions s";

fn snapshot(row: &Row<'_>) -> rusqlite::Result<SessionSnapshot> {
    let mut columns = BTreeMap::new();
    let names: Vec<String> = row
        .as_ref()
        .column_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    for (i, name) in names.iter().enumerate() {
        if OWN_FIELDS.contains(&name.as_str()) {
            continue;
        }
        let value = to_json(row.get_ref(i)?);
        if !value.is_null() {
            columns.insert(name.clone(), value);
        }
    }
    Ok(SessionSnapshot {
        id: row.get("id")?,
        status: row.get("status")?,
        version: row.get("updated_at")?,
        reason_code: row.get("status_reason_code")?,
        columns,
        messages: u64::try_from(row.get::<_, i64>("messages")?).unwrap_or(0),
    })
}

impl Store {
    /// One session as a snapshot, or `None`.
    pub fn session(&self, session_id: &str) -> Result<Option<SessionSnapshot>, StoreError> {
        let conn = self.engine().conn()?;
        let mut stmt = conn.prepare(&format!("{SELECT} WHERE s.id = ?1"))?;
        Ok(stmt.query_row([session_id], snapshot).optional()?)
    }

    /// Every session whose status is not terminal under the session policy,
    /// oldest first.
    pub fn open_sessions(&self) -> Result<Vec<SessionSnapshot>, StoreError> {
        let policy = self.registry().get("session")?;
        let open: Vec<&str> = policy
            .statuses()
            .iter()
            .map(String::as_str)
            .filter(|s| !policy.is_terminal(s))
            .collect();
        let marks = vec!["?"; open.len()].join(", ");
        let conn = self.engine().conn()?;
        let mut stmt = conn.prepare(&format!(
            "{SELECT} WHERE s.status IN ({marks}) ORDER BY s.created_at, s.id"
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(open), snapshot)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The ids of sessions starting with `prefix`, sorted, at most `limit`.
    pub fn session_ids_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let conn = self.engine().conn()?;
        let mut stmt = conn.prepare(
            "SELECT id FROM sessions WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id LIMIT ?2",
        )?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt.query_map(rusqlite::params![prefix, limit], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

impl SessionRecorder for Store {
    fn persist_session_start(
        &self,
        start: &SessionStart,
        actor: &Actor,
    ) -> Result<Outcome, StoreError> {
        Store::persist_session_start(self, start, actor)
    }

    fn persist_session_end(&self, end: &SessionEnd, actor: &Actor) -> Result<Outcome, StoreError> {
        Store::persist_session_end(self, end, actor)
    }

    fn record_message(
        &self,
        session_id: &str,
        message_id: &str,
        role: &str,
        content: &str,
        at: i64,
    ) -> Result<bool, StoreError> {
        Store::record_message(self, session_id, message_id, role, content, at)
    }

    fn update_session(
        &self,
        session_id: &str,
        columns: &BTreeMap<String, Value>,
    ) -> Result<bool, StoreError> {
        Store::update_session(self, session_id, columns)
    }

    fn update_session_metadata(
        &self,
        session_id: &str,
        key: &str,
        update: &mut dyn FnMut(Option<&Value>) -> Option<Value>,
    ) -> Result<MetadataUpdate, StoreError> {
        Store::update_session_metadata(self, session_id, key, update)
    }

    fn session(&self, session_id: &str) -> Result<Option<SessionSnapshot>, StoreError> {
        Store::session(self, session_id)
    }

    fn open_sessions(&self) -> Result<Vec<SessionSnapshot>, StoreError> {
        Store::open_sessions(self)
    }

    fn session_ids_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        Store::session_ids_with_prefix(self, prefix, limit)
    }

    /// A local file: only this host's processes record sessions in it.
    fn shared_by_hosts(&self) -> bool {
        false
    }
}
