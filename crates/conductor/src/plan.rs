//! The plan model (a DAG of ops), its parsing and its validation.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use lifecycle_core::reasons::PlayReasons;
use serde::{Deserialize, Serialize};

/// The providers an op's `agent.provider` may name.
pub const PROVIDERS: &[&str] = &["scripted", "claude", "codex", "gemini", "pi"];

/// A plan: the ops of one flow. Unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The ops, in the order they are listed (the scheduler's tie-break).
    pub ops: Vec<Op>,
}

/// One op: an agent leg with its dependencies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Op {
    /// The op's id: letters, digits, `-`, `_` and `.`, not starting with
    /// `.` (it names the op's session and artifact subdirectory).
    pub id: String,
    /// Who runs it.
    #[serde(default)]
    pub agent: Agent,
    /// The ops that must finish first; their results are in this op's
    /// prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// Files the op must leave in its artifact subdirectory (relative
    /// paths); a missing one fails the op.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// The synthesis op: at most one; with no `depends_on` it depends on
    /// every other op, and nothing may depend on it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub synthesis: bool,
}

/// The agent of an op.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    /// The provider (scripted, claude, codex, gemini, pi); default: the
    /// one `model` names as PROVIDER/MODEL, else scripted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model, or li's PROVIDER/MODEL spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The effort (none .. ultra).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// The prompt (this or `prompt_file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// A file holding the prompt, relative to the plan file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_file: Option<PathBuf>,
    /// The `.mcp.json` whose servers are forwarded to the leg once their
    /// tools are admitted, relative to the plan file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_config: Option<PathBuf>,
    /// The scripted provider's JSON script, relative to the plan file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<PathBuf>,
}

impl Plan {
    /// A plan from JSON text.
    pub fn from_json(text: &str) -> Result<Self, PlanError> {
        serde_json::from_str(text).map_err(|e| PlanError::Parse(e.to_string()))
    }

    /// A plan from YAML text (a JSON document is YAML too).
    pub fn from_yaml(text: &str) -> Result<Self, PlanError> {
        serde_saphyr::from_str(text).map_err(|e| PlanError::Parse(e.to_string()))
    }
}

/// Why a plan is refused. Every refusal comes before anything starts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The text is not a plan.
    #[error("not a plan: {0}")]
    Parse(String),
    /// No ops.
    #[error("the plan has no ops")]
    Empty,
    /// An id that cannot name a session or a subdirectory.
    #[error("op id {0:?} must be 1-64 letters, digits, '-', '_' or '.', not starting with '.'")]
    BadId(String),
    /// Two ops share an id.
    #[error("op id {0:?} is used twice")]
    DuplicateId(String),
    /// A dependency names no op.
    #[error("op {op:?} depends on {dep:?}, which is not an op of the plan")]
    UnknownDependency {
        /// The op.
        op: String,
        /// The unknown id.
        dep: String,
    },
    /// The dependencies go round (a self-dependency included).
    #[error("the dependencies form a cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    /// More ops than allowed.
    #[error("the plan has {count} ops, more than --max-ops {max}")]
    TooManyOps {
        /// Ops in the plan.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A provider lionrt does not drive.
    #[error("op {op:?}: unknown provider {provider:?} (one of {})", PROVIDERS.join(", "))]
    UnknownProvider {
        /// The op.
        op: String,
        /// The provider named.
        provider: String,
    },
    /// An op with neither prompt nor prompt_file.
    #[error("op {0:?} has no prompt (give agent.prompt or agent.prompt_file)")]
    MissingPrompt(String),
    /// An op with both.
    #[error("op {0:?} has both agent.prompt and agent.prompt_file")]
    TwoPrompts(String),
    /// More than one synthesis op.
    #[error("ops {0:?} and {1:?} are both synthesis ops (at most one)")]
    TwoSyntheses(String, String),
    /// An op depends on the synthesis op.
    #[error("op {dependent:?} depends on the synthesis op {synthesis:?}, which ends the flow")]
    SynthesisHasDependents {
        /// The synthesis op.
        synthesis: String,
        /// The op depending on it.
        dependent: String,
    },
}

impl PlanError {
    /// The vocabulary's reason for a plan refused for its graph (a
    /// duplicate id, an unknown dependency, a cycle, too many ops, an op
    /// after the synthesis): `play.blocked.invalid_deps`. `None` for a
    /// plan that is malformed otherwise.
    pub fn reason_code(&self) -> Option<&'static str> {
        match self {
            Self::DuplicateId(_)
            | Self::UnknownDependency { .. }
            | Self::Cycle(_)
            | Self::TooManyOps { .. }
            | Self::SynthesisHasDependents { .. } => Some(PlayReasons::BLOCKED_INVALID_DEPS),
            Self::Parse(_)
            | Self::Empty
            | Self::BadId(_)
            | Self::UnknownProvider { .. }
            | Self::MissingPrompt(_)
            | Self::TwoPrompts(_)
            | Self::TwoSyntheses(..) => None,
        }
    }
}

/// A plan that passed [`validate`]: ops by index, with their dependencies
/// resolved (the synthesis op's implicit ones included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidPlan {
    ops: Vec<Op>,
    deps: Vec<Vec<usize>>,
    dependents: Vec<Vec<usize>>,
    synthesis: Option<usize>,
}

impl ValidPlan {
    /// The ops, in plan order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The indexes `op` depends on (sorted, no duplicates).
    pub fn deps(&self, op: usize) -> &[usize] {
        &self.deps[op]
    }

    /// The indexes that depend on `op` directly (sorted).
    pub fn dependents(&self, op: usize) -> &[usize] {
        &self.dependents[op]
    }

    /// The synthesis op, if any.
    pub fn synthesis(&self) -> Option<usize> {
        self.synthesis
    }

