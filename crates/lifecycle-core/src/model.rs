//! Immutable command and outcome records shared by every store.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::CoreError;

/// Who asks for a change. The set is closed: a store never records an actor
/// type outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorType {
    /// A process executing a run (an agent leg's supervisor).
    Executor,
    /// An agent acting in-band.
    Agent,
    /// A human administrator.
    Admin,
    /// The runtime itself (reapers, mirrors, recovery).
    System,
    /// The scheduler.
    Scheduler,
    /// An operator using `lionrt` or another out-of-band tool.
    Operator,
    /// An inbound webhook.
    Webhook,
}

impl ActorType {
    /// Every actor type, in declaration order.
    pub const ALL: [ActorType; 7] = [
        ActorType::Executor,
        ActorType::Agent,
        ActorType::Admin,
        ActorType::System,
        ActorType::Scheduler,
        ActorType::Operator,
        ActorType::Webhook,
    ];

    /// The wire name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            ActorType::Executor => "executor",
            ActorType::Agent => "agent",
            ActorType::Admin => "admin",
            ActorType::System => "system",
            ActorType::Scheduler => "scheduler",
            ActorType::Operator => "operator",
            ActorType::Webhook => "webhook",
        }
    }

    /// Parses a wire name; unknown names are an error naming the input.
    pub fn parse(name: &str) -> Result<Self, CoreError> {
        ActorType::ALL
            .into_iter()
            .find(|t| t.as_str() == name)
            .ok_or_else(|| CoreError::UnknownActorType(name.to_owned()))
    }
}

impl fmt::Display for ActorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An actor: a type and an identifier (a pid, a user name, a job id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// The actor's type.
    #[serde(rename = "type")]
    pub kind: ActorType,
    /// The actor's identifier.
    pub id: String,
}

impl Actor {
    /// Builds an actor.
    pub fn new(kind: ActorType, id: impl Into<String>) -> Self {
        Actor {
            kind,
            id: id.into(),
        }
    }
}

/// Why a status changes: a registered reason code plus free evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reason {
    /// A registered reason code (see [`crate::reasons`]).
    pub code: String,
    /// A one-line human summary.
    #[serde(default)]
    pub summary: String,
    /// References to evidence (paths, ids, urls).
    #[serde(default)]
    pub evidence_refs: Vec<String>,
    /// Free structured metadata.
    #[serde(default)]
    pub metadata: BTreeMap<String, Value>,
}

impl Reason {
    /// A reason with only a code.
    pub fn new(code: impl Into<String>) -> Self {
        Reason {
            code: code.into(),
            summary: String::new(),
            evidence_refs: Vec::new(),
            metadata: BTreeMap::new(),
        }
    }

    /// Sets the summary.
    pub fn with_summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = summary.into();
        self
    }
}

/// The audited escape hatch: lets a transition leave a terminal status or take
/// an undeclared edge. Every use is recorded in `admin_events`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Override {
    /// Who overrides. Only admin, operator and system actors may.
    pub actor: Actor,
    /// Why; must not be blank.
    pub justification: String,
}

impl Override {
    /// Actor types allowed to override. The spec leaves "valid override"
    /// open; we read it closed: a human-accountable or runtime-internal actor
    /// with a non-blank id and justification.
    pub const ALLOWED_ACTORS: [ActorType; 3] =
        [ActorType::Admin, ActorType::Operator, ActorType::System];

    /// Checks validity; an invalid override is a caller-contract error, not a
    /// silent refusal.
    pub fn validate(&self) -> Result<(), CoreError> {
        if !Self::ALLOWED_ACTORS.contains(&self.actor.kind) {
            return Err(CoreError::InvalidOverride(format!(
                "actor type {} may not override",
                self.actor.kind
            )));
        }
        if self.actor.id.trim().is_empty() {
            return Err(CoreError::InvalidOverride("actor id is blank".into()));
        }
        if self.justification.trim().is_empty() {
            return Err(CoreError::InvalidOverride("justification is blank".into()));
        }
        Ok(())
    }
}

/// One member of a transition's expected-status set.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expected {
    /// The row does not exist yet.
    NoRow,
    /// The row holds this status.
    Status(String),
}

/// Creates an entity in one of its policy's initial statuses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitialCommand {
    /// The entity type (a registered policy).
    pub entity_type: String,
    /// The entity's id.
    pub entity_id: String,
    /// An initial status of the policy.
    pub status: String,
    /// Why.
    pub reason: Reason,
    /// Who.
    pub actor: Actor,
    /// Extra columns set on the new row (must be patch fields).
    #[serde(default)]
    pub patch: BTreeMap<String, Value>,
}

/// Moves an entity to another status: the public command shape. It has no
/// per-column guard and no switches; those belong to the compatibility
/// surfaces only (see [`crate::CompatOptions`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransitionCommand {
    /// The entity type (a registered policy).
    pub entity_type: String,
    /// The entity's id.
    pub entity_id: String,
    /// The status to move to.
    pub to_status: String,
    /// Why.
    pub reason: Reason,
    /// Who.
    pub actor: Actor,
    /// The statuses the caller read; empty means "any current status".
    #[serde(default)]
    pub expected_statuses: BTreeSet<Expected>,
    /// The `updated_at` the caller read; a mismatch is a conflict.
    #[serde(default)]
    pub expected_version: Option<i64>,
    /// Columns written with the status change (must be patch fields).
    #[serde(default)]
    pub patch: BTreeMap<String, Value>,
    /// The audited escape hatch.
    #[serde(default, rename = "override")]
    pub override_: Option<Override>,
}

impl TransitionCommand {
    /// A command with no expectations, patch or override.
    pub fn new(
        entity_type: impl Into<String>,
        entity_id: impl Into<String>,
        to_status: impl Into<String>,
        reason: Reason,
        actor: Actor,
    ) -> Self {
        TransitionCommand {
            entity_type: entity_type.into(),
            entity_id: entity_id.into(),
            to_status: to_status.into(),
            reason,
            actor,
            expected_statuses: BTreeSet::new(),
            expected_version: None,
            patch: BTreeMap::new(),
            override_: None,
        }
    }

    /// Adds an expected current status.
    pub fn expecting(mut self, status: impl Into<String>) -> Self {
        self.expected_statuses
            .insert(Expected::Status(status.into()));
        self
    }

    /// Sets the expected version (`updated_at`).
    pub fn with_version(mut self, version: i64) -> Self {
        self.expected_version = Some(version);
        self
    }

    /// Adds a patch column.
    pub fn with_patch(mut self, column: impl Into<String>, value: Value) -> Self {
        self.patch.insert(column.into(), value);
        self
    }

    /// Sets the override.
    pub fn with_override(mut self, o: Override) -> Self {
        self.override_ = Some(o);
        self
    }
}

/// The three outcome kinds a transition can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// The status changed (or a same-status no-op was accepted).
    Applied,
    /// The row was not in the state the caller expected; nothing written.
    Conflict,
    /// The policy refused the move; a rejection audit row was written.
    Rejected,
}

impl OutcomeKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Applied => "applied",
            OutcomeKind::Conflict => "conflict",
            OutcomeKind::Rejected => "rejected",
        }
    }
}

/// What a transition did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// Applied, conflict or rejected.
    pub result: OutcomeKind,
    /// The status before the call (None: no row).
    pub previous_status: Option<String>,
    /// The status after the call.
    pub current_status: Option<String>,
    /// The history row written, if any.
    pub transition_id: Option<i64>,
}
