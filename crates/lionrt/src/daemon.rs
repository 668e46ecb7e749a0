//! `lionrt daemon`: the scheduler's tick loop over one state file.
//!
//! Start: take the tick lock (`<db>.scheduler.lock`: a second daemon on the
//! same database exits with an error), run the runner's orphan sweep
//! (sessions of a killed daemon end `failed`, their legs' groups are
//! signalled under the evidence rule), then the scheduler's preamble once
//! (runs of the dead daemon end as their sessions did; missed fires are
//! recorded). Then a tick every `--interval` seconds: due schedules fire as
//! runs (scripted legs are this binary's `__scripted-leg`), overlaps are
//! recorded skipped, and with `--outbox` / `--mirror` the outbox due-scan
//! and a mirror pass run on the tick. SIGTERM or SIGINT: graceful shutdown
//! — running legs end through the supervisor, their sessions record
//! `cancelled`, and the daemon exits 0.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use clap::Args;
use cli_supervisor::{OsSignaller, ProcTable};
use lifecycle_core::{Actor, ActorType};
use runner::{LegProgram, Processes};
use scheduler::{
    RunnerLauncher, Scheduler, SchedulerConfig, Schedules, SystemClock, TickHook, TickLock,
    TickReport,
};
use serde_json::json;
use state_sqlite::{Engine, EngineConfig, SqliteOutbox, Store};
use tokio::signal::unix::{SignalKind, signal};

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
    /// Also run a transcript mirror pass on every tick (Claude Code and
    /// Codex sessions under ~/.claude/projects and ~/.codex/sessions).
    #[arg(long)]
    mirror: bool,
    /// Stop after this many ticks (default: run until SIGTERM/SIGINT).
    #[arg(long)]
    ticks: Option<u64>,
}

/// The launcher of this binary: `runner::run` on the state file, scripted
/// legs replayed by `lionrt __scripted-leg`.
pub(crate) fn launcher(db: &Path) -> Result<RunnerLauncher> {
    let engine = Engine::create(db, EngineConfig::default())
        .with_context(|| format!("opening {}", db.display()))?;
    let program = std::env::current_exe().context("locating the lionrt binary")?;
    Ok(RunnerLauncher::new(
        Arc::new(Store::new(engine)),
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

/// Resolves on SIGTERM or SIGINT (handlers installed now).
pub(crate) fn stop_signal() -> Result<impl std::future::Future<Output = ()>> {
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

struct OutboxHook {
    store: SqliteOutbox,
    transport: ::outbox::ExecTransport,
    config: ::outbox::ScanConfig,
}

impl TickHook for OutboxHook {
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

fn mirror_hook(engine: &Engine) -> Result<MirrorHook> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .context("HOME is not set: --mirror reads ~/.claude/projects and ~/.codex/sessions")?;
    let home = Path::new(&home);
    let config = transcript_mirror::MirrorConfig {
        claude_root: Some(home.join(".claude/projects")),
        codex_root: Some(home.join(".codex/sessions")),
        ..transcript_mirror::MirrorConfig::default()
    };
    Ok(MirrorHook(transcript_mirror::Mirror::new(
        Store::new(engine.clone()),
        config,
    )))
}

fn print_tick(json: bool, r: &TickReport) {
    if r.fired.is_empty() && r.skipped_overlap.is_empty() && r.hook_errors.is_empty() {
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
    for e in &r.hook_errors {
        out::line(format!("hook failed: {e}"));
    }
}

pub(crate) fn run(db: &Path, json: bool, args: DaemonArgs) -> Result<ExitCode> {
    if crate::pg::url(db).is_some() {
        bail!("`lionrt daemon` does not take a PostgreSQL --db yet");
    }
    if !(args.interval.is_finite() && args.interval > 0.0) {
        bail!("--interval must be a positive number of seconds");
    }
    crate::dbpath::ensure_parent(db)?;
    let engine = Engine::create(db, EngineConfig::default())
        .with_context(|| format!("opening {}", db.display()))?;
    let _lock = TickLock::acquire(db)?;
    let store = Store::new(engine.clone());
    let procs = Processes {
        table: &ProcTable,
        signaller: &OsSignaller,
    };
    let swept = runner::sweep_orphans(&store, &procs, &crate::run::sweep_actor(), false)
        .context("the orphan sweep failed")?;
    let schedules = Arc::new(Schedules::new(
        store,
        Actor::new(ActorType::Scheduler, "lionrt-daemon"),
    ));
    let interval = Duration::from_secs_f64(args.interval);
    let config = SchedulerConfig {
        missed_tolerance: i64::try_from(interval.as_micros()).unwrap_or(i64::MAX),
        ..SchedulerConfig::default()
    };
    let launcher = Arc::new(launcher(db)?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        // Installed before anything is spawned.
        let mut stop = std::pin::pin!(stop_signal()?);
        let (mut sched, pre) = Scheduler::start(schedules, SystemClock, launcher, config)?;
        if args.outbox {
            sched.add_hook(Box::new(OutboxHook {
                store: SqliteOutbox::new(Store::new(engine.clone())),
                transport: ::outbox::ExecTransport::default(),
                config: ::outbox::ScanConfig::default(),
            }));
        }
        if args.mirror {
            sched.add_hook(Box::new(mirror_hook(&engine)?));
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
            match sched.tick() {
                Ok(r) => print_tick(json, &r),
                Err(e) => out::error(&anyhow::Error::from(e).context("tick failed")),
            }
            ticks += 1;
            if args.ticks.is_some_and(|n| ticks >= n) {
                sched.wait_idle().await;
                break;
            }
            tokio::select! {
                () = &mut stop => {
                    let running = sched.running();
                    sched.shutdown().await;
                    if json {
                        out::json(&json!({"stopped": {"cancelled_runs": running}}));
                    } else {
                        out::line(format!("stopped: {running} running run(s) cancelled"));
                    }
                    return anyhow::Ok(());
                }
                () = tokio::time::sleep(interval) => {}
            }
        }
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
