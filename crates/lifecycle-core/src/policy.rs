//! Transition policies, their immutable edge maps and the policy registry.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::model::ActorType;

/// One declared move out of a status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    /// The status this edge leads to.
    pub to_status: String,
    /// Actor types allowed to take the edge; `None` means any.
    #[serde(default)]
    pub actor_types: Option<BTreeSet<ActorType>>,
    /// Patch columns the command must carry to take the edge.
    #[serde(default)]
    pub required_patch_fields: BTreeSet<String>,
    /// Columns a self-edge must be guarded on (or an expected version given).
    #[serde(default)]
    pub required_guard_fields: BTreeSet<String>,
}

impl Edge {
    /// A plain edge open to every actor.
    pub fn to(status: impl Into<String>) -> Self {
        Edge {
            to_status: status.into(),
            actor_types: None,
            required_patch_fields: BTreeSet::new(),
            required_guard_fields: BTreeSet::new(),
        }
    }

    /// Whether `actor` may take this edge.
    pub fn allows(&self, actor: ActorType) -> bool {
        self.actor_types
            .as_ref()
            .is_none_or(|set| set.contains(&actor))
    }
}

/// The declared-edge graph of a policy, read-only once built.
///
/// **Invariant:** the inner map is private and no method hands out `&mut`
/// access; clones and deserialised copies are rebuilt through [`EdgeMap::new`],
/// so they are as immutable as the original.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<(String, Edge)>", into = "Vec<(String, Edge)>")]
pub struct EdgeMap {
    edges: BTreeMap<String, BTreeMap<String, Edge>>,
    len: usize,
}

impl EdgeMap {
    /// Builds a map from `(from_status, edge)` pairs; a repeated pair is an
    /// error rather than a silent overwrite.
    pub fn new(pairs: impl IntoIterator<Item = (String, Edge)>) -> Result<Self, CoreError> {
        let mut edges: BTreeMap<String, BTreeMap<String, Edge>> = BTreeMap::new();
        let mut len = 0;
        for (from, edge) in pairs {
            let to = edge.to_status.clone();
            if edges
                .entry(from.clone())
                .or_default()
                .insert(to.clone(), edge)
                .is_some()
            {
                return Err(CoreError::InvalidPolicy(format!(
                    "edge {from} -> {to} declared twice"
                )));
            }
            len += 1;
        }
        Ok(EdgeMap { edges, len })
    }

    /// The edge `from -> to`, if declared.
    pub fn get(&self, from: &str, to: &str) -> Option<&Edge> {
        self.edges.get(from).and_then(|m| m.get(to))
    }

    /// Whether `from -> to` is declared.
    pub fn contains(&self, from: &str, to: &str) -> bool {
        self.get(from, to).is_some()
    }

    /// The edges leaving `from`.
    pub fn from(&self, from: &str) -> impl Iterator<Item = &Edge> {
        self.edges.get(from).into_iter().flat_map(|m| m.values())
    }

    /// Every `(from, edge)` pair, in sorted order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Edge)> {
        self.edges
            .iter()
            .flat_map(|(from, m)| m.values().map(move |e| (from.as_str(), e)))
    }

    /// The number of declared edges.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no edge is declared.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl TryFrom<Vec<(String, Edge)>> for EdgeMap {
    type Error = CoreError;
    fn try_from(pairs: Vec<(String, Edge)>) -> Result<Self, CoreError> {
        EdgeMap::new(pairs)
    }
}

impl From<EdgeMap> for Vec<(String, Edge)> {
    fn from(map: EdgeMap) -> Self {
        map.iter().map(|(f, e)| (f.to_owned(), e.clone())).collect()
    }
}

/// What a move to the current status does when no self-edge is declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SameStatus {
    /// Write a history row (a heartbeat-like re-stamp).
    Append,
    /// Accept without writing anything.
    Noop,
    /// Refuse with a rejected outcome.
    Reject,
}

