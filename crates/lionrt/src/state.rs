//! `lionrt state ...`: the lifecycle store from the command line, on a
//! SQLite file or a PostgreSQL schema (`--db postgres://…`): the guarded
//! writes go through [`SessionRecorder`], the reads through
//! [`StateReader`], so each verb is written once.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use lifecycle_core::{
    Actor, ActorType, Health, HealthInput, HealthThresholds, IdMatch, InitialCommand, Liveness,
    Outcome, OutcomeKind, Override, Reason, SessionKind, SessionRecorder, SessionRetention,
    StateReader, TransitionCommand, TransitionRecord, classify_session_health,
};
use serde_json::{Value, json};
use state_sqlite::{Engine, EngineConfig, Store, schema_version};

use crate::backend::Backend;
use crate::out;

/// Exit code of a transition that met a conflict (the row moved on).
pub(crate) const EXIT_CONFLICT: u8 = 3;
/// Exit code of a transition the policy rejected (audited).
pub(crate) const EXIT_REJECTED: u8 = 4;

#[derive(Debug, Subcommand)]
pub(crate) enum StateCmd {
    /// Create the database (or migrate an existing one) and report its schema.
    Init,
    /// Create an entity in one of its initial statuses.
    Create(CreateArgs),
    /// Move an entity to another status through the guarded transition service.
    ///
    /// Exit status: 0 applied, 3 conflict (the row was not as expected),
    /// 4 rejected by policy (an audit row was written), 1 error.
    Transition(TransitionArgs),
    /// Print an entity's status history, oldest first.
    History {
        /// Entity type.
        #[arg(value_enum)]
        entity_type: EntityType,
        /// Entity id or unique prefix.
        entity_id: String,
    },
    /// Check the database (read-only) and classify every session's health:
    /// a count per class, then only the sessions that need attention
    /// (orphan, dead, zombie).
    Health {
        /// List every session, healthy ones too.
        #[arg(long)]
        all: bool,
    },
    /// Row counts per table, sessions per status, file pages (read-only).
    Stats,
    /// Move the write-ahead log into the database file and truncate it.
    Checkpoint,
    /// Rewrite the database file without its free pages (needs no other
    /// writer; may take a while on a large store).
    Vacuum,
    /// Retention: delete sessions in a terminal status that ended longer
    /// ago than --older-than, with their messages. Open sessions and the
    /// status history are kept; an audit row records every prune.
    Prune {
        /// Age past which ended sessions go: 90s, 30m, 2h, 7d, 1w.
        #[arg(long, value_parser = crate::view::parse_age, default_value = "30d")]
        older_than: Duration,
        /// Count what would go, delete nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// End every open session whose owner is provably gone (status failed,
    /// reason session.orphaned.no_process), signalling its leg's group only
    /// when the recorded start time still matches.
    Doctor {
        /// Report what would be ended, change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Import sessions, their messages and status history from a state.db
    /// written by the original lionagi, and report what was skipped.
    Import(crate::import::ImportArgs),
}

/// The entity types of the lifecycle store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EntityType {
    /// An agent session (one supervised leg).
    Session,
    /// An invocation (a request that spawns sessions).
    Invocation,
    /// A show.
    Show,
    /// A play of a show.
    Play,
    /// A team.
    Team,
    /// A schedule.
    Schedule,
    /// One run of a schedule.
    #[value(name = "schedule_run", alias = "schedule-run")]
    ScheduleRun,
    /// A dispatch of the outbox.
    Dispatch,
}

impl EntityType {
    /// The name the store uses.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Session => "session",
            Self::Invocation => "invocation",
            Self::Show => "show",
            Self::Play => "play",
            Self::Team => "team",
            Self::Schedule => "schedule",
            Self::ScheduleRun => "schedule_run",
            Self::Dispatch => "dispatch",
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct CommonArgs {
    /// A registered reason code, e.g. run.completed.ok.
    #[arg(long)]
    reason: String,
    /// A one-line summary stored with the reason.
    #[arg(long, default_value = "")]
    summary: String,
    /// Who acts, as TYPE:ID (types: executor, agent, admin, system, scheduler, operator, webhook).
    #[arg(long, default_value = "operator:lionrt")]
    actor: String,
    /// Set a patch column, as COLUMN=VALUE (VALUE is JSON, or else a string). Repeatable.
    #[arg(long = "set", value_name = "COLUMN=VALUE")]
    set: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// Entity type.
    #[arg(value_enum)]
    entity_type: EntityType,
    /// Entity id.
    entity_id: String,
    /// Initial status.
    status: String,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Debug, Args)]
pub(crate) struct TransitionArgs {
    /// Entity type.
    #[arg(value_enum)]
    entity_type: EntityType,
    /// Entity id or unique prefix.
    entity_id: String,
    /// Target status.
    to_status: String,
    #[command(flatten)]
    common: CommonArgs,
    /// Only apply if the current status is one of these. Repeatable.
    #[arg(long = "expect", value_name = "STATUS")]
    expect: Vec<String>,
    /// Only apply if updated_at still equals this version (as read before).
    #[arg(long = "expect-version", value_name = "VERSION")]
    expect_version: Option<i64>,
    /// Override a terminal exit or undeclared edge, as TYPE:ID (audited).
    #[arg(long = "override-by", requires = "justification")]
    override_by: Option<String>,
    /// Why the override is needed.
    #[arg(long)]
    justification: Option<String>,
}

pub(crate) fn parse_actor(text: &str) -> Result<Actor> {
    let (kind, id) = text
        .split_once(':')
        .with_context(|| format!("actor {text:?} must be TYPE:ID"))?;
    Ok(Actor::new(ActorType::parse(kind)?, id))
}

fn parse_sets(sets: &[String]) -> Result<BTreeMap<String, Value>> {
    sets.iter()
        .map(|s| {
            let (k, v) = s
                .split_once('=')
                .with_context(|| format!("--set {s:?} must be COLUMN=VALUE"))?;
            let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_owned()));
            Ok((k.to_owned(), value))
        })
        .collect()
}

