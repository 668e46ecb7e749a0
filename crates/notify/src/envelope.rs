//! The run-terminal envelope (schema `lionagi.run-terminal`, version 1).
//!
//! Within version 1 the guaranteed fields below keep their names, types,
//! meanings and requiredness; new optional fields may be added without a
//! bump, so [`RunTerminalEnvelope::from_json`] ignores fields it does not
//! know.

use lifecycle_core::{EXECUTION_ENTITIES, PolicyRegistry, TerminalEvent};
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The schema name every envelope carries.
pub const SCHEMA_NAME: &str = "lionagi.run-terminal";
/// The schema version this crate writes and reads.
pub const SCHEMA_VERSION: u64 = 1;

/// What ended: one execution entity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EntityRef {
    /// The entity kind (`session`, `invocation`, `schedule_run`, `play`).
    pub kind: String,
    /// The entity id.
    pub id: String,
}

impl EntityRef {
    /// An entity reference.
    pub fn new(kind: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            id: id.into(),
        }
    }
}

/// Ids that tie the ended entity to its run; every one is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Correlation {
    /// The invocation this belongs to.
    #[serde(default)]
    pub invocation_id: Option<String>,
    /// The session this belongs to.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The schedule run this belongs to.
    #[serde(default)]
    pub schedule_run_id: Option<String>,
    /// The run (the run directory's id) this belongs to.
    #[serde(default)]
    pub run_id: Option<String>,
}

/// A terminal transition of an execution entity, as handed to callbacks.
///
/// Built only by [`RunTerminalEnvelope::for_terminal_event`] from a
/// transition that has committed; field order is the serialization order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunTerminalEnvelope {
    /// Always [`SCHEMA_NAME`].
    pub schema: String,
    /// Always [`SCHEMA_VERSION`] for this reader.
    pub schema_version: u64,
    /// A stable id of this event (the history row id).
    pub event_id: String,
    /// Whether the transition is committed in durable storage.
    #[serde(default = "yes")]
    pub durable: bool,
    /// The entity that ended.
    pub entity: EntityRef,
    /// The status it left (`None`: created directly in a terminal status).
    pub previous_status: Option<String>,
    /// The terminal status it reached.
    pub terminal_status: String,
    /// The reason code of the transition.
    pub reason_code: String,
    /// When, in seconds since the Unix epoch.
    pub occurred_at: f64,
    /// Ids tying the entity to its run.
    #[serde(default)]
    pub correlation: Correlation,
    /// Artifact descriptors (free-form objects).
    #[serde(default)]
    pub artifacts: Vec<serde_json::Value>,
}

fn yes() -> bool {
    true
}

impl RunTerminalEnvelope {
    /// The envelope for a committed transition, or `None` when there must
    /// be none: the entity is not an execution entity (session, invocation,
    /// schedule_run, play), its policy is unknown, the new status is not
    /// terminal, or the row did not change status.
    ///
    /// A [`TerminalEvent`] exists only for a committed write (stores hand it
    /// to sinks after commit), so rejected, conflicted and rolled-back
    /// transitions never reach this function.
    pub fn for_terminal_event(event: &TerminalEvent, policies: &PolicyRegistry) -> Option<Self> {
        let t = &event.transition;
        if !EXECUTION_ENTITIES.contains(&t.entity_type.as_str()) {
            return None;
        }
        let policy = policies.get(&t.entity_type).ok()?;
        if !policy.is_terminal(&t.to_status) || t.from_status.as_deref() == Some(&t.to_status) {
            return None;
        }
        let mut correlation = Correlation::default();
        let own = Some(t.entity_id.clone());
        match t.entity_type.as_str() {
            "session" => correlation.session_id = own,
            "invocation" => correlation.invocation_id = own,
            "schedule_run" => correlation.schedule_run_id = own,
            _ => {}
        }
        Some(Self {
            schema: SCHEMA_NAME.to_owned(),
            schema_version: SCHEMA_VERSION,
            event_id: t.id.to_string(),
            durable: true,
            entity: EntityRef::new(&t.entity_type, &t.entity_id),
            previous_status: t.from_status.clone(),
            terminal_status: t.to_status.clone(),
            reason_code: t.reason_code.clone(),
            // Microseconds to seconds: exact for any realistic timestamp
            // (f64 keeps 53 bits, about 285 years of microseconds).
            occurred_at: t.created_at as f64 / 1_000_000.0,
            correlation,
            artifacts: Vec::new(),
        })
    }

    /// Sets the run id in the correlation block.
    pub fn with_run_id(mut self, run_id: impl Into<String>) -> Self {
        self.correlation.run_id = Some(run_id.into());
        self
    }

    /// Reads a version 1 envelope; unknown extra fields are ignored, a
    /// different schema name or version is refused.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        let envelope: Self =
            serde_json::from_str(text).map_err(|source| Error::EnvelopeJson { source })?;
        if envelope.schema != SCHEMA_NAME || envelope.schema_version != SCHEMA_VERSION {
            return Err(Error::UnsupportedSchema {
                schema: envelope.schema,
                version: envelope.schema_version,
            });
        }
        Ok(envelope)
    }

    /// The envelope as compact JSON (what an exec adapter reads on stdin).
    pub fn to_json(&self) -> Result<String, Error> {
        serde_json::to_string(self).map_err(|source| Error::EnvelopeJson { source })
    }
}
