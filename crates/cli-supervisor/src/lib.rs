//! Spawn, stream and end agent CLI legs without orphans or stray signals.
//!
//! (docs to follow)

mod env;
mod error;
mod guard;
mod leg;
mod ndjson;
mod pidfd;
mod proc;
mod secrets;
mod spec;

pub use env::{ChildEnv, EnvPolicy, OnSpawn};
pub use error::{BadEnvEntry, BoxError, Error, Result};
pub use guard::{
    ChildState, Evidence, GroupSignal, OsSignaller, SignalOutcome, Signaller,
    signal_group_on_evidence, signal_recorded_group,
};
pub use leg::{Leg, LegExit, Teardown};
pub use ndjson::Event;
pub use proc::{GroupScan, ProcTable, ProcessTable, SpawnedProcess, observe_spawned};
pub use secrets::{
    LookupConfig, SecretLookup, SecretResolution, SettingsFile, fill_declared_secrets,
    parse_secret_lookup, reason,
};
pub use spec::{LegSpec, StdinPolicy, Watchdogs};
