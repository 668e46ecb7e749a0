//! The `OutboxStore` contract suite against both stores.

use crate::common::db;

#[test]
fn memory_outbox_keeps_the_store_contract() {
    test_support::outbox_store_contract(test_support::MemoryOutbox::default);
}

#[test]
fn sqlite_outbox_keeps_the_store_contract() {
    let dirs = std::sync::Mutex::new(Vec::new());
    test_support::outbox_store_contract(|| {
        let d = db();
        let store = d.store.clone();
        dirs.lock().expect("lock").push(d);
        store
    });
}

/// A broken store: its claims compare and swap on the status alone (it
/// rewrites the attempt guard to whatever the row holds), the bug behind
/// the original's double sends.
#[derive(Default)]
struct StatusOnly(test_support::MemoryOutbox);

impl outbox::OutboxStore for StatusOnly {
    type Error = test_support::MemoryOutboxError;
    fn enqueue(
        &self,
        id: &str,
        n: &outbox::NewDispatch,
        a: &lifecycle_core::Actor,
        now: i64,
    ) -> Result<outbox::Enqueued, Self::Error> {
        self.0.enqueue(id, n, a, now)
    }
    fn get(&self, id: &str) -> Result<Option<outbox::DispatchRow>, Self::Error> {
        self.0.get(id)
    }
    fn list(&self, q: &outbox::ListQuery) -> Result<Vec<outbox::DispatchRow>, Self::Error> {
        self.0.list(q)
    }
    fn due(&self, now: i64, limit: usize) -> Result<Vec<outbox::DispatchRow>, Self::Error> {
        self.0.due(now, limit)
    }
    fn apply(&self, mv: &outbox::DispatchMove) -> Result<outbox::MoveOutcome, Self::Error> {
        let mut mv = mv.clone();
        if let Some(row) = self.0.get(&mv.id)? {
            mv.expected_attempt = row.attempt;
            if let Some(a) = mv.patch.attempt.as_mut() {
                *a = row.attempt + 1;
            }
        }
        self.0.apply(&mv)
    }
    fn purge(
        &self,
        id: &str,
        a: &lifecycle_core::Actor,
    ) -> Result<Option<outbox::DispatchStatus>, Self::Error> {
        self.0.purge(id, a)
    }
    fn purge_many(
        &self,
        s: &outbox::PurgeSelection,
        d: bool,
        a: &lifecycle_core::Actor,
    ) -> Result<outbox::PurgeReport, Self::Error> {
        self.0.purge_many(s, d, a)
    }
    fn sweep_terminal(&self, b: i64) -> Result<u64, Self::Error> {
        self.0.sweep_terminal(b)
    }
    fn history(&self, id: &str) -> Result<Vec<lifecycle_core::TransitionRecord>, Self::Error> {
        self.0.history(id)
    }
    fn audit(&self) -> Result<Vec<outbox::AuditRecord>, Self::Error> {
        self.0.audit()
    }
}

// contract: OBX-013
#[test]
fn the_contract_catches_a_claim_guarded_on_status_alone() {
    let caught =
        std::panic::catch_unwind(|| test_support::outbox_store_contract(StatusOnly::default));
    assert!(caught.is_err(), "a status-only claim passed the contract");
}
