//! The shared seam contracts, unchanged, against PostgreSQL: one schema per
//! store the suites ask for.

use std::sync::Mutex;

use crate::common::{Schema, server};

fn run<S>(tag: &str, suite: impl FnOnce(&dyn Fn() -> S), make: impl Fn(&Schema) -> S) {
    let Some(url) = server(tag) else { return };
    let schemas: Mutex<Vec<Schema>> = Mutex::new(Vec::new());
    suite(&|| {
        let schema = Schema::new(&url, tag);
        let s = make(&schema);
        schemas.lock().expect("schemas").push(schema);
        s
    });
}

#[test]
fn the_postgres_store_keeps_the_lifecycle_store_contract() {
    run(
        "lifecycle",
        |make| test_support::lifecycle_store_contract(make),
        Schema::store,
    );
}

#[test]
fn the_postgres_store_keeps_the_session_recorder_contract() {
    run(
        "recorder",
        |make| test_support::session_recorder_contract(make),
        Schema::store,
    );
}

#[test]
fn the_postgres_outbox_keeps_the_outbox_store_contract() {
    run(
        "outbox",
        |make| test_support::outbox_store_contract(make),
        Schema::outbox,
    );
}

#[test]
fn the_postgres_store_keeps_the_state_reader_contract() {
    run(
        "reader",
        |make| test_support::state_reader_contract(make),
        Schema::store,
    );
}
