//! The shared `LifecycleStore` contract, run against the SQLite store.

use state_sqlite::{Engine, EngineConfig, Store};

#[test]
fn the_sqlite_store_keeps_the_lifecycle_store_contract() {
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = std::cell::Cell::new(0);
    test_support::lifecycle_store_contract(|| {
        counter.set(counter.get() + 1);
        let path = dir.path().join(format!("contract-{}.db", counter.get()));
        Store::new(Engine::create(path, EngineConfig::default()).expect("engine"))
    });
}

#[test]
fn the_sqlite_store_keeps_the_session_recorder_contract() {
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = std::cell::Cell::new(0);
    test_support::session_recorder_contract(|| {
        counter.set(counter.get() + 1);
        let path = dir.path().join(format!("recorder-{}.db", counter.get()));
        Store::new(Engine::create(path, EngineConfig::default()).expect("engine"))
    });
}

#[test]
fn the_sqlite_store_keeps_the_state_reader_contract() {
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = std::cell::Cell::new(0);
    test_support::state_reader_contract(|| {
        counter.set(counter.get() + 1);
        let path = dir.path().join(format!("reader-{}.db", counter.get()));
        Store::new(Engine::create(path, EngineConfig::default()).expect("engine"))
    });
}
