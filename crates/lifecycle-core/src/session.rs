//! The session recorder seam: what a run needs from a store to record a
//! session's start, its messages, its spawn record and its end, and what a
//! sweep needs to find sessions whose supervisor is gone.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Actor, Outcome};
use crate::store::LifecycleStore;

/// Provenance recorded when a session starts. Every field given is persisted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionStart {
    /// Session id.
    pub session_id: String,
    /// The reason code for the move to running (required, explicit).
    pub reason_code: String,
    /// Session kind (orchestrated, interactive, mirrored).
    pub kind: Option<String>,
    /// Project.
    pub project: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Agent name.
    pub agent_name: Option<String>,
    /// Provider.
    pub provider: Option<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Process id.
    pub pid: Option<i64>,
    /// Parent invocation.
    pub invocation_id: Option<String>,
    /// The supervising process (the session's owner), if known.
    pub owner: Option<OwnerRecord>,
}

impl SessionStart {
    /// A start record for `session_id` with the given reason and nothing else.
    pub fn new(session_id: impl Into<String>, reason_code: impl Into<String>) -> Self {
        Self {
            session_id: session_id.into(),
            reason_code: reason_code.into(),
            ..Self::default()
        }
    }
}

/// Usage totals reported at session end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens.
    pub input_tokens: Option<i64>,
    /// Output tokens.
    pub output_tokens: Option<i64>,
    /// Cost in USD.
    pub total_cost_usd: Option<f64>,
    /// Turns.
    pub num_turns: Option<i64>,
    /// Duration in milliseconds.
    pub duration_ms: Option<i64>,
    /// The model the provider reported serving the run (its latest turn's),
    /// where it reported one: written to the session's `model` column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A session end event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEnd {
    /// Session id.
    pub session_id: String,
    /// Terminal status to move to when the row is still running.
    pub status: String,
    /// Reason code for that move.
    pub reason_code: String,
    /// Usage totals.
    pub usage: Usage,
    /// An error summary (goes to the reason summary, never node_metadata).
    pub error: Option<String>,
    /// End time, microseconds since the epoch.
    pub ended_at: i64,
}

impl SessionEnd {
    /// An end record with no usage and no error.
    pub fn new(
        session_id: impl Into<String>,
        status: impl Into<String>,
        reason_code: impl Into<String>,
        ended_at: i64,
    ) -> Self {
        Self {
            session_id: session_id.into(),
            status: status.into(),
            reason_code: reason_code.into(),
            usage: Usage::default(),
            error: None,
            ended_at,
        }
    }
}

/// The process supervising a session: its pid, its kernel start time (clock
/// ticks since boot), the boot it started in and the host it runs on.
/// Together they name one process; a pid alone is recyclable, and a pid,
/// start time or boot id means something only on the host that recorded it
/// (a store may be shared by several hosts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerRecord {
    /// The owner's pid.
    pub pid: i64,
    /// Its start time, or `None` when it could not be read (then the owner
    /// can never be proven gone by pid).
    pub start_time: Option<i64>,
    /// The kernel boot id it started under (`/proc/sys/kernel/random/boot_id`).
    pub boot_id: Option<String>,
    /// The identity of the host it runs on (stable across reboots), or
    /// `None` for a record older than the host column or a host whose
    /// identity could not be read.
    #[serde(default)]
    pub host_id: Option<String>,
}

/// A leg's spawn record as stored: pid, group and start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegRecord {
    /// The leader's pid.
    pub pid: i64,
    /// Its process group id.
    pub pgid: i64,
    /// Its start time; `None` means nothing was established (never a match).
    pub create_time: Option<i64>,
}

/// Session columns [`SessionRecorder::update_session`] may set, beyond
/// status: every recorder refuses any other column before writing.
pub const SESSION_COLUMNS: &[&str] = &[
    "ended_at",
    "ended_at_is_approximate",
    "input_tokens",
    "output_tokens",
    "total_cost_usd",
    "num_turns",
    "duration_ms",
    "current_phase",
    "node_metadata",
    "kind",
    "project",
    "model",
    "agent_name",
    "provider",
    "cwd",
    "pid",
    "invocation_id",
    "last_message_at",
    columns::OWNER_PID,
    columns::OWNER_START_TIME,
    columns::OWNER_BOOT_ID,
    columns::OWNER_HOST_ID,
    columns::LEG_PID,
    columns::LEG_PGID,
    columns::LEG_CREATE_TIME,
];