    /// The index of the op `id`.
    pub fn index(&self, id: &str) -> Option<usize> {
        self.ops.iter().position(|o| o.id == id)
    }
}

fn good_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Checks a plan: ids, prompts, at most `max_ops` ops, every dependency
/// known, no cycle, at most one synthesis op and nothing after it.
pub fn validate(plan: Plan, max_ops: usize) -> Result<ValidPlan, PlanError> {
    let ops = plan.ops;
    if ops.is_empty() {
        return Err(PlanError::Empty);
    }
    if ops.len() > max_ops {
        return Err(PlanError::TooManyOps {
            count: ops.len(),
            max: max_ops,
        });
    }
    let mut index = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        if !good_id(&op.id) {
            return Err(PlanError::BadId(op.id.clone()));
        }
        if index.insert(op.id.as_str(), i).is_some() {
            return Err(PlanError::DuplicateId(op.id.clone()));
        }
        if let Some(p) = op
            .agent
            .provider
            .as_deref()
            .filter(|p| !PROVIDERS.contains(p))
        {
            return Err(PlanError::UnknownProvider {
                op: op.id.clone(),
                provider: p.to_owned(),
            });
        }
        match (&op.agent.prompt, &op.agent.prompt_file) {
            (None, None) => return Err(PlanError::MissingPrompt(op.id.clone())),
            (Some(_), Some(_)) => return Err(PlanError::TwoPrompts(op.id.clone())),
            (Some(p), None) if !p.chars().any(|c| !c.is_whitespace()) => {
                return Err(PlanError::MissingPrompt(op.id.clone()));
            }
            _ => {}
        }
    }
    let mut synthesis: Option<usize> = None;
    for (i, op) in ops.iter().enumerate().filter(|(_, o)| o.synthesis) {
        if let Some(first) = synthesis {
            return Err(PlanError::TwoSyntheses(
                ops[first].id.clone(),
                op.id.clone(),
            ));
        }
        synthesis = Some(i);
    }
    let mut deps = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let mut mine = BTreeSet::new();
        for dep in &op.depends_on {
            let Some(&d) = index.get(dep.as_str()) else {
                return Err(PlanError::UnknownDependency {
                    op: op.id.clone(),
                    dep: dep.clone(),
                });
            };
            if Some(d) == synthesis && d != i {
                return Err(PlanError::SynthesisHasDependents {
                    synthesis: dep.clone(),
                    dependent: op.id.clone(),
                });
            }
            mine.insert(d);
        }
        if op.synthesis && op.depends_on.is_empty() {
            mine.extend((0..ops.len()).filter(|&j| j != i));
        }
        deps.push(mine.into_iter().collect::<Vec<_>>());
    }
    let mut dependents = vec![Vec::new(); ops.len()];
    for (i, mine) in deps.iter().enumerate() {
        for &d in mine {
            dependents[d].push(i);
        }
    }
    if let Some(cycle) = find_cycle(&deps) {
        return Err(PlanError::Cycle(
            cycle.into_iter().map(|i| ops[i].id.clone()).collect(),
        ));
    }
    Ok(ValidPlan {
        ops,
        deps,
        dependents,
        synthesis,
    })
}

/// One cycle of the graph, as a closed walk `a -> .. -> a` along
/// dependencies, or `None` when the graph is acyclic (Kahn's algorithm;
/// every op left over depends on another op left over).
fn find_cycle(deps: &[Vec<usize>]) -> Option<Vec<usize>> {
    let n = deps.len();
    let mut waiting: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut dependents = vec![Vec::new(); n];
    for (i, mine) in deps.iter().enumerate() {
        for &d in mine {
            dependents[d].push(i);
        }
    }
    let mut queue: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    let mut done = vec![false; n];
    while let Some(i) = queue.pop() {
        done[i] = true;
        for &j in &dependents[i] {
            waiting[j] -= 1;
            if waiting[j] == 0 {
                queue.push(j);
            }
        }
    }
    let start = (0..n).find(|&i| !done[i])?;
    // Walk along unfinished dependencies until an op repeats.
    let mut seen = vec![None; n];
    let mut walk = Vec::new();
    let mut at = start;
    loop {
        if let Some(pos) = seen[at] {
            let mut cycle: Vec<usize> = walk[pos..].to_vec();
            cycle.push(at);
            return Some(cycle);
        }
        seen[at] = Some(walk.len());
        walk.push(at);
        at = *deps[at].iter().find(|&&d| !done[d])?;
    }
}

/// `lionrt fanout`: `n` workers given one task, and with `synthesis` an op
/// that receives every worker's result. `synthesis_agent` is its agent
/// (its prompt is set here).
pub fn fanout_plan(n: usize, task: &str, worker: &Agent, synthesis: Option<&Agent>) -> Plan {
    let mut ops: Vec<Op> = (1..=n)
        .map(|i| Op {
            id: format!("worker-{i}"),
            agent: Agent {
                prompt: Some(task.to_owned()),
                prompt_file: None,
                ..worker.clone()
            },
            depends_on: Vec::new(),
            artifacts: Vec::new(),
            synthesis: false,
        })
        .collect();
    if let Some(agent) = synthesis {
        ops.push(Op {
            id: "synthesis".into(),
            agent: Agent {
                prompt: Some(format!(
                    "{n} agents were given the task below. Their results follow it. \
                     Synthesise them into one answer: what they agree on, where they \
                     differ, and the best result.\n\nThe task:\n\n{task}"
                )),
                prompt_file: None,
                ..agent.clone()
            },
            depends_on: Vec::new(),
            artifacts: Vec::new(),
            synthesis: true,
        });
    }
    Plan {
        name: Some("fanout".into()),
        ops,
    }
}

#[cfg(test)]
mod tests;
