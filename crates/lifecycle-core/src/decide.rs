//! `decide()`: the guarded read-check-write algorithm as a pure function.
//!
//! A store reads the row inside its write transaction, calls [`decide`] and
//! executes the returned [`Decision`] in that same transaction. Nothing here
//! touches storage, so every rule is testable on plain values and every store
//! (SQLite now, PostgreSQL later) shares one reading of the policy.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::CoreError;
use crate::model::{Expected, InitialCommand, Override, TransitionCommand};
use crate::policy::{Policy, SameStatus};
use crate::reasons::validate_reason;

/// The row as read inside the write transaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowSnapshot {
    /// Its status.
    pub status: String,
    /// Its `updated_at`, bumped by every write.
    pub version: i64,
    /// Current values of the columns a guard names (absent column: absent key).
    #[serde(default)]
    pub columns: BTreeMap<String, Value>,
}

/// Why the policy refused a move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Rejection {
    /// The move is not in the declared-edge graph.
    UndeclaredEdge,
    /// The move leaves a terminal status with no declared edge.
    TerminalExit,
    /// The edge is declared, but not for this actor type.
    ActorNotPermitted,
    /// The policy refuses same-status moves.
    SameStatus,
}

impl Rejection {
    /// The wire name written to the audit row.
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::UndeclaredEdge => "undeclared_edge",
            Rejection::TerminalExit => "terminal_exit",
            Rejection::ActorNotPermitted => "actor_not_permitted",
            Rejection::SameStatus => "same_status",
        }
    }
}

/// What a store must do with a zero-row UPDATE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZeroRows {
    /// Report a conflict (a guard no longer matched).
    Conflict,
    /// Raise a storage anomaly inside the transaction so it rolls back.
    Anomaly,
}

/// A write to execute: one UPDATE (or INSERT) plus one history append.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WritePlan {
    /// The status read (None: insert a new row).
    pub from_status: Option<String>,
    /// The status to write.
    pub to_status: String,
    /// Extra `column = value` conditions on the UPDATE.
    pub guard: BTreeMap<String, Value>,
    /// An `updated_at = version` condition on the UPDATE.
    pub expected_version: Option<i64>,
    /// Extra `column = value` assignments.
    pub patch: BTreeMap<String, Value>,
    /// The override that let the move through, to audit.
    pub override_used: Option<Override>,
    /// Whether to denormalise the reason onto `status_reason_*` columns.
    pub write_reason_columns: bool,
    /// Whether an unguarded zero-row update is a storage anomaly.
    pub raise_on_unguarded_conflict: bool,
}

impl WritePlan {
    /// Whether the UPDATE carries no guard beyond id and status.
    pub fn is_unguarded(&self) -> bool {
        self.guard.is_empty() && self.expected_version.is_none()
    }

    /// How to report an UPDATE that matched no row.
    pub fn zero_rows(&self) -> ZeroRows {
        if self.raise_on_unguarded_conflict && self.is_unguarded() {
            ZeroRows::Anomaly
        } else {
            ZeroRows::Conflict
        }
    }
}

/// The result of [`decide`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Decision {
    /// Execute this write.
    Write(WritePlan),
    /// Accept without writing (same-status `noop` policies).
    Noop {
        /// The unchanged status.
        status: String,
    },
    /// The row is not as the caller expected; write nothing.
    Conflict {
        /// What the row holds.
        current_status: Option<String>,
    },
    /// Refused by policy; write only a rejection audit row.
    Reject {
        /// What the row holds.
        current_status: Option<String>,
        /// Why.
        rejection: Rejection,
    },
}

/// Switches used only by the two compatibility surfaces (the
/// `update_status`-style wrapper and the legacy dispatch/schedule_run
/// transition). The public [`TransitionCommand`] has none of them.
#[derive(Debug, Clone, PartialEq)]
pub struct CompatOptions {
    /// Per-column equality guards on the UPDATE.
    pub extra_guard: BTreeMap<String, Value>,
    /// Whether the declared-edge graph (and actor restrictions) apply.
    pub enforce_edges: bool,
    /// Whether an undeclared edge raises instead of being rejected.
    pub raise_on_undeclared_edge: bool,
    /// Whether an unguarded zero-row UPDATE is a storage anomaly.
    pub raise_on_unguarded_conflict: bool,
    /// Whether to write `status_reason_*` columns.
    pub write_reason_columns: bool,
}

impl Default for CompatOptions {
    /// The public surface's behaviour.
    fn default() -> Self {
        CompatOptions {
            extra_guard: BTreeMap::new(),
            enforce_edges: true,
            raise_on_undeclared_edge: false,
            raise_on_unguarded_conflict: false,
            write_reason_columns: true,
        }
    }
}