fn reason(common: &CommonArgs) -> Reason {
    Reason::new(&common.reason).with_summary(&common.summary)
}

pub(crate) fn open_store(db: &Path) -> Result<Store> {
    let engine = Engine::open(db, EngineConfig::default())?;
    Ok(Store::new(engine))
}

fn report(json: bool, out: &Outcome) -> ExitCode {
    if json {
        out::json(&serde_json::to_value(out).unwrap_or(Value::Null));
    } else {
        out::line(format!(
            "{}: {} -> {}{}",
            out.result.as_str(),
            out.previous_status.as_deref().unwrap_or("(none)"),
            out.current_status.as_deref().unwrap_or("(none)"),
            out.transition_id
                .map(|id| format!(" (transition {id})"))
                .unwrap_or_default()
        ));
    }
    match out.result {
        OutcomeKind::Applied => ExitCode::SUCCESS,
        OutcomeKind::Conflict => ExitCode::from(EXIT_CONFLICT),
        OutcomeKind::Rejected => ExitCode::from(EXIT_REJECTED),
    }
}

pub(crate) fn print_history(json: bool, history: &[TransitionRecord]) {
    if json {
        out::json(&serde_json::to_value(history).unwrap_or(Value::Null));
        return;
    }
    out::line(format!(
        "{:<6} {:<27} {:<16} {:<16} {:<34} ACTOR",
        "ID", "AT", "FROM", "TO", "REASON"
    ));
    for t in history {
        out::line(format!(
            "{:<6} {:<27} {:<16} {:<16} {:<34} {}:{}{}",
            t.id,
            out::timestamp(t.created_at),
            t.from_status.as_deref().unwrap_or("-"),
            t.to_status,
            t.reason_code,
            t.actor_type,
            t.actor_id,
            if t.overridden { " (override)" } else { "" }
        ));
    }
}

