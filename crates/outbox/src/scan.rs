//! The due-scan: snapshot the due rows, then claim, send and finish each one
//! in its own transactions.

use std::time::Duration;

use lifecycle_core::reasons::DispatchReasons as codes;
use lifecycle_core::{Actor, ActorType, Reason};
use serde::{Deserialize, Serialize};

use crate::clock::{Clock, micros};
use crate::error::OutboxError;
use crate::model::{DispatchMove, DispatchPatch, DispatchRow, DispatchStatus, MoveOutcome};
use crate::store::OutboxStore;
use crate::transport::{Delivery, Transport};

/// The identity scans record when the caller names none: the scheduler
/// tick's own.
pub fn scheduler_actor() -> Actor {
    Actor::new(ActorType::Scheduler, "scheduler-tick")
}

/// Exponential backoff: `base * 2^(sends - 1)`, capped at `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backoff {
    /// The wait after the first send.
    pub base: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_secs(5),
            max: Duration::from_secs(15 * 60),
        }
    }
}

impl Backoff {
    /// The wait after `sends` sends (at least 1).
    pub fn after(&self, sends: u32) -> Duration {
        let shift = sends.saturating_sub(1).min(31);
        self.base
            .checked_mul(1u32 << shift)
            .unwrap_or(self.max)
            .min(self.max)
    }
}

/// How a scan runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanConfig {
    /// At most this many rows per scan.
    pub batch: usize,
    /// How long a claim is exclusive (`_CLAIM_LEASE_SECONDS`): a
    /// `delivering` row is taken over only once its lease has run out.
    pub lease: Duration,
    /// Waits between attempts (and, ack-required, the wait for an ack).
    pub backoff: Backoff,
    /// Recorded on every transition the scan writes; `None` records
    /// [`scheduler_actor`].
    pub actor: Option<Actor>,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            batch: 100,
            lease: Duration::from_secs(300),
            backoff: Backoff::default(),
            actor: None,
        }
    }
}

/// What one scan did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanReport {
    /// Rows in the snapshot.
    pub examined: usize,
    /// Claims won (each followed by exactly one send).
    pub claimed: usize,
    /// Sends the transport accepted.
    pub sent_ok: usize,
    /// Sends that failed.
    pub send_failed: usize,
    /// Rows moved to `delivered`.
    pub delivered: usize,
    /// Rows moved back to `pending` (retry or awaiting an ack).
    pub rescheduled: usize,
    /// Rows moved to `dead_letter`.
    pub dead_lettered: usize,
    /// Rows moved to `expired`.
    pub expired: usize,
    /// Rows another writer changed first (lost claims included).
    pub conflicts: usize,
    /// Rows that vanished (purged) between the snapshot and their move.
    pub missing: usize,
}

impl ScanReport {
    fn absorb(&mut self, r: &ScanReport) {
        self.claimed += r.claimed;
        self.sent_ok += r.sent_ok;
        self.send_failed += r.send_failed;
        self.delivered += r.delivered;
        self.rescheduled += r.rescheduled;
        self.dead_lettered += r.dead_lettered;
        self.expired += r.expired;
        self.conflicts += r.conflicts;
        self.missing += r.missing;
    }
}

struct Scan<'a, S, T: ?Sized, C: ?Sized> {
    store: &'a S,
    transport: &'a T,
    clock: &'a C,
    config: &'a ScanConfig,
    actor: Actor,
    report: ScanReport,
}

enum Step {
    Applied,
    Lost,
}

/// A sent row's result, still to be written.
struct Finish {
    id: String,
    attempt: u32,
    to: DispatchStatus,
    code: &'static str,
    patch: DispatchPatch,
}

/// Runs one scan: takes a snapshot of up to `config.batch` due rows, then for
/// each row, in its own transactions, claims it (compare-and-swap on the
/// pre-claim attempt counter), runs the transport once and writes the result.
/// A row purged or changed between the snapshot and its move is skipped and
/// the batch goes on; only a store failure ends the scan.
#[tracing::instrument(skip_all, fields(batch = config.batch))]
pub fn deliver_due<S, T, C>(
    store: &S,
    transport: &T,
    clock: &C,
    config: &ScanConfig,
) -> Result<ScanReport, OutboxError>
where
    S: OutboxStore,
    T: Transport + ?Sized,
    C: Clock + ?Sized,
{
    if config.lease.is_zero() {
        return Err(OutboxError::Config(
            "the claim lease must be longer than zero".into(),
        ));
    }
    let rows = store
        .due(clock.now_micros(), config.batch)
        .map_err(OutboxError::store)?;
    let mut scan = Scan {
        store,
        transport,
        clock,
        config,
        actor: config.actor.clone().unwrap_or_else(scheduler_actor),
        report: ScanReport {
            examined: rows.len(),
            ..ScanReport::default()
        },
    };
    for row in rows {
        if let Some(f) = scan.one(&row)? {
            scan.finish(f)?;
        }
    }
    tracing::debug!(report = ?scan.report, "scan done");
    Ok(scan.report)
}