/// Plain, mutable description of a policy, turned into a validated
/// [`Policy`] by [`Policy::new`]. Also what [`Policy::to_spec`] returns: an
/// independent deep copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicySpec {
    /// The entity type name.
    pub entity_type: String,
    /// The table holding the entities.
    pub table: String,
    /// The status vocabulary.
    pub statuses: Vec<String>,
    /// Statuses a new row may start in.
    pub initial_statuses: Vec<String>,
    /// Statuses that need an override (or a declared edge) to leave.
    pub terminal_statuses: Vec<String>,
    /// Declared edges as `(from, edge)` pairs.
    pub edges: Vec<(String, Edge)>,
    /// The same-status rule.
    pub same_status: SameStatus,
    /// Columns a command may patch.
    pub patch_fields: Vec<String>,
    /// Allowed first dotted segments of reason codes.
    pub reason_prefixes: Vec<String>,
    /// Whether the table has `status_reason_*` columns.
    pub reason_columns: bool,
}

/// A validated, immutable transition policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    entity_type: String,
    table: String,
    statuses: BTreeSet<String>,
    status_order: Vec<String>,
    initial: BTreeSet<String>,
    terminal: BTreeSet<String>,
    edges: EdgeMap,
    same_status: SameStatus,
    patch_fields: BTreeSet<String>,
    reason_prefixes: BTreeSet<String>,
    reason_columns: bool,
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

impl Policy {
    /// Validates a spec: statuses, initial, terminal and edge statuses inside
    /// the vocabulary; required patch and guard fields inside the patch
    /// fields; table and column names plain identifiers (they reach SQL text).
    pub fn new(spec: PolicySpec) -> Result<Self, CoreError> {
        let bad = |msg: String| CoreError::InvalidPolicy(format!("{}: {msg}", spec.entity_type));
        if !is_identifier(&spec.entity_type) || !is_identifier(&spec.table) {
            return Err(bad(
                "entity type and table must be lowercase identifiers".into()
            ));
        }
        let statuses: BTreeSet<String> = spec.statuses.iter().cloned().collect();
        if statuses.len() != spec.statuses.len() || statuses.is_empty() {
            return Err(bad("statuses must be non-empty and unique".into()));
        }
        let check = |what: &str, list: &[String]| -> Result<BTreeSet<String>, CoreError> {
            match list.iter().find(|s| !statuses.contains(*s)) {
                Some(s) => Err(bad(format!("{what} status {s:?} is not in the vocabulary"))),
                None => Ok(list.iter().cloned().collect()),
            }
        };
        let initial = check("initial", &spec.initial_statuses)?;
        if initial.is_empty() {
            return Err(bad("at least one initial status is required".into()));
        }
        let terminal = check("terminal", &spec.terminal_statuses)?;
        if let Some(f) = spec.patch_fields.iter().find(|f| !is_identifier(f)) {
            return Err(bad(format!(
                "patch field {f:?} is not a lowercase identifier"
            )));
        }
        let patch_fields: BTreeSet<String> = spec.patch_fields.iter().cloned().collect();
        for (from, edge) in &spec.edges {
            for s in [from, &edge.to_status] {
                if !statuses.contains(s) {
                    return Err(bad(format!("edge status {s:?} is not in the vocabulary")));
                }
            }
            let fields = edge
                .required_patch_fields
                .iter()
                .chain(&edge.required_guard_fields);
            if let Some(f) = fields.into_iter().find(|f| !patch_fields.contains(*f)) {
                return Err(bad(format!(
                    "edge {from} -> {} requires field {f:?} that is not a patch field",
                    edge.to_status
                )));
            }
            if !edge.required_guard_fields.is_empty() && from != &edge.to_status {
                return Err(bad(format!(
                    "edge {from} -> {}: guard fields are only meaningful on a self-edge",
                    edge.to_status
                )));
            }
        }
        if spec.reason_prefixes.is_empty() {
            return Err(bad("at least one reason prefix is required".into()));
        }
        Ok(Policy {
            edges: EdgeMap::new(spec.edges.clone())?,
            entity_type: spec.entity_type,
            table: spec.table,
            status_order: spec.statuses,
            statuses,
            initial,
            terminal,
            same_status: spec.same_status,
            patch_fields,
            reason_prefixes: spec.reason_prefixes.into_iter().collect(),
            reason_columns: spec.reason_columns,
        })
    }

