//! The outbox's data: statuses, rows, the guarded moves a store applies,
//! purge selections and audit records.

use std::fmt;
use std::str::FromStr;

use lifecycle_core::{Actor, CompatOptions, Reason, TransitionCommand};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::OutboxError;
use crate::template::Template;

/// The entity type of outbox rows in the lifecycle vocabulary.
pub const ENTITY: &str = "dispatch";

/// A dispatch row's status (the `dispatch` vocabulary of lifecycle-core).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DispatchStatus {
    /// Waiting for its next attempt (or, ack-required, for its ack).
    Pending,
    /// Claimed by a scan; `next_attempt_at` holds the claim's lease expiry.
    Delivering,
    /// Sent once successfully (default tier). Terminal.
    Delivered,
    /// Acknowledged by its consumer. Terminal.
    Acked,
    /// Exhausted its attempts (or its ack wait). Terminal.
    DeadLetter,
    /// Passed its `expires_at`. Terminal.
    Expired,
}

impl DispatchStatus {
    /// Every status, in vocabulary order.
    pub const ALL: [DispatchStatus; 6] = [
        DispatchStatus::Pending,
        DispatchStatus::Delivering,
        DispatchStatus::Delivered,
        DispatchStatus::Acked,
        DispatchStatus::DeadLetter,
        DispatchStatus::Expired,
    ];

    /// The terminal statuses: the only ones a status-less purge or the
    /// retention sweep removes.
    pub const TERMINAL: [DispatchStatus; 4] = [
        DispatchStatus::Delivered,
        DispatchStatus::Acked,
        DispatchStatus::DeadLetter,
        DispatchStatus::Expired,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            DispatchStatus::Pending => "pending",
            DispatchStatus::Delivering => "delivering",
            DispatchStatus::Delivered => "delivered",
            DispatchStatus::Acked => "acked",
            DispatchStatus::DeadLetter => "dead_letter",
            DispatchStatus::Expired => "expired",
        }
    }

    /// Whether no scan ever moves the row again.
    pub fn is_terminal(self) -> bool {
        !matches!(self, DispatchStatus::Pending | DispatchStatus::Delivering)
    }
}

impl fmt::Display for DispatchStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DispatchStatus {
    type Err = OutboxError;

    fn from_str(s: &str) -> Result<Self, OutboxError> {
        DispatchStatus::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .ok_or_else(|| OutboxError::UnknownStatus(s.to_owned()))
    }
}

/// What a producer asks to deliver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewDispatch {
    /// Idempotency key: a second enqueue with the same key returns the first
    /// row's id and creates nothing.
    pub dedup_key: Option<String>,
    /// The payload, handed to the transport as one argv element.
    pub payload: String,
    /// Where to deliver (e.g. a URL or channel), one argv element.
    pub deliver_to: Option<String>,
    /// The command template; `None` uses the transport's default.
    pub template: Option<Template>,
    /// Sends allowed, at least 1.
    pub max_attempts: u32,
    /// Whether a successful send waits for an ack instead of finishing.
    pub ack_required: bool,
    /// An extra bound: no send at or after this instant (µs since epoch).
    pub expires_at: Option<i64>,
    /// The first attempt is not before this instant (None: at once).
    pub not_before: Option<i64>,
}

impl NewDispatch {
    /// A default-tier dispatch of `payload` with 5 attempts.
    pub fn new(payload: impl Into<String>) -> Self {
        NewDispatch {
            dedup_key: None,
            payload: payload.into(),
            deliver_to: None,
            template: None,
            max_attempts: 5,
            ack_required: false,
            expires_at: None,
            not_before: None,
        }
    }
}

/// One outbox row as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchRow {
    /// Row id.
    pub id: String,
    /// Status.
    pub status: DispatchStatus,
    /// Claims made for sending so far (the compare-and-swap counter).
    pub attempt: u32,
    /// Sends allowed.
    pub max_attempts: u32,
    /// Pending: the next attempt's earliest instant. Delivering: the claim's
    /// lease expiry. Terminal: none.
    pub next_attempt_at: Option<i64>,
    /// The last transport failure, if the last attempt failed.
    pub last_error: Option<String>,
    /// Idempotency key.
    pub dedup_key: Option<String>,
    /// Payload.
    pub payload: String,
    /// Destination.
    pub deliver_to: Option<String>,
    /// Template, if the row carries its own.
    pub template: Option<Template>,
    /// Whether sends wait for an ack.
    pub ack_required: bool,
    /// Deadline, if any.
    pub expires_at: Option<i64>,
    /// Created at (µs, store clock).
    pub created_at: i64,
    /// Last write (µs, store clock; also the row version).
    pub updated_at: i64,
}

/// Column values a move writes; `None` leaves a column alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DispatchPatch {
    /// New attempt counter.
    pub attempt: Option<u32>,
    /// New `next_attempt_at` (`Some(None)` clears it).
    pub next_attempt_at: Option<Option<i64>>,
    /// New `last_error` (`Some(None)` clears it).
    pub last_error: Option<Option<String>>,
}

