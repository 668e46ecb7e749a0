//! The khive context provider (the original's reference `ContextProvider`)
//! over the MCP transport the runtime already uses for tool servers
//! (`mcp-pool`): no transport of its own.
//!
//! - **Recall** ([`KhiveProvider::provide`]): one `tools/call` of the
//!   daemon's batch tool carries `memory.recall`, `memory.compose` when
//!   [`KhiveInjectionPolicy::compose`] asks for it, and
//!   `brain.auto_feedback` attributed to the policy's explicit profile id
//!   (a policy cannot be built without one).
//! - **Writeback** ([`KhiveProvider::writeback`]): a separate, opt-in
//!   post-turn hook for the operate() middle. It stores rule-derived tool
//!   error/resolution pairs with `memory.remember` at a salience capped by
//!   [`WRITEBACK_SALIENCE_CAP`] and low provenance. It sends nothing else
//!   (no nudges).
//! - **Namespace:** when set, every write verb (`brain.auto_feedback`,
//!   `memory.remember`) carries it. Read verbs do not (the daemon's read
//!   verbs refuse unknown parameters). Without a namespace, a recall's
//!   feedback still writes the shared brain store: pin one wherever writes
//!   must stay isolated.
//! - **Failure isolation:** `provide` and `writeback` log every failure
//!   (a daemon that does not answer within
//!   [`KhiveInjectionPolicy::timeout`] included) and return an empty
//!   context or [`WritebackOutcome::Failed`]; the `try_` forms return the
//!   typed [`Error`].
//!
//! The runtime's binary pulls this crate in only under its `khive` cargo
//! feature, so the core builds without it; and the daemon is connected
//! lazily, on the first recall or writeback.
#![doc = ""]
#![doc = include_str!("../README.md")]

mod error;
mod policy;
mod provider;
mod wire;
mod writeback;

pub use error::Error;
pub use policy::{
    KhiveInjectionPolicy, WRITEBACK_MAX_CONTENT_BYTES, WRITEBACK_PROVENANCE, WRITEBACK_SALIENCE_CAP,
};
pub use provider::{InjectedContext, KhiveProvider, WRITEBACK_KIND};
pub use wire::Memory;
pub use writeback::{
    REDACTED, SENSITIVE_ARGUMENT_PATTERNS, ToolEvent, WritebackOutcome, resolution_pairs,
};