pub(crate) fn run(db: &Path, json: bool, cmd: StateCmd) -> Result<ExitCode> {
    if let Some(url) = crate::pg::url(db) {
        return run_pg(db, &url, json, cmd);
    }
    let shown = db.display().to_string();
    match cmd {
        StateCmd::Init => {
            let engine = Engine::create(db, EngineConfig::default())?;
            let conn = engine.conn()?;
            let version = schema_version(&conn)?;
            if json {
                out::json(
                    &json!({"db": db, "schema_version": version, "sqlite": state_sqlite::linked_sqlite_version()}),
                );
            } else {
                out::line(format!(
                    "initialised {} (schema version {version}, SQLite {})",
                    db.display(),
                    state_sqlite::linked_sqlite_version()
                ));
            }
            Ok(ExitCode::SUCCESS)
        }
        StateCmd::Create(_)
        | StateCmd::Transition(_)
        | StateCmd::History { .. }
        | StateCmd::Doctor { .. } => on_store(&open_store(db)?, &shown, json, cmd),
        StateCmd::Prune {
            older_than,
            dry_run,
        } => {
            if !db.exists() {
                bail!("no database at {}", db.display());
            }
            prune(&open_store(db)?, &shown, json, older_than, dry_run)
        }
        StateCmd::Health { all } => health(&crate::backend::Sqlite::open(db)?, json, all),
        StateCmd::Stats => crate::maintenance::stats(&crate::backend::Sqlite::open(db)?, json),
        StateCmd::Checkpoint => crate::maintenance::checkpoint(db, json),
        StateCmd::Vacuum => crate::maintenance::vacuum(db, json),
        StateCmd::Import(a) => crate::import::run(db, json, a),
    }
}

/// `lionrt state ...` on a PostgreSQL schema: the same verbs through the
/// same code, except `checkpoint`, which only means something for a SQLite
/// file.
fn run_pg(db: &Path, url: &state_postgres::DbUrl, json: bool, cmd: StateCmd) -> Result<ExitCode> {
    match cmd {
        StateCmd::Init => {
            let store = crate::pg::open(url)?;
            let version = store.schema_version()?;
            let schema = store.engine().schema().to_owned();
            let server = store.server_version()?;
            if json {
                out::json(&json!({"db": url.to_string(), "schema": schema,
                    "schema_version": version, "server_version": server}));
            } else {
                out::line(format!(
                    "initialised {url} schema {schema} (schema version {version}, PostgreSQL {server})"
                ));
            }
            Ok(ExitCode::SUCCESS)
        }
        StateCmd::Create(_)
        | StateCmd::Transition(_)
        | StateCmd::History { .. }
        | StateCmd::Doctor { .. } => on_store(&crate::pg::open(url)?, &url.to_string(), json, cmd),
        StateCmd::Prune {
            older_than,
            dry_run,
        } => prune(
            &crate::pg::open(url)?,
            &url.to_string(),
            json,
            older_than,
            dry_run,
        ),
        StateCmd::Health { all } => health(&crate::backend::Postgres::open(url)?, json, all),
        StateCmd::Stats => crate::maintenance::stats(&crate::backend::Postgres::open(url)?, json),
        StateCmd::Vacuum => crate::maintenance::vacuum_pg(&crate::pg::open(url)?, json),
        StateCmd::Checkpoint => bail!(
            "`state checkpoint` moves a SQLite file's write-ahead log into the file; PostgreSQL checkpoints on its own ({url})"
        ),
        StateCmd::Import(a) => crate::import::run(db, json, a),
    }
}

