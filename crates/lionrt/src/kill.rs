//! `lionrt kill`: end a live session's leg from another terminal, or sweep
//! every session whose owner is provably gone (`--all-stale`).

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use cli_supervisor::{OsSignaller, ProcTable};
use lifecycle_core::{Actor, ActorType, SessionRecorder};
use runner::{Processes, SweepReport};
use serde_json::json;

use crate::out;
use crate::state::open_store;

#[derive(Debug, Args)]
pub(crate) struct KillArgs {
    /// The session to end: its id or a unique prefix of it.
    #[arg(required_unless_present = "all_stale", conflicts_with = "all_stale")]
    session: Option<String>,
    /// Instead: end every open session whose owner is provably gone.
    #[arg(long)]
    all_stale: bool,
    /// With --all-stale: report what would be ended, change nothing.
    #[arg(long, requires = "all_stale")]
    dry_run: bool,
    /// Seconds the leg's group gets between SIGTERM and SIGKILL.
    #[arg(long, default_value_t = 5.0)]
    grace: f64,
}

pub(crate) fn procs() -> Processes<'static> {
    Processes {
        table: &ProcTable,
        signaller: &OsSignaller,
    }
}

pub(crate) fn run(db: &Path, json: bool, args: KillArgs) -> Result<ExitCode> {
    match crate::pg::url(db) {
        Some(url) => kill_on(&crate::pg::open(&url)?, json, args),
        None => kill_on(&open_store(db)?, json, args),
    }
}

/// Ends one session's leg through the guarded path (`lionrt kill ID`'s):
/// on the SQLite file or the PostgreSQL database `db` names, as `actor`
/// (`lionrt mcp serve`'s `job.kill`).
pub(crate) fn kill_one(
    db: &Path,
    prefix: &str,
    grace: Duration,
    actor: &Actor,
) -> Result<runner::KillReport> {
    Ok(match crate::pg::url(db) {
        Some(url) => runner::kill_session(&crate::pg::open(&url)?, &procs(), prefix, grace, actor)?,
        None => runner::kill_session(&open_store(db)?, &procs(), prefix, grace, actor)?,
    })
}

/// `kill` on any recorder: the SQLite file or a PostgreSQL database.
fn kill_on<R: SessionRecorder>(store: &R, json: bool, args: KillArgs) -> Result<ExitCode> {
    if args.all_stale {
        let report =
            runner::sweep_orphans(store, &procs(), &crate::run::sweep_actor(), args.dry_run)?;
        print_sweep(json, args.dry_run, &report);
        return Ok(ExitCode::SUCCESS);
    }
    let Some(prefix) = args.session else {
        bail!("name a session, or pass --all-stale");
    };
    if !args.grace.is_finite() || args.grace < 0.0 {
        bail!("--grace must be a non-negative number of seconds");
    }
    let grace = Duration::try_from_secs_f64(args.grace).map_err(|_| {
        anyhow::anyhow!(
            "--grace {} is too large a number of seconds (at most {})",
            args.grace,
            Duration::MAX.as_secs()
        )
    })?;
    let actor = Actor::new(
        ActorType::Operator,
        format!("lionrt-kill-{}", std::process::id()),
    );
    let report = runner::kill_session(store, &procs(), &prefix, grace, &actor)?;
    if json {
        out::json(&serde_json::to_value(&report)?);
    } else {
        out::line(format!("session {}: {}", report.id, report.status));
        for (signal, outcome) in &report.signals {
            out::line(format!("  {signal}: {outcome}"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a sweep report (shared with `state doctor`).
pub(crate) fn print_sweep(json: bool, dry_run: bool, report: &SweepReport) {
    if json {
        out::json(
            &json!({"dry_run": dry_run, "orphans": report.orphans, "left_alone": report.left_alone}),
        );
        return;
    }
    if report.orphans.is_empty() {
        out::line("no orphaned sessions");
    }
    for s in &report.orphans {
        let action = if dry_run {
            "would end"
        } else if s.ended {
            "ended"
        } else {
            "moved on meanwhile"
        };
        out::line(format!(
            "  {:<36} owner {:?}: {action} ({}; leg: {})",
            s.id,
            s.owner,
            runner::ORPHAN_REASON,
            s.leg_signal.as_deref().unwrap_or("none signalled")
        ));
    }
    for (id, state) in &report.left_alone {
        out::line(format!("  {id:<36} owner {state:?}: left alone"));
    }
}
