//! The `Control` seam (security controls) and the `PreHook` seam (user
//! pre-hooks), with the adapters from legacy hooks and closures.

use serde_json::Value;

use crate::call::ToolCall;
use crate::error::{HookError, PermissionError, PermissionErrorKind};
use crate::result::GateResult;

/// A security control: judges one tool call and produces a [`GateResult`].
///
/// A control judges; it never rewrites arguments (that is what a user
/// [`PreHook`] may do, and the second security pass re-judges the result).
/// Every control runs inside the pass runner, which catches a panic and
/// turns it into a fail-closed deny (GATE-002), so an implementation may
/// panic on a bug without letting the call through.
pub trait Control: Send + Sync {
    /// A short stable name for verdicts and logs, e.g. `"path-guard"`.
    fn name(&self) -> &str;

    /// The verdict on `call`. Return [`GateResult::unavailable`] when the
    /// control cannot answer (misconfigured, backend unreachable).
    fn evaluate(&self, call: &ToolCall) -> GateResult;
}

/// A user pre-hook, in the original's legacy shape: `Ok(None)` lets the
/// call through unchanged, `Ok(Some(arguments))` rewrites the arguments,
/// `Err(HookError::Permission(_))` refuses, and any other error is an
/// evaluator failure (a fail-closed deny).
///
/// Reading of an open point: the spec does not say what returning nothing
/// means; here `Ok(None)` is "allow unchanged", an explicit typed answer the
/// hook has to write, not a missing return.
pub trait PreHook: Send + Sync {
    /// A short stable name for verdicts and logs.
    fn name(&self) -> &str;

    /// The hook's answer for `call`.
    fn call(&self, call: &ToolCall) -> Result<Option<Value>, HookError>;
}

/// What a legacy hook's answer means to the gate.
#[derive(Debug)]
pub(crate) enum HookVerdict {
    Continue,
    Rewrite(Value),
    Refuse(GateResult),
}

/// Converts a legacy hook's answer (GATE-007): a permission error is a
/// denial (an unavailable control an errored one, checked first: GATE-009),
/// a map is a rewrite, and anything else is an evaluator failure.
pub(crate) fn adapt_hook_answer(answer: Result<Option<Value>, HookError>) -> HookVerdict {
    match answer {
        Ok(None) => HookVerdict::Continue,
        Ok(Some(Value::Object(map))) => HookVerdict::Rewrite(Value::Object(map)),
        Ok(Some(other)) => HookVerdict::Refuse(GateResult::evaluator_failed(format!(
            "hook returned {} where a map of arguments was expected",
            json_kind(&other)
        ))),
        Err(HookError::Permission(e)) => HookVerdict::Refuse(permission_result(&e)),
        Err(HookError::Failed(e)) => {
            HookVerdict::Refuse(GateResult::evaluator_failed(error_chain(e.as_ref())))
        }
    }
}

/// A permission error as a verdict: unavailable before generic denial.
pub(crate) fn permission_result(e: &PermissionError) -> GateResult {
    match e.kind() {
        PermissionErrorKind::Unavailable => GateResult::unavailable(e.message()),
        _ => GateResult::deny(e.message()),
    }
}

/// A legacy hook used as a security control. A rewrite from the security
/// bucket is refused as an evaluator failure: a control that changed the
/// arguments after the controls before it approved them would slip the
/// change past them.
#[derive(Debug, Clone)]
pub struct HookControl<H>(pub H);

impl<H: PreHook> Control for HookControl<H> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn evaluate(&self, call: &ToolCall) -> GateResult {
        match adapt_hook_answer(self.0.call(call)) {
            HookVerdict::Continue => GateResult::allow(),
            HookVerdict::Rewrite(_) => {
                GateResult::evaluator_failed("a security control may not rewrite arguments")
            }
            HookVerdict::Refuse(result) => result,
        }
    }
}

/// A closure as a security control, e.g. a session-level gate: `Ok(())`
/// allows, a [`PermissionError`] refuses (an unavailable one as errored).
pub struct FnControl<F> {
    name: String,
    f: F,
}

impl<F> FnControl<F>
where
    F: Fn(&ToolCall) -> Result<(), PermissionError> + Send + Sync,
{
    /// A control named `name` that asks `f`.
    pub fn new(name: impl Into<String>, f: F) -> Self {
        Self {
            name: name.into(),
            f,
        }
    }
}

impl<F> Control for FnControl<F>
where
    F: Fn(&ToolCall) -> Result<(), PermissionError> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn evaluate(&self, call: &ToolCall) -> GateResult {
        match (self.f)(call) {
            Ok(()) => GateResult::allow(),
            Err(e) => permission_result(&e),
        }
    }
}

/// A closure as a legacy pre-hook.
pub struct FnHook<F> {
    name: String,
    f: F,
}

impl<F> FnHook<F>
where
    F: Fn(&ToolCall) -> Result<Option<Value>, HookError> + Send + Sync,
{
    /// A hook named `name` that asks `f`.
    pub fn new(name: impl Into<String>, f: F) -> Self {
        Self {
            name: name.into(),
            f,
        }
    }
}

impl<F> PreHook for FnHook<F>
where
    F: Fn(&ToolCall) -> Result<Option<Value>, HookError> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn call(&self, call: &ToolCall) -> Result<Option<Value>, HookError> {
        (self.f)(call)
    }
}

/// An error and its sources on one line.
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
