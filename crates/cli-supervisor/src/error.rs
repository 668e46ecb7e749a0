//! The crate's one error type.

use std::io;
use std::time::Duration;

/// A boxed error returned by an `on_spawn` callback.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong while spawning, streaming or ending a leg.
///
/// No variant carries a value of the child environment or anything an
/// `on_spawn` callback captured: bad environment entries are reported by
/// variable name (or by position and kind when the key is not a name).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The leg spec has no program to run.
    #[error("leg argv is empty")]
    EmptyArgv,
    /// The operating system refused to start the program.
    #[error("failed to spawn leg program {program}")]
    Spawn {
        /// The program (argv\[0\]) as given, lossily converted.
        program: String,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// The `on_spawn` callback returned an error; the child's group was ended.
    #[error("on_spawn callback failed; the child was ended")]
    OnSpawn {
        /// The callback's error.
        #[source]
        source: BoxError,
    },
    /// The child environment has entries that cannot be passed to a child.
    ///
    /// Only variable names are listed; values never appear.
    #[error("invalid child environment entries: {}", render_bad_entries(.entries))]
    BadEnvEntries {
        /// Each rejected entry, described without its value.
        entries: Vec<BadEnvEntry>,
    },
    /// The child environment was not a mapping of names to values.
    #[error("child environment must be a mapping of variable names to values, got {kind}")]
    EnvNotMapping {
        /// The kind of value supplied (never the value itself).
        kind: &'static str,
    },
    /// No output arrived within the first-output watchdog; the leg was ended.
    #[error("no first output within {after:?}; the leg was ended")]
    FirstOutputTimeout {
        /// The watchdog that fired.
        after: Duration,
    },
    /// No output arrived within the idle watchdog; the leg was ended.
    #[error("no output for {after:?}; the leg was ended")]
    IdleTimeout {
        /// The watchdog that fired.
        after: Duration,
    },
    /// The leg ran past its total deadline ([`Watchdogs::total`](crate::Watchdogs::total)); it was ended.
    #[error("the leg ran past its deadline of {after:?}; it was ended")]
    DeadlineExceeded {
        /// The deadline that passed.
        after: Duration,
    },
    /// Reading the leg's output or waiting for it failed.
    #[error("i/o error while supervising the leg")]
    Io {
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A watchdog environment variable holds something other than seconds.
    #[error("invalid watchdog setting in {var}: expected a non-negative number of seconds")]
    InvalidWatchdogSetting {
        /// The variable's name.
        var: &'static str,
    },
}

/// One rejected child environment entry, described without its value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BadEnvEntry {
    /// A string key that is not a valid variable name (empty, or holds `=` or NUL).
    InvalidName {
        /// The key up to its first `=` or NUL byte, escaped. The rest is
        /// never kept: a `NAME=VALUE` string passed as a name carries a value.
        name: String,
        /// Why the name is invalid: `is empty`, `holds '='` or `holds a NUL byte`.
        reason: &'static str,
    },
    /// A valid name whose value cannot be passed (it holds a NUL byte, or is not a string).
    InvalidValue {
        /// The variable's name.
        name: String,
    },
    /// A key that is not a string at all, reported only by position and kind.
    NonStringKey {
        /// Zero-based position of the entry.
        position: usize,
        /// The kind of key (e.g. `non-utf-8 bytes`).
        kind: &'static str,
    },
}

fn render_bad_entries(entries: &[BadEnvEntry]) -> String {
    let parts: Vec<String> = entries
        .iter()
        .map(|entry| match entry {
            BadEnvEntry::InvalidName { name, reason }
                if name.is_empty() && *reason == "is empty" =>
            {
                "invalid variable name: it is empty".to_owned()
            }
            BadEnvEntry::InvalidName { name, reason } => {
                format!("invalid variable name {name:?}...: it {reason} (the rest is not shown)")
            }
            BadEnvEntry::InvalidValue { name } => format!("invalid value for {name:?}"),
            BadEnvEntry::NonStringKey { position, kind } => {
                format!("key at position {position} is {kind}")
            }
        })
        .collect();
    parts.join(", ")
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
