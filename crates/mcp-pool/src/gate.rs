//! The hook run before every `tools/call`: the seam the tool-call security
//! gate plugs into.

use serde_json::{Map, Value};

/// One call about to be made, after admission and argument validation.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct GateRequest<'a> {
    /// The server.
    pub server: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// The validated arguments.
    pub arguments: &'a Map<String, Value>,
}

/// What the gate decided.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum GateDecision {
    /// Make the call as it is.
    Allow,
    /// Make the call with these arguments instead (validated again against
    /// the input schema before the call).
    Rewrite(Map<String, Value>),
    /// Refuse: the answer is no.
    Deny {
        /// Why.
        reason: String,
    },
    /// Refuse: a control could not answer (fail closed).
    Unavailable {
        /// What could not answer.
        reason: String,
    },
}

/// Decides whether a call may be made. Synchronous: it runs between
/// validation and the request. A panic in `check` refuses the call, like
/// [`GateDecision::Unavailable`].
///
/// The gate is independent of admission (ADM-003): a tool refused at
/// registration cannot be called whatever the gate says, and admission
/// grants no permission the gate refuses.
pub trait CallGate: Send + Sync {
    /// The decision for `request`.
    fn check(&self, request: &GateRequest<'_>) -> GateDecision;
}

impl<F> CallGate for F
where
    F: Fn(&GateRequest<'_>) -> GateDecision + Send + Sync,
{
    fn check(&self, request: &GateRequest<'_>) -> GateDecision {
        self(request)
    }
}
