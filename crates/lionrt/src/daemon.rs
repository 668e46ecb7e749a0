//! `lionrt daemon`: the scheduler's tick loop over one database — a SQLite
//! state file, or a PostgreSQL database (`--db postgres://…`) that daemons on
//! many hosts may share.
//!
//! Start: take the tick lock (SQLite: a `flock` on the state file itself, so
//! it belongs to the file whatever path, symlink or hard link reaches it;
//! PostgreSQL: the schema's advisory lock, checked again before every tick)
//! so a second daemon on the same database exits with an error, run the
//! runner's orphan
//! sweep
//! (sessions of a killed daemon end `failed`, their legs' groups are
//! signalled under the evidence rule), then the scheduler's preamble once
//! (runs of the dead daemon end as their sessions did; missed fires are
//! recorded). Then a tick every `--interval` seconds: due schedules fire as
//! runs (scripted legs are this binary's `__scripted-leg`), overlaps are
//! recorded skipped, and with `--outbox` / `--mirror` the outbox due-scan
//! and a mirror pass run on the tick, each on a thread of its own (a slow
//! pass never delays a fire). Every `--recheck` seconds (60) the orphan
//! sweep of this host runs again (a hook like the others) and the tick
//! re-checks the runs it did not start, ending one whose session was found
//! ended at two looks in a row. SIGTERM or SIGINT: graceful shutdown
//! — running legs end through the supervisor, their sessions record
//! `cancelled`, and the daemon exits 0. The connection string is only ever
//! shown redacted.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use clap::Args;
use cli_supervisor::{OsSignaller, ProcTable};
use lifecycle_core::{Actor, ActorType, SessionRecorder};
use runner::{LegProgram, Processes};
use scheduler::{
    Clock, Launcher, PgSchedules, RunnerLauncher, ScheduleStore, Scheduler, SchedulerConfig,
    Schedules, SystemClock, TickHook, TickLock, TickReport,
};
use serde_json::json;
use state_postgres::{PgOutbox, PgStore};
use state_sqlite::{Engine, EngineConfig, SqliteOutbox, Store};
use tokio::signal::unix::{SignalKind, signal};

use crate::notify_wiring::RefreshOutcomes;
use crate::out;

#[derive(Debug, Args)]
pub(crate) struct DaemonArgs {
    /// Seconds between ticks.
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Also run the outbox due-scan on every tick (rows deliver with the
    /// template they carry).
    #[arg(long)]
    outbox: bool,
    /// Per-send deadline of the outbox due-scan in seconds, as `outbox
    /// deliver --timeout-secs`: a notification command still running then
    /// has its process group killed, and the scan goes on to the other rows
    /// (must be shorter than the scan's claim lease, 300 s).
    #[arg(long, default_value_t = 60)]
    outbox_timeout_secs: u64,
    /// Also run a transcript mirror pass on every tick (Claude Code and
    /// Codex sessions under ~/.claude/projects and ~/.codex/sessions).
    #[arg(long)]
    mirror: bool,
    /// Stop after this many ticks (default: run until SIGTERM/SIGINT).
    #[arg(long)]
    ticks: Option<u64>,
    /// Seconds between the running daemon's looks for what crashed: the
    /// orphan sweep of this host's sessions (their supervisor died: the
    /// session ends `failed`, its leg's group is signalled) and the
    /// re-check of schedule runs it did not start (one whose session was
    /// found ended at two looks in a row ends as its session did).
    #[arg(long, default_value_t = 60.0)]
    recheck: f64,
}

/// The store `--db` names: a SQLite state file (created if missing) or a
/// PostgreSQL database (its schema migrated).
pub(crate) enum Backend {
    /// The state file.
    Sqlite(Store),
    /// The PostgreSQL store.
    Pg(Box<PgStore>),
}

impl Backend {
    /// Opens the store `db` names.
    pub(crate) fn open(db: &Path) -> Result<Self> {
        if let Some(url) = crate::pg::url(db) {
            return Ok(Backend::Pg(Box::new(crate::pg::open(&url)?)));
        }
        crate::dbpath::ensure_parent(db)?;
        let engine = Engine::create(db, EngineConfig::default())
            .with_context(|| format!("opening {}", db.display()))?;
        Ok(Backend::Sqlite(Store::new(engine)))
    }