/// Decides a public transition command.
pub fn decide(
    policy: &Policy,
    row: Option<&RowSnapshot>,
    cmd: &TransitionCommand,
) -> Result<Decision, CoreError> {
    decide_with(policy, row, cmd, &CompatOptions::default())
}

/// Decides an initial-state command: the row must not exist yet.
pub fn decide_initial(
    policy: &Policy,
    row: Option<&RowSnapshot>,
    cmd: &InitialCommand,
) -> Result<Decision, CoreError> {
    check_entity(policy, &cmd.entity_type)?;
    check_status(policy, &cmd.status)?;
    if !policy.is_initial(&cmd.status) {
        return Err(CoreError::NotInitialStatus {
            entity_type: policy.entity_type().to_owned(),
            status: cmd.status.clone(),
        });
    }
    validate_reason(policy, &cmd.reason)?;
    check_columns(policy, cmd.patch.keys())?;
    if let Some(row) = row {
        return Ok(Decision::Conflict {
            current_status: Some(row.status.clone()),
        });
    }
    Ok(Decision::Write(WritePlan {
        from_status: None,
        to_status: cmd.status.clone(),
        guard: BTreeMap::new(),
        expected_version: None,
        patch: cmd.patch.clone(),
        override_used: None,
        write_reason_columns: policy.has_reason_columns(),
        raise_on_unguarded_conflict: false,
    }))
}

fn check_entity(policy: &Policy, entity_type: &str) -> Result<(), CoreError> {
    if policy.entity_type() == entity_type {
        Ok(())
    } else {
        Err(CoreError::UnknownEntityType(entity_type.to_owned()))
    }
}

fn check_status(policy: &Policy, status: &str) -> Result<(), CoreError> {
    if policy.has_status(status) {
        Ok(())
    } else {
        Err(CoreError::UnknownStatus {
            entity_type: policy.entity_type().to_owned(),
            status: status.to_owned(),
        })
    }
}

fn check_columns<'a>(
    policy: &Policy,
    columns: impl IntoIterator<Item = &'a String>,
) -> Result<(), CoreError> {
    match columns.into_iter().find(|c| !policy.is_patch_field(c)) {
        Some(c) => Err(CoreError::UnknownColumn {
            entity_type: policy.entity_type().to_owned(),
            column: c.clone(),
        }),
        None => Ok(()),
    }
}

