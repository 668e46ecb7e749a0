//! The storage seam: what a lifecycle store must offer to be mirrored into
//! ([`MirrorStore`]), the batches the mirror hands it, and the pure rules
//! both stores share (the reconcile decision, the actors and the ids).
//!
//! `state-sqlite` and `state-postgres` implement [`MirrorStore`]; each owns
//! its SQL.
//!
//! What an implementation must keep is on [`MirrorStore`].

use lifecycle_core::{Actor, ActorType, Override, Reason, TransitionCommand};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `kind` of a mirrored session. Only sessions of this kind are
/// reconciled or linked by the mirror.
pub const MIRROR_KIND: &str = "mirrored";

/// The actor id that creates mirrored sessions.
pub const MIRROR_WRITER_ID: &str = "transcript-mirror";

/// The recorded automated override identity: the system actor that moves
/// mirror sessions between running and completed and, through the audited
/// override path, back out of a terminal status.
pub const MIRROR_RECONCILE_ID: &str = "claude-mirror-reconcile";

/// The justification recorded on a reactivation override.
pub const REACTIVATION_JUSTIFICATION: &str =
    "mirror session terminal reactivation: transcript resumed within live_window";

/// The system actor that creates mirrored sessions.
pub fn mirror_writer() -> Actor {
    Actor::new(ActorType::System, MIRROR_WRITER_ID)
}

/// The system actor that reconciles mirrored sessions (see
/// [`MIRROR_RECONCILE_ID`]).
pub fn mirror_reconciler() -> Actor {
    Actor::new(ActorType::System, MIRROR_RECONCILE_ID)
}

/// The scaffold of one mirrored session: the rows that must exist before
/// its messages. Fields are written only when a row is created (or, for the
/// descriptive columns, when the stored value is still NULL).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MirrorSession {
    /// Session id.
    pub session_id: String,
    /// Its branch id.
    pub branch_id: String,
    /// The branch's progression id.
    pub progression_id: String,
    /// Project (backfilled onto an existing session that has none).
    pub project: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Agent name, e.g. `claude-code`.
    pub agent_name: Option<String>,
    /// Provider, e.g. `claude`.
    pub provider: Option<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// node_metadata for a new row (a JSON object).
    pub node_metadata: Option<Value>,
    /// When the transcript started, microseconds since the epoch (the new
    /// row's created_at; now when unknown).
    pub started_at: Option<i64>,
}

/// One mirrored message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorMessage {
    /// Deterministic id (derived from the transcript event).
    pub id: String,
    /// Role: user, assistant or action.
    pub role: String,
    /// Content, a JSON text.
    pub content: String,
    /// The event's time, microseconds since the epoch.
    pub created_at: i64,
}

/// How far a transcript file has been read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorCursor {
    /// The file path.
    pub path: String,
    /// `claude` or `codex`.
    pub source: String,
    /// The session the file mirrors into.
    pub session_id: String,
    /// Bytes consumed (a line boundary).
    pub byte_offset: i64,
    /// Whether the transcript's first conversation event has been read
    /// (its parentUuid is the lineage pointer).
    pub first_event_seen: bool,
    /// The transcript's first parentUuid while its lineage is unresolved.
    pub pending_parent_uuid: Option<String>,
}

/// One write: the scaffold, the messages, the event uuids seen and the
/// cursor after them, committed together.
#[derive(Debug, Clone, Copy)]
pub struct MirrorBatch<'a> {
    /// The scaffold.
    pub session: &'a MirrorSession,
    /// Messages in transcript order.
    pub messages: &'a [MirrorMessage],
    /// Transcript event uuids this batch covered (for lineage lookups).
    pub event_uuids: &'a [String],
    /// The file cursor after this batch.
    pub cursor: Option<&'a MirrorCursor>,
}

/// What one [`MirrorStore::mirror_session`] call wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorWrite {
    /// The progression row was created now.
    pub progression_created: bool,
    /// The session row was created now.
    pub session_created: bool,
    /// The branch row was created now.
    pub branch_created: bool,
    /// An existing session without a project got one.
    pub project_backfilled: bool,
    /// Messages inserted.
    pub messages_added: usize,
    /// Existing messages whose content or role changed.
    pub messages_updated: usize,
}

/// What [`MirrorStore::link_session_lineage`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "lineage")]
#[non_exhaustive]
pub enum LineageOutcome {
    /// The link is stored (written now, or already the same value).
    Linked {
        /// The session continued.
        parent_session_id: String,
        /// Whether this call wrote it (false: it was already there).
        written: bool,
    },
    /// The parent event was mirrored into the child session itself.
    SameSession,
    /// No mirrored session holds the parent event (yet).
    Unresolved,
    /// The child session does not exist.
    NoChild,
}

/// What one reconcile did to a mirrored session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
#[non_exhaustive]
pub enum ReconcileAction {
    /// Nothing to do (live and running, or idle and completed).
    Unchanged,
    /// Idle and running: moved to completed.
    Completed,
    /// Live again: moved from a terminal status back to running through the
    /// audited override path.
    Reactivated {
        /// The terminal status it left.
        from: String,
    },
    /// Idle on a terminal status other than completed: left as it is.
    LeftTerminal {
        /// That status.
        status: String,
    },
    /// Another writer moved the row first; nothing written.
    Conflict,
    /// No such session, or not a mirrored one.
    NotMirrored,
}

