//! The read side of a lifecycle store, as one seam: [`StateReader`] lists
//! sessions and their messages, resolves id prefixes, reads histories,
//! what is in flight and row counts; [`SessionRetention`] prunes ended
//! sessions. `state-sqlite` and `state-postgres` both implement them, so a
//! tool reading a store (the `lionrt sessions`, `state`, `monitor` and
//! `lifecycle` verbs) has one code path for either.
//!
//! The rows are plain data; the traits speak only these types and
//! [`TransitionRecord`].

use serde::Serialize;

use crate::store::TransitionRecord;
use crate::{Actor, default_registry};

/// How many candidates an ambiguous prefix names at most.
pub const ID_CANDIDATES: usize = 6;

/// One session row as shown by session listings and monitors.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SessionRow {
    /// The id.
    pub id: String,
    /// The current status.
    pub status: String,
    /// The reason code of the last transition.
    pub reason_code: Option<String>,
    /// Its one-line summary.
    pub reason_summary: Option<String>,
    /// orchestrated, interactive or mirrored.
    pub kind: Option<String>,
    /// The provider (claude, codex, ...).
    pub provider: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// The working directory.
    pub cwd: Option<String>,
    /// The agent's pid.
    pub pid: Option<i64>,
    /// The owning lionrt process.
    pub owner_pid: Option<i64>,
    /// Created, microseconds since the epoch.
    pub created_at: i64,
    /// Last change, microseconds since the epoch.
    pub updated_at: i64,
    /// Ended, microseconds since the epoch.
    pub ended_at: Option<i64>,
    /// The last message, microseconds since the epoch.
    pub last_message_at: Option<i64>,
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
    /// Messages recorded for the session.
    pub messages: i64,
}

impl SessionRow {
    /// A row with the given id, status and times; every other field empty.
    pub fn new(id: impl Into<String>, status: impl Into<String>, created_at: i64) -> Self {
        SessionRow {
            id: id.into(),
            status: status.into(),
            reason_code: None,
            reason_summary: None,
            kind: None,
            provider: None,
            model: None,
            cwd: None,
            pid: None,
            owner_pid: None,
            created_at,
            updated_at: created_at,
            ended_at: None,
            last_message_at: None,
            input_tokens: None,
            output_tokens: None,
            total_cost_usd: None,
            num_turns: None,
            duration_ms: None,
            messages: 0,
        }
    }
}

/// Which sessions [`StateReader::sessions`] lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionFilter {
    /// Only this status.
    pub status: Option<String>,
    /// Only sessions created at or after this time (microseconds).
    pub since: Option<i64>,
    /// Only sessions not in a terminal status.
    pub open_only: bool,
    /// At most this many rows (newest first).
    pub limit: Option<u32>,
}

impl SessionFilter {
    /// Every session.
    pub fn all() -> Self {
        Self::default()
    }

    /// Only the sessions not in a terminal status.
    pub fn open() -> Self {
        SessionFilter {
            open_only: true,
            ..Self::default()
        }
    }
}

/// One recorded message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MessageRow {
    /// Position in write order; the cursor for following.
    pub seq: i64,
    /// The message id.
    pub id: String,
    /// The branch, if any.
    pub branch_id: Option<String>,
    /// user, assistant, tool, system...
    pub role: String,
    /// The content as stored (JSON text).
    pub content: String,
    /// Microseconds since the epoch.
    pub created_at: i64,
}

impl MessageRow {
    /// A message row without a branch.
    pub fn new(
        seq: i64,
        id: impl Into<String>,
        role: impl Into<String>,
        content: impl Into<String>,
        created_at: i64,
    ) -> Self {
        MessageRow {
            seq,
            id: id.into(),
            branch_id: None,
            role: role.into(),
            content: content.into(),
            created_at,
        }
    }
}

/// An entity of any type that is not in a terminal status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct OpenEntity {
    /// The entity type.
    pub entity_type: String,
    /// The id.
    pub id: String,
    /// Its status.
    pub status: String,
    /// Last change, microseconds since the epoch.
    pub updated_at: i64,
}

impl OpenEntity {
    /// An open entity.
    pub fn new(
        entity_type: impl Into<String>,
        id: impl Into<String>,
        status: impl Into<String>,
        updated_at: i64,
    ) -> Self {
        OpenEntity {
            entity_type: entity_type.into(),
            id: id.into(),
            status: status.into(),
            updated_at,
        }
    }
}

/// Everything in flight: open sessions (with their rows) and the open
/// entities of every other type.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct InFlight {
    /// Sessions not in a terminal status, newest first.
    pub sessions: Vec<SessionRow>,
    /// Other entities not in a terminal status, oldest change first per type.
    pub others: Vec<OpenEntity>,
}

impl InFlight {
    /// Open sessions and other open entities.
    pub fn new(sessions: Vec<SessionRow>, others: Vec<OpenEntity>) -> Self {
        InFlight { sessions, others }
    }
}

/// What an id prefix names.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdMatch {
    /// One id: the prefix itself (an exact match always wins) or the only
    /// id starting with it.
    One(String),
    /// No id starts with the prefix.
    None,
    /// Several ids start with it (at most [`ID_CANDIDATES`] of them).
    Several(Vec<String>),
}

impl IdMatch {
    /// The match of `prefix` given whether it is itself an id and the
    /// sorted ids starting with it (at most [`ID_CANDIDATES`]).
    pub fn from_candidates(exact: bool, prefix: &str, mut ids: Vec<String>) -> Self {
        if exact {
            return IdMatch::One(prefix.to_owned());
        }
        match ids.len() {
            0 => IdMatch::None,
            1 => IdMatch::One(ids.remove(0)),
            _ => IdMatch::Several(ids),
        }
    }
}

