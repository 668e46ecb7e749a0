//! `lionrt schedule`: define schedules (create, ls, show, enable, disable,
//! delete), fire one by hand (trigger), read their runs, and check or apply
//! a declarative set (validate, apply: one transaction). `--db` names a
//! SQLite state file or a PostgreSQL database (`postgres://…`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use lifecycle_core::{Actor, ActorType};
use scheduler::{
    Launcher, MissedFire, RunRequest, Schedule, ScheduleRun, ScheduleSpec, ScheduleStore,
    Scheduler, SystemClock, Trigger, parse_set,
};
use serde_json::json;
use state_sqlite::now_micros;

use crate::daemon::Backend;
use crate::out;

#[derive(Debug, Subcommand)]
pub(crate) enum ScheduleCmd {
    /// Define a schedule: one of --cron, --every or --at, and the run it starts.
    Create(Box<CreateArgs>),
    /// List the schedules with their next due instant.
    #[command(visible_alias = "list")]
    Ls,
    /// Show one schedule's definition and state.
    #[command(visible_alias = "get")]
    Show {
        /// Its name.
        name: String,
    },
    /// Enable a schedule (its next due instant is computed from now).
    Enable {
        /// Its name.
        name: String,
    },
    /// Disable a schedule (it no longer fires).
    Disable {
        /// Its name.
        name: String,
    },
    /// Delete a schedule (its runs are kept; its name is freed).
    Delete {
        /// Its name.
        name: String,
    },
    /// Fire a schedule now, in the foreground, and wait for its run to end
    /// (a fire beyond its concurrency cap is recorded skipped for overlap).
    /// SIGINT/SIGTERM cancel the run.
    Trigger {
        /// Its name.
        name: String,
    },
    /// The runs of one schedule (or of all), newest first: fired, skipped
    /// for overlap or as missed fires.
    Runs {
        /// The schedule's name (default: all).
        name: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Check a declarative schedule set (a JSON array of schedules, or
    /// {"schedules": [...]}) without touching the database.
    Validate {
        /// The file.
        file: PathBuf,
    },
    /// Reconcile the database with a declarative set in ONE transaction:
    /// create new names and update changed ones; with --prune, also delete
    /// the names the file does not list. Prints what it created, changed
    /// and deleted.
    ///
    /// Example: `lionrt schedule apply schedules.json --dry-run` shows the
    /// plan; `lionrt schedule apply schedules.json --prune` makes the
    /// database hold exactly the file's schedules.
    Apply {
        /// The file.
        file: PathBuf,
        /// Show what would be created, changed and deleted; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Also delete the schedules the file does not list (without it,
        /// they are kept as they are).
        #[arg(long)]
        prune: bool,
    },
}

/// How missed fires are handled.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum MissedArg {
    /// Record them skipped (schedule.skipped.missed_fire).
    Skip,
    /// Run once, late.
    RunOnce,
}

#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// Its unique name (letters, digits, '-', '_', '.').
    name: String,
    /// A cron expression: 5 fields, or 6 with leading seconds.
    #[arg(long, group = "trigger", required_unless_present_any = ["every", "at"])]
    cron: Option<String>,
    /// The cron expression's zone: UTC, an offset such as +02:00, or an
    /// IANA name such as Europe/Berlin (daylight saving time followed).
    #[arg(long, default_value = "UTC", requires = "cron")]
    tz: String,
    /// Every this many seconds.
    #[arg(long, group = "trigger")]
    every: Option<u64>,
    /// Once, at this RFC 3339 instant.
    #[arg(long, group = "trigger")]
    at: Option<String>,
    /// The provider: scripted, claude, codex, gemini or pi.
    #[arg(long, default_value = "scripted")]
    provider: String,
    /// The prompt.
    #[arg(long)]
    prompt: String,
    /// The workspace (default: the current directory).
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// Run each fire in a fresh worktree sandbox of the workspace.
    #[arg(long)]
    sandbox: bool,
    /// The model, as the provider names it.
    #[arg(long)]
    model: Option<String>,
    /// For the scripted provider: a JSON script file (stored in the schedule).
    #[arg(long)]
    script: Option<PathBuf>,
    /// What to do with fires missed while no daemon ran.
    #[arg(long, value_enum, default_value = "skip")]
    missed_fire: MissedArg,
    /// How many runs may be running at once.
    #[arg(long, default_value_t = 1)]
    max_concurrent: u32,
    /// Create it disabled.
    #[arg(long)]
    disabled: bool,
}