/// What a reconcile should do, decided from the row alone.
#[derive(Debug, Clone, PartialEq)]
pub enum ReconcilePlan {
    /// Write nothing; report this.
    Done(ReconcileAction),
    /// Apply this guarded transition (expecting the status and version
    /// read); applied, it is [`ReconcileAction::Completed`] or, when it
    /// leads to running, [`ReconcileAction::Reactivated`].
    Transition(Box<TransitionCommand>),
}

/// The reconcile rule, shared by the stores. A session is live when its
/// newest message (`last_message_at`, never `updated_at`) is less than
/// `live_window` old at `now` (microseconds). Live and running, or idle
/// and completed: nothing. Idle and running: completed (`ended_at` is the
/// last message, marked approximate). Idle on another terminal status:
/// left as it is. Live on a terminal status: back to running through the
/// audited override of [`mirror_reconciler`].
pub fn reconcile_plan(
    session_id: &str,
    status: &str,
    version: i64,
    last_message_at: Option<i64>,
    now: i64,
    live_window: i64,
) -> ReconcilePlan {
    let live = last_message_at.is_some_and(|t| now.saturating_sub(t) < live_window);
    let actor = mirror_reconciler();
    let cmd = match (live, status) {
        (true, "running") | (false, "completed") => {
            return ReconcilePlan::Done(ReconcileAction::Unchanged);
        }
        (false, "running") => TransitionCommand::new(
            "session",
            session_id,
            "completed",
            Reason::new("run.completed.ok").with_summary("mirror session became idle"),
            actor,
        )
        .with_patch("ended_at", Value::from(last_message_at.unwrap_or(now)))
        .with_patch("ended_at_is_approximate", Value::from(1)),
        (false, _) => {
            return ReconcilePlan::Done(ReconcileAction::LeftTerminal {
                status: status.to_owned(),
            });
        }
        (true, _) => TransitionCommand::new(
            "session",
            session_id,
            "running",
            Reason::new("run.started.ok").with_summary(
                "mirror session reactivated because transcript resumed within live_window",
            ),
            actor.clone(),
        )
        .with_patch("ended_at", Value::Null)
        .with_override(Override {
            actor,
            justification: REACTIVATION_JUSTIFICATION.into(),
        }),
    };
    ReconcilePlan::Transition(Box::new(
        cmd.expecting(status.to_owned()).with_version(version),
    ))
}

/// The action a reconcile transition that was applied stands for.
pub fn reconcile_applied(cmd: &TransitionCommand, from: &str) -> ReconcileAction {
    if cmd.to_status == "running" {
        ReconcileAction::Reactivated {
            from: from.to_owned(),
        }
    } else {
        ReconcileAction::Completed
    }
}

/// A lifecycle store the mirror can write into. Implemented by
/// `state_sqlite::Store` and `state_postgres::PgStore`. What every
/// implementation must keep (SQL-052..068):
///
/// - [`MirrorStore::mirror_session`] writes one batch in one transaction.
///   The scaffold writes run on every call in this order: progression,
///   session, branch, each insert-or-ignore (a pass that died half-way is
///   repaired by the next, an existing row is never overwritten; only NULL
///   descriptive columns are filled, the project among them, without moving
///   `last_message_at`). The session row is created through the guarded
///   transition service (history row included). Messages are upserts keyed
///   by their deterministic id; progression appends dedupe on (progression,
///   message) and take dense positions. It never changes a session's
///   status.
/// - [`MirrorStore::reconcile_mirror_session`] owns the live/idle status,
///   judged from `last_message_at` only ([`reconcile_plan`]).
/// - [`MirrorStore::link_session_lineage`] writes only node_metadata's
///   `lineage` key and never moves `last_message_at`.
pub trait MirrorStore {
    /// The store's error.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Writes one batch in one transaction; re-running a batch already
    /// written adds no row.
    fn mirror_session(&self, batch: &MirrorBatch<'_>) -> Result<MirrorWrite, Self::Error>;

    /// Records a batch that produced no message: its event uuids and the
    /// cursor, without creating any scaffold.
    fn advance_mirror_cursor(
        &self,
        cursor: &MirrorCursor,
        event_uuids: &[String],
    ) -> Result<(), Self::Error>;

    /// The stored cursor of a transcript file.
    fn mirror_cursor(&self, path: &str) -> Result<Option<MirrorCursor>, Self::Error>;

    /// Moves a file's cursor back to the start (the file was replaced).
    fn rewind_mirror_cursor(&self, path: &str) -> Result<(), Self::Error>;

    /// Forgets a file's unresolved lineage pointer.
    fn clear_pending_lineage(&self, path: &str) -> Result<(), Self::Error>;

    /// Links `child` to the session holding the event `parent_event_uuid`.
    fn link_session_lineage(
        &self,
        child: &str,
        parent_event_uuid: &str,
    ) -> Result<LineageOutcome, Self::Error>;

    /// Mirrored sessions a reconcile should look at: every running one and
    /// every one with a message inside the live window.
    fn mirror_sessions_to_reconcile(
        &self,
        now: i64,
        live_window: i64,
    ) -> Result<Vec<String>, Self::Error>;

    /// Reconciles one mirrored session's status with its liveness at `now`.
    fn reconcile_mirror_session(
        &self,
        session_id: &str,
        now: i64,
        live_window: i64,
    ) -> Result<ReconcileAction, Self::Error>;
}
