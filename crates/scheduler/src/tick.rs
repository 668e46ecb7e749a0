//! The tick loop: the start preamble (stale runs, missed fires, once per
//! start), then ticks that fire due schedules, record overlaps and drive the
//! per-tick hooks (outbox due-scan, mirror reconcile). A hook runs on a
//! thread of its own, never on the tick's: a slow hook is left running
//! (reported busy) while the next ticks fire on time.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use lifecycle_core::{Actor, ActorType, Cancellation};
use serde::Serialize;
use serde_json::json;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;

use crate::claimer::{self, Role};
use crate::clock::Clock;
use crate::error::Error;
use crate::launch::{Fire, Launcher};
use crate::model::{Micros, MissedFire};
use crate::store::{FireKind, Fired, MissedRow, RunStart, Schedule, ScheduleStore};

/// A suffix that makes a fire's run and session ids unique: this process
/// and a sequence number within it.
fn fire_tag() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// At most this many further missed instants are counted per schedule.
const MISSED_COUNT_CAP: usize = 100_000;

/// Work driven on every tick besides the schedules (the outbox due-scan,
/// the mirror reconcile). Each run happens on a thread of its own, so it
/// may block; a run still going at the next tick is not started again
/// (that tick reports it busy). A failing hook is logged and reported; the
/// ticks go on.
pub trait TickHook: Send {
    /// Its name, for logs and reports.
    fn name(&self) -> &str;
    /// Runs once per tick.
    fn tick(&mut self, now: Micros) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

/// Tuning.
#[derive(Debug, Clone, Copy)]
pub struct SchedulerConfig {
    /// A due instant at most this old at start is a fire, not a missed fire
    /// (the tick interval is a good value).
    pub missed_tolerance: Micros,
    /// At most this many `skipped` rows per schedule for missed fires; the
    /// last one counts the rest in its metadata (`more`).
    pub missed_rows_cap: usize,
    /// How often a ticking scheduler looks again at the runs still
    /// `running` that it did not start: one whose recorded session has
    /// ended (a trigger that died on another host, its session ended by
    /// that host's sweep) is ended as the preamble would end it, once it
    /// has been seen so at two looks in a row (a live trigger ends its own
    /// run as soon as its session ends).
    pub recheck_interval: Micros,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            missed_tolerance: 1_000_000,
            missed_rows_cap: 100,
            recheck_interval: 60_000_000,
        }
    }
}

/// What the preamble did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PreambleReport {
    /// Runs left `running` by a previous scheduler, now ended.
    pub stale_runs_ended: Vec<String>,
    /// `skipped` rows written for missed fires (schedule name, count).
    pub missed: Vec<(String, usize)>,
}

/// What one tick did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TickReport {
    /// Run ids started.
    pub fired: Vec<String>,
    /// Run ids recorded `skipped` for overlap.
    pub skipped_overlap: Vec<String>,
    /// Hook runs that ended failed since the previous tick (`name: error`),
    /// and store errors of this tick's re-check (`recheck: error`).
    pub hook_errors: Vec<String>,
    /// Hooks still running from an earlier tick, not started this tick.
    pub hooks_busy: Vec<String>,
    /// Runs another process started whose session had ended (with no one
    /// left to end the run), ended by this tick's re-check
    /// ([`SchedulerConfig::recheck_interval`]).
    pub stale_runs_ended: Vec<String>,
}

/// One hook and its run in flight.
struct HookSlot {
    name: String,
    hook: Arc<Mutex<Box<dyn TickHook>>>,
    running: Option<oneshot::Receiver<Result<(), String>>>,
}

impl HookSlot {
    /// Collects the run in flight if it ended: `Some(Err)` when it failed
    /// (or panicked); `None` while it still runs or when none was started.
    fn collect(&mut self) -> Option<Result<(), String>> {
        let rx = self.running.as_mut()?;
        let out = match rx.try_recv() {
            Ok(r) => r,
            Err(oneshot::error::TryRecvError::Empty) => return None,
            Err(oneshot::error::TryRecvError::Closed) => Err("the hook panicked".to_owned()),
        };
        self.running = None;
        Some(out)
    }

