//! The main job as a library: one run of an agent leg, recorded.
//!
//! [`run`] records the session start (with its owner: this process's pid,
//! start time, boot id and host) through the [`SessionRecorder`] seam, builds the
//! provider's invocation, supervises the leg under `cli-supervisor` (own
//! process group, parent-death signal, orphan guard, watchdogs), records the
//! spawn record before any output is read and every stream event as a
//! message, applies the end-of-run rule ([`lifecycle_core::end_of_run`]),
//! probes completion evidence in a sandbox and keeps or removes it, and
//! records the end with usage. Every failure after the session start ends
//! the session in a terminal status with a reason code; a cancellation
//! future ends the leg's group and records `cancelled`. An optional
//! [`OnTerminal`] callback runs after the terminal transition committed.
//!
//! [`sweep_orphans`] ends sessions whose owner is provably gone (status
//! `failed`, reason `session.orphaned.no_process`), signalling their leg's
//! group only under the evidence rule, and judges only sessions owned by
//! this host ([`host_id`]): a store may be shared by several hosts; [`kill_session`] ends a live leg
//! from another process through its spawn record and records `cancelled`.
//!
//! See the README (run as a doctest) for an example.
//!
//! Features: none. Linux only (process groups, /proc).

#![forbid(unsafe_code)]

mod error;
mod run;
mod sweep;

pub use error::{BoxError, Error};
pub use lifecycle_core::SessionRecorder;
pub use run::{
    LegProgram, OnProgress, OnTerminal, Progress, ProviderChoice, RunConfig, RunNote, RunReport,
    SandboxNote, event_role, run,
};
pub use sweep::{
    GoneBecause, Here, KillReport, ORPHAN_REASON, ORPHAN_STATUS, OwnerState, Processes,
    SweepReport, SweptSession, boot_id, current_owner, host_id, kill_session, owner_state,
    resolve_session, sweep_orphans, sweep_orphans_known_gone,
};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
