//! The invocation-time permission policy, keyed by tool name, with
//! escalation to a handler.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::call::ToolCall;
use crate::control::{Control, permission_result};
use crate::error::{ControlUnavailable, Error, PermissionError};
use crate::result::GateResult;

/// What a rule (or the policy's default) says about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Let the call run.
    Allow,
    /// Ask the escalation handler.
    Escalate,
    /// Refuse the call.
    Deny,
}

/// An escalation handler's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EscalationAnswer {
    /// Let the call run.
    Approve,
    /// Refuse it; an ordinary denial that says it was declined.
    Decline {
        /// Why, when the handler says.
        reason: Option<String>,
    },
}

/// Decides escalated calls (a human in the loop, a coordinator).
pub trait EscalationHandler: Send + Sync {
    /// The answer for `call`, which matched the escalating rule `rule`.
    /// `Err` means the handler could not answer (e.g. nobody reachable): the
    /// call is refused as errored.
    fn escalate(&self, call: &ToolCall, rule: &str)
    -> Result<EscalationAnswer, ControlUnavailable>;
}

impl<F> EscalationHandler for F
where
    F: Fn(&ToolCall, &str) -> Result<EscalationAnswer, ControlUnavailable> + Send + Sync,
{
    fn escalate(
        &self,
        call: &ToolCall,
        rule: &str,
    ) -> Result<EscalationAnswer, ControlUnavailable> {
        self(call, rule)
    }
}

/// One rule: a tool-name pattern (and optionally a server-name pattern) and
/// its decision. Patterns are globs where `*` matches any run of characters
/// (including none); everything else matches itself, case-sensitively for an
/// allow rule and ignoring ASCII case for a deny or escalate rule (fail
/// closed: the restrictive reading wins).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    server: Option<String>,
    tool: String,
    decision: Decision,
}

impl Rule {
    /// A rule on tool names, whichever server offers them.
    pub fn tool(pattern: impl Into<String>, decision: Decision) -> Result<Self, Error> {
        let tool = checked_pattern(pattern.into())?;
        Ok(Self {
            server: None,
            tool,
            decision,
        })
    }

    /// A rule on tools of matching servers only.
    pub fn server_tool(
        server: impl Into<String>,
        tool: impl Into<String>,
        decision: Decision,
    ) -> Result<Self, Error> {
        Ok(Self {
            server: Some(checked_pattern(server.into())?),
            tool: checked_pattern(tool.into())?,
            decision,
        })
    }

    /// Allow rules match exactly; deny and escalate rules ignore ASCII case,
    /// so a server that answers `Bash` as well as `bash` cannot slip a call
    /// past a deny written in one spelling.
    fn matches(&self, call: &ToolCall) -> bool {
        let fold = self.decision != Decision::Allow;
        glob_match(&self.tool, &call.tool, fold)
            && self
                .server
                .as_deref()
                .is_none_or(|s| glob_match(s, &call.server, fold))
    }

    fn label(&self) -> String {
        match &self.server {
            Some(server) => format!("{server}/{}", self.tool),
            None => self.tool.clone(),
        }
    }
}

/// The permission policy. Among the rules that match a call the most
/// restrictive decision wins (deny over escalate over allow), whatever their
/// order, so adding a broad allow can never undo a narrow deny or skip a
/// narrow escalation (the original lets allow beat escalate; this reads it
/// closed); a call no rule matches gets the default.
/// [`PermissionPolicy::default`] denies.
#[derive(Clone)]
pub struct PermissionPolicy {
    rules: Vec<Rule>,
    default: Decision,
    on_escalate: Option<Arc<dyn EscalationHandler>>,
}

impl Default for PermissionPolicy {
    fn default() -> Self {
        Self::new(Decision::Deny)
    }
}

impl std::fmt::Debug for PermissionPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionPolicy")
            .field("rules", &self.rules)
            .field("default", &self.default)
            .field("on_escalate", &self.on_escalate.is_some())
            .finish()
    }
}

impl PermissionPolicy {
    /// A policy with no rules and `default` for every call.
    pub fn new(default: Decision) -> Self {
        Self {
            rules: Vec::new(),
            default,
            on_escalate: None,
        }
    }

    /// Adds a rule.
    #[must_use]
    pub fn with_rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Configures the escalation handler.
    #[must_use]
    pub fn on_escalate(mut self, handler: impl EscalationHandler + 'static) -> Self {
        self.on_escalate = Some(Arc::new(handler));
        self
    }

    /// The decision for `call` and the rule that gave it (`None`: default).
    pub fn decide(&self, call: &ToolCall) -> (Decision, Option<&Rule>) {
        self.rules
            .iter()
            .filter(|r| r.matches(call))
            .max_by_key(|r| r.decision)
            .map_or((self.default, None), |r| (r.decision, Some(r)))
    }

    /// The policy as a legacy pre-hook: `Ok(())` allows; a denial is a
    /// [`PermissionError`]. An escalate decision with no handler configured
    /// is [`ControlUnavailable`] (the policy cannot answer); a handler's
    /// decline is an ordinary denial that says it was declined (GATE-012).
    pub fn check(&self, call: &ToolCall) -> Result<(), PermissionError> {
        let (decision, rule) = self.decide(call);
        let label = rule.map_or_else(
            || "the default".to_owned(),
            |r| format!("rule {:?}", r.label()),
        );
        match decision {
            Decision::Allow => Ok(()),
            Decision::Deny => Err(PermissionError::denied(format!(
                "tool {:?} is denied by {label} of the permission policy",
                call.tool
            ))),
            Decision::Escalate => {
                let Some(handler) = &self.on_escalate else {
                    return Err(ControlUnavailable::new(format!(
                        "tool {:?} needs escalation ({label}) but no escalation handler is configured",
                        call.tool
                    ))
                    .into());
                };
                match handler.escalate(call, &rule.map_or_else(|| "*".to_owned(), Rule::label))? {
                    EscalationAnswer::Approve => Ok(()),
                    EscalationAnswer::Decline { reason } => Err(PermissionError::denied(format!(
                        "escalation for tool {:?} was declined by the handler{}",
                        call.tool,
                        reason.map(|r| format!(": {r}")).unwrap_or_default()
                    ))),
                }
            }
        }
    }
}

impl Control for PermissionPolicy {
    fn name(&self) -> &str {
        "permission-policy"
    }

    fn evaluate(&self, call: &ToolCall) -> GateResult {
        match self.check(call) {
            Ok(()) => GateResult::allow(),
            Err(e) => permission_result(&e),
        }
    }
}

fn checked_pattern(pattern: String) -> Result<String, Error> {
    if pattern.is_empty() {
        return Err(Error::InvalidPattern {
            pattern,
            reason: "empty pattern",
        });
    }
    Ok(pattern)
}

/// `*`-only glob matching, linear in practice (greedy with one backtrack
/// point), no allocation.
pub(crate) fn glob_match(pattern: &str, text: &str, fold_case: bool) -> bool {
    let same = |a: u8, b: u8| a == b || (fold_case && a.eq_ignore_ascii_case(&b));
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && same(p[pi], t[ti]) {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&b| b == b'*')
}