    /// Its schedule tables, changed by `actor`.
    pub(crate) fn schedules(&self, actor: Actor) -> Arc<dyn ScheduleStore> {
        match self {
            Backend::Sqlite(s) => Arc::new(Schedules::new(s.clone(), actor)),
            Backend::Pg(p) => Arc::new(PgSchedules::new((**p).clone(), actor)),
        }
    }
}

/// The launcher of this binary: `runner::run` recording on `store`,
/// scripted legs replayed by `lionrt __scripted-leg`.
pub(crate) fn launcher<R>(store: R) -> Result<RunnerLauncher<R>> {
    let program = std::env::current_exe().context("locating the lionrt binary")?;
    Ok(RunnerLauncher::new(
        Arc::new(store),
        LegProgram {
            program,
            args: vec!["__scripted-leg".into()],
        },
        Actor::new(
            ActorType::Executor,
            format!("lionrt-daemon-{}", std::process::id()),
        ),
    ))
}

/// Resolves on SIGTERM or SIGINT (handlers installed now), to the
/// cancellation it stands for.
pub(crate) fn stop_signal()
-> Result<impl std::future::Future<Output = lifecycle_core::Cancellation>> {
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => lifecycle_core::Cancellation::Sigint,
            _ = terminate.recv() => lifecycle_core::Cancellation::Sigterm,
        }
    })
}

struct OutboxHook<S> {
    store: S,
    transport: ::outbox::ExecTransport,
    config: ::outbox::ScanConfig,
}

impl<S: ::outbox::OutboxStore + Send> TickHook for OutboxHook<S> {
    fn name(&self) -> &str {
        "outbox"
    }

    fn tick(&mut self, _now: i64) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        ::outbox::deliver_due(
            &self.store,
            &self.transport,
            &::outbox::SystemClock,
            &self.config,
        )?;
        Ok(())
    }
}

/// The orphan sweep of this host's sessions, at most once per `every`
/// (the daemon's start ran one already).
struct SweepHook<R> {
    store: R,
    every: i64,
    next: i64,
}

impl<R: SessionRecorder + Send> TickHook for SweepHook<R> {
    fn name(&self) -> &str {
        "sweep"
    }

    fn tick(&mut self, now: i64) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        // Not due, unless the clock stepped back past a whole interval.
        if now < self.next && self.next.saturating_sub(now) <= self.every {
            return Ok(());
        }
        self.next = now.saturating_add(self.every);
        let procs = Processes {
            table: &ProcTable,
            signaller: &OsSignaller,
        };
        let swept = runner::sweep_orphans(&self.store, &procs, &crate::run::sweep_actor(), false)?;
        for orphan in &swept.orphans {
            tracing::warn!(session = %orphan.id, leg = ?orphan.leg_signal, "orphaned session swept");
        }
        Ok(())
    }
}

struct MirrorHook(transcript_mirror::Mirror);

impl TickHook for MirrorHook {
    fn name(&self) -> &str {
        "mirror"
    }

    fn tick(&mut self, _now: i64) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.0.pass(SystemTime::now())?;
        Ok(())
    }
}

fn mirror_hook<S: transcript_mirror::MirrorStore + Send + 'static>(store: S) -> Result<MirrorHook> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .context("HOME is not set: --mirror reads ~/.claude/projects and ~/.codex/sessions")?;
    let home = Path::new(&home);
    let config = transcript_mirror::MirrorConfig {
        claude_root: Some(home.join(".claude/projects")),
        codex_root: Some(home.join(".codex/sessions")),
        ..transcript_mirror::MirrorConfig::default()
    };
    Ok(MirrorHook(transcript_mirror::Mirror::new(store, config)))
}

