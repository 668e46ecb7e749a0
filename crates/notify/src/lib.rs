//! Terminal-run notifications: the run-terminal envelope, the callback
//! registry, `notify.on_terminal` settings and the exec adapter.
//!
//! After a store commits a terminal transition of an execution entity
//! (session, invocation, schedule_run, play) it calls its terminal sinks;
//! [`TerminalNotifier`] is the sink that turns the committed transition
//! into a [`RunTerminalEnvelope`] (schema version 1) and emits it on a
//! [`Registry`]. [`Registry::emit`] pushes the envelope to every matching
//! handler concurrently under one shared deadline; handler failures,
//! panics and timeouts are logged and swallowed and can never touch the
//! committed write. An override registration (for example the one
//! [`register_run_notify_outcome_scope`] installs) replaces the
//! non-override handlers for the envelopes it matches.
//!
//! [`resolve_on_terminal`] turns the three levels of `notify.on_terminal`
//! (per-run override, project, global) into a [`Resolution`]: an exec
//! adapter with its filter, or disabled, with a migration warning when a
//! configured value was refused. Nothing ever reaches a shell. The
//! [`ExecAdapter`] runs the argv in its own process group through
//! cli-supervisor's teardown routine, the envelope as JSON on stdin, and
//! ends and reaps the child at its timeout or when the call is cancelled.
//!
//! **Seam:** [`TerminalNotifier`] implements lifecycle-core's
//! `TerminalSink`; a run records its outcome through [`OutcomeSink`]
//! ([`RunDir`] writes `notify_outcome.json`). The library reads no file
//! and no environment variable: the binary loads settings and passes the
//! parsed values.
//!
//! **Secrets:** adapter argv values never reach a warning, a log record,
//! an error message or `notify_outcome.json`: an adapter is named by the
//! basename of its program, snippets pass [`redact_argv_values`], and raw
//! stderr goes to an owner-only (0600) file referred to by path.
//!
//! # Wiring into a run
//!
//! [`install_for_run`] does steps 1 and 2 in one call.
//!
//! 1. The binary loads the settings files and calls
//!    [`resolve_on_terminal`]`(per_run_flag, on_terminal_in(&project),
//!    on_terminal_in(&global))`; a refusal's `warning` goes to stderr.
//! 2. Process-wide: [`register_settings_terminal_callback`] with the
//!    settings-only resolution. Per run:
//!    [`register_run_notify_outcome_scope`] with the run's [`RunDir`] (or
//!    any [`OutcomeSink`]) and a [`RunScope`] of the run's session; it
//!    records a refusal on the run before returning.
//! 3. The store gets a [`TerminalNotifier`] as a terminal sink
//!    (`Store::add_terminal_sink`), so every committed terminal transition
//!    of an execution entity is emitted; a caller holding the committed
//!    history row instead can call `TerminalSink::on_terminal` itself.
//! 4. Before the process exits: `notifier.flush().await` (bounded by the
//!    registry's budget), then [`unregister_run_notify_outcome_scope`].
//!
//! None of these steps can fail or delay the run past the budget.
//!
//! **Stated limit:** the supervising task lives on the caller's tokio
//! runtime. If that runtime is shut down while an adapter runs, the task is
//! dropped and cli-supervisor's Drop backstop SIGKILLs the group, but
//! nothing is left to reap the child: flush the notifier before shutting
//! the runtime down. (cli-supervisor's parent-death signal still ends the
//! child if the whole process dies.)
//!
//! # Decisions where the spec is open
//!
//! - **Masking:** the highest level that sets `on_terminal` decides alone,
//!   so an explicit `enabled: false` in a per-run override masks project
//!   and global settings (the original does the same).
//! - **`python` adapters** load Python code in-process, which this runtime
//!   cannot do: they resolve to disabled with a migration warning (reason
//!   `python_adapter_unsupported`); an unknown kind is refused the same way.
//!   In-process Rust callbacks register directly on the [`Registry`].
//! - **Shell features** are read by quote state, not by a regex over the
//!   raw string: `"$HOME"` in double quotes needs a shell (refused),
//!   `'a|b'` in single quotes and backslash-escaped characters do not.
//! - **Malformed mapping values** (a non-boolean `enabled`, an empty filter
//!   list, an `adapter` that is not a mapping, a NUL byte in argv) are
//!   refused rather than read loosely: fail closed. A null `enabled` reads
//!   as absent, and a mapping with no adapter configures nothing unless it
//!   says `enabled: true` (then `enabled_without_adapter`), as in the
//!   original.
//! - **`#` starts a comment** when it begins a word (POSIX words, the
//!   `shlex` crate); the original passed it on as an argument.
//! - `tests/it/oracle.rs` checks every answer against the original's
//!   (`fixtures/notify/resolve_oracle.json`) and lists these departures.
//! - **Redaction** covers argument values (`argv[1..]`), not the program
//!   path; overlapping occurrences merge into one replaced span.
//! - **Process group, not session:** cli-supervisor starts the child as the
//!   leader of a new process group (`setpgid`), which is what the original's
//!   `start_new_session` is used for here: one group to end.
//!
//! # Performance
//!
//! `cargo bench -p notify --bench emit`: one emit to 10 handlers each
//! taking d = 20 ms, beside the floor (one bare `sleep(d)`) in the same
//! run. On the shared 2-core machine: floor 21.41 ms, 10 async handlers
//! 21.35 ms (1.00x the floor), 10 blocking handlers 20.99 ms (0.98x:
//! `thread::sleep` does not round up to the timer's millisecond). The
//! deadline: budget 2d with 10 handlers taking 50d each returns in
//! 41.75 ms against a 41.39 ms `sleep(2d)` floor (1.01x), never past it.
//!
//! # Example
//!
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod envelope;
mod error;
mod exec;
mod outcome;
mod redact;
mod registry;
mod scope;
mod settings;
mod sink;

pub use envelope::{Correlation, EntityRef, RunTerminalEnvelope, SCHEMA_NAME, SCHEMA_VERSION};
pub use error::{BoxError, Error};
pub use exec::{EXEC_PLACEHOLDERS, Ending, ExecAdapter, ExecReport, fill_placeholders};
pub use outcome::{NotifyOutcome, OutcomeSink, RunDir, reason};
pub use redact::{Argv, MIN_REDACTABLE_ARG_LEN, REDACTED, adapter_label, redact_argv_values};
pub use registry::{
    DEFAULT_BUDGET, EmitReport, Filter, Handler, HandlerFuture, Registration, Registry,
};
pub use scope::{
    RunNotify, RunScope, SETTINGS_REGISTRATION, install_for_run, register_run_notify_outcome_scope,
    register_settings_terminal_callback, unregister_run_notify_outcome_scope,
};
pub use settings::{
    Adapter, Level, Refusal, Resolution, ResolvedHandler, needs_shell, on_terminal_in,
    resolve_on_terminal, resolve_value,
};
pub use sink::TerminalNotifier;
