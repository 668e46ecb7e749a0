//! [`TickLock`]: the session-level advisory lock that keeps one ticking
//! daemon per schema, whatever the number of hosts.

use crate::engine::PgEngine;
use crate::error::PgStoreError;
use crate::migrate::lock_key;
use crate::offload::{OwnClient, in_runtime};

/// A held advisory lock. It lives on a connection of its own: PostgreSQL
/// releases it when that session ends, so a daemon that dies (even by
/// SIGKILL, or with its host) frees it for the next one without any lease.
/// Dropping the value releases it at once (inside a tokio runtime, by
/// closing its session off the runtime's thread).
pub struct TickLock {
    client: OwnClient,
    key: i64,
    name: String,
}

impl std::fmt::Debug for TickLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TickLock")
            .field("name", &self.name)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl TickLock {
    /// Takes the lock named `name` in the engine's schema if nobody holds
    /// it (`pg_try_advisory_lock`: never waits). `None`: another session
    /// holds it.
    pub fn try_acquire(engine: &PgEngine, name: &str) -> Result<Option<TickLock>, PgStoreError> {
        let key = lock_key(engine.schema(), name);
        let mut client = engine.connect_direct()?;
        let got: bool = client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])?
            .try_get(0)?;
        Ok(got.then(|| TickLock {
            client: OwnClient::new(client),
            key,
            name: name.to_owned(),
        }))
    }

    /// Whether the session still holds the lock (false once its connection
    /// was lost: then the lock may already be someone else's).
    pub fn is_held(&mut self) -> bool {
        self.client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
                   AND pid = pg_backend_pid() AND granted AND objsubid = 1
                   AND ((classid::bigint << 32) | objid::bigint) = $1)",
                &[&self.key],
            )
            .and_then(|r| r.try_get::<_, bool>(0))
            .unwrap_or(false)
    }

    /// The advisory-lock key (`pg_try_advisory_lock(key)`), derived from
    /// the schema and the name.
    pub fn key(&self) -> i64 {
        self.key
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for TickLock {
    fn drop(&mut self) {
        if in_runtime() {
            // The driver may not block here: closing the session (as the
            // client field's drop does, off this thread) releases it.
            return;
        }
        if let Err(e) = self
            .client
            .execute("SELECT pg_advisory_unlock($1)", &[&self.key])
        {
            tracing::debug!(error = %e, "advisory unlock failed; the session end releases it");
        }
    }
}