fn print_tick(json: bool, r: &TickReport) {
    if r.fired.is_empty()
        && r.skipped_overlap.is_empty()
        && r.hook_errors.is_empty()
        && r.stale_runs_ended.is_empty()
    {
        return;
    }
    if json {
        out::json(&json!({"tick": r}));
        return;
    }
    for id in &r.fired {
        out::line(format!("fired {id}"));
    }
    for id in &r.skipped_overlap {
        out::line(format!("skipped {id} (overlap)"));
    }
    for id in &r.stale_runs_ended {
        out::line(format!(
            "ended {id} (its session ended with no one watching)"
        ));
    }
    for e in &r.hook_errors {
        out::line(format!("hook failed: {e}"));
    }
}

/// The held tick lock.
enum Held {
    /// The state file's lock.
    File(#[allow(dead_code, reason = "held until dropped")] TickLock),
    /// The schema's advisory lock, on a connection of its own.
    Advisory(Box<state_postgres::TickLock>),
}

impl Held {
    /// Whether this daemon still holds the lock. An advisory lock is lost
    /// with its connection (then another daemon may hold it): asked on a
    /// helper thread, as the driver may not block on the runtime's.
    fn still_held(&mut self) -> bool {
        match self {
            Held::File(_) => true,
            Held::Advisory(lock) => {
                std::thread::scope(|s| s.spawn(|| lock.is_held()).join().unwrap_or(false))
            }
        }
    }
}

pub(crate) fn run(db: &Path, json: bool, args: DaemonArgs) -> Result<ExitCode> {
    crate::seconds("--interval", args.interval)?;
    crate::seconds("--recheck", args.recheck)?;
    let lease = ::outbox::ScanConfig::default().lease;
    if Duration::from_secs(args.outbox_timeout_secs) >= lease {
        bail!(
            "--outbox-timeout-secs ({}) must be shorter than the outbox claim lease ({} s), or a slow send could be taken over",
            args.outbox_timeout_secs,
            lease.as_secs()
        );
    }
    let send_timeout = Duration::from_secs(args.outbox_timeout_secs);
    // The groups of the notification commands running now, ended when the
    // daemon stops (none outlives it).
    let live = Arc::new(::outbox::LiveGroups::new());
    let actor = Actor::new(ActorType::Scheduler, "lionrt-daemon");
    let backend = Backend::open(db)?;
    let schedules = backend.schedules(actor);
    let mut hooks: Vec<Box<dyn TickHook>> = Vec::new();
    match backend {
        Backend::Sqlite(store) => {
            let lock = Held::File(TickLock::acquire(db)?);
            if args.outbox {
                hooks.push(outbox_hook(
                    RefreshOutcomes(SqliteOutbox::new(store.clone())),
                    send_timeout,
                    Arc::clone(&live),
                ));
            }
            if args.mirror {
                hooks.push(Box::new(mirror_hook(store.clone())?));
            }
            serve(json, &args, lock, store, schedules, hooks, &live)
        }
        Backend::Pg(store) => {
            let store = *store;
            let lock = PgSchedules::new(store.clone(), scheduler::scheduler_actor()).tick_lock()?;
            if args.outbox {
                hooks.push(outbox_hook(
                    RefreshOutcomes(PgOutbox::new(store.clone())),
                    send_timeout,
                    Arc::clone(&live),
                ));
            }
            if args.mirror {
                hooks.push(Box::new(mirror_hook(store.clone())?));
            }
            serve(
                json,
                &args,
                Held::Advisory(Box::new(lock)),
                store,
                schedules,
                hooks,
                &live,
            )
        }
    }
}

fn outbox_hook<S: ::outbox::OutboxStore + Send + 'static>(
    store: S,
    timeout: Duration,
    live: Arc<::outbox::LiveGroups>,
) -> Box<dyn TickHook> {
    Box::new(OutboxHook {
        store,
        transport: ::outbox::ExecTransport {
            timeout: Some(timeout),
            live: Some(live),
            ..::outbox::ExecTransport::default()
        },
        config: ::outbox::ScanConfig::default(),
    })
}

