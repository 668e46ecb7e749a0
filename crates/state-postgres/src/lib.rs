//! The PostgreSQL lifecycle store: one database shared by many orchestrator
//! hosts.
//!
//! It implements the same seams as `state-sqlite` —
//! [`lifecycle_core::LifecycleStore`], [`lifecycle_core::SessionRecorder`]
//! and [`outbox::OutboxStore`] — and keeps lifecycle-core's rules as they
//! are: every status change reads the row, asks [`lifecycle_core::decide`]
//! (or `decide_with`, `decide_initial`) and only executes the decision.
//!
//! - **A guarded transition is one transaction.** The write is a
//!   compare-and-swap `UPDATE … WHERE id = $1 AND status = ANY($n) AND
//!   updated_at = $m RETURNING id`, and the history append is the same
//!   statement (`WITH w AS (UPDATE …) INSERT INTO status_transitions …
//!   SELECT … FROM w`), so the history row exists exactly when the row
//!   write matched. A CAS that matches nothing means another host wrote the
//!   row after our read: the transaction is run again from the read, so the
//!   caller sees what a serial order would give (a conflict if its
//!   expectations no longer hold). Rejections and overrides write
//!   `admin_events` rows as on SQLite; terminal sinks run after commit.
//! - **Outbox claims** lock the row with `FOR UPDATE SKIP LOCKED` (a row
//!   another host is moving is a conflict for the loser, never a wait) and
//!   compare-and-swap on the pre-claim attempt counter, so each attempt
//!   number is won by exactly one host.
//! - **`LISTEN`/`NOTIFY`**: enqueues and reschedules notify the schema's
//!   channel on commit; [`DueListener::wait_for_due`] sleeps until a row is
//!   due or a notification arrives.
//! - **One ticking daemon**: [`TickLock`] is a session-level advisory lock,
//!   released by the server when its holder's connection ends.
//! - **Read-only**: PostgreSQL has no `mode=ro`; [`PgEngine::open_read_only`]
//!   sets `default_transaction_read_only` on every connection, and
//!   [`PgEngine::provision_read_only_role`] makes a role the server itself
//!   keeps to reads (SELECT grants only).
//! - **Typed errors**: [`PgStoreError::ConnectionRefused`],
//!   [`PgStoreError::Authentication`], [`PgStoreError::Serialization`]
//!   (after the allowed retries: a whole transaction is run again on
//!   SQLSTATE 40001 or 40P01, which PostgreSQL raises before anything
//!   commits; a failure whose commit outcome is unknown is never retried),
//!   [`PgStoreError::SchemaTooNew`].
//!
//! - **Read side**: [`PgStore`] implements lifecycle-core's
//!   [`lifecycle_core::StateReader`] and [`lifecycle_core::SessionRetention`]
//!   as state-sqlite does, so `lionrt sessions`, `state`, `monitor` and
//!   `lifecycle` read either store through one code path. Messages carry a
//!   write-order `seq` (migration 0002), the cursor SQLite's rowid gives.
//!
//! **Driver.** The synchronous `postgres` crate with an `r2d2` pool
//! (`r2d2_postgres`): the seams are synchronous traits called from
//! synchronous code (the runner, the outbox scan, the CLI), and the SQLite
//! store already uses r2d2, so the two stores have one shape. `sqlx` or
//! `tokio-postgres` would force a runtime into every caller or a
//! `block_on` inside each call. Dynamic statements are sent with
//! `query_typed` (parameter types from the catalogue, read once at open),
//! so each statement is one round trip. **Schemas**: each engine works in
//! one schema (`search_path`), created and migrated at a read-write open
//! under an advisory lock; distinct schemas are independent stores in one
//! database (the tests run in parallel that way).
//!
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod engine;
mod error;
mod lock;
mod migrate;
mod mirror;
mod offload;
mod outbox;
mod reader;
mod recorder;
mod service;
mod sql;
mod time;
mod url;
mod values;

pub use engine::{PgConfig, PgConn, PgEngine};
pub use error::PgStoreError;
pub use lock::TickLock;
pub use migrate::{MIGRATIONS, Migration, migrate, schema_version};
pub use outbox::{DueListener, PgOutbox, due_channel};
pub use service::{AdminEvent, MAX_ATTEMPTS, PgStore};
pub use time::now_micros;
pub use url::DbUrl;