/// Decides with the compatibility switches. Order of checks:
///
/// 1. command shape: entity, target status in the vocabulary, reason code,
///    patch and guard columns, override validity (errors);
/// 2. the self-edge guard requirement, before any conflict (error);
/// 3. missing row: insert only when the caller expected "no row yet";
/// 4. compare-and-swap expectations: status set, version, extra guard
///    (conflict);
/// 5. same status without a declared self-edge: the policy's rule;
/// 6. undeclared edge (raise in legacy mode, else override or reject),
///    terminal exit (override or reject), actor restriction (override or
///    reject);
/// 7. required patch fields of the edge taken (error);
/// 8. write.
pub fn decide_with(
    policy: &Policy,
    row: Option<&RowSnapshot>,
    cmd: &TransitionCommand,
    opts: &CompatOptions,
) -> Result<Decision, CoreError> {
    check_entity(policy, &cmd.entity_type)?;
    check_status(policy, &cmd.to_status)?;
    for expected in &cmd.expected_statuses {
        if let Expected::Status(s) = expected {
            check_status(policy, s)?;
        }
    }
    validate_reason(policy, &cmd.reason)?;
    check_columns(policy, cmd.patch.keys())?;
    check_columns(policy, opts.extra_guard.keys())?;
    if let Some(o) = &cmd.override_ {
        o.validate()?;
    }
    let to = cmd.to_status.as_str();

    // 2. A self-edge with required guard fields must be guarded by exactly
    // those columns or by the version; otherwise two callers holding the same
    // snapshot could both win a recovery claim. Checked on the caller's
    // intent so that a contract violation never hides behind a conflict.
    let intends_self_edge = cmd
        .expected_statuses
        .contains(&Expected::Status(to.to_owned()))
        || (cmd.expected_statuses.is_empty() && row.is_some_and(|r| r.status == to));
    if intends_self_edge && let Some(edge) = policy.edges().get(to, to) {
        let required = &edge.required_guard_fields;
        let guarded: BTreeSet<&String> = opts.extra_guard.keys().collect();
        let covered = guarded == required.iter().collect::<BTreeSet<_>>();
        if !required.is_empty() && !covered && cmd.expected_version.is_none() {
            return Err(CoreError::SelfEdgeUnguarded {
                entity_type: policy.entity_type().to_owned(),
                status: to.to_owned(),
                required: required.iter().cloned().collect(),
            });
        }
    }

    // 3. No row yet.
    let Some(row) = row else {
        if !cmd.expected_statuses.contains(&Expected::NoRow) {
            return Err(CoreError::NotFound {
                entity_type: policy.entity_type().to_owned(),
                entity_id: cmd.entity_id.clone(),
            });
        }
        if !policy.is_initial(to) {
            return Err(CoreError::NotInitialStatus {
                entity_type: policy.entity_type().to_owned(),
                status: to.to_owned(),
            });
        }
        return Ok(Decision::Write(WritePlan {
            from_status: None,
            to_status: to.to_owned(),
            guard: BTreeMap::new(),
            expected_version: None,
            patch: cmd.patch.clone(),
            override_used: None,
            write_reason_columns: opts.write_reason_columns && policy.has_reason_columns(),
            raise_on_unguarded_conflict: false,
        }));
    };
    let from = row.status.as_str();
    let conflict = || {
        Ok(Decision::Conflict {
            current_status: Some(from.to_owned()),
        })
    };

    // 4. Compare-and-swap expectations.
    if !cmd.expected_statuses.is_empty()
        && !cmd
            .expected_statuses
            .contains(&Expected::Status(from.to_owned()))
    {
        return conflict();
    }
    if cmd.expected_version.is_some_and(|v| v != row.version) {
        return conflict();
    }
    if opts
        .extra_guard
        .iter()
        .any(|(c, v)| row.columns.get(c) != Some(v))
    {
        return conflict();
    }

    let edge = policy.edges().get(from, to);
    let mut override_used = None;
    let mut needs_override = |rejection: Rejection| match &cmd.override_ {
        Some(o) => {
            override_used = Some(o.clone());
            None
        }
        None => Some(Decision::Reject {
            current_status: Some(from.to_owned()),
            rejection,
        }),
    };

    // 5. Same status with no declared self-edge.
    if from == to && edge.is_none() {
        match policy.same_status() {
            SameStatus::Append => {}
            SameStatus::Noop => {
                return Ok(Decision::Noop {
                    status: from.to_owned(),
                });
            }
            SameStatus::Reject => {
                if let Some(reject) = needs_override(Rejection::SameStatus) {
                    return Ok(reject);
                }
            }
        }
    } else if edge.is_none() {
        // 6. Undeclared edge; terminal exits are undeclared by definition.
        if opts.enforce_edges && opts.raise_on_undeclared_edge {
            return Err(CoreError::UndeclaredEdge {
                entity_type: policy.entity_type().to_owned(),
                from: from.to_owned(),
                to: to.to_owned(),
            });
        }
        let rejection = if policy.is_terminal(from) {
            Some(Rejection::TerminalExit)
        } else if opts.enforce_edges {
            Some(Rejection::UndeclaredEdge)
        } else {
            None
        };
        if let Some(rejection) = rejection
            && let Some(reject) = needs_override(rejection)
        {
            return Ok(reject);
        }
    } else if let Some(edge) = edge
        && opts.enforce_edges
        && !edge.allows(cmd.actor.kind)
    {
        if opts.raise_on_undeclared_edge {
            return Err(CoreError::UndeclaredEdge {
                entity_type: policy.entity_type().to_owned(),
                from: from.to_owned(),
                to: to.to_owned(),
            });
        }
        if let Some(reject) = needs_override(Rejection::ActorNotPermitted) {
            return Ok(reject);
        }
    }

    // 7. Required patch fields of the edge taken.
    if let Some(edge) = edge {
        let missing: Vec<String> = edge
            .required_patch_fields
            .iter()
            .filter(|f| !cmd.patch.contains_key(*f))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(CoreError::MissingPatchFields {
                entity_type: policy.entity_type().to_owned(),
                from: from.to_owned(),
                to: to.to_owned(),
                missing,
            });
        }
    }

    Ok(Decision::Write(WritePlan {
        from_status: Some(from.to_owned()),
        to_status: to.to_owned(),
        guard: opts.extra_guard.clone(),
        expected_version: cmd.expected_version,
        patch: cmd.patch.clone(),
        override_used,
        write_reason_columns: opts.write_reason_columns && policy.has_reason_columns(),
        raise_on_unguarded_conflict: opts.raise_on_unguarded_conflict,
    }))
}