/// The verbs that write through the guarded store, on either store.
/// `shown` is where the store is, safe to print.
fn on_store<S>(store: &S, shown: &str, json: bool, cmd: StateCmd) -> Result<ExitCode>
where
    S: SessionRecorder + StateReader,
{
    match cmd {
        StateCmd::Create(a) => {
            let out = store.create(&InitialCommand {
                entity_type: a.entity_type.as_str().to_owned(),
                entity_id: a.entity_id,
                status: a.status,
                reason: reason(&a.common),
                actor: parse_actor(&a.common.actor)?,
                patch: parse_sets(&a.common.set)?,
            })?;
            Ok(report(json, &out))
        }
        StateCmd::Transition(a) => {
            let entity_id = resolve(store, a.entity_type, &a.entity_id)?;
            let mut cmd = TransitionCommand::new(
                a.entity_type.as_str(),
                &entity_id,
                &a.to_status,
                reason(&a.common),
                parse_actor(&a.common.actor)?,
            );
            for s in a.expect {
                cmd = cmd.expecting(s);
            }
            cmd.expected_version = a.expect_version;
            cmd.patch = parse_sets(&a.common.set)?;
            if let Some(by) = a.override_by {
                cmd.override_ = Some(Override {
                    actor: parse_actor(&by)?,
                    justification: a.justification.unwrap_or_default(),
                });
            }
            let out = store.transition(&cmd)?;
            Ok(report(json, &out))
        }
        StateCmd::History {
            entity_type,
            entity_id,
        } => {
            let entity_id = resolve(store, entity_type, &entity_id)?;
            let entity_type = entity_type.as_str();
            let history = store.transitions(entity_type, &entity_id)?;
            if history.is_empty()
                && store.match_id(entity_type, &entity_id)? != IdMatch::One(entity_id.clone())
            {
                bail!("{entity_type} {entity_id:?} not found in {shown}");
            }
            print_history(json, &history);
            Ok(ExitCode::SUCCESS)
        }
        StateCmd::Doctor { dry_run } => {
            let procs = runner::Processes {
                table: &cli_supervisor::ProcTable,
                signaller: &cli_supervisor::OsSignaller,
            };
            let report = runner::sweep_orphans(store, &procs, &crate::run::sweep_actor(), dry_run)?;
            crate::kill::print_sweep(json, dry_run, &report);
            Ok(ExitCode::SUCCESS)
        }
        _ => bail!("not a store verb"),
    }
}

