//! The storage seam: what a backend must do for the outbox.

use lifecycle_core::{Actor, TransitionRecord};

use crate::model::{
    AuditRecord, DispatchMove, DispatchRow, DispatchStatus, Enqueued, ListQuery, MoveOutcome,
    NewDispatch, PurgeReport, PurgeSelection,
};

/// A durable outbox table with guarded moves.
///
/// Claim semantics: a claim is a [`DispatchMove`] into `delivering` that
/// compares and swaps on the row's *pre-claim attempt counter* as well as its
/// status, and raises the counter. Each attempt number can therefore be won
/// by exactly one caller, whatever snapshot the others hold. SQLite gets this
/// from one `BEGIN IMMEDIATE` transaction per move; a PostgreSQL store gets it
/// from `SELECT … WHERE id = $1 AND status = $2 AND attempt = $3 FOR UPDATE
/// SKIP LOCKED` followed by the UPDATE and the history INSERT in the same
/// transaction (a locked row is a [`MoveOutcome::Conflict`] for the loser,
/// never a wait), and may serve [`OutboxStore::due`] with a plain snapshot.
///
/// Rules every implementation must keep (checked by
/// `test_support::outbox_store_contract`):
/// - every method is its own transaction; [`OutboxStore::due`] is a snapshot
///   and locks nothing;
/// - every applied move appends one `status_transitions` row carrying the
///   move's actor and reason, through the lifecycle policy of entity
///   `dispatch` (declared edges; the `delivering -> delivering` self-edge
///   guarded on `attempt`);
/// - a move on a missing row is [`MoveOutcome::NotFound`], not an error;
/// - purges keep the history rows and write the audit rows named below.
///
/// Times are microseconds since the Unix epoch. `next_attempt_at`,
/// `expires_at` and the `now` arguments come from the caller's clock;
/// `created_at`/`updated_at` are the store's own.
pub trait OutboxStore {
    /// The backend's error.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Inserts a `pending` row with id `id` and its creation history row, or,
    /// when `new.dedup_key` already exists, returns that row's id and writes
    /// nothing. `now` becomes `next_attempt_at` unless `new.not_before` is set.
    fn enqueue(
        &self,
        id: &str,
        new: &NewDispatch,
        actor: &Actor,
        now: i64,
    ) -> Result<Enqueued, Self::Error>;

    /// The row, if it exists.
    fn get(&self, id: &str) -> Result<Option<DispatchRow>, Self::Error>;

    /// Rows, oldest first.
    fn list(&self, query: &ListQuery) -> Result<Vec<DispatchRow>, Self::Error>;

    /// A snapshot of up to `limit` rows a scan may act on at `now`, oldest
    /// `next_attempt_at` first: `pending` rows whose `next_attempt_at` or
    /// `expires_at` has come, and `delivering` rows whose lease
    /// (`next_attempt_at`) has run out.
    fn due(&self, now: i64, limit: usize) -> Result<Vec<DispatchRow>, Self::Error>;

    /// Applies one guarded move in its own transaction.
    fn apply(&self, mv: &DispatchMove) -> Result<MoveOutcome, Self::Error>;

    /// Deletes the row whatever its status and writes one `dispatch.purge`
    /// audit row; returns the status it had, or `None` (nothing written)
    /// when it does not exist.
    fn purge(&self, id: &str, actor: &Actor) -> Result<Option<DispatchStatus>, Self::Error>;

    /// Deletes the selected rows (none on a dry run) and always writes one
    /// `dispatch.purge_bulk` audit row.
    fn purge_many(
        &self,
        selection: &PurgeSelection,
        dry_run: bool,
        actor: &Actor,
    ) -> Result<PurgeReport, Self::Error>;

    /// The retention sweep: deletes terminal rows last written before
    /// `before`, and nothing else. No audit row (it is routine upkeep, not
    /// an operator decision). Returns how many rows went.
    fn sweep_terminal(&self, before: i64) -> Result<u64, Self::Error>;

    /// The row's history, oldest first (kept after a purge).
    fn history(&self, id: &str) -> Result<Vec<TransitionRecord>, Self::Error>;

    /// The outbox's audit rows, oldest first.
    fn audit(&self) -> Result<Vec<AuditRecord>, Self::Error>;
}

impl<S: OutboxStore + ?Sized> OutboxStore for &S {
    type Error = S::Error;

    fn enqueue(
        &self,
        id: &str,
        new: &NewDispatch,
        actor: &Actor,
        now: i64,
    ) -> Result<Enqueued, S::Error> {
        (**self).enqueue(id, new, actor, now)
    }
    fn get(&self, id: &str) -> Result<Option<DispatchRow>, S::Error> {
        (**self).get(id)
    }
    fn list(&self, query: &ListQuery) -> Result<Vec<DispatchRow>, S::Error> {
        (**self).list(query)
    }
    fn due(&self, now: i64, limit: usize) -> Result<Vec<DispatchRow>, S::Error> {
        (**self).due(now, limit)
    }
    fn apply(&self, mv: &DispatchMove) -> Result<MoveOutcome, S::Error> {
        (**self).apply(mv)
    }
    fn purge(&self, id: &str, actor: &Actor) -> Result<Option<DispatchStatus>, S::Error> {
        (**self).purge(id, actor)
    }
    fn purge_many(
        &self,
        selection: &PurgeSelection,
        dry_run: bool,
        actor: &Actor,
    ) -> Result<PurgeReport, S::Error> {
        (**self).purge_many(selection, dry_run, actor)
    }
    fn sweep_terminal(&self, before: i64) -> Result<u64, S::Error> {
        (**self).sweep_terminal(before)
    }
    fn history(&self, id: &str) -> Result<Vec<TransitionRecord>, S::Error> {
        (**self).history(id)
    }
    fn audit(&self) -> Result<Vec<AuditRecord>, S::Error> {
        (**self).audit()
    }
}