/// The session columns a recorder stores for the owner and the spawn record.
pub mod columns {
    /// The owner's pid.
    pub const OWNER_PID: &str = "owner_pid";
    /// The owner's start time.
    pub const OWNER_START_TIME: &str = "owner_start_time";
    /// The owner's boot id.
    pub const OWNER_BOOT_ID: &str = "owner_boot_id";
    /// The owner's host identity.
    pub const OWNER_HOST_ID: &str = "owner_host_id";
    /// The leg leader's pid.
    pub const LEG_PID: &str = "leg_pid";
    /// The leg's process group.
    pub const LEG_PGID: &str = "leg_pgid";
    /// The leg leader's start time.
    pub const LEG_CREATE_TIME: &str = "leg_create_time";
}

/// One session as a recorder sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSnapshot {
    /// Session id.
    pub id: String,
    /// Current status.
    pub status: String,
    /// The optimistic-concurrency version (`updated_at`).
    pub version: i64,
    /// The reason code of the current status, where the store keeps it.
    pub reason_code: Option<String>,
    /// Every non-null session column beyond id, status and version
    /// (provenance, usage, `ended_at`, owner and spawn record).
    pub columns: BTreeMap<String, Value>,
    /// How many messages were recorded.
    pub messages: u64,
}

impl SessionSnapshot {
    /// The owner, when its pid was recorded.
    pub fn owner(&self) -> Option<OwnerRecord> {
        Some(OwnerRecord {
            pid: self.int(columns::OWNER_PID)?,
            start_time: self.int(columns::OWNER_START_TIME),
            boot_id: self
                .columns
                .get(columns::OWNER_BOOT_ID)
                .and_then(Value::as_str)
                .map(str::to_owned),
            host_id: self
                .columns
                .get(columns::OWNER_HOST_ID)
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// The leg's spawn record, when its pid and group were recorded.
    pub fn leg(&self) -> Option<LegRecord> {
        Some(LegRecord {
            pid: self.int(columns::LEG_PID)?,
            pgid: self.int(columns::LEG_PGID)?,
            create_time: self.int(columns::LEG_CREATE_TIME),
        })
    }

    fn int(&self, column: &str) -> Option<i64> {
        self.columns.get(column).and_then(Value::as_i64)
    }
}

/// The columns that record an owner, for [`SessionRecorder::update_session`].
pub fn owner_columns(owner: &OwnerRecord) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    out.insert(columns::OWNER_PID.to_owned(), Value::from(owner.pid));
    out.insert(
        columns::OWNER_START_TIME.to_owned(),
        owner.start_time.map_or(Value::Null, Value::from),
    );
    out.insert(
        columns::OWNER_BOOT_ID.to_owned(),
        owner.boot_id.clone().map_or(Value::Null, Value::from),
    );
    out.insert(
        columns::OWNER_HOST_ID.to_owned(),
        owner.host_id.clone().map_or(Value::Null, Value::from),
    );
    out
}

/// The columns that record a spawn record, for [`SessionRecorder::update_session`].
pub fn leg_columns(leg: &LegRecord) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    out.insert(columns::LEG_PID.to_owned(), Value::from(leg.pid));
    out.insert(columns::LEG_PGID.to_owned(), Value::from(leg.pgid));
    out.insert(
        columns::LEG_CREATE_TIME.to_owned(),
        leg.create_time.map_or(Value::Null, Value::from),
    );
    out
}

/// What [`SessionRecorder::update_session_metadata`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MetadataUpdate {
    /// The key was written (the other keys kept).
    Written,
    /// The update function declined: nothing was written.
    Unchanged,
    /// No such session.
    NotFound,
    /// `node_metadata` holds something other than a JSON object (or JSON
    /// that does not parse); it was left as is.
    NotAnObject,
}