/// One guarded status change. Every move the outbox writes is a
/// compare-and-swap on `(status, attempt)`: it applies only if the row still
/// holds `from` and `expected_attempt`, so two scans holding the same
/// snapshot can never both win it.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchMove {
    /// Row id.
    pub id: String,
    /// The status read.
    pub from: DispatchStatus,
    /// The status to write.
    pub to: DispatchStatus,
    /// The attempt counter read (the claim guard).
    pub expected_attempt: u32,
    /// Columns to write with it.
    pub patch: DispatchPatch,
    /// Registered `dispatch.*` reason.
    pub reason: Reason,
    /// Who, recorded in `status_transitions`.
    pub actor: Actor,
    /// A new `expires_at` written in the same transaction (revival only):
    /// `Some(None)` clears the deadline.
    pub expires_at: Option<Option<i64>>,
}

impl DispatchMove {
    /// The guarded transition a store executes for this move: `from` as the
    /// expected status and the patch as column values. Every store (SQLite,
    /// PostgreSQL, the in-memory one) applies it with [`Self::guard`].
    pub fn command(&self) -> TransitionCommand {
        let mut cmd = TransitionCommand::new(
            ENTITY,
            self.id.clone(),
            self.to.as_str(),
            self.reason.clone(),
            self.actor.clone(),
        )
        .expecting(self.from.as_str());
        if let Some(a) = self.patch.attempt {
            cmd.patch.insert("attempt".to_owned(), Value::from(a));
        }
        if let Some(n) = self.patch.next_attempt_at {
            cmd.patch
                .insert("next_attempt_at".to_owned(), Value::from(n));
        }
        if let Some(e) = &self.patch.last_error {
            cmd.patch
                .insert("last_error".to_owned(), Value::from(e.clone()));
        }
        cmd
    }

    /// The compare-and-swap beyond the status: the pre-claim attempt
    /// counter as an extra guard, edges enforced, a lost race a conflict.
    pub fn guard(&self) -> CompatOptions {
        CompatOptions {
            extra_guard: std::collections::BTreeMap::from([(
                "attempt".to_owned(),
                Value::from(self.expected_attempt),
            )]),
            enforce_edges: true,
            raise_on_undeclared_edge: false,
            raise_on_unguarded_conflict: false,
            write_reason_columns: false,
        }
    }
}

/// What became of a move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum MoveOutcome {
    /// Written, with its history row.
    Applied {
        /// The `status_transitions` row.
        transition_id: i64,
    },
    /// The row no longer matched `(from, expected_attempt)`; nothing written.
    Conflict {
        /// Its status now.
        current: DispatchStatus,
        /// Its attempt counter now.
        attempt: u32,
    },
    /// Refused by the lifecycle policy (e.g. an actor the edge does not
    /// allow); only an audit row was written.
    Rejected {
        /// Its status now.
        current: DispatchStatus,
    },
    /// No such row (purged).
    NotFound,
}

impl MoveOutcome {
    /// Whether the move was written.
    pub fn is_applied(&self) -> bool {
        matches!(self, MoveOutcome::Applied { .. })
    }
}

/// The result of an enqueue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enqueued {
    /// The row's id (the existing row's, for a repeated dedup key).
    pub id: String,
    /// Whether this call created the row.
    pub created: bool,
}

/// Which rows a bulk purge selects. Built only through [`PurgeSelection::new`],
/// which refuses an empty selection (an accidental full-table delete).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PurgeSelection {
    status: Option<DispatchStatus>,
    before: Option<i64>,
}

impl PurgeSelection {
    /// Rows in `status` (exactly, in-flight statuses included) and/or last
    /// written before `before` (µs). Without a status only terminal rows
    /// are selected. Neither given: [`OutboxError::EmptyPurgeSelection`].
    pub fn new(status: Option<DispatchStatus>, before: Option<i64>) -> Result<Self, OutboxError> {
        if status.is_none() && before.is_none() {
            return Err(OutboxError::EmptyPurgeSelection);
        }
        Ok(PurgeSelection { status, before })
    }

    /// The explicit status, if any.
    pub fn status(&self) -> Option<DispatchStatus> {
        self.status
    }

    /// The age bound, if any.
    pub fn before(&self) -> Option<i64> {
        self.before
    }

    /// The statuses this selection may delete.
    pub fn statuses(&self) -> Vec<DispatchStatus> {
        match self.status {
            Some(s) => vec![s],
            None => DispatchStatus::TERMINAL.to_vec(),
        }
    }

    /// Whether `row` is selected.
    pub fn matches(&self, row: &DispatchRow) -> bool {
        self.statuses().contains(&row.status) && self.before.is_none_or(|b| row.updated_at < b)
    }
}

/// The result of a bulk purge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeReport {
    /// The ids selected (deleted, unless a dry run).
    pub ids: Vec<String>,
    /// Whether nothing was deleted.
    pub dry_run: bool,
}

/// One `admin_events` row about the outbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// `dispatch.purge`, `dispatch.purge_bulk`, `transition.rejected`...
    pub kind: String,
    /// The row, for single-row events.
    pub entity_id: Option<String>,
    /// Who.
    pub actor: Actor,
    /// Details.
    pub detail: Value,
}

/// A listing filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// Only this status.
    pub status: Option<DispatchStatus>,
    /// At most this many rows, oldest first (None: all).
    pub limit: Option<usize>,
}
