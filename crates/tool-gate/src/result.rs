//! `GateResult`, the one verdict shape every control produces, and
//! `GateDenied`, the error a refused call becomes.

use std::fmt;

use serde_json::Value;

use crate::call::ToolCall;

/// Why a call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DenyKind {
    /// The control answered, and the answer is no.
    Denied,
    /// The control could not answer: misconfigured, or its backend
    /// unreachable ([`crate::ControlUnavailable`]).
    Unavailable,
    /// The evaluator broke (returned an unexpected error, answered in a shape
    /// it may not use, or panicked). Fail closed: the call does not run.
    EvaluatorFailed,
}

/// Where in the gate a verdict was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stage {
    /// The only security pass (no user pre-hooks are configured).
    Security,
    /// The security pass before the user pre-hooks.
    SecurityBefore,
    /// The user pre-hooks.
    UserHooks,
    /// The security pass after the user pre-hooks, on the final arguments.
    SecurityAfter,
}

impl Stage {
    /// A stable lowercase name for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Security => "security",
            Self::SecurityBefore => "security-before",
            Self::UserHooks => "user-hooks",
            Self::SecurityAfter => "security-after",
        }
    }
}

/// An immutable verdict on one tool call.
///
/// Fields are private and there are no setters: once a control or the gate
/// has produced a `GateResult`, nothing can turn a denial into an approval
/// or change the reason (GATE-006). A control builds one with
/// [`GateResult::allow`], [`GateResult::deny`] or
/// [`GateResult::unavailable`]; the pass runner names the control and the
/// stage on the verdict it returns.
///
/// ```compile_fail
/// // contract: GATE-006 (a verdict cannot be edited once produced)
/// let mut verdict = tool_gate::GateResult::deny("no");
/// verdict.deny = None;
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct GateResult {
    deny: Option<DenyKind>,
    control: Option<String>,
    reason: Option<String>,
    stage: Option<Stage>,
    rewritten: Option<Value>,
}

impl GateResult {
    /// The control has no objection.
    pub fn allow() -> Self {
        Self {
            deny: None,
            control: None,
            reason: None,
            stage: None,
            rewritten: None,
        }
    }

    /// The control refuses the call: the answer is no.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::refused(DenyKind::Denied, reason.into())
    }

    /// The control cannot answer (misconfigured or unreachable); the call is
    /// refused and the verdict is `errored`.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Self::refused(DenyKind::Unavailable, reason.into())
    }

    pub(crate) fn evaluator_failed(reason: impl Into<String>) -> Self {
        Self::refused(DenyKind::EvaluatorFailed, reason.into())
    }

    fn refused(kind: DenyKind, reason: String) -> Self {
        Self {
            deny: Some(kind),
            reason: Some(reason),
            ..Self::allow()
        }
    }

    pub(crate) fn attributed(mut self, control: &str, stage: Stage) -> Self {
        if self.control.is_none() {
            self.control = Some(control.to_owned());
        }
        if self.stage.is_none() {
            self.stage = Some(stage);
        }
        self
    }

    pub(crate) fn allowed_with(rewritten: Option<Value>) -> Self {
        Self {
            rewritten,
            ..Self::allow()
        }
    }

    /// True when the call may run.
    pub fn is_allowed(&self) -> bool {
        self.deny.is_none()
    }

    /// True when the call is refused, for any reason.
    pub fn is_denied(&self) -> bool {
        self.deny.is_some()
    }

    /// True when the refusal means "the control could not answer" (an
    /// unavailable control or a broken evaluator) rather than "the answer is
    /// no". Both refuse the call; an operator acts on them differently.
    pub fn errored(&self) -> bool {
        matches!(
            self.deny,
            Some(DenyKind::Unavailable | DenyKind::EvaluatorFailed)
        )
    }

    /// The kind of refusal, `None` for an approval.
    pub fn deny_kind(&self) -> Option<DenyKind> {
        self.deny
    }

    /// The refusal's reason.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The control (or user hook) that refused the call.
    pub fn control(&self) -> Option<&str> {
        self.control.as_deref()
    }

    /// Where the refusal happened.
    pub fn stage(&self) -> Option<Stage> {
        self.stage
    }

    /// The final arguments when a user pre-hook rewrote them (and the
    /// second security pass approved the rewrite); `None` when the call runs
    /// with its own arguments.
    pub fn rewritten_arguments(&self) -> Option<&Value> {
        self.rewritten.as_ref()
    }

    /// The refusal as an error naming the call, or `None` for an approval.
    pub fn denial(&self, call: &ToolCall) -> Option<GateDenied> {
        let kind = self.deny?;
        Some(GateDenied {
            server: call.server.clone(),
            tool: call.tool.clone(),
            control: self.control.clone().unwrap_or_else(|| "gate".to_owned()),
            reason: self.reason.clone().unwrap_or_default(),
            kind,
        })
    }
}

/// A refused tool call, as an error (the original's `GateDeniedError`).
///
/// The message says which of the two situations it is: "could not answer"
/// for an errored verdict, "denied by" for a plain no (GATE-011).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct GateDenied {
    server: String,
    tool: String,
    control: String,
    reason: String,
    kind: DenyKind,
}

impl GateDenied {
    /// The refused tool.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The server offering the refused tool.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The control that refused.
    pub fn control(&self) -> &str {
        &self.control
    }

    /// The control's reason.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The kind of refusal.
    pub fn kind(&self) -> DenyKind {
        self.kind
    }

    /// True when the control could not answer.
    pub fn errored(&self) -> bool {
        self.kind != DenyKind::Denied
    }
}

impl fmt::Display for GateDenied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (server, tool, control, reason) =
            (&self.server, &self.tool, &self.control, &self.reason);
        let name = if server.is_empty() {
            tool.clone()
        } else {
            format!("{server}/{tool}")
        };
        match self.kind {
            DenyKind::Denied => write!(f, "tool call {name} denied by {control}: {reason}"),
            DenyKind::Unavailable => write!(
                f,
                "tool call {name} refused: control {control} could not answer (unavailable): {reason}"
            ),
            DenyKind::EvaluatorFailed => write!(
                f,
                "tool call {name} refused: control {control} could not answer (evaluator failed): {reason}"
            ),
        }
    }
}