    /// Starts a run at `now` on a thread of its own.
    fn start(&mut self, now: Micros) -> Result<(), String> {
        let (tx, rx) = oneshot::channel();
        let hook = Arc::clone(&self.hook);
        std::thread::Builder::new()
            .name(format!("tick-hook-{}", self.name))
            .spawn(move || {
                let mut hook = hook.lock().unwrap_or_else(|p| p.into_inner());
                let out = hook.tick(now).map_err(|e| e.to_string());
                drop(hook);
                let _ = tx.send(out);
            })
            .map_err(|e| format!("starting its thread: {e}"))?;
        self.running = Some(rx);
        Ok(())
    }
}

/// A started scheduler: the preamble has run.
pub struct Scheduler<C: Clock, L: Launcher> {
    schedules: Arc<dyn ScheduleStore>,
    clock: C,
    launcher: Arc<L>,
    actor: Actor,
    /// Who this scheduler's claims name ([`claimer::this_process`]).
    claimer: String,
    hooks: Vec<HookSlot>,
    hook_errors: Vec<String>,
    tasks: JoinSet<()>,
    shutdown: watch::Sender<Option<Cancellation>>,
    /// See [`SchedulerConfig::recheck_interval`].
    recheck_interval: Micros,
    /// When the next re-check is due (never, for [`Scheduler::attach`]).
    next_recheck: Micros,
    /// Runs whose session had ended at the last re-check.
    ended_sessions_seen: HashSet<String>,
}

impl<C: Clock, L: Launcher> std::fmt::Debug for Scheduler<C, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("running", &self.tasks.len())
            .field("hooks", &self.hooks.len())
            .finish_non_exhaustive()
    }
}

/// The actor of a scheduler in this process.
pub fn scheduler_actor() -> Actor {
    Actor::new(
        ActorType::Scheduler,
        format!("scheduler-{}", std::process::id()),
    )
}

impl<C: Clock, L: Launcher> Scheduler<C, L> {
    /// Starts a scheduler: runs the preamble ONCE (runs left `running` by a
    /// dead scheduler end as their sessions ended, but a run claimed by a
    /// trigger whose process still lives is left to it even before its
    /// session is recorded; missed fires are detected and recorded) and
    /// returns the scheduler ready to tick. The
    /// caller holds the [`crate::TickLock`] and has run the runner's orphan
    /// sweep first, vouching for [`crate::daemon_claimed_sessions`] as gone
    /// (`runner::sweep_orphans_known_gone`) and for nothing else: a
    /// trigger's run on another host is left to that host.
    pub fn start(
        schedules: Arc<dyn ScheduleStore>,
        clock: C,
        launcher: Arc<L>,
        config: SchedulerConfig,
    ) -> Result<(Self, PreambleReport), Error> {
        let actor = scheduler_actor();
        let mut report = PreambleReport::default();
        let now = clock.now();
        for run in schedules.running_claims()? {
            let session = run.session_id.as_deref();
            let found = match session {
                Some(id) => schedules.session_status(id)?,
                None => None,
            };
            if found.is_none() && claimer::live_trigger(run.claimed_by.as_deref()) {
                // A trigger's run whose session is not recorded yet: its
                // process lives and will record it (and the run's end).
                tracing::info!(run = %run.id, "left running: its trigger's process still runs");
                continue;
            }
            if let Some((status, reason, detail)) = run_end(session, found)
                && schedules.end_run(&run.id, status, reason, now, Some(&detail), &actor)?
            {
                report.stale_runs_ended.push(run.id);
            }
        }
        for s in schedules.due(now - config.missed_tolerance - 1)? {
            if s.spec.missed_fire != MissedFire::Skip {
                continue; // run late: the first tick fires it once
            }
            let Some(first) = s.next_fire_at else {
                continue;
            };
            let cutoff = now - config.missed_tolerance - 1;
            let (missed, more) = s.spec.due_between(first, cutoff, config.missed_rows_cap)?;
            let Some(&last) = missed.last() else { continue };
            // The first instant past the missed ones: one within the
            // tolerance is a fire, the first tick's (not skipped over).
            let next = s.spec.next_after(last, cutoff)?;
            // The rest is counted, not written, and the count itself is
            // bounded (a 1 s cron down for a year would be 31 M steps).
            let (rest, rest_capped) = if more {
                let (after, capped) = s.spec.due_between(last, cutoff, MISSED_COUNT_CAP)?;
                (after.len().saturating_sub(1), capped)
            } else {
                (0, false)
            };
            let rows: Vec<MissedRow> = missed
                .iter()
                .enumerate()
                .map(|(i, due)| {
                    let mut meta = json!({"due_at": due, "policy": "skip"});
                    if i + 1 == missed.len() && rest > 0 {
                        meta["more"] = json!(rest);
                        meta["more_is_lower_bound"] = json!(rest_capped);
                    }
                    MissedRow {
                        run_id: format!("sr-{}-{due}-missed", s.id),
                        due_at: *due,
                        reason_json: meta,
                    }
                })
                .collect();
            // The move and its rows are one transaction: a kill leaves
            // both or neither.
            if !schedules.record_missed(&s.id, first, next, &rows, now, &actor)? {
                continue;
            }
            tracing::info!(schedule = %s.spec.name, missed = missed.len() + rest, "missed fires recorded");
            report
                .missed
                .push((s.spec.name.clone(), missed.len() + rest));
        }
        let (shutdown, _) = watch::channel(None);
        Ok((
            Self {
                schedules,
                clock,
                launcher,
                actor,
                claimer: claimer::this_process(Role::Daemon),
                hooks: Vec::new(),
                hook_errors: Vec::new(),
                tasks: JoinSet::new(),
                shutdown,
                recheck_interval: config.recheck_interval,
                next_recheck: now.saturating_add(config.recheck_interval),
                ended_sessions_seen: HashSet::new(),
            },
            report,
        ))
    }

