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

/// A recorder whose end clobbers a terminal row (the bug SQL-047 forbids).
#[derive(Default)]
struct Clobbering(MemoryStore);

impl LifecycleStore for Clobbering {
    type Error = MemoryStoreError;
    fn create(&self, cmd: &InitialCommand) -> Result<Outcome, MemoryStoreError> {
        self.0.create(cmd)
    }
    fn transition(&self, cmd: &TransitionCommand) -> Result<Outcome, MemoryStoreError> {
        self.0.transition(cmd)
    }
    fn history(&self, t: &str, id: &str) -> Result<Vec<TransitionRecord>, MemoryStoreError> {
        self.0.history(t, id)
    }
}

impl lifecycle_core::SessionRecorder for Clobbering {
    fn persist_session_start(
        &self,
        s: &lifecycle_core::SessionStart,
        a: &lifecycle_core::Actor,
    ) -> Result<Outcome, MemoryStoreError> {
        self.0.persist_session_start(s, a)
    }
    fn persist_session_end(
        &self,
        e: &lifecycle_core::SessionEnd,
        a: &lifecycle_core::Actor,
    ) -> Result<Outcome, MemoryStoreError> {
        // Moves the row whatever its status, with an override.
        let mut cmd = TransitionCommand::new(
            "session",
            &e.session_id,
            &e.status,
            lifecycle_core::Reason::new(&e.reason_code),
            a.clone(),
        );
        cmd.override_ = Some(lifecycle_core::Override {
            actor: lifecycle_core::Actor::new(lifecycle_core::ActorType::Admin, "x"),
            justification: "clobber".into(),
        });
        self.0.transition(&cmd)
    }
    fn record_message(
        &self,
        s: &str,
        id: &str,
        r: &str,
        c: &str,
        at: i64,
    ) -> Result<bool, MemoryStoreError> {
        self.0.record_message(s, id, r, c, at)
    }
    fn update_session(
        &self,
        s: &str,
        c: &std::collections::BTreeMap<String, serde_json::Value>,
    ) -> Result<bool, MemoryStoreError> {
        self.0.update_session(s, c)
    }
    fn update_session_metadata(
        &self,
        s: &str,
        k: &str,
        f: &mut dyn FnMut(Option<&serde_json::Value>) -> Option<serde_json::Value>,
    ) -> Result<lifecycle_core::MetadataUpdate, MemoryStoreError> {
        self.0.update_session_metadata(s, k, f)
    }
    fn session(
        &self,
        s: &str,
    ) -> Result<Option<lifecycle_core::SessionSnapshot>, MemoryStoreError> {
        self.0.session(s)
    }
    fn open_sessions(&self) -> Result<Vec<lifecycle_core::SessionSnapshot>, MemoryStoreError> {
        self.0.open_sessions()
    }
    fn session_ids_with_prefix(&self, p: &str, l: usize) -> Result<Vec<String>, MemoryStoreError> {
        self.0.session_ids_with_prefix(p, l)
    }
}

#[test]
fn the_recorder_contract_catches_an_end_that_clobbers_a_terminal_row() {
    let caught =
        std::panic::catch_unwind(|| test_support::session_recorder_contract(Clobbering::default));
    assert!(
        caught.is_err(),
        "a recorder rewriting a terminal row must fail the contract"
    );
}