fn operator() -> Actor {
    Actor::new(ActorType::Operator, "lionrt")
}

fn spec_of(args: CreateArgs) -> Result<ScheduleSpec> {
    let trigger = match (args.cron, args.every, args.at) {
        (Some(expr), None, None) => Trigger::Cron { expr, tz: args.tz },
        (None, Some(seconds), None) => Trigger::Interval { seconds },
        (None, None, Some(at)) => Trigger::Once { at },
        _ => bail!("give exactly one of --cron, --every and --at"),
    };
    let workspace = match args.workspace {
        Some(w) => w,
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let script = match &args.script {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading script {}", path.display()))?;
            providers_scripted::ScriptModel::from_json(&text)
                .with_context(|| format!("script {}", path.display()))?;
            Some(text)
        }
        None => None,
    };
    Ok(ScheduleSpec {
        name: args.name,
        trigger,
        run: RunRequest {
            provider: args.provider,
            prompt: args.prompt,
            workspace: workspace.display().to_string(),
            sandbox: args.sandbox,
            model: args.model,
            script,
        },
        missed_fire: match args.missed_fire {
            MissedArg::Skip => MissedFire::Skip,
            MissedArg::RunOnce => MissedFire::RunOnce,
        },
        max_concurrent: args.max_concurrent,
        enabled: !args.disabled,
    })
}

fn when(t: Option<i64>) -> String {
    t.map_or_else(|| "-".to_owned(), out::timestamp)
}

fn trigger_text(t: &Trigger) -> String {
    match t {
        Trigger::Cron { expr, tz } => format!("cron {expr:?} {tz}"),
        Trigger::Interval { seconds } => format!("every {seconds}s"),
        Trigger::Once { at } => format!("once at {at}"),
        _ => "?".to_owned(),
    }
}

fn print_schedule(json: bool, s: &Schedule) {
    if json {
        out::json(&json!(s));
    } else {
        out::line(format!(
            "{}  {}  {}  next {}  last {}  {} in {}  max_concurrent {}  missed {:?}",
            s.spec.name,
            s.status,
            trigger_text(&s.spec.trigger),
            when(s.next_fire_at),
            when(s.last_fire_at),
            s.spec.run.provider,
            s.spec.run.workspace,
            s.spec.max_concurrent,
            s.spec.missed_fire
        ));
    }
}

fn print_runs(json: bool, runs: &[ScheduleRun]) {
    if json {
        out::json(&json!(runs));
        return;
    }
    if runs.is_empty() {
        out::line("no runs");
    }
    for r in runs {
        out::line(format!(
            "{}  {}  {}  due {}  at {}  session {}",
            r.id,
            r.status,
            r.reason.as_deref().unwrap_or("-"),
            when(r.due_at),
            when(r.detected_at),
            r.session_id.as_deref().unwrap_or("-")
        ));
    }
}

fn read_set(file: &Path) -> Result<Vec<ScheduleSpec>> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    parse_set(&text).with_context(|| format!("schedule set {}", file.display()))
}

