//! The SQLite lifecycle store of the runtime core.
//!
//! One file holds every managed entity, its status history
//! (`status_transitions`) and the audit trail (`admin_events`). Every status
//! change runs [`lifecycle_core::decide`] inside one `BEGIN IMMEDIATE`
//! transaction: the row update and its history append commit together, a
//! refusal commits only a rejection audit row, and terminal sinks run
//! strictly after commit.
//!
//! ```
//! use lifecycle_core::{Actor, ActorType, InitialCommand, Reason, TransitionCommand, OutcomeKind};
//! use state_sqlite::{Engine, EngineConfig, Store};
//!
//! let dir = tempfile::tempdir()?;
//! let store = Store::new(Engine::create(dir.path().join("state.db"), EngineConfig::default())?);
//! let actor = Actor::new(ActorType::Executor, "leg-1");
//! store.create(&InitialCommand {
//!     entity_type: "session".into(), entity_id: "s1".into(), status: "running".into(),
//!     reason: Reason::new("run.started.ok"), actor: actor.clone(), patch: Default::default(),
//! })?;
//! let done = TransitionCommand::new("session", "s1", "completed", Reason::new("run.completed.ok"), actor)
//!     .expecting("running");
//! assert_eq!(store.transition(&done)?.result, OutcomeKind::Applied);
//! assert_eq!(store.history("session", "s1")?.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The engines and [`Store`] implement lifecycle-core's read seam
//! ([`lifecycle_core::StateReader`]; [`Store`] also
//! [`lifecycle_core::SessionRetention`]), as `state-postgres` does.
//!
//! Features: none. **API boundary:** rusqlite types appear only in the
//! connection-level helpers ([`deliveries`], [`controls`], [`query`]); the
//! [`Store`] API speaks lifecycle-core types.
#![forbid(unsafe_code)]

pub mod admin;
pub mod controls;
pub mod deliveries;
mod dispatch_outbox;
mod engine;
mod error;
mod hooks;
mod migrate;
mod mirror;
pub mod overview;
pub mod query;
mod reader;
mod recognise;
mod recorder;
mod service;
mod sqlval;
mod time;
mod version;

pub use dispatch_outbox::SqliteOutbox;
pub use engine::{Conn, Engine, EngineConfig, ReadOnlyEngine, Synchronous};
pub use error::StoreError;
pub use hooks::SESSION_COLUMNS;
pub use lifecycle_core::{SessionEnd, SessionStart, Usage};
pub use migrate::{MIGRATIONS, Migration, migrate, schema_version};
pub use mirror::{
    LineageOutcome, MIRROR_KIND, MIRROR_RECONCILE_ID, MIRROR_WRITER_ID, MirrorBatch, MirrorCursor,
    MirrorMessage, MirrorSession, MirrorWrite, REACTIVATION_JUSTIFICATION, ReconcileAction,
    mirror_reconciler, mirror_writer,
};
pub use recognise::{StoreKind, recognise};
pub use service::{
    AdminEvent, LEGACY_COLUMNS, LegacyTransitionRequest, LegacyTransitionResult, StatusUpdate,
    Store,
};
pub use time::now_micros;
pub use version::{has_wal_reset_fix, linked_sqlite_version, wal_reset_warning, warn_if_unfixed};
