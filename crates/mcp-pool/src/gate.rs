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

/// The tool-call security gate (GATE-001..025) in front of `tools/call`:
/// its security pass, user hooks and second security pass run on the
/// validated arguments; a refusal keeps its "could not answer" flag, and a
/// rewrite the gate approved is validated again against the input schema.
impl CallGate for tool_gate::Gate {
    fn check(&self, request: &GateRequest<'_>) -> GateDecision {
        let call = tool_gate::ToolCall::new(
            request.server,
            request.tool,
            Value::Object(request.arguments.clone()),
        );
        let result = tool_gate::Gate::check(self, &call);
        if result.is_allowed() {
            return match result.rewritten_arguments() {
                None => GateDecision::Allow,
                Some(Value::Object(arguments)) => GateDecision::Rewrite(arguments.clone()),
                Some(_) => GateDecision::Unavailable {
                    reason: "a pre-hook rewrote the arguments into something other than an object"
                        .into(),
                },
            };
        }
        let reason = match (result.control(), result.reason()) {
            (Some(control), Some(reason)) => format!("{control}: {reason}"),
            (None, Some(reason)) => reason.to_owned(),
            (Some(control), None) => control.to_owned(),
            (None, None) => "refused".to_owned(),
        };
        if result.errored() {
            GateDecision::Unavailable { reason }
        } else {
            GateDecision::Deny { reason }
        }
    }
}