    /// A scheduler WITHOUT the preamble, for firing one schedule by hand
    /// ([`Scheduler::trigger`]) from another process while a daemon may be
    /// ticking: it detects no missed fires and ends no stale runs (those
    /// belong to the daemon's start). Do not tick it.
    pub fn attach(schedules: Arc<dyn ScheduleStore>, clock: C, launcher: Arc<L>) -> Self {
        let (shutdown, _) = watch::channel(None);
        Self {
            schedules,
            clock,
            launcher,
            actor: scheduler_actor(),
            claimer: claimer::this_process(Role::Trigger),
            hooks: Vec::new(),
            hook_errors: Vec::new(),
            tasks: JoinSet::new(),
            shutdown,
            recheck_interval: Micros::MAX,
            next_recheck: Micros::MAX,
            ended_sessions_seen: HashSet::new(),
        }
    }

    /// Adds a per-tick hook.
    pub fn add_hook(&mut self, hook: Box<dyn TickHook>) {
        self.hooks.push(HookSlot {
            name: hook.name().to_owned(),
            hook: Arc::new(Mutex::new(hook)),
            running: None,
        });
    }

    /// The schedules.
    pub fn schedules(&self) -> &dyn ScheduleStore {
        &*self.schedules
    }

    /// Runs started by this scheduler and not yet ended.
    pub fn running(&self) -> usize {
        self.tasks.len()
    }

    /// One tick: every enabled schedule due now fires (or is recorded
    /// `skipped` for overlap when its concurrency cap is reached), its next
    /// due instant moves past now (fires missed while a running scheduler
    /// stalled coalesce into this one, with no skipped rows), then the
    /// hooks run. Must be called inside a tokio runtime (runs are spawned).
    pub fn tick(&mut self) -> Result<TickReport, Error> {
        self.reap();
        let now = self.clock.now();
        let mut report = TickReport::default();
        // Due, or the clock stepped back past a whole interval.
        if now >= self.next_recheck || self.next_recheck.saturating_sub(now) > self.recheck_interval
        {
            // Before the fires: a slot freed here counts for them.
            self.next_recheck = now.saturating_add(self.recheck_interval);
            report.stale_runs_ended = self.end_runs_left_behind(now, &mut report.hook_errors);
        }
        for s in self.schedules.due(now)? {
            let Some(due) = s.next_fire_at else { continue };
            let next = s.spec.next_after(due, now)?;
            // The slot's move and its row are one transaction; `Moved`:
            // changed under us, the next tick sees the new row.
            self.fire(&s, due, now, FireKind::Slot { next }, &mut report)?;
        }
        self.drive_hooks(now, &mut report);
        Ok(report)
    }

