//! The outbox's library calls besides the scan: enqueue, ack, purges, the
//! retention sweep and revival.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lifecycle_core::reasons::DispatchReasons as codes;
use lifecycle_core::{Actor, Reason};
use serde::{Deserialize, Serialize};

use crate::clock::{Clock, micros};
use crate::error::OutboxError;
use crate::model::{
    DispatchMove, DispatchPatch, DispatchRow, DispatchStatus, Enqueued, ListQuery, MoveOutcome,
    NewDispatch, PurgeReport, PurgeSelection,
};
use crate::store::OutboxStore;

/// A fresh, unique dispatch id: time, process, a per-process counter and a
/// random salt, so ids from racing processes never collide.
pub fn new_dispatch_id(now: i64) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(n);
    format!(
        "dsp-{now:x}-{:x}-{n:x}-{:08x}",
        std::process::id(),
        h.finish() & 0xffff_ffff
    )
}

/// Enqueues a dispatch, idempotent on `dedup_key`: a key already present
/// returns that row's id with `created: false` and writes nothing. The row
/// exists in the store (and survives restarts) whether or not any scanner
/// runs.
pub fn enqueue_dispatch<S: OutboxStore, C: Clock + ?Sized>(
    store: &S,
    clock: &C,
    new: &NewDispatch,
    actor: &Actor,
) -> Result<Enqueued, OutboxError> {
    if new.max_attempts == 0 {
        return Err(OutboxError::Invalid(
            "max_attempts must be at least 1".into(),
        ));
    }
    if new.dedup_key.as_deref() == Some("") {
        return Err(OutboxError::Invalid("dedup_key may not be empty".into()));
    }
    let now = clock.now_micros();
    let out = store
        .enqueue(&new_dispatch_id(now), new, actor, now)
        .map_err(OutboxError::store)?;
    tracing::info!(id = %out.id, created = out.created, "dispatch enqueued");
    Ok(out)
}

fn get<S: OutboxStore>(store: &S, id: &str) -> Result<DispatchRow, OutboxError> {
    store
        .get(id)
        .map_err(OutboxError::store)?
        .ok_or_else(|| OutboxError::NotFound(id.to_owned()))
}

/// Acknowledges an in-flight (`pending` or `delivering`) row: it moves to
/// `acked` and is never sent again. Retries the compare-and-swap a few times
/// if a scan moves the row meanwhile.
pub fn ack_dispatch<S: OutboxStore>(
    store: &S,
    id: &str,
    actor: &Actor,
) -> Result<DispatchRow, OutboxError> {
    for _ in 0..8 {
        let row = get(store, id)?;
        if row.status.is_terminal() {
            return Err(OutboxError::WrongStatus {
                id: id.to_owned(),
                status: row.status,
                operation: "ack",
                expected: "pending or delivering",
            });
        }
        let mv = DispatchMove {
            id: id.to_owned(),
            from: row.status,
            to: DispatchStatus::Acked,
            expected_attempt: row.attempt,
            patch: DispatchPatch {
                next_attempt_at: Some(None),
                ..DispatchPatch::default()
            },
            reason: Reason::new(codes::ACKED_CONSUMER),
            actor: actor.clone(),
            expires_at: None,
        };
        match store.apply(&mv).map_err(OutboxError::store)? {
            MoveOutcome::Applied { .. } => return get(store, id),
            MoveOutcome::Conflict { .. } => continue,
            MoveOutcome::NotFound => return Err(OutboxError::NotFound(id.to_owned())),
            MoveOutcome::Rejected { current } => {
                return Err(OutboxError::Rejected {
                    id: id.to_owned(),
                    from: current,
                    to: DispatchStatus::Acked,
                });
            }
        }
    }
    Err(OutboxError::Conflict(id.to_owned()))
}

/// Deletes one row whatever its status (naming an exact id is deliberate)
/// and writes one audit row. Its history rows stay. Returns the status it
/// had.
pub fn purge_dispatch<S: OutboxStore>(
    store: &S,
    id: &str,
    actor: &Actor,
) -> Result<DispatchStatus, OutboxError> {
    store
        .purge(id, actor)
        .map_err(OutboxError::store)?
        .ok_or_else(|| OutboxError::NotFound(id.to_owned()))
}

/// Bulk purge. Needs a status and/or a `before` bound (µs, compared with the
/// row's last write); an explicit status is honoured exactly, in-flight ones
/// included, while a status-less call deletes terminal rows only. Always
/// writes one audit row, dry runs included; a dry run deletes nothing.
pub fn purge_dispatches<S: OutboxStore>(
    store: &S,
    status: Option<DispatchStatus>,
    before: Option<i64>,
    dry_run: bool,
    actor: &Actor,
) -> Result<PurgeReport, OutboxError> {
    let selection = PurgeSelection::new(status, before)?;
    store
        .purge_many(&selection, dry_run, actor)
        .map_err(OutboxError::store)
}

