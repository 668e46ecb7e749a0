//! Error types: the crate's `Error`, permission errors and hook failures.

use std::path::PathBuf;

use crate::result::GateDenied;

/// Errors of this crate's fallible constructors and resolvers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration the caller declared cannot be used, e.g. an explicit
    /// MCP config path that does not resolve to a file.
    #[error("configuration error: {reason} ({path})")]
    Configuration {
        /// The path at fault.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A path guard root that cannot be resolved on this filesystem.
    #[error("path guard root {path} cannot be resolved")]
    InvalidRoot {
        /// The root as configured.
        path: PathBuf,
        /// Why resolving it failed.
        #[source]
        source: std::io::Error,
    },
    /// A path guard with no root would deny everything; it is refused at
    /// construction instead so the mistake is seen at startup.
    #[error("path guard needs at least one allowed root")]
    NoRoots,
    /// A permission rule pattern that cannot be used.
    #[error("invalid permission pattern {pattern:?}: {reason}")]
    InvalidPattern {
        /// The pattern as given.
        pattern: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A messenger callback failed for an event other than `help`.
    #[error("messenger callback for event {event:?} failed")]
    Callback {
        /// The event's name.
        event: String,
        /// The callback's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The gate refused a tool call.
    #[error(transparent)]
    Denied(#[from] GateDenied),
}

/// The kind of a [`PermissionError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PermissionErrorKind {
    /// The control answered, and the answer is no.
    Denied,
    /// The control could not reach a verdict at all (misconfigured, or its
    /// backend unreachable). See [`ControlUnavailable`].
    Unavailable,
}

/// A control's refusal: the Rust form of the original's `PermissionError`.
///
/// A control that cannot answer is a kind of permission error too
/// ([`PermissionErrorKind::Unavailable`]), so a caller that fails closed on
/// `PermissionError` fails closed on an unavailable control without knowing
/// about it (GATE-008).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", match .kind {
    PermissionErrorKind::Denied => format!("permission denied: {}", .message),
    PermissionErrorKind::Unavailable => format!("control unavailable: {}", .message),
})]
pub struct PermissionError {
    kind: PermissionErrorKind,
    message: String,
}

impl PermissionError {
    /// A plain denial with its reason.
    pub fn denied(message: impl Into<String>) -> Self {
        Self {
            kind: PermissionErrorKind::Denied,
            message: message.into(),
        }
    }

    /// Which kind of refusal this is.
    pub fn kind(&self) -> PermissionErrorKind {
        self.kind
    }

    /// True when the control could not answer (see [`ControlUnavailable`]).
    pub fn is_unavailable(&self) -> bool {
        self.kind == PermissionErrorKind::Unavailable
    }

    /// The reason, without the kind prefix.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A control that cannot reach a verdict: misconfigured, or its backend
/// unreachable. Converts into a [`PermissionError`] of kind `Unavailable`,
/// so `?` in a function returning `PermissionError` keeps it failing closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("control unavailable: {message}")]
pub struct ControlUnavailable {
    message: String,
}

impl ControlUnavailable {
    /// A control-unavailable error with its explanation.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The explanation.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<ControlUnavailable> for PermissionError {
    fn from(e: ControlUnavailable) -> Self {
        Self {
            kind: PermissionErrorKind::Unavailable,
            message: e.message,
        }
    }
}

/// How a legacy hook fails: a refusal, or something else going wrong.
///
/// The original's hooks raise `PermissionError` to deny and anything else
/// when they break; the gate turns the first into a denial and the second
/// into a fail-closed deny (GATE-007).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// The hook refused the call (or could not answer).
    #[error(transparent)]
    Permission(#[from] PermissionError),
    /// The hook itself failed; the gate treats this as an evaluator failure.
    #[error("hook failed")]
    Failed(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl HookError {
    /// A hook failure from any error.
    pub fn failed(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Failed(e.into())
    }
}

impl From<ControlUnavailable> for HookError {
    fn from(e: ControlUnavailable) -> Self {
        Self::Permission(e.into())
    }
}