    /// An independent plain-data copy (the `asdict` of the original).
    pub fn to_spec(&self) -> PolicySpec {
        PolicySpec {
            entity_type: self.entity_type.clone(),
            table: self.table.clone(),
            statuses: self.status_order.clone(),
            initial_statuses: self.initial.iter().cloned().collect(),
            terminal_statuses: self.terminal.iter().cloned().collect(),
            edges: self.edges.clone().into(),
            same_status: self.same_status,
            patch_fields: self.patch_fields.iter().cloned().collect(),
            reason_prefixes: self.reason_prefixes.iter().cloned().collect(),
            reason_columns: self.reason_columns,
        }
    }

    /// The entity type.
    pub fn entity_type(&self) -> &str {
        &self.entity_type
    }
    /// The table.
    pub fn table(&self) -> &str {
        &self.table
    }
    /// The vocabulary, in declaration order.
    pub fn statuses(&self) -> &[String] {
        &self.status_order
    }
    /// Whether `s` is in the vocabulary.
    pub fn has_status(&self, s: &str) -> bool {
        self.statuses.contains(s)
    }
    /// Whether `s` is an initial status.
    pub fn is_initial(&self, s: &str) -> bool {
        self.initial.contains(s)
    }
    /// Whether `s` is terminal.
    pub fn is_terminal(&self, s: &str) -> bool {
        self.terminal.contains(s)
    }
    /// The terminal statuses.
    pub fn terminal_statuses(&self) -> impl Iterator<Item = &str> {
        self.terminal.iter().map(String::as_str)
    }
    /// The declared-edge graph.
    pub fn edges(&self) -> &EdgeMap {
        &self.edges
    }
    /// The same-status rule.
    pub fn same_status(&self) -> SameStatus {
        self.same_status
    }
    /// Whether `column` may be patched.
    pub fn is_patch_field(&self, column: &str) -> bool {
        self.patch_fields.contains(column)
    }
    /// The patch fields.
    pub fn patch_fields(&self) -> impl Iterator<Item = &str> {
        self.patch_fields.iter().map(String::as_str)
    }
    /// Whether a reason code's first segment is allowed.
    pub fn allows_reason_prefix(&self, prefix: &str) -> bool {
        self.reason_prefixes.contains(prefix)
    }
    /// Whether the table has `status_reason_*` columns.
    pub fn has_reason_columns(&self) -> bool {
        self.reason_columns
    }
}

/// Registered policies by entity type. Registration validates; a sealed
/// registry refuses further registration.
#[derive(Debug, Clone, Default)]
pub struct PolicyRegistry {
    policies: BTreeMap<String, Arc<Policy>>,
    sealed: bool,
}

impl PolicyRegistry {
    /// An empty, unsealed registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Validates and stores a policy. Entity type and table must be unique.
    pub fn register(&mut self, spec: PolicySpec) -> Result<(), CoreError> {
        if self.sealed {
            return Err(CoreError::RegistrySealed(spec.entity_type));
        }
        let policy = Policy::new(spec)?;
        if self.policies.contains_key(policy.entity_type()) {
            return Err(CoreError::InvalidPolicy(format!(
                "entity type {} is already registered",
                policy.entity_type()
            )));
        }
        if self.policies.values().any(|p| p.table() == policy.table()) {
            return Err(CoreError::InvalidPolicy(format!(
                "table {} is already registered",
                policy.table()
            )));
        }
        self.policies
            .insert(policy.entity_type().to_owned(), Arc::new(policy));
        Ok(())
    }

    /// Refuses every later registration.
    pub fn seal(&mut self) {
        self.sealed = true;
    }

    /// Whether the registry is sealed.
    pub fn is_sealed(&self) -> bool {
        self.sealed
    }

    /// The policy of `entity_type`.
    pub fn get(&self, entity_type: &str) -> Result<&Arc<Policy>, CoreError> {
        self.policies
            .get(entity_type)
            .ok_or_else(|| CoreError::UnknownEntityType(entity_type.to_owned()))
    }

    /// Every policy, sorted by entity type.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Policy>> {
        self.policies.values()
    }
}