/// The daemon on one store, its lock held: the orphan sweep, the preamble,
/// then the ticks until SIGTERM/SIGINT (or `--ticks`).
///
/// The sweep judges only this host's sessions (a `lionrt run` on another
/// host sharing a PostgreSQL store is left alone). The sessions of schedule
/// runs still marked running that a daemon claimed are vouched for as gone
/// whatever host ran them: this daemon holds the tick lock, so the daemon
/// that started them is gone (and a leg dies with its supervisor); another
/// host's are ended without any signal. A run a trigger claimed (`lionrt
/// schedule trigger`) is never vouched for: on this host its session is
/// judged by its process like any other (a SIGKILLed trigger's is ended),
/// on another host it is left to that host's sweep.
fn serve<R>(
    json: bool,
    args: &DaemonArgs,
    mut lock: Held,
    store: R,
    schedules: Arc<dyn ScheduleStore>,
    hooks: Vec<Box<dyn TickHook>>,
    live: &::outbox::LiveGroups,
) -> Result<ExitCode>
where
    R: SessionRecorder + Clone + Send + Sync + 'static,
    RunnerLauncher<R>: Launcher,
{
    let procs = Processes {
        table: &ProcTable,
        signaller: &OsSignaller,
    };
    let vouched = scheduler::daemon_claimed_sessions(&*schedules)?;
    let swept = runner::sweep_orphans_known_gone(
        &store,
        &procs,
        &crate::run::sweep_actor(),
        false,
        &vouched,
    )
    .context("the orphan sweep failed")?;
    let interval = crate::seconds("--interval", args.interval)?;
    let recheck = i64::try_from(crate::seconds("--recheck", args.recheck)?.as_micros())
        .unwrap_or(i64::MAX)
        .max(1);
    let config = SchedulerConfig {
        missed_tolerance: i64::try_from(interval.as_micros()).unwrap_or(i64::MAX),
        recheck_interval: recheck,
        ..SchedulerConfig::default()
    };
    let mut hooks = hooks;
    hooks.push(Box::new(SweepHook {
        store: store.clone(),
        every: recheck,
        next: SystemClock.now().saturating_add(recheck),
    }));
    let launcher = Arc::new(launcher(store)?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        // Installed before anything is spawned.
        let mut stop = std::pin::pin!(stop_signal()?);
        let (mut sched, pre) = Scheduler::start(schedules, SystemClock, launcher, config)?;
        for hook in hooks {
            sched.add_hook(hook);
        }
        if json {
            out::json(&json!({"started": {"pid": std::process::id(), "orphans_swept": swept.orphans.len(), "preamble": pre}}));
        } else {
            out::line(format!(
                "lionrt daemon {}: ticking every {:?}; {} orphaned session(s) swept, {} stale run(s) ended, missed fires {:?}",
                std::process::id(),
                interval,
                swept.orphans.len(),
                pre.stale_runs_ended.len(),
                pre.missed
            ));
        }
        let mut ticks = 0u64;
        loop {
            if !lock.still_held() {
                // Another daemon may tick now: stop ticking, end our runs.
                live.kill_all();
                sched.shutdown().await;
                bail!("lost the advisory tick lock (the connection holding it ended); stopped");
            }
            match sched.tick() {
                Ok(r) => print_tick(json, &r),
                Err(e) => out::error(&anyhow::Error::from(e).context("tick failed")),
            }
            ticks += 1;
            if args.ticks.is_some_and(|n| ticks >= n) {
                sched.wait_idle().await;
                let errors = sched.wait_hooks().await;
                print_tick(
                    json,
                    &TickReport {
                        hook_errors: errors,
                        ..TickReport::default()
                    },
                );
                break;
            }
            tokio::select! {
                cause = &mut stop => {
                    let running = sched.running();
                    // A send still running is ended with its group; its row
                    // is retried by the next scan, as any failed attempt.
                    let sends = live.kill_all();
                    sched.shutdown_for(cause).await;
                    if json {
                        out::json(&json!({"stopped": {"cancelled_runs": running, "sends_ended": sends}}));
                    } else {
                        out::line(format!("stopped: {running} running run(s) cancelled, {sends} notification send(s) ended"));
                    }
                    return anyhow::Ok(());
                }
                () = tokio::time::sleep(interval) => {}
            }
        }
        anyhow::Ok(())
    })?;
    drop(runtime);
    drop(lock);
    Ok(ExitCode::SUCCESS)
}
