//! Shared helpers: real SQLite files, the memory store, counting transports.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use lifecycle_core::{Actor, ActorType};
use outbox::{Delivery, ManualClock, SendError, Transport};
use state_sqlite::{Engine, EngineConfig, SqliteOutbox, Store};

/// A SQLite outbox in a temporary directory (kept alive by the guard).
pub(crate) struct Db {
    pub(crate) _dir: tempfile::TempDir,
    pub(crate) store: SqliteOutbox,
}

pub(crate) fn open(path: &Path) -> SqliteOutbox {
    let config = EngineConfig {
        busy_timeout: Duration::from_secs(30),
        ..EngineConfig::default()
    };
    SqliteOutbox::new(Store::new(Engine::create(path, config).expect("engine")))
}

pub(crate) fn db() -> Db {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&dir.path().join("state.db"));
    Db { _dir: dir, store }
}

/// The instant tests start their manual clocks at.
pub(crate) const T0: i64 = 1_700_000_000_000_000;

pub(crate) fn clock() -> ManualClock {
    ManualClock::new(T0)
}

pub(crate) fn actor() -> Actor {
    Actor::new(ActorType::Executor, "producer")
}

pub(crate) fn operator() -> Actor {
    Actor::new(ActorType::Operator, "op")
}

/// An in-process transport that counts sends per id and answers from a
/// switch (all succeed or all fail).
#[derive(Default)]
pub(crate) struct Counting {
    pub(crate) sends: Mutex<BTreeMap<String, Vec<u32>>>,
    pub(crate) fail: Mutex<bool>,
}

impl Counting {
    pub(crate) fn failing() -> Self {
        Counting {
            fail: Mutex::new(true),
            ..Counting::default()
        }
    }

    pub(crate) fn set_fail(&self, fail: bool) {
        *self.fail.lock().expect("lock") = fail;
    }

    pub(crate) fn count(&self, id: &str) -> usize {
        self.sends.lock().expect("lock").get(id).map_or(0, Vec::len)
    }

    pub(crate) fn total(&self) -> usize {
        self.sends
            .lock()
            .expect("lock")
            .values()
            .map(Vec::len)
            .sum()
    }
}

impl Transport for Counting {
    fn send(&self, d: &Delivery<'_>) -> Result<(), SendError> {
        self.sends
            .lock()
            .expect("lock")
            .entry(d.id.to_owned())
            .or_default()
            .push(d.attempt);
        if *self.fail.lock().expect("lock") {
            Err(SendError("refused by test transport".into()))
        } else {
            Ok(())
        }
    }
}