/// `state prune` on either store.
fn prune<S: SessionRetention>(
    store: &S,
    shown: &str,
    json: bool,
    older_than: Duration,
    dry_run: bool,
) -> Result<ExitCode> {
    let actor = Actor::new(
        ActorType::Operator,
        format!("lionrt-{}", std::process::id()),
    );
    let report = store.prune_sessions(crate::view::micros_ago(older_than), dry_run, &actor)?;
    if json {
        out::json(&json!({"db": shown, "older_than_secs": older_than.as_secs(), "prune": report}));
    } else {
        out::line(format!(
            "{} {} session(s) and {} message(s) ended more than {} ago",
            if dry_run { "would prune" } else { "pruned" },
            report.sessions,
            report.messages,
            crate::view::short_duration(older_than)
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// An id or unique prefix of `entity_type`, resolved on the store.
/// An ambiguous prefix is refused; one matching no row is kept as given
/// (its history may outlive a pruned row, and a transition on it reports
/// the missing entity itself).
fn resolve<S: StateReader>(store: &S, entity_type: EntityType, prefix: &str) -> Result<String> {
    crate::view::resolve(store, entity_type.as_str(), prefix)
        .map(|found| found.unwrap_or_else(|| prefix.to_owned()))
}

/// Whether a session's leg is alive, judged by its spawn record: with a
/// recorded start time only the same process counts (a recycled pid does
/// not); without one (a row older than the spawn record, or one that never
/// stored it) the pid's existence is all there is.
fn leg_liveness(
    table: &dyn cli_supervisor::ProcessTable,
    pid: Option<i64>,
    create_time: Option<i64>,
) -> Liveness {
    let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 0) else {
        return Liveness::Unknown;
    };
    match (table.start_time(pid), create_time) {
        (Some(live), Some(recorded)) if i64::try_from(live).ok() == Some(recorded) => {
            Liveness::Alive
        }
        (Some(_), None) => Liveness::Alive,
        _ => Liveness::Dead,
    }
}

fn health<B: Backend>(backend: &B, json: bool, all: bool) -> Result<ExitCode> {
    let facts = backend.health_facts()?;
    let now = state_sqlite::now_micros();
    let thresholds = HealthThresholds::default();
    let mut sessions = Vec::new();
    let this_host = runner::host_id();
    for a in backend.reader().session_activity()? {
        // Another host's leg pid names nothing here: its liveness is not
        // known from this host, and the session is listed as another
        // host's.
        let other_host = a.owner_host_id.is_some() && a.owner_host_id != this_host;
        let liveness = if other_host {
            Liveness::Unknown
        } else {
            leg_liveness(&cli_supervisor::ProcTable, a.pid, a.leg_create_time)
        };
        let kind = match a.kind.as_deref() {
            Some("interactive") => SessionKind::Interactive,
            Some("mirrored") => SessionKind::Mirrored,
            _ => SessionKind::Orchestrated,
        };
        let input = HealthInput {
            status: a.status.clone(),
            message_count: u64::try_from(a.messages).unwrap_or(0),
            has_artifacts: false,
            has_stale_locks: false,
            liveness,
            idle: Duration::from_micros(
                u64::try_from(now.saturating_sub(a.last_activity)).unwrap_or(0),
            ),
            kind,
        };
        sessions.push((
            a.id,
            a.status,
            classify_session_health(&input, &thresholds),
            other_host,
        ));
    }
    let name = |h: &Health| match h {
        Health::Done => "done",
        Health::Zombie => "zombie",
        Health::Orphan => "orphan",
        Health::Dead => "dead",
        Health::Active => "active",
    };
    // Orphans, dead and zombie sessions need someone to look; done and
    // active ones are listed only with --all.
    let attention = |h: &Health| matches!(h, Health::Zombie | Health::Orphan | Health::Dead);
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, _, h, _) in &sessions {
        *counts.entry(name(h)).or_default() += 1;
    }
    let shown: Vec<_> = sessions
        .iter()
        .filter(|(_, _, h, _)| all || attention(h))
        .collect();
    if json {
        let list: Vec<Value> = shown
            .iter()
            .map(|(id, status, h, other)| {
                json!({"id": id, "status": status, "health": h, "other_host": other})
            })
            .collect();
        let mut v = serde_json::Map::new();
        v.insert("db".into(), json!(backend.location()));
        for (k, val) in facts.json {
            v.insert(k.into(), val);
        }
        v.insert("total".into(), json!(sessions.len()));
        v.insert("counts".into(), json!(counts));
        v.insert("all".into(), json!(all));
        v.insert("sessions".into(), Value::Array(list));
        out::json(&Value::Object(v));
    } else {
        out::line(format!("database   {}", backend.location()));
        for (label, text) in &facts.lines {
            out::line(format!("{label:<10} {text}"));
        }
        let summary: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
        out::line(format!(
            "sessions   {}{}",
            sessions.len(),
            if summary.is_empty() {
                String::new()
            } else {
                format!(" ({})", summary.join(", "))
            }
        ));
        if !all && !shown.is_empty() {
            out::line("needing attention:");
        }
        for (id, status, h, other) in &shown {
            let host = if *other { " (other host)" } else { "" };
            out::line(format!("  {id:<36} {status:<16} {}{host}", name(h)));
        }
        if !all && shown.len() < sessions.len() {
            out::line(format!(
                "({} healthy session(s) not listed; --all lists every one)",
                sessions.len() - shown.len()
            ));
        }
    }
    Ok(if facts.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use cli_supervisor::{GroupScan, ProcessTable};
    use lifecycle_core::Liveness;

    use super::leg_liveness;

    /// One live process, pid 42, started at tick 1000.
    struct One;

    impl ProcessTable for One {
        fn start_time(&self, pid: i32) -> Option<u64> {
            (pid == 42).then_some(1000)
        }
        fn pgid(&self, _pid: i32) -> Option<i32> {
            None
        }
        fn scan_group(&self, _pgid: i32) -> GroupScan {
            GroupScan::default()
        }
    }

    #[test]
    fn a_leg_is_alive_only_with_its_recorded_start_time() {
        let cases = [
            (Some(42), Some(1000), Liveness::Alive),
            // The pid was recycled: another process holds it now.
            (Some(42), Some(999), Liveness::Dead),
            (Some(7), Some(1000), Liveness::Dead),
            // No start time recorded (an older row): existence is all.
            (Some(42), None, Liveness::Alive),
            (Some(7), None, Liveness::Dead),
            (None, Some(1000), Liveness::Unknown),
            (Some(0), None, Liveness::Unknown),
            (Some(-5), None, Liveness::Unknown),
        ];
        for (pid, create_time, want) in cases {
            assert_eq!(
                leg_liveness(&One, pid, create_time),
                want,
                "{pid:?} {create_time:?}"
            );
        }
    }
}
