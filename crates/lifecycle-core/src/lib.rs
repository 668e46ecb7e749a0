//! Pure lifecycle rules for the runtime core: the status vocabularies and
//! edge policies of every managed entity, the guarded transition decision,
//! reason codes, session health, artifact resolution, the end-of-run status
//! rule ([`end_of_run`]), the [`SessionRecorder`] seam a runner records
//! through and the [`StateReader`] seam the read-side tools read through.
//!
//! **Invariant:** this crate does no I/O and depends on no storage, process
//! or async crate. A store (see `state-sqlite`) reads a row inside its write
//! transaction, asks [`decide`] what to do and executes the [`Decision`].
//!
//! ```
//! use lifecycle_core::{decide, default_registry, Actor, ActorType, Decision, Reason,
//!     RowSnapshot, TransitionCommand};
//!
//! let policy = default_registry().get("session")?;
//! let row = RowSnapshot { status: "running".into(), version: 1, columns: Default::default() };
//! let cmd = TransitionCommand::new("session", "s-1", "completed",
//!     Reason::new("run.completed.ok"), Actor::new(ActorType::Executor, "pid-42"))
//!     .expecting("running");
//! assert!(matches!(decide(policy, Some(&row), &cmd)?, Decision::Write(_)));
//!
//! // Leaving a terminal status without an override is refused, not an error.
//! let done = RowSnapshot { status: "completed".into(), ..row };
//! let back = TransitionCommand::new("session", "s-1", "running",
//!     Reason::new("session.reopened.by_resume"), Actor::new(ActorType::Agent, "a"));
//! assert!(matches!(decide(policy, Some(&done), &back)?, Decision::Reject { .. }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Features: none.
#![forbid(unsafe_code)]

mod artifacts;
mod decide;
mod error;
mod health;
mod model;
mod policy;
mod read;
pub mod reasons;
mod run_end;
mod session;
mod store;

pub use artifacts::{ArtifactTree, resolve_produced};
pub use decide::{
    CompatOptions, Decision, Rejection, RowSnapshot, WritePlan, ZeroRows, decide, decide_initial,
    decide_with,
};
pub use error::CoreError;
pub use health::{
    HEALTH_TERMINAL, Health, HealthInput, HealthThresholds, Liveness, SessionKind,
    classify_session_health,
};
pub use model::{
    Actor, ActorType, Expected, InitialCommand, Outcome, OutcomeKind, Override, Reason,
    TransitionCommand,
};
pub use policy::{
    EXECUTION_ENTITIES, Edge, EdgeMap, Policy, PolicyRegistry, PolicySpec, SameStatus,
    default_policy_specs, default_registry,
};
pub use read::{
    COUNTED_TABLES, ID_CANDIDATES, IdMatch, InFlight, MessageRow, OpenEntity, PruneReport,
    RowCounts, SessionActivity, SessionFilter, SessionRetention, SessionRow, StateReader,
    terminal_session_statuses,
};
pub use run_end::{Cancellation, LegEnd, RunFacts, RunVerdict, WorkEvidence, end_of_run};
pub use session::{
    LegRecord, MetadataUpdate, OwnerRecord, SESSION_COLUMNS, SessionEnd, SessionRecorder,
    SessionSnapshot, SessionStart, Usage, columns, leg_columns, merge_metadata_key, owner_columns,
};
pub use store::{LifecycleStore, TerminalEvent, TerminalSink, TransitionRecord};