/// [`deliver_due`] restricted to the rows named by `ids`: each is read
/// (its own snapshot), and if it is due it is claimed, sent once and
/// finished exactly as a due-scan would. Rows not named are never touched,
/// so a caller that enqueued a few rows can deliver just those and leave
/// everyone else's to the regular scans. A named row that does not exist
/// (never enqueued, or purged) counts as `missing`; one that is not due
/// (a live claim, a backoff still running, a terminal row) is left as is.
#[tracing::instrument(skip_all, fields(ids = ids.len()))]
pub fn deliver_ids<S, T, C>(
    store: &S,
    transport: &T,
    clock: &C,
    config: &ScanConfig,
    ids: &[String],
) -> Result<ScanReport, OutboxError>
where
    S: OutboxStore,
    T: Transport + ?Sized,
    C: Clock + ?Sized,
{
    if config.lease.is_zero() {
        return Err(OutboxError::Config(
            "the claim lease must be longer than zero".into(),
        ));
    }
    let mut scan = Scan {
        store,
        transport,
        clock,
        config,
        actor: config.actor.clone().unwrap_or_else(scheduler_actor),
        report: ScanReport::default(),
    };
    for id in ids {
        let Some(row) = store.get(id).map_err(OutboxError::store)? else {
            scan.report.missing += 1;
            continue;
        };
        scan.report.examined += 1;
        if let Some(f) = scan.one(&row)? {
            scan.finish(f)?;
        }
    }
    tracing::debug!(report = ?scan.report, "selected-rows scan done");
    Ok(scan.report)
}

