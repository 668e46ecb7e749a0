//! Test doubles and seam contract suites.
//!
//! - [`MemoryStore`]: an in-memory [`LifecycleStore`] that runs the same
//!   [`lifecycle_core::decide`] as every real store, for tests of code that
//!   needs a store but not SQLite.
//! - [`lifecycle_store_contract`]: the behaviour every `LifecycleStore` must
//!   show, run against [`MemoryStore`] here and against the SQLite store in
//!   `state-sqlite`'s tests, so a future PostgreSQL store inherits the same
//!   suite.
//! - [`session_recorder_contract`]: the behaviour every
//!   [`lifecycle_core::SessionRecorder`] must show (session start with
//!   provenance and owner, messages, plain column updates, the spawn record,
//!   open sessions and id prefixes, end on a running and on a terminal row),
//!   run against [`MemoryStore`] here and the SQLite store in `state-sqlite`.
//! - [`MemoryOutbox`] and [`outbox_store_contract`]: the same pair for the
//!   outbox's `OutboxStore` seam (run against `state_sqlite::SqliteOutbox` in
//!   the outbox crate's tests).
//! - [`runtime_only`]: the leak suite for a CLI request's runtime-only
//!   `env` and `on_spawn`, run by each provider crate against its own
//!   request type through [`runtime_only::RuntimeOnlyCase`].
//!
//! ```
//! test_support::lifecycle_store_contract(test_support::MemoryStore::default);
//! ```
//!
//! Features: none.
#![forbid(unsafe_code)]

mod contract;
mod memory;
mod memory_outbox;
mod outbox_contract;
mod reader_contract;
mod recorder;
mod recorder_contract;
pub mod runtime_only;

pub use contract::lifecycle_store_contract;
pub use memory::{MemoryStore, MemoryStoreError};
pub use memory_outbox::{MemoryOutbox, MemoryOutboxError};
pub use outbox_contract::outbox_store_contract;
pub use reader_contract::state_reader_contract;
pub use recorder_contract::session_recorder_contract;
