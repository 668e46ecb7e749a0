//! Finding the server and giving each test a schema of its own.

use std::sync::atomic::{AtomicU32, Ordering};

use state_postgres::{PgConfig, PgEngine, PgOutbox, PgStore};

/// The variable naming the test server.
pub(crate) const PG_VAR: &str = "LIONRT_TEST_PG";

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// The server's connection string, or `None` (with the reason printed).
pub(crate) fn server(test: &str) -> Option<String> {
    match std::env::var(PG_VAR) {
        Ok(s) if !s.trim().is_empty() => Some(s),
        _ => {
            eprintln!(
                "{test}: skipped: {PG_VAR} is unset (start a server with `eval \"$(.ci/pg-cluster start)\"`)"
            );
            None
        }
    }
}

/// A schema dropped (with everything in it) when the value goes.
pub(crate) struct Schema {
    pub(crate) url: String,
    pub(crate) name: String,
}

impl Schema {
    /// A fresh, unique schema name for `tag` (nothing created yet).
    pub(crate) fn new(url: &str, tag: &str) -> Schema {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        Schema {
            url: url.to_owned(),
            name: format!("t_{tag}_{}_{n}", std::process::id()),
        }
    }

    pub(crate) fn config(&self) -> PgConfig {
        PgConfig::new(self.url.as_str())
            .with_schema(self.name.clone())
            .with_pool_size(4)
    }

    pub(crate) fn engine(&self) -> PgEngine {
        PgEngine::open(&self.config()).expect("open engine")
    }

    pub(crate) fn store(&self) -> PgStore {
        PgStore::new(self.engine())
    }

    pub(crate) fn outbox(&self) -> PgOutbox {
        PgOutbox::new(self.store())
    }

    /// A plain client on the schema (raw SQL in tests).
    pub(crate) fn client(&self) -> postgres::Client {
        let mut c = postgres::Client::connect(&self.url, postgres::NoTls).expect("connect");
        c.batch_execute(&format!("SET search_path = {}", self.name))
            .expect("search_path");
        c
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}