/// Entity types whose terminal transitions are run outcomes (they fire
/// terminal callbacks and appear in delivery reconciliation).
pub const EXECUTION_ENTITIES: [&str; 4] = ["session", "invocation", "schedule_run", "play"];

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn edges_all_to_all(statuses: &[&str], terminal: &[&str]) -> Vec<(String, Edge)> {
    let mut out = Vec::new();
    for from in statuses.iter().filter(|s| !terminal.contains(s)) {
        for to in statuses.iter().filter(|t| *t != from) {
            out.push(((*from).to_owned(), Edge::to(*to)));
        }
    }
    out
}

fn simple_edges(pairs: &[(&str, &[&str])]) -> Vec<(String, Edge)> {
    pairs
        .iter()
        .flat_map(|(from, tos)| {
            tos.iter()
                .map(move |to| ((*from).to_owned(), Edge::to(*to)))
        })
        .collect()
}

const RUN_STATUSES: [&str; 7] = [
    "running",
    "completed",
    "completed_empty",
    "failed",
    "timed_out",
    "aborted",
    "cancelled",
];

fn default_specs() -> Vec<PolicySpec> {
    let run_terminal: Vec<&str> = RUN_STATUSES[1..].to_vec();
    let run_edges = simple_edges(&[("running", &RUN_STATUSES[1..])]);
    let show = ["active", "completed", "aborted", "imported"];
    let show_terminal = ["completed", "aborted"];
    let play = [
        "pending",
        "prepared",
        "running",
        "running_complete",
        "gated",
        "gate_failed",
        "redoing",
        "merged",
        "escalated",
        "blocked",
        "aborted_after_finish",
    ];
    let play_terminal = [
        "merged",
        "escalated",
        "gate_failed",
        "blocked",
        "aborted_after_finish",
    ];
    let recovery = |from: &str| {
        (
            from.to_owned(),
            Edge {
                to_status: "pending".into(),
                actor_types: Some([ActorType::Operator].into_iter().collect()),
                required_patch_fields: ["attempt", "next_attempt_at", "last_error"]
                    .into_iter()
                    .map(String::from)
                    .collect(),
                required_guard_fields: BTreeSet::new(),
            },
        )
    };
    let mut dispatch_edges = simple_edges(&[
        ("pending", &["delivering", "expired", "acked"]),
        (
            "delivering",
            &["pending", "delivered", "acked", "dead_letter", "expired"],
        ),
    ]);
    dispatch_edges.push((
        "delivering".into(),
        Edge {
            required_guard_fields: ["attempt".to_owned()].into_iter().collect(),
            ..Edge::to("delivering")
        },
    ));
    dispatch_edges.push(recovery("dead_letter"));
    dispatch_edges.push(recovery("expired"));
    vec![
        PolicySpec {
            entity_type: "session".into(),
            table: "sessions".into(),
            statuses: strings(&RUN_STATUSES),
            initial_statuses: strings(&["running"]),
            terminal_statuses: strings(&run_terminal),
            edges: run_edges.clone(),
            same_status: SameStatus::Append,
            patch_fields: strings(&[
                "ended_at",
                "ended_at_is_approximate",
                "input_tokens",
                "output_tokens",
                "total_cost_usd",
                "num_turns",
                "duration_ms",
                "current_phase",
                "node_metadata",
            ]),
            reason_prefixes: strings(&["run", "session"]),
            reason_columns: true,
        },
        PolicySpec {
            entity_type: "invocation".into(),
            table: "invocations".into(),
            statuses: strings(&RUN_STATUSES),
            initial_statuses: strings(&["running"]),
            terminal_statuses: strings(&run_terminal),
            edges: run_edges,
            same_status: SameStatus::Append,
            patch_fields: strings(&["ended_at"]),
            reason_prefixes: strings(&["run"]),
            reason_columns: true,
        },
        PolicySpec {
            entity_type: "show".into(),
            table: "shows".into(),
            statuses: strings(&show),
            initial_statuses: strings(&["active", "imported"]),
            terminal_statuses: strings(&show_terminal),
            edges: edges_all_to_all(&show, &show_terminal),
            same_status: SameStatus::Append,
            patch_fields: strings(&["status_source"]),
            reason_prefixes: strings(&["show"]),
            reason_columns: true,
        },
        PolicySpec {
            entity_type: "play".into(),
            table: "plays".into(),
            statuses: strings(&play),
            initial_statuses: strings(&["pending"]),
            terminal_statuses: strings(&play_terminal),
            edges: edges_all_to_all(&play, &play_terminal),
            same_status: SameStatus::Append,
            patch_fields: strings(&[
                "ended_at",
                "exit_code",
                "merge_sha",
                "merged_at",
                "gate_passed",
                "gate_feedback",
            ]),
            reason_prefixes: strings(&["play"]),
            reason_columns: true,
        },
        PolicySpec {
            entity_type: "team".into(),
            table: "teams".into(),
            statuses: strings(&["active", "archived"]),
            initial_statuses: strings(&["active"]),
            terminal_statuses: strings(&["archived"]),
            edges: simple_edges(&[("active", &["archived"])]),
            same_status: SameStatus::Append,
            patch_fields: Vec::new(),
            reason_prefixes: strings(&["team"]),
            reason_columns: true,
        },
        PolicySpec {
            entity_type: "schedule_run".into(),
            table: "schedule_runs".into(),
            statuses: strings(&[
                "queued",
                "waiting_dependency",
                "running",
                "retry_wait",
                "completed",
                "failed",
                "timed_out",
                "skipped",
                "cancelled",
            ]),
            initial_statuses: strings(&["queued", "running", "failed", "skipped"]),
            terminal_statuses: strings(&[
                "completed",
                "failed",
                "timed_out",
                "skipped",
                "cancelled",
            ]),
            edges: simple_edges(&[
                (
                    "queued",
                    &["waiting_dependency", "running", "skipped", "cancelled"],
                ),
                ("waiting_dependency", &["queued", "cancelled"]),
                (
                    "running",
                    &[
                        "completed",
                        "failed",
                        "timed_out",
                        "retry_wait",
                        "queued",
                        "cancelled",
                    ],
                ),
                ("retry_wait", &["queued", "cancelled"]),
            ]),
            same_status: SameStatus::Append,
            patch_fields: strings(&[
                "ended_at",
                "exit_code",
                "error_detail",
                "invocation_id",
                "queued_at",
                "leased_by",
                "lease_expires_at",
                "lease_attempts",
            ]),
            reason_prefixes: strings(&["run", "schedule"]),
            reason_columns: true,
        },
        PolicySpec {
            entity_type: "dispatch".into(),
            table: "dispatch_outbox".into(),
            statuses: strings(&[
                "pending",
                "delivering",
                "delivered",
                "acked",
                "dead_letter",
                "expired",
            ]),
            initial_statuses: strings(&["pending"]),
            terminal_statuses: strings(&["delivered", "acked", "dead_letter", "expired"]),
            edges: dispatch_edges,
            same_status: SameStatus::Append,
            patch_fields: strings(&["attempt", "next_attempt_at", "last_error"]),
            reason_prefixes: strings(&["dispatch"]),
            reason_columns: false,
        },
        PolicySpec {
            entity_type: "schedule".into(),
            table: "schedules".into(),
            statuses: strings(&["enabled", "disabled", "deleted"]),
            initial_statuses: strings(&["enabled", "disabled"]),
            terminal_statuses: strings(&["deleted"]),
            edges: simple_edges(&[
                ("enabled", &["disabled", "deleted"]),
                ("disabled", &["enabled", "deleted"]),
            ]),
            same_status: SameStatus::Noop,
            patch_fields: Vec::new(),
            reason_prefixes: strings(&["schedule_definition"]),
            reason_columns: true,
        },
    ]
}

static DEFAULT_REGISTRY: LazyLock<PolicyRegistry> = LazyLock::new(|| {
    let mut registry = PolicyRegistry::new();
    for spec in default_specs() {
        // The default specs are constants of this crate; a failure here is a
        // bug caught by the test suite, never a result of input.
        if let Err(e) = registry.register(spec) {
            unreachable!("default policy invalid: {e}");
        }
    }
    registry.seal();
    registry
});

/// The sealed registry of the default policies (lifecycle vocabulary).
pub fn default_registry() -> &'static PolicyRegistry {
    &DEFAULT_REGISTRY
}

/// The default policy specs, for callers building their own registry.
pub fn default_policy_specs() -> Vec<PolicySpec> {
    default_specs()
}