/// [`deliver_due`] with up to `workers` rows in flight at once, for slow
/// transports (a spawned program, a network call): each row is still
/// claimed, sent once and finished in its own transactions, so every rule of
/// the sequential scan holds; only the order in which rows finish changes.
/// With one worker, sends stay one at a time in snapshot order and only the
/// finishing write of a sent row overlaps the next row's claim and send.
/// The first store error stops the workers (each finishes its current row)
/// and is returned.
#[tracing::instrument(skip_all, fields(batch = config.batch, workers))]
pub fn deliver_due_concurrent<S, T, C>(
    store: &S,
    transport: &T,
    clock: &C,
    config: &ScanConfig,
    workers: std::num::NonZeroUsize,
) -> Result<ScanReport, OutboxError>
where
    S: OutboxStore + Sync,
    T: Transport + Sync + ?Sized,
    C: Clock + ?Sized,
{
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    if config.lease.is_zero() {
        return Err(OutboxError::Config(
            "the claim lease must be longer than zero".into(),
        ));
    }
    let rows = store
        .due(clock.now_micros(), config.batch)
        .map_err(OutboxError::store)?;
    if workers.get() == 1 {
        return pipelined(store, transport, clock, config, rows);
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<OutboxError>> = Mutex::new(None);
    let actor = config.actor.clone().unwrap_or_else(scheduler_actor);
    let reports: Vec<ScanReport> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers.get().min(rows.len().max(1)))
            .map(|_| {
                let (rows, next, stop, failure, actor) = (&rows, &next, &stop, &failure, &actor);
                s.spawn(move || {
                    let mut scan = Scan {
                        store,
                        transport,
                        clock,
                        config,
                        actor: actor.clone(),
                        report: ScanReport::default(),
                    };
                    while !stop.load(Ordering::SeqCst) {
                        let Some(row) = rows.get(next.fetch_add(1, Ordering::SeqCst)) else {
                            break;
                        };
                        let done = scan.one(row).and_then(|f| match f {
                            Some(f) => scan.finish(f),
                            None => Ok(()),
                        });
                        if let Err(e) = done {
                            stop.store(true, Ordering::SeqCst);
                            if let Ok(mut f) = failure.lock() {
                                f.get_or_insert(e);
                            }
                        }
                    }
                    scan.report
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    let mut report = ScanReport {
        examined: rows.len(),
        ..ScanReport::default()
    };
    for r in reports {
        report.absorb(&r);
    }
    tracing::debug!(report = ?report, "concurrent scan done");
    Ok(report)
}

/// One row in flight, with its finishing write overlapped: the finishing
/// move of a sent row is written by a second thread while this one claims
/// and sends the next row. Sends stay strictly one at a time and in
/// snapshot order; each move is still its own transaction.
fn pipelined<S, T, C>(
    store: &S,
    transport: &T,
    clock: &C,
    config: &ScanConfig,
    rows: Vec<DispatchRow>,
) -> Result<ScanReport, OutboxError>
where
    S: OutboxStore + Sync,
    T: Transport + Sync + ?Sized,
    C: Clock + ?Sized,
{
    use std::sync::atomic::{AtomicBool, Ordering};

    let actor = config.actor.clone().unwrap_or_else(scheduler_actor);
    let stop = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Finish>(1);
    let (mut report, finished) = std::thread::scope(|s| {
        let (stop, finisher_actor) = (&stop, actor.clone());
        let finisher = s.spawn(move || {
            let mut scan = Scan {
                store,
                transport,
                clock,
                config,
                actor: finisher_actor,
                report: ScanReport::default(),
            };
            let mut failed = None;
            for f in rx {
                if failed.is_none()
                    && let Err(e) = scan.finish(f)
                {
                    stop.store(true, Ordering::SeqCst);
                    failed = Some(e);
                }
            }
            (scan.report, failed)
        });
        let mut scan = Scan {
            store,
            transport,
            clock,
            config,
            actor,
            report: ScanReport::default(),
        };
        let mut failed = None;
        for row in &rows {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            match scan.one(row) {
                Ok(Some(f)) => {
                    if tx.send(f).is_err() {
                        break;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        drop(tx);
        let finished = finisher
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        match failed {
            Some(e) => Err(e),
            None => Ok((scan.report, finished)),
        }
    })?;
    let (finish_report, finish_failed) = finished;
    if let Some(e) = finish_failed {
        return Err(e);
    }
    report.absorb(&finish_report);
    report.examined = rows.len();
    tracing::debug!(report = ?report, "pipelined scan done");
    Ok(report)
}

impl<S, T, C> Scan<'_, S, T, C>
where
    S: OutboxStore,
    T: Transport + ?Sized,
    C: Clock + ?Sized,
{
    fn mv(
        &mut self,
        id: &str,
        from: DispatchStatus,
        expected_attempt: u32,
        to: DispatchStatus,
        code: &str,
        patch: DispatchPatch,
    ) -> Result<Step, OutboxError> {
        let mv = DispatchMove {
            id: id.to_owned(),
            from,
            to,
            expected_attempt,
            patch,
            reason: Reason::new(code),
            actor: self.actor.clone(),
            expires_at: None,
        };
        match self.store.apply(&mv).map_err(OutboxError::store)? {
            MoveOutcome::Applied { .. } => {
                match to {
                    DispatchStatus::Delivered => self.report.delivered += 1,
                    DispatchStatus::Pending => self.report.rescheduled += 1,
                    DispatchStatus::DeadLetter => self.report.dead_lettered += 1,
                    DispatchStatus::Expired => self.report.expired += 1,
                    DispatchStatus::Delivering | DispatchStatus::Acked => {}
                }
                Ok(Step::Applied)
            }
            MoveOutcome::Conflict { current, attempt } => {
                tracing::debug!(id, %current, attempt, "dispatch changed under the scan; skipped");
                self.report.conflicts += 1;
                Ok(Step::Lost)
            }
            MoveOutcome::Rejected { current } => {
                tracing::warn!(id, %current, %to, "policy refused a scan move; skipped");
                self.report.conflicts += 1;
                Ok(Step::Lost)
            }
            MoveOutcome::NotFound => {
                tracing::debug!(id, "dispatch purged under the scan; skipped");
                self.report.missing += 1;
                Ok(Step::Lost)
            }
        }
    }

    /// The terminal status and reason of a row with no attempts left.
    fn exhausted_reason(row: &DispatchRow) -> &'static str {
        if row.ack_required && row.last_error.is_none() {
            codes::DEAD_LETTER_ACK_TIMEOUT
        } else {
            codes::DEAD_LETTER_MAX_ATTEMPTS
        }
    }

    /// Acts on one snapshotted row; after a send, returns the finishing
    /// move still to write.
    fn one(&mut self, row: &DispatchRow) -> Result<Option<Finish>, OutboxError> {
        let now = self.clock.now_micros();
        let from = row.status;
        let due_at = row.next_attempt_at.unwrap_or(i64::MIN);
        let expired = row.expires_at.is_some_and(|e| e <= now);
        match from {
            // A live claim is never taken over, expired deadline or not.
            DispatchStatus::Delivering if due_at > now => return Ok(None),
            DispatchStatus::Pending if due_at > now && !expired => return Ok(None),
            DispatchStatus::Pending | DispatchStatus::Delivering => {}
            _ => return Ok(None),
        }
        let clear = DispatchPatch {
            next_attempt_at: Some(None),
            ..DispatchPatch::default()
        };
        if expired {
            self.mv(
                &row.id,
                from,
                row.attempt,
                DispatchStatus::Expired,
                codes::EXPIRED_DEADLINE,
                clear,
            )?;
            return Ok(None);
        }
        let lease_until = now.saturating_add(micros(self.config.lease));
        if row.attempt >= row.max_attempts {
            // No send left. `pending -> dead_letter` is not a declared edge,
            // so a pending row is claimed first (without raising the counter:
            // nothing is sent) and then dead-lettered.
            if from == DispatchStatus::Pending {
                let claim = DispatchPatch {
                    next_attempt_at: Some(Some(lease_until)),
                    ..DispatchPatch::default()
                };
                let step = self.mv(
                    &row.id,
                    from,
                    row.attempt,
                    DispatchStatus::Delivering,
                    codes::DELIVERING_ATTEMPT,
                    claim,
                )?;
                if let Step::Lost = step {
                    return Ok(None);
                }
            }
            self.mv(
                &row.id,
                DispatchStatus::Delivering,
                row.attempt,
                DispatchStatus::DeadLetter,
                Self::exhausted_reason(row),
                clear,
            )?;
            return Ok(None);
        }
        let attempt = row.attempt + 1;
        let claim = DispatchPatch {
            attempt: Some(attempt),
            next_attempt_at: Some(Some(lease_until)),
            last_error: None,
        };
        if let Step::Lost = self.mv(
            &row.id,
            from,
            row.attempt,
            DispatchStatus::Delivering,
            codes::DELIVERING_ATTEMPT,
            claim,
        )? {
            return Ok(None);
        }
        self.report.claimed += 1;
        let sent = self.transport.send(&Delivery {
            id: &row.id,
            payload: &row.payload,
            deliver_to: row.deliver_to.as_deref(),
            template: row.template.as_ref(),
            attempt,
        });
        let after = self.clock.now_micros();
        let retry_at = after.saturating_add(micros(self.config.backoff.after(attempt)));
        let (to, code, patch) = match sent {
            Ok(()) if !row.ack_required => {
                self.report.sent_ok += 1;
                let patch = DispatchPatch {
                    next_attempt_at: Some(None),
                    last_error: Some(None),
                    ..DispatchPatch::default()
                };
                (
                    DispatchStatus::Delivered,
                    codes::DELIVERED_TRANSPORT_OK,
                    patch,
                )
            }
            Ok(()) => {
                // Ack-required: back to pending to wait for the ack; the
                // next due scan sends again or, with no attempt left,
                // dead-letters it for an ack timeout.
                self.report.sent_ok += 1;
                let patch = DispatchPatch {
                    next_attempt_at: Some(Some(retry_at)),
                    last_error: Some(None),
                    ..DispatchPatch::default()
                };
                (DispatchStatus::Pending, codes::PENDING_RETRY_BACKOFF, patch)
            }
            Err(e) => {
                self.report.send_failed += 1;
                tracing::info!(id = %row.id, attempt, error = %e, "dispatch send failed");
                let (to, code, next) = if attempt >= row.max_attempts {
                    (
                        DispatchStatus::DeadLetter,
                        codes::DEAD_LETTER_MAX_ATTEMPTS,
                        None,
                    )
                } else {
                    (
                        DispatchStatus::Pending,
                        codes::PENDING_RETRY_BACKOFF,
                        Some(retry_at),
                    )
                };
                let patch = DispatchPatch {
                    next_attempt_at: Some(next),
                    last_error: Some(Some(e.0)),
                    ..DispatchPatch::default()
                };
                (to, code, patch)
            }
        };
        Ok(Some(Finish {
            id: row.id.clone(),
            attempt,
            to,
            code,
            patch,
        }))
    }

    /// Writes a sent row's result (its own transaction).
    fn finish(&mut self, f: Finish) -> Result<(), OutboxError> {
        self.mv(
            &f.id,
            DispatchStatus::Delivering,
            f.attempt,
            f.to,
            f.code,
            f.patch,
        )
        .map(|_| ())
    }
}