    /// Collects the hook runs that ended and starts a run of every hook
    /// not running, each on a thread of its own: nothing here waits for a
    /// hook.
    fn drive_hooks(&mut self, now: Micros, report: &mut TickReport) {
        for slot in &mut self.hooks {
            if let Some(Err(e)) = slot.collect() {
                tracing::warn!(hook = %slot.name, error = %e, "tick hook failed");
                self.hook_errors.push(format!("{}: {e}", slot.name));
            }
            if slot.running.is_some() {
                tracing::debug!(hook = %slot.name, "tick hook still running; not started again");
                report.hooks_busy.push(slot.name.clone());
            } else if let Err(e) = slot.start(now) {
                tracing::warn!(hook = %slot.name, error = %e, "tick hook not started");
                self.hook_errors.push(format!("{}: {e}", slot.name));
            }
        }
        report.hook_errors.append(&mut self.hook_errors);
    }

    /// Waits until every hook run in flight has ended; returns the errors
    /// of those that failed (`name: error`; they are not reported again).
    pub async fn wait_hooks(&mut self) -> Vec<String> {
        for slot in &mut self.hooks {
            if let Some(rx) = slot.running.take() {
                let out = rx
                    .await
                    .unwrap_or_else(|_| Err("the hook panicked".to_owned()));
                if let Err(e) = out {
                    tracing::warn!(hook = %slot.name, error = %e, "tick hook failed");
                    self.hook_errors.push(format!("{}: {e}", slot.name));
                }
            }
        }
        std::mem::take(&mut self.hook_errors)
    }

    /// Fires `name` now, whatever its due instant, still under its
    /// concurrency cap (the same atomic claim as a tick's fire, so a
    /// trigger racing the daemon or another trigger never exceeds it): the
    /// report names the run started (`fired`) or recorded `skipped` for
    /// overlap.
    pub fn trigger(&mut self, name: &str) -> Result<TickReport, Error> {
        let s = self
            .schedules
            .get(name)?
            .ok_or_else(|| Error::NotFound(name.to_owned()))?;
        let now = self.clock.now();
        let mut report = TickReport::default();
        self.fire(&s, now, now, FireKind::Trigger, &mut report)?;
        Ok(report)
    }

    fn fire(
        &mut self,
        s: &Schedule,
        due: Micros,
        now: Micros,
        kind: FireKind,
        report: &mut TickReport,
    ) -> Result<(), Error> {
        // Unique per fire even when two fires of one schedule share the
        // instant (a trigger racing the tick, two processes).
        let tag = fire_tag();
        let run_id = format!("sr-{}-{due}-{now}-{tag}", s.id);
        let session_id = format!("sched-{}-{now}-{tag}", s.spec.name);
        let start = RunStart {
            run_id: run_id.clone(),
            schedule_id: s.id.clone(),
            max_concurrent: s.spec.max_concurrent,
            due_at: due,
            fired_at: now,
            session_id: session_id.clone(),
            claimed_by: Some(self.claimer.clone()),
        };
        // The move, the count and the insert are one transaction: however
        // the ticks, triggers and processes interleave, the cap holds, and a
        // kill leaves the slot with its one row or untouched.
        match self.schedules.fire(&start, kind, &self.actor)? {
            Fired::Started => {}
            Fired::Skipped { .. } => {
                report.skipped_overlap.push(run_id);
                return Ok(());
            }
            _ => return Ok(()),
        }
        let fire = Fire {
            run_id: run_id.clone(),
            schedule_id: s.id.clone(),
            schedule_name: s.spec.name.clone(),
            session_id,
            request: s.spec.run.clone(),
            due_at: due,
        };
        report.fired.push(run_id.clone());
        let launcher = Arc::clone(&self.launcher);
        let schedules = Arc::clone(&self.schedules);
        let actor = self.actor.clone();
        let shutdown = self.shutdown.subscribe();
        self.tasks.spawn(async move {
            let outcome = launcher.run(fire, shutdown).await;
            let ended = state_sqlite::now_micros();
            if let Err(e) = schedules.end_run(
                &run_id,
                &outcome.status,
                &outcome.reason,
                ended,
                outcome.error.as_deref(),
                &actor,
            ) {
                tracing::warn!(run = %run_id, error = %e, "recording the end of a scheduled run failed");
            }
        });
        Ok(())
    }

