//! The durable dispatch outbox.
//!
//! A producer enqueues a notification as a `dispatch_outbox` row
//! ([`enqueue_dispatch`], idempotent on its dedup key); the row is in
//! `state.db` whether or not a consumer runs. A due-scan ([`deliver_due`])
//! later snapshots the due rows and, for each row in its own transactions,
//! claims it, runs the transport once and records the result:
//!
//! - the claim is a compare-and-swap on the row's status *and* its
//!   pre-claim attempt counter, so two overlapping scans never run the
//!   transport twice for one attempt;
//! - a claim holds a lease (`next_attempt_at` of a `delivering` row); a
//!   crashed scanner's row is taken over once the lease has run out, never
//!   before;
//! - failures retry with exponential [`Backoff`]; `max_attempts` bounds the
//!   sends of every row and `expires_at` adds a deadline;
//! - ack-required rows go back to `pending` after each send until
//!   [`ack_dispatch`], the deadline or the last attempt (then `dead_letter`,
//!   `dispatch.dead_letter.ack_timeout`);
//! - a row purged between the snapshot and its move is skipped;
//! - every transition carries the caller's actor ([`ScanConfig::actor`],
//!   default [`scheduler_actor`]) into `status_transitions`.
//!
//! Operators purge ([`purge_dispatch`], [`purge_dispatches`], audited in
//! `admin_events`), the retention sweep removes old terminal rows
//! ([`retention_sweep`]) and revival ([`revive_dispatches`]) is a plain
//! function. Time comes from an injected [`Clock`].
//!
//! **Seams.** Storage is the [`OutboxStore`] trait (no SQL types in it): the
//! SQLite implementation is `state_sqlite::SqliteOutbox`, the in-memory one
//! `test_support::MemoryOutbox`, and `test_support::outbox_store_contract`
//! runs against both. The transport is the [`Transport`] trait:
//! [`ExecTransport`] runs a [`Template`] by direct exec (payload and
//! `deliver_to` each one whole argv element, no shell), [`FnTransport`] runs a
//! closure in process.
//!
#![doc = include_str!("../README.md")]
//!
//! Performance: see the README's section (included above).
//!
//! Features: none.
#![forbid(unsafe_code)]

mod clock;
mod error;
mod model;
mod ops;
mod scan;
mod store;
mod template;
mod transport;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::OutboxError;
pub use model::{
    AuditRecord, DispatchMove, DispatchPatch, DispatchRow, DispatchStatus, ENTITY, Enqueued,
    ListQuery, MoveOutcome, NewDispatch, PurgeReport, PurgeSelection,
};
pub use ops::{
    ReviveOptions, ReviveSelection, Revived, ack_dispatch, enqueue_dispatch, new_dispatch_id,
    purge_dispatch, purge_dispatches, retention_sweep, revive_dispatches,
};
pub use scan::{
    Backoff, ScanConfig, ScanReport, deliver_due, deliver_due_concurrent, deliver_ids,
    scheduler_actor,
};
pub use store::OutboxStore;
pub use template::{Fill, PLACEHOLDERS, Template};
pub use transport::{Delivery, ExecTransport, FnTransport, LiveGroups, SendError, Transport};
