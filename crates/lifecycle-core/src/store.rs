//! The store seam: what every lifecycle store offers.

use serde::{Deserialize, Serialize};

use crate::model::{InitialCommand, Outcome, TransitionCommand};

/// One row of an entity's status history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransitionRecord {
    /// The history row id.
    pub id: i64,
    /// The entity type.
    pub entity_type: String,
    /// The entity id.
    pub entity_id: String,
    /// The status before (None: the row was created).
    pub from_status: Option<String>,
    /// The status after.
    pub to_status: String,
    /// The reason code.
    pub reason_code: String,
    /// The reason summary.
    pub reason_summary: String,
    /// The actor type.
    pub actor_type: String,
    /// The actor id.
    pub actor_id: String,
    /// Whether an override let this move through.
    pub overridden: bool,
    /// When, in microseconds since the Unix epoch.
    pub created_at: i64,
}

/// A terminal transition of an execution entity, handed to sinks strictly
/// after the transaction that wrote it committed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TerminalEvent {
    /// The history row.
    pub transition: TransitionRecord,
}

/// Receives terminal events after commit. A sink cannot affect the committed
/// write: its failures (and panics) are logged and swallowed by the store.
pub trait TerminalSink: Send + Sync {
    /// Called once per terminal transition, after commit.
    fn on_terminal(
        &self,
        event: &TerminalEvent,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

/// A guarded, audited lifecycle store. Implementations run
/// [`crate::decide`] inside one write transaction per call.
pub trait LifecycleStore {
    /// The store's error type.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Creates an entity in an initial status.
    fn create(&self, cmd: &InitialCommand) -> Result<Outcome, Self::Error>;

    /// Applies a transition command.
    fn transition(&self, cmd: &TransitionCommand) -> Result<Outcome, Self::Error>;

    /// The entity's history, oldest first.
    fn history(
        &self,
        entity_type: &str,
        entity_id: &str,
    ) -> Result<Vec<TransitionRecord>, Self::Error>;
}