    /// The re-check ([`SchedulerConfig::recheck_interval`]): ends the runs
    /// another process claimed whose recorded session had already ended at
    /// the previous re-check, and remembers those whose session has ended
    /// now. This scheduler's own runs end with their tasks, and so does a
    /// run whose claimer still runs on this host; a run whose session is not
    /// recorded (or still runs) is left alone. A store error skips that run
    /// (listed in `errors` as `recheck: …`), never the tick.
    fn end_runs_left_behind(&mut self, now: Micros, errors: &mut Vec<String>) -> Vec<String> {
        let mut ended = Vec::new();
        let mut seen = HashSet::new();
        let runs = match self.schedules.running_claims() {
            Ok(runs) => runs,
            Err(e) => {
                tracing::warn!(error = %e, "re-check: listing running runs failed");
                errors.push(format!("recheck: {e}"));
                return ended;
            }
        };
        // This host, read once per look (only for runs whose session ended).
        let mut here = None;
        for run in runs {
            if run.claimed_by.as_deref() == Some(self.claimer.as_str()) {
                continue;
            }
            let Some(session) = run.session_id.as_deref() else {
                continue;
            };
            let found = match self.schedules.session_status(session) {
                Ok(Some(found)) => found,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(run = %run.id, error = %e, "re-check: reading its session failed");
                    errors.push(format!("recheck: run {}: {e}", run.id));
                    continue;
                }
            };
            let Some((status, reason, detail)) = run_end(Some(session), Some(found)) else {
                continue;
            };
            let here = here.get_or_insert_with(|| runner::Here::detect(true));
            if claimer::alive_here(run.claimed_by.as_deref(), here) {
                continue;
            }
            if !self.ended_sessions_seen.contains(&run.id) {
                seen.insert(run.id);
                continue;
            }
            match self
                .schedules
                .end_run(&run.id, status, reason, now, Some(&detail), &self.actor)
            {
                Ok(true) => {
                    tracing::info!(run = %run.id, %detail, "a run left behind ended");
                    ended.push(run.id);
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(run = %run.id, error = %e, "re-check: ending the run failed");
                    errors.push(format!("recheck: run {}: {e}", run.id));
                    // Looked at again next time.
                    seen.insert(run.id);
                }
            }
        }
        self.ended_sessions_seen = seen;
        ended
    }

    fn reap(&mut self) {
        while let Some(done) = self.tasks.try_join_next() {
            if let Err(e) = done {
                tracing::warn!(error = %e, "a scheduled run's task failed");
            }
        }
    }

    /// Waits until every run this scheduler started has ended and been
    /// recorded. Hook runs in flight are not waited for
    /// ([`Scheduler::wait_hooks`]).
    pub async fn wait_idle(&mut self) {
        while self.tasks.join_next().await.is_some() {}
    }

    /// Graceful shutdown: every running leg is cancelled through the
    /// supervisor (its session records `cancelled`), and this returns when
    /// every run's end is recorded.
    pub async fn shutdown(self) {
        self.shutdown_for(Cancellation::Sigterm).await;
    }

    /// [`shutdown`](Self::shutdown) for a given cause: every running leg's
    /// session records it (`run.cancelled.sigint` for a Ctrl-C, ...).
    pub async fn shutdown_for(mut self, cause: Cancellation) {
        let _ = self.shutdown.send(Some(cause));
        self.wait_idle().await;
        self.wait_hooks().await;
    }
}

/// What a stale run's session (`found`: its status and reason, if it was
/// recorded) says: the run's status, reason and detail (`None`: the
/// session still runs, leave the run).
fn run_end(
    session: Option<&str>,
    found: Option<(String, Option<String>)>,
) -> Option<(&'static str, &'static str, String)> {
    let Some(session) = session else {
        return Some((
            "failed",
            "run.failed.exception",
            "no session was recorded for this run".into(),
        ));
    };
    match found {
        None => Some((
            "failed",
            "run.failed.exception",
            format!("session {session} was never recorded"),
        )),
        Some((status, _)) if status == "running" || status == "pending" => None,
        Some((status, reason)) => {
            let (to, code) = match status.as_str() {
                "completed" | "completed_empty" => ("completed", "run.completed.ok"),
                "cancelled" => ("cancelled", "run.cancelled.system"),
                "timed_out" => ("timed_out", "run.timed_out.deadline"),
                _ => ("failed", "run.failed.exception"),
            };
            Some((
                to,
                code,
                format!(
                    "session {session} ended {status} ({}) while no scheduler watched it",
                    reason.unwrap_or_default()
                ),
            ))
        }
    }
}
