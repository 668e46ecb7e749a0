//! The gate: the security bucket, the user bucket, and the pass runner that
//! runs security -> user hooks -> security.

use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::call::ToolCall;
use crate::control::{Control, HookVerdict, PreHook, adapt_hook_answer};
use crate::destructive::DestructiveGuard;
use crate::error::Error;
use crate::paths::{PathGuard, PathGuardConfig};
use crate::policy::PermissionPolicy;
use crate::result::{GateDenied, GateResult, Stage};

/// The guards an agent spec asks for. [`GateBuilder::spec`] wires every one
/// of them into the security bucket, never the user bucket, so they run in
/// both security passes like an explicit permission policy (GATE-005).
#[derive(Default)]
pub struct GuardSpec {
    /// The invocation-time permission policy.
    pub permission: Option<PermissionPolicy>,
    /// Refuse destructive shell commands.
    pub guard_destructive: bool,
    /// Confine path arguments to these roots.
    pub guard_paths: Option<PathGuardConfig>,
}

/// The pre-invocation gate for tool calls.
///
/// [`Gate::check`] runs the security pass; when user pre-hooks are
/// configured it runs the security pass, then the hooks (which may rewrite
/// the arguments), then the security pass again on the final arguments, so
/// a hook cannot rewrite an approved argument into a forbidden one
/// (GATE-003). With no user hooks the security pass runs once (GATE-004).
/// Within a pass every control evaluates exactly once, in registration
/// order, and the first refusal ends the pass (GATE-001).
///
/// A gate with no controls and no hooks allows every call: it is the
/// embedder's configuration, not a failure.
#[derive(Clone, Default)]
pub struct Gate {
    security: Vec<Arc<dyn Control>>,
    user: Vec<Arc<dyn PreHook>>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field(
                "security",
                &self.security.iter().map(|c| c.name()).collect::<Vec<_>>(),
            )
            .field(
                "user",
                &self.user.iter().map(|h| h.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Gate {
    /// A builder with empty buckets.
    pub fn builder() -> GateBuilder {
        GateBuilder::default()
    }

    /// The verdict on `call`. Never panics: a control or hook that panics
    /// is a fail-closed deny.
    pub fn check(&self, call: &ToolCall) -> GateResult {
        if self.user.is_empty() {
            return run_pass(&self.security, call, Stage::Security);
        }
        let before = run_pass(&self.security, call, Stage::SecurityBefore);
        if before.is_denied() {
            return before;
        }
        let mut current = Cow::Borrowed(call);
        let mut rewritten = false;
        for hook in &self.user {
            match run_hook(hook.as_ref(), &current) {
                HookVerdict::Continue => {}
                HookVerdict::Rewrite(arguments) => {
                    current.to_mut().arguments = arguments;
                    rewritten = true;
                }
                HookVerdict::Refuse(result) => {
                    let result = result.attributed(hook.name(), Stage::UserHooks);
                    log_refusal(&result, call);
                    return result;
                }
            }
        }
        let after = run_pass(&self.security, &current, Stage::SecurityAfter);
        if after.is_denied() {
            return after;
        }
        GateResult::allowed_with(rewritten.then(|| current.into_owned().arguments))
    }

    /// Checks `call` and returns the call to run (with rewritten arguments
    /// when a user hook rewrote them), or the refusal as an error.
    pub fn authorize(&self, mut call: ToolCall) -> Result<ToolCall, GateDenied> {
        let result = self.check(&call);
        if let Some(denied) = result.denial(&call) {
            return Err(denied);
        }
        if let Some(arguments) = result.rewritten_arguments() {
            call.arguments = arguments.clone();
        }
        Ok(call)
    }

    /// The security controls' names, in pass order.
    pub fn security_controls(&self) -> impl Iterator<Item = &str> {
        self.security.iter().map(|c| c.name())
    }

    /// The user hooks' names, in order.
    pub fn user_hooks(&self) -> impl Iterator<Item = &str> {
        self.user.iter().map(|h| h.name())
    }
}

/// Builds a [`Gate`].
#[derive(Default)]
pub struct GateBuilder {
    security: Vec<Arc<dyn Control>>,
    user: Vec<Arc<dyn PreHook>>,
}

impl GateBuilder {
    /// Adds a security control (runs in every security pass).
    #[must_use]
    pub fn security(mut self, control: impl Control + 'static) -> Self {
        self.security.push(Arc::new(control));
        self
    }

    /// Adds a shared security control.
    #[must_use]
    pub fn security_shared(mut self, control: Arc<dyn Control>) -> Self {
        self.security.push(control);
        self
    }

    /// Adds a user pre-hook (runs between the two security passes).
    #[must_use]
    pub fn user_hook(mut self, hook: impl PreHook + 'static) -> Self {
        self.user.push(Arc::new(hook));
        self
    }

    /// Wires the guards of an agent spec into the security bucket: the
    /// permission policy, then the destructive-command guard, then the path
    /// guard (GATE-005).
    pub fn spec(mut self, spec: GuardSpec) -> Result<Self, Error> {
        if let Some(policy) = spec.permission {
            self = self.security(policy);
        }
        if spec.guard_destructive {
            self = self.security(DestructiveGuard::default());
        }
        if let Some(config) = spec.guard_paths {
            self = self.security(PathGuard::new(config)?);
        }
        Ok(self)
    }

    /// The gate.
    pub fn build(self) -> Gate {
        Gate {
            security: self.security,
            user: self.user,
        }
    }
}

/// Runs one security pass: every control once, in order, each inside a
/// panic boundary; the first refusal ends the pass and is returned,
/// attributed to its control and `stage`. An errored refusal is logged at
/// error level; a plain denial logs nothing (GATE-010).
pub fn run_pass(controls: &[Arc<dyn Control>], call: &ToolCall, stage: Stage) -> GateResult {
    for control in controls {
        let result = match catch_unwind(AssertUnwindSafe(|| control.evaluate(call))) {
            Ok(result) => result,
            Err(payload) => GateResult::evaluator_failed(format!(
                "control panicked: {}",
                panic_message(payload.as_ref())
            )),
        };
        if result.is_denied() {
            let result = result.attributed(control.name(), stage);
            log_refusal(&result, call);
            return result;
        }
    }
    GateResult::allow()
}

fn run_hook(hook: &dyn PreHook, call: &ToolCall) -> HookVerdict {
    match catch_unwind(AssertUnwindSafe(|| hook.call(call))) {
        Ok(answer) => adapt_hook_answer(answer),
        Err(payload) => HookVerdict::Refuse(GateResult::evaluator_failed(format!(
            "hook panicked: {}",
            panic_message(payload.as_ref())
        ))),
    }
}

fn log_refusal(result: &GateResult, call: &ToolCall) {
    if result.errored() {
        tracing::error!(
            server = %call.server,
            tool = %call.tool,
            control = result.control().unwrap_or("gate"),
            stage = result.stage().map_or("gate", Stage::as_str),
            reason = result.reason().unwrap_or(""),
            "tool-call control could not answer; call refused"
        );
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
