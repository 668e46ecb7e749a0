//! The store contract against the in-memory store, and checks that the
//! contract itself catches a broken store.

use lifecycle_core::{
    InitialCommand, LifecycleStore, Outcome, OutcomeKind, TransitionCommand, TransitionRecord,
};
use test_support::{MemoryStore, MemoryStoreError, lifecycle_store_contract};

#[test]
fn the_memory_store_keeps_the_contract() {
    lifecycle_store_contract(MemoryStore::default);
}

/// A store that applies every transition, rules or not.
#[derive(Default)]
struct Lawless(MemoryStore);

impl LifecycleStore for Lawless {
    type Error = MemoryStoreError;
    fn create(&self, cmd: &InitialCommand) -> Result<Outcome, MemoryStoreError> {
        self.0.create(cmd)
    }
    fn transition(&self, cmd: &TransitionCommand) -> Result<Outcome, MemoryStoreError> {
        let out = self.0.transition(cmd)?;
        Ok(Outcome {
            result: OutcomeKind::Applied,
            ..out
        })
    }
    fn history(&self, t: &str, id: &str) -> Result<Vec<TransitionRecord>, MemoryStoreError> {
        self.0.history(t, id)
    }
}

#[test]
fn the_contract_catches_a_store_that_ignores_the_rules() {
    let caught = std::panic::catch_unwind(|| lifecycle_store_contract(Lawless::default));
    assert!(
        caught.is_err(),
        "a store reporting every move as applied must fail the contract"
    );
}

#[test]
fn the_memory_store_keeps_the_session_recorder_contract() {
    test_support::session_recorder_contract(MemoryStore::default);
}