/// What session health needs to know about one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SessionActivity {
    /// The id.
    pub id: String,
    /// The status.
    pub status: String,
    /// orchestrated, interactive or mirrored.
    pub kind: Option<String>,
    /// The leg's pid (the spawn record's, else the agent pid).
    pub pid: Option<i64>,
    /// The leg's recorded start time, when the spawn record has one.
    pub leg_create_time: Option<i64>,
    /// The last message, else the creation, microseconds since the epoch.
    pub last_activity: i64,
    /// Messages recorded.
    pub messages: i64,
    /// The recorded host of the session's owner, where one was recorded:
    /// the leg's pid means something only on that host.
    pub owner_host_id: Option<String>,
}

impl SessionActivity {
    /// A session's activity.
    pub fn new(id: impl Into<String>, status: impl Into<String>, last_activity: i64) -> Self {
        SessionActivity {
            id: id.into(),
            status: status.into(),
            kind: None,
            pid: None,
            leg_create_time: None,
            last_activity,
            messages: 0,
            owner_host_id: None,
        }
    }
}

/// Rows per table and sessions per status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RowCounts {
    /// The store's schema version.
    pub schema_version: u32,
    /// Rows per table, by table name.
    pub tables: Vec<(String, i64)>,
    /// Sessions per status.
    pub sessions_by_status: Vec<(String, i64)>,
}

impl RowCounts {
    /// Counts of a store at `schema_version`.
    pub fn new(
        schema_version: u32,
        tables: Vec<(String, i64)>,
        sessions_by_status: Vec<(String, i64)>,
    ) -> Self {
        RowCounts {
            schema_version,
            tables,
            sessions_by_status,
        }
    }
}

/// What a retention prune removed (or would remove).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PruneReport {
    /// Terminal sessions removed.
    pub sessions: u64,
    /// Their messages removed.
    pub messages: u64,
    /// Nothing was changed.
    pub dry_run: bool,
}

impl PruneReport {
    /// A report.
    pub fn new(sessions: u64, messages: u64, dry_run: bool) -> Self {
        PruneReport {
            sessions,
            messages,
            dry_run,
        }
    }
}

/// The tables a store's row counts cover (those it has).
pub const COUNTED_TABLES: &[&str] = &[
    "sessions",
    "messages",
    "status_transitions",
    "admin_events",
    "invocations",
    "plays",
    "shows",
    "teams",
    "schedules",
    "schedule_runs",
    "dispatch_outbox",
    "session_controls",
];

/// The session policy's terminal statuses.
pub fn terminal_session_statuses() -> Vec<String> {
    default_registry()
        .get("session")
        .map(|p| p.terminal_statuses().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Reads a lifecycle store. Every method only reads, so a read-only
/// connection serves them all.
///
/// `test_support::state_reader_contract` is the behaviour every
/// implementation keeps.
pub trait StateReader {
    /// The store's error type.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Sessions matching `filter`, newest first (created_at, then id,
    /// descending).
    fn sessions(&self, filter: &SessionFilter) -> Result<Vec<SessionRow>, Self::Error>;

    /// One session by exact id.
    fn session_row(&self, id: &str) -> Result<Option<SessionRow>, Self::Error>;

    /// What `prefix` names among the ids of `entity_type` (an unknown
    /// entity type is an error).
    fn match_id(&self, entity_type: &str, prefix: &str) -> Result<IdMatch, Self::Error>;

    /// The session's messages written after the one at `after_seq` (0 for
    /// all), in write order, at most `limit`.
    fn messages(
        &self,
        session_id: &str,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<MessageRow>, Self::Error>;

    /// The entities of `entity_type` not in a terminal status, oldest
    /// change first.
    fn open_entities(&self, entity_type: &str) -> Result<Vec<OpenEntity>, Self::Error>;

    /// The sessions an invocation spawned, oldest first.
    fn sessions_of_invocation(&self, invocation: &str) -> Result<Vec<String>, Self::Error>;

    /// An entity's status history, oldest first (kept after the row is
    /// pruned).
    fn transitions(
        &self,
        entity_type: &str,
        entity_id: &str,
    ) -> Result<Vec<TransitionRecord>, Self::Error>;

    /// Every session's activity, oldest first, for health classification.
    fn session_activity(&self) -> Result<Vec<SessionActivity>, Self::Error>;

    /// Rows per table (of [`COUNTED_TABLES`]) and sessions per status.
    fn row_counts(&self) -> Result<RowCounts, Self::Error>;

    /// Open sessions and the open entities of every other type.
    fn in_flight(&self) -> Result<InFlight, Self::Error> {
        let sessions = self.sessions(&SessionFilter::open())?;
        let mut others = Vec::new();
        for policy in default_registry().iter() {
            if policy.entity_type() != "session" {
                others.extend(self.open_entities(policy.entity_type())?);
            }
        }
        Ok(InFlight { sessions, others })
    }
}

/// Retention for a writable store.
pub trait SessionRetention: StateReader {
    /// Removes sessions in a terminal status that ended (or last changed)
    /// before `before` (microseconds), with their messages and other
    /// per-session rows, in one transaction. Open sessions are never
    /// touched and `status_transitions` is kept. One `admin_events` row
    /// (`state.prune`) records every prune, dry runs included.
    fn prune_sessions(
        &self,
        before: i64,
        dry_run: bool,
        actor: &Actor,
    ) -> Result<PruneReport, Self::Error>;
}