/// The merge step of [`SessionRecorder::update_session_metadata`], shared by
/// the stores so they agree on every case: `stored` is the column's text
/// (`None` when absent or NULL, which counts as an empty object). Calls
/// `update` with the key's value and returns what happened and, when
/// [`MetadataUpdate::Written`], the new text to store.
pub fn merge_metadata_key(
    stored: Option<&str>,
    key: &str,
    update: &mut dyn FnMut(Option<&Value>) -> Option<Value>,
) -> (MetadataUpdate, Option<String>) {
    let mut object = match stored.map(serde_json::from_str::<Value>) {
        None => serde_json::Map::new(),
        Some(Ok(Value::Object(map))) => map,
        Some(_) => return (MetadataUpdate::NotAnObject, None),
    };
    let Some(value) = update(object.get(key)) else {
        return (MetadataUpdate::Unchanged, None);
    };
    object.insert(key.to_owned(), value);
    (
        MetadataUpdate::Written,
        Some(Value::Object(object).to_string()),
    )
}

/// What a run records about its session, and what a sweep reads back. A
/// recorder is also a [`LifecycleStore`]: terminal moves made by a sweep or
/// a kill go through its guarded `transition`.
///
/// Implemented by `state-sqlite`'s `Store` and `test-support`'s
/// `MemoryStore`; `test_support::session_recorder_contract` is the
/// behaviour both keep.
pub trait SessionRecorder: LifecycleStore {
    /// Records a session start: creates the row in `running` (or moves an
    /// existing non-running row there) with the explicit reason, and
    /// persists every provenance field given, the owner included.
    fn persist_session_start(
        &self,
        start: &SessionStart,
        actor: &Actor,
    ) -> Result<Outcome, Self::Error>;

    /// Records a session end. On a row already terminal only the usage
    /// fields are written (no status, reason, ended_at or history change);
    /// otherwise the terminal transition is made with ended_at and usage.
    fn persist_session_end(&self, end: &SessionEnd, actor: &Actor) -> Result<Outcome, Self::Error>;

    /// Records one message (insert-or-ignore by id) and moves the session's
    /// liveness clock forward. Returns whether the message was new.
    fn record_message(
        &self,
        session_id: &str,
        message_id: &str,
        role: &str,
        content: &str,
        at: i64,
    ) -> Result<bool, Self::Error>;

    /// Writes session columns as a plain SET (no merge). Columns outside the
    /// store's allowlist are refused before anything is written. Returns
    /// whether a row was updated.
    fn update_session(
        &self,
        session_id: &str,
        columns: &BTreeMap<String, Value>,
    ) -> Result<bool, Self::Error>;

    /// Rewrites one top-level key of the session's `node_metadata` JSON
    /// object, keeping every other key, as one atomic step against
    /// concurrent writers: the read, `update` and the write happen under
    /// the row's write lock (one transaction), so no other writer's key is
    /// lost. `update` gets the key's current value (`None` when absent) and
    /// returns the value to store, or `None` to write nothing. An absent or
    /// NULL `node_metadata` counts as an empty object; one that is not a
    /// JSON object is left as is ([`MetadataUpdate::NotAnObject`]). A write
    /// bumps the row's version like any other session write. `update` may
    /// be called more than once if the store retries the transaction.
    fn update_session_metadata(
        &self,
        session_id: &str,
        key: &str,
        update: &mut dyn FnMut(Option<&Value>) -> Option<Value>,
    ) -> Result<MetadataUpdate, Self::Error>;

    /// One session, or `None`.
    fn session(&self, session_id: &str) -> Result<Option<SessionSnapshot>, Self::Error>;

    /// Every session whose status is not terminal, oldest first.
    fn open_sessions(&self) -> Result<Vec<SessionSnapshot>, Self::Error>;

    /// The ids of every session starting with `prefix`, sorted (at most
    /// `limit` of them).
    fn session_ids_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, Self::Error>;

    /// Whether sessions of several hosts may live in this store (a server
    /// database). A sweep then never judges a session whose owner's host is
    /// unknown by a boot id or pid it cannot check. Defaults to `true`,
    /// the safe answer; a store that only one host can open (a local file)
    /// says `false`.
    fn shared_by_hosts(&self) -> bool {
        true
    }
}
