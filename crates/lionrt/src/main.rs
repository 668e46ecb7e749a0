//! The `lionrt` command line: thin composition root over the runtime crates.
//!
//! Output goes to stdout (a table for people, `--json` for machines); logs
//! and diagnostics go to stderr (`RUST_LOG` filters them).

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod admission;
mod backend;
mod daemon;
mod dbpath;
mod doctor;
mod examples;
mod flow;
mod import;
mod kill;
mod lifecycle;
mod maintenance;
mod mcp;
mod mcp_forward;
mod mirror;
mod monitor;
mod notify_wiring;
mod out;
mod outbox;
mod pg;
mod plugin;
mod progress;
mod run;
mod runopts;
mod sandbox;
mod schedule;
mod serve;
mod sessions;
mod state;
mod view;

/// The process allocator: mimalloc, much cheaper than the system allocator
/// for the many small allocations of parsing JSON (`admission check` parses
/// every record into a `serde_json::Value`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runtime core for orchestrating AI coding agents: guarded lifecycle state,
/// supervised agent legs, admission of MCP tools, sandboxes and plugins.
#[derive(Debug, Parser)]
#[command(name = "lionrt", version, propagate_version = true)]
struct Cli {
    /// The state database: a SQLite file, or a PostgreSQL URL (the
    /// password is never printed). Default: $LIONAGI_HOME/lionrt/state.db,
    /// else ~/.lionagi/lionrt/state.db (li's own store, one level up, is
    /// never written; `state import --from-lionagi` copies it).
    #[arg(long, global = true, env = "LIONRT_DB", default_value_os_t = dbpath::default_db())]
    db: PathBuf,
    /// Print machine-readable JSON instead of tables.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect, change and maintain lifecycle state (init, create, transition, history,
    /// health, doctor, stats, checkpoint, vacuum, prune).
    #[command(subcommand)]
    State(state::StateCmd),
    /// Audit MCP tool descriptors with the admission gate (for CI and operators).
    #[command(subcommand)]
    Admission(admission::AdmissionCmd),
    /// Connect to the MCP servers of an `.mcp.json`: list, audit (CI) and call their tools.
    #[command(subcommand)]
    Mcp(mcp::McpCmd),
    /// Manage git worktree sandboxes (create, ls, merge, cleanup).
    #[command(subcommand)]
    Sandbox(sandbox::SandboxCmd),
    /// Manage plugin trust (list, show, trust, untrust, verify, enable, disable, gc).
    Plugin(plugin::PluginArgs),
    /// The durable dispatch outbox (ls, show, enqueue, ack, retry, purge, deliver, sweep).
    #[command(subcommand, visible_alias = "dispatch")]
    Outbox(self::outbox::OutboxCmd),
    /// Run the main job: record a session, supervise a leg, print its history.
    #[command(visible_alias = "agent")]
    Run(run::RunArgs),
    /// Run a plan of ops (a DAG of agent legs) as one flow: ready ops in
    /// parallel up to --max-concurrent, each a session under one
    /// invocation, dependents given their dependencies' results.
    Flow(flow::FlowArgs),
    /// N agents given one task, optionally ending with a synthesis op that
    /// receives every worker's result.
    Fanout(flow::FanoutArgs),
    /// Run one of li's playbooks (NAME.playbook.yaml): its prompt template
    /// filled with INPUT and --ARG values; `lionrt play list` lists them.
    Play(flow::PlayArgs),
    /// li's `o`: `lionrt o flow` and `lionrt o fanout`.
    #[command(subcommand, visible_alias = "o")]
    Orchestrate(flow::OrchestrateCmd),
    /// End a live session's leg from another terminal (id or unique prefix),
    /// or every session whose owner is gone (--all-stale).
    Kill(kill::KillArgs),
    // Help text: on mirror::MirrorArgs (about and long_about).
    Mirror(mirror::MirrorArgs),
    /// Schedules: create, ls, show, enable, disable, delete, trigger, runs,
    /// and validate|apply FILE for a declarative set.
    #[command(subcommand)]
    Schedule(schedule::ScheduleCmd),
    /// The scheduler's tick loop: fires due schedules as runs; SIGTERM
    /// cancels running legs (sessions end cancelled) and exits.
    Daemon(daemon::DaemonArgs),
    /// Read back recorded sessions: ls, show, messages (--follow).
    #[command(subcommand, visible_alias = "runs")]
    Sessions(sessions::SessionsCmd),
    /// Everything in flight (open sessions and other open entities), once
    /// or redrawn with --watch.
    #[command(visible_alias = "mon")]
    Monitor(monitor::MonitorArgs),
    /// The status history of everything a run id names, as one timeline.
    Lifecycle(lifecycle::LifecycleArgs),
    /// A live web monitor of the store: fleet, session timelines and
    /// messages, schedules, outbox, audit and costs, pushed over
    /// server-sent events; loopback only unless --token is given.
    Serve(serve::ServeArgs),
    /// Check the environment: SQLite and its WAL fix, the database,
    /// settings, plugin dirs, agent CLIs on PATH, cgroup v2 and pidfd.
    Doctor(doctor::DoctorArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Writes a man page per command into DIR (`cargo xtask man`).
    #[command(name = "__man", hide = true)]
    Man {
        /// The directory to write `lionrt.1`, `lionrt-run.1`, ... into.
        dir: PathBuf,
    },
    /// The scripted provider's leg: prints an NDJSON file on stdout.
    #[command(name = "__scripted-leg", hide = true)]
    ScriptedLeg {
        /// The NDJSON file to print.
        #[arg(long)]
        script: PathBuf,
    },
}

/// A positive number of seconds a `Duration` can hold (for `--interval`,
/// `--recheck`, `--watch`), or why not: never a panic on `1e30` or `inf`.
pub(crate) fn seconds(flag: &str, value: f64) -> anyhow::Result<std::time::Duration> {
    match std::time::Duration::try_from_secs_f64(value) {
        Ok(d) if value > 0.0 => Ok(d),
        _ => anyhow::bail!("{flag} must be a positive number of seconds (got {value})"),
    }
}

/// How a command uses the `--db` store (`None`: not at all, or, for
/// `doctor`, only to report what it is).
fn access(command: &Command) -> Option<dbpath::Access> {
    use dbpath::Access::{Read, Write};
    use state::StateCmd as S;
    Some(match command {
        Command::State(S::History { .. } | S::Health { .. } | S::Stats) => Read,
        Command::State(_) => Write,
        Command::Outbox(outbox::OutboxCmd::Ls { .. } | outbox::OutboxCmd::Show { .. }) => Read,
        Command::Schedule(
            schedule::ScheduleCmd::Ls
            | schedule::ScheduleCmd::Show { .. }
            | schedule::ScheduleCmd::Runs { .. }
            | schedule::ScheduleCmd::Apply { dry_run: true, .. },
        ) => Read,
        Command::Schedule(schedule::ScheduleCmd::Validate { .. }) => return None,
        Command::Sessions(_) | Command::Monitor(_) | Command::Lifecycle(_) => Read,
        Command::Serve(args) if args.read_only() => Read,
        Command::Outbox(_)
        | Command::Run(_)
        | Command::Flow(_)
        | Command::Fanout(_)
        | Command::Play(_)
        | Command::Orchestrate(_)
        | Command::Kill(_)
        | Command::Mirror(_)
        | Command::Schedule(_)
        | Command::Daemon(_)
        | Command::Serve(_) => Write,
        // The server opens (and creates) the store it serves; lionagi's
        // store and foreign files are refused first, as for `run`.
        Command::Mcp(mcp::McpCmd::Serve(_)) => Write,
        Command::Admission(_)
        | Command::Mcp(_)
        | Command::Sandbox(_)
        | Command::Plugin(_)
        | Command::Doctor(_)
        | Command::Completions { .. }
        | Command::Man { .. }
        | Command::ScriptedLeg { .. } => return None,
    })
}

/// The reading verbs that read through the read-write store (the schedule
/// and outbox tables), which would migrate an older file: they refuse one
/// instead (a reading verb never migrates).
fn reads_through_the_store(command: &Command) -> bool {
    matches!(
        command,
        Command::Serve(_)
            | Command::Outbox(outbox::OutboxCmd::Ls { .. } | outbox::OutboxCmd::Show { .. })
            | Command::Schedule(
                schedule::ScheduleCmd::Ls
                    | schedule::ScheduleCmd::Show { .. }
                    | schedule::ScheduleCmd::Runs { .. }
                    | schedule::ScheduleCmd::Apply { dry_run: true, .. }
            )
    )
}

fn main() -> ExitCode {
    // Colour on stderr only on a terminal, and never with NO_COLOR.
    tracing_subscriber::fmt()
        .with_ansi(view::colour(std::io::IsTerminal::is_terminal(
            &std::io::stderr(),
        )))
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let parsed = examples::attach(<Cli as clap::CommandFactory>::command())
        .try_get_matches()
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        // `--help` and `--version` go through the checked writer too, so
        // a full disk or a closed pipe is an error, not a silent exit 0.
        Err(e) if !e.use_stderr() => {
            out::raw(e.render().to_string().as_bytes());
            return match out::finish() {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    out::error(&e);
                    ExitCode::from(1)
                }
            };
        }
        Err(e) => e.exit(),
    };
    if let Err(e) = pg::check(&cli) {
        out::error(&e);
        return ExitCode::from(1);
    }
    if let Some(access) = access(&cli.command)
        && !dbpath::is_url(&cli.db)
    {
        let checked = dbpath::check(&cli.db, access).and_then(|kind| {
            if reads_through_the_store(&cli.command) {
                dbpath::refuse_older(&cli.db, &kind)?;
            }
            Ok(())
        });
        if let Err(e) = checked {
            out::error(&e);
            return ExitCode::from(1);
        }
    }
    let creates_db = matches!(
        cli.command,
        Command::Run(_)
            | Command::Flow(_)
            | Command::Fanout(_)
            | Command::Play(_)
            | Command::Orchestrate(_)
            | Command::Mirror(_)
            | Command::State(state::StateCmd::Init)
    );
    if creates_db
        && !dbpath::is_url(&cli.db)
        && let Err(e) = dbpath::ensure_parent(&cli.db)
    {
        out::error(&e);
        return ExitCode::from(1);
    }
    let result = match cli.command {
        Command::State(cmd) => state::run(&cli.db, cli.json, cmd),
        Command::Admission(cmd) => admission::run(cli.json, cmd),
        Command::Mcp(cmd) => mcp::run(&cli.db, cli.json, cmd),
        Command::Sandbox(cmd) => sandbox::run(cli.json, cmd),
        Command::Plugin(args) => plugin::run(cli.json, args),
        Command::Outbox(cmd) => self::outbox::run(&cli.db, cli.json, cmd),
        Command::Run(args) => run::run(&cli.db, cli.json, args),
        Command::Flow(args) => flow::flow(&cli.db, cli.json, args),
        Command::Fanout(args) => flow::fanout(&cli.db, cli.json, args),
        Command::Play(args) => flow::play(&cli.db, cli.json, args),
        Command::Orchestrate(cmd) => flow::orchestrate(&cli.db, cli.json, cmd),
        Command::Kill(args) => kill::run(&cli.db, cli.json, args),
        Command::Mirror(args) => mirror::run(&cli.db, cli.json, args),
        Command::Schedule(cmd) => schedule::run(&cli.db, cli.json, cmd),
        Command::Daemon(args) => daemon::run(&cli.db, cli.json, args),
        Command::Sessions(cmd) => sessions::run(&cli.db, cli.json, cmd),
        Command::Monitor(args) => monitor::run(&cli.db, cli.json, args),
        Command::Lifecycle(args) => lifecycle::run(&cli.db, cli.json, args),
        Command::Serve(args) => serve::run(&cli.db, cli.json, args),
        Command::Doctor(args) => doctor::run(&cli.db, cli.json, args),
        Command::Completions { shell } => {
            // Generated into memory: clap_complete panics on a failed write.
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "lionrt", &mut script);
            out::raw(&script);
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir } => examples::man_pages(&dir),
        Command::ScriptedLeg { script } => run::scripted_leg(&script),
    };
    // A failed write of the output fails the command, whatever it decided.
    let result = result.and_then(|code| out::finish().map(|()| code));
    match result {
        Ok(code) => code,
        Err(e) => {
            out::error(&e);
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }

    fn names(cmd: &clap::Command, out: &mut Vec<String>) {
        for sub in cmd.get_subcommands() {
            out.push(sub.get_name().to_owned());
            names(sub, out);
        }
    }

    // contract: SQL-043
    #[test]
    fn no_command_emits_a_stop_control() {
        let mut all = Vec::new();
        names(&super::Cli::command(), &mut all);
        assert!(
            all.iter().any(|n| n == "transition"),
            "the walk sees nested commands: {all:?}"
        );
        assert!(!all.iter().any(|n| n.contains("stop")), "{all:?}");
        // The only way to enqueue a control has no stop verb either.
        assert!(
            serde_json::from_str::<state_sqlite::controls::ControlVerb>(r#"{"verb":"stop"}"#)
                .is_err()
        );
    }
}
