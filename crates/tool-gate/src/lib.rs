//! Fail-closed pre-invocation security gate for tool calls.
//!
//! A [`Gate`] holds two buckets: security [`Control`]s (the permission
//! policy, the destructive-command guard, the path guard, any session-level
//! gate) and user [`PreHook`]s. [`Gate::check`] runs the security pass, the
//! user hooks (which may rewrite arguments) and the security pass again on
//! the final arguments, and returns an immutable [`GateResult`]. Every
//! control evaluates exactly once per pass; an error or a panic in any of
//! them refuses the call. A refusal says whether the control answered no or
//! could not answer at all ([`GateResult::errored`]).
//!
//! The crate also holds the pieces that sit next to the gate in the
//! original: MCP config resolution ([`resolve_mcp_config`]), the nudge
//! engine ([`NudgeEngine`]) and messenger events ([`Messenger`]).
//!
//! **Invariant:** no I/O except `lstat`/`canonicalize` in the path guard and
//! the MCP config lookup; no environment variable is read; no tokio. A gate
//! is `Send + Sync` and cheap to clone, so an async MCP client can call
//! [`Gate::check`] in front of `tools/call`.
//!
//! # Performance
//!
//! `cargo bench -p tool-gate` (benches/gate_check.rs) times three typical
//! calls (an edit, a shell command, a read) through a gate with a permission
//! policy, the destructive-command guard, the path guard on a real temp
//! directory and one user hook (so both security passes run), against the
//! floor every `tools/call` pays anyway: clone the call and serialise its
//! arguments. On the shared 2-core VM (load average 5 to 6, one `lstat`
//! 2-5 µs here) three runs gave floor/gated ratios of 0.018, 0.067 and
//! 0.036, and 0.031, 0.12 and 0.062 with no user hook (one security pass):
//! a gate check costs 12-35 µs a call against a 0.6-1.5 µs floor. The path
//! guard is syscall-bound: its own floor, the `lstat` calls it cannot skip
//! (`guard/lstat_floor`, same run), over its time gave 0.49, 1.1 and 0.76.
//! The destructive-command guard reads every string once per pass; those
//! figures were taken when it matched text, before it parsed commands as
//! the shell does (not re-measured since).
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod call;
mod control;
mod destructive;
mod error;
mod gate;
mod mcp_config;
mod messenger;
mod nudge;
mod paths;
mod policy;
mod result;

pub use call::ToolCall;
pub use control::{Control, FnControl, FnHook, HookControl, PreHook};
pub use destructive::{BudgetExceeded, DestructiveGuard, Finding};
pub use error::{ControlUnavailable, Error, HookError, PermissionError, PermissionErrorKind};
pub use gate::{Gate, GateBuilder, GuardSpec, run_pass};
pub use mcp_config::{
    McpConfigQuery, McpConfigSource, McpConsumer, ResolvedMcpConfig, resolve_mcp_config,
};
pub use messenger::{CallbackError, Event, Message, Messenger};
pub use nudge::{NudgeEngine, NudgeError, NudgeRule, Nudges, estimate_tokens};
pub use paths::{
    DEFAULT_PATH_KEYS, DEFAULT_PROTECTED_BASENAMES, PathDenial, PathGuard, PathGuardConfig,
};
pub use policy::{Decision, EscalationAnswer, EscalationHandler, PermissionPolicy, Rule};
pub use result::{DenyKind, GateDenied, GateResult, Stage};