pub(crate) fn run(db: &Path, json: bool, cmd: ScheduleCmd) -> Result<ExitCode> {
    if let ScheduleCmd::Validate { file } = &cmd {
        let set = read_set(file)?;
        if json {
            out::json(&json!({"valid": true, "schedules": set.len()}));
        } else {
            out::line(format!(
                "{}: {} schedule(s), valid",
                file.display(),
                set.len()
            ));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let backend = Backend::open(db)?;
    let schedules = backend.schedules(operator());
    let now = now_micros();
    match cmd {
        ScheduleCmd::Create(args) => {
            let s = schedules.create(&spec_of(*args)?, now)?;
            print_schedule(json, &s);
        }
        ScheduleCmd::Ls => {
            let all = schedules.list()?;
            if json {
                out::json(&json!(all));
            } else if all.is_empty() {
                out::line("no schedules");
            } else {
                for s in &all {
                    print_schedule(false, s);
                }
            }
        }
        ScheduleCmd::Show { name } => {
            let s = schedules
                .get(&name)?
                .with_context(|| format!("no schedule named {name:?}"))?;
            if json {
                out::json(&json!(s));
            } else {
                print_schedule(false, &s);
                out::line(serde_json::to_string_pretty(&s.spec)?);
            }
        }
        ScheduleCmd::Enable { name } => {
            print_schedule(json, &schedules.set_enabled(&name, true, now)?)
        }
        ScheduleCmd::Disable { name } => {
            print_schedule(json, &schedules.set_enabled(&name, false, now)?);
        }
        ScheduleCmd::Delete { name } => {
            let s = schedules.delete(&name, now)?;
            if json {
                out::json(&json!({"deleted": s.spec.name, "id": s.id}));
            } else {
                out::line(format!("deleted {} ({})", s.spec.name, s.id));
            }
        }
        ScheduleCmd::Runs { name, limit } => {
            print_runs(json, &schedules.runs(name.as_deref(), limit)?)
        }
        ScheduleCmd::Apply {
            file,
            dry_run,
            prune,
        } => {
            let mut set = read_set(&file)?;
            if !prune {
                set = scheduler::keep_unlisted(&schedules.list()?, &set);
            }
            let report = if dry_run {
                scheduler::preview_apply(&schedules.list()?, &set, now)?
            } else {
                schedules.apply(&set, now)?
            };
            if json {
                let mut v = json!(report);
                v["dry_run"] = json!(dry_run);
                out::json(&v);
            } else {
                let verb = if dry_run { "would apply" } else { "applied" };
                out::line(format!(
                    "{verb} {}: create {:?}, change {:?}, delete {:?}, unchanged {}",
                    file.display(),
                    report.created,
                    report.updated,
                    report.deleted,
                    report.unchanged.len()
                ));
                if !prune && dry_run {
                    out::line("(schedules the file does not list are kept; --prune deletes them)");
                }
            }
        }
        ScheduleCmd::Trigger { name } => {
            return match backend {
                Backend::Sqlite(s) => trigger(json, schedules, crate::daemon::launcher(s)?, &name),
                Backend::Pg(p) => trigger(json, schedules, crate::daemon::launcher(*p)?, &name),
            };
        }
        ScheduleCmd::Validate { .. } => {}
    }
    Ok(ExitCode::SUCCESS)
}

fn trigger<L: Launcher>(
    json: bool,
    schedules: Arc<dyn ScheduleStore>,
    launcher: L,
    name: &str,
) -> Result<ExitCode> {
    let launcher = Arc::new(launcher);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let runs = runtime.block_on(async {
        let mut sched = Scheduler::attach(Arc::clone(&schedules), SystemClock, launcher);
        let report = sched.trigger(name)?;
        let stop = crate::daemon::stop_signal()?;
        let mut interrupted = None;
        tokio::select! {
            () = sched.wait_idle() => {}
            cause = stop => {
                interrupted = Some(cause);
                sched.shutdown_for(cause).await;
            }
        }
        let ids: Vec<String> = report
            .fired
            .iter()
            .chain(&report.skipped_overlap)
            .cloned()
            .collect();
        let mut runs = Vec::new();
        for r in schedules.runs(Some(name), 1000)? {
            if ids.contains(&r.id) {
                runs.push(r);
            }
        }
        anyhow::Ok((runs, interrupted))
    })?;
    let (runs, interrupted) = runs;
    print_runs(json, &runs);
    // A signal's conventional exit (130 for SIGINT, 143 for SIGTERM), as
    // `lionrt run` gives; 2 for a run that failed on its own.
    Ok(match interrupted {
        Some(lifecycle_core::Cancellation::Sigint) => ExitCode::from(130),
        Some(_) => ExitCode::from(143),
        None if runs.iter().all(|r| r.status == "completed") => ExitCode::SUCCESS,
        None => ExitCode::from(2),
    })
}