/// The automatic retention sweep: deletes terminal rows last written more
/// than `older_than` ago, never a `pending` or `delivering` one. Separate
/// from the purge calls (no selection, no audit row).
pub fn retention_sweep<S: OutboxStore, C: Clock + ?Sized>(
    store: &S,
    clock: &C,
    older_than: Duration,
) -> Result<u64, OutboxError> {
    let before = clock.now_micros().saturating_sub(micros(older_than));
    let n = store.sweep_terminal(before).map_err(OutboxError::store)?;
    tracing::info!(removed = n, "outbox retention sweep");
    Ok(n)
}

/// Which rows to revive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReviveSelection {
    /// These rows (each must be `dead_letter` or `expired`).
    Ids(Vec<String>),
    /// Every row in `dead_letter` and/or `expired` (`None`: both).
    All(Option<DispatchStatus>),
}

/// How revived rows restart.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviveOptions {
    /// The revived rows' new deadline (µs); `None` clears it, so an expired
    /// row is not expired again at once.
    pub expires_at: Option<i64>,
}

/// One row's revival result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revived {
    /// Row id.
    pub id: String,
    /// Whether it is `pending` again.
    pub revived: bool,
    /// Why not, if not.
    pub detail: Option<String>,
}

/// Revival: moves `dead_letter` and `expired` rows back to `pending` with a
/// fresh attempt budget (attempt 0, due now, no last error), through the
/// policy's declared recovery edge, which only an operator actor may take
/// (another actor is refused and the refusal audited).
///
/// A plain library function: it takes no schedule, action kind or caller
/// context, so any code (a schedule action that can call a function, the
/// CLI, an embedder) gets the same behaviour.
pub fn revive_dispatches<S: OutboxStore, C: Clock + ?Sized>(
    store: &S,
    clock: &C,
    selection: &ReviveSelection,
    options: &ReviveOptions,
    actor: &Actor,
) -> Result<Vec<Revived>, OutboxError> {
    let rows: Vec<Result<DispatchRow, String>> = match selection {
        ReviveSelection::Ids(ids) => ids
            .iter()
            .map(|id| match store.get(id) {
                Ok(Some(row)) => Ok(Ok(row)),
                Ok(None) => Ok(Err(id.clone())),
                Err(e) => Err(OutboxError::store(e)),
            })
            .collect::<Result<_, _>>()?,
        ReviveSelection::All(status) => {
            let statuses = match status {
                Some(s) => vec![*s],
                None => vec![DispatchStatus::DeadLetter, DispatchStatus::Expired],
            };
            let mut rows = Vec::new();
            for s in statuses {
                let query = ListQuery {
                    status: Some(s),
                    limit: None,
                };
                rows.extend(
                    store
                        .list(&query)
                        .map_err(OutboxError::store)?
                        .into_iter()
                        .map(Ok),
                );
            }
            rows
        }
    };
    let now = clock.now_micros();
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let row = match row {
            Ok(row) => row,
            Err(id) => {
                out.push(Revived {
                    id,
                    revived: false,
                    detail: Some("no such dispatch".into()),
                });
                continue;
            }
        };
        if !matches!(
            row.status,
            DispatchStatus::DeadLetter | DispatchStatus::Expired
        ) {
            out.push(Revived {
                id: row.id,
                revived: false,
                detail: Some(format!("is {}, not dead_letter or expired", row.status)),
            });
            continue;
        }
        let mv = DispatchMove {
            id: row.id.clone(),
            from: row.status,
            to: DispatchStatus::Pending,
            expected_attempt: row.attempt,
            patch: DispatchPatch {
                attempt: Some(0),
                next_attempt_at: Some(Some(now)),
                last_error: Some(None),
            },
            reason: Reason::new(codes::PENDING_RETRY_BACKOFF).with_summary("revived"),
            actor: actor.clone(),
            expires_at: Some(options.expires_at),
        };
        let detail = match store.apply(&mv).map_err(OutboxError::store)? {
            MoveOutcome::Applied { .. } => None,
            MoveOutcome::Conflict { current, .. } => {
                Some(format!("changed concurrently (now {current})"))
            }
            MoveOutcome::Rejected { .. } => Some(format!(
                "the recovery edge {} -> pending is for operator actors",
                row.status
            )),
            MoveOutcome::NotFound => Some("purged concurrently".into()),
        };
        out.push(Revived {
            id: row.id,
            revived: detail.is_none(),
            detail,
        });
    }
    Ok(out)
}
