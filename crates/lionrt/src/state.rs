//! `lionrt state ...`: the lifecycle store from the command line.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use lifecycle_core::{
    Actor, ActorType, Health, HealthInput, HealthThresholds, InitialCommand, Liveness, Outcome,
    OutcomeKind, Override, Reason, SessionKind, TransitionCommand, TransitionRecord,
    classify_session_health,
};
use serde_json::{Value, json};
use state_sqlite::{
    Engine, EngineConfig, ReadOnlyEngine, Store, has_wal_reset_fix, schema_version,
};

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
        /// Entity type (session, invocation, show, play, team, schedule_run, dispatch, schedule).
        entity_type: String,
        /// Entity id.
        entity_id: String,
    },
    /// Check the database (read-only) and classify every open session's health.
    Health,
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
    entity_type: String,
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
    entity_type: String,
    /// Entity id.
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
        StateCmd::Create(a) => {
            let store = open_store(db)?;
            let out = store.create(&InitialCommand {
                entity_type: a.entity_type,
                entity_id: a.entity_id,
                status: a.status,
                reason: reason(&a.common),
                actor: parse_actor(&a.common.actor)?,
                patch: parse_sets(&a.common.set)?,
            })?;
            Ok(report(json, &out))
        }
        StateCmd::Transition(a) => {
            let store = open_store(db)?;
            let mut cmd = TransitionCommand::new(
                &a.entity_type,
                &a.entity_id,
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
            let store = open_store(db)?;
            let history = store.history(&entity_type, &entity_id)?;
            if history.is_empty() && store.status_of(&entity_type, &entity_id)?.is_none() {
                bail!("{entity_type} {entity_id:?} not found in {}", db.display());
            }
            print_history(json, &history);
            Ok(ExitCode::SUCCESS)
        }
        StateCmd::Health => health(db, json),
        StateCmd::Import(a) => crate::import::run(db, json, a),
        StateCmd::Doctor { dry_run } => {
            let store = open_store(db)?;
            let procs = runner::Processes {
                table: &cli_supervisor::ProcTable,
                signaller: &cli_supervisor::OsSignaller,
            };
            let report =
                runner::sweep_orphans(&store, &procs, &crate::run::sweep_actor(), dry_run)?;
            crate::kill::print_sweep(json, dry_run, &report);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn health(db: &Path, json: bool) -> Result<ExitCode> {
    let engine = ReadOnlyEngine::open(db, Duration::from_secs(5))?;
    let conn = engine.conn()?;
    let integrity: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    let journal: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    let version = schema_version(&conn)?;
    let now = state_sqlite::now_micros();
    let mut stmt = conn.prepare(
        "SELECT s.id, s.status, s.kind, s.pid, COALESCE(s.last_message_at, s.created_at),
                (SELECT count(*) FROM messages m WHERE m.session_id = s.id)
         FROM sessions s ORDER BY s.created_at",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<String>>(2)?,
            r.get::<_, Option<i64>>(3)?,
            r.get::<_, i64>(4)?,
            r.get::<_, i64>(5)?,
        ))
    })?;
    let thresholds = HealthThresholds::default();
    let mut sessions = Vec::new();
    for row in rows {
        let (id, status, kind, pid, last, messages) = row?;
        let liveness = match pid {
            Some(pid) if Path::new(&format!("/proc/{pid}")).exists() => Liveness::Alive,
            Some(_) => Liveness::Dead,
            None => Liveness::Unknown,
        };
        let kind = match kind.as_deref() {
            Some("interactive") => SessionKind::Interactive,
            Some("mirrored") => SessionKind::Mirrored,
            _ => SessionKind::Orchestrated,
        };
        let input = HealthInput {
            status: status.clone(),
            message_count: u64::try_from(messages).unwrap_or(0),
            has_artifacts: false,
            has_stale_locks: false,
            liveness,
            idle: Duration::from_micros(u64::try_from(now.saturating_sub(last)).unwrap_or(0)),
            kind,
        };
        sessions.push((id, status, classify_session_health(&input, &thresholds)));
    }
    let ok = integrity == "ok";
    let sqlite = state_sqlite::linked_sqlite_version();
    if json {
        let list: Vec<Value> = sessions
            .iter()
            .map(|(id, status, h)| json!({"id": id, "status": status, "health": h}))
            .collect();
        out::json(&json!({
            "db": db, "integrity": integrity, "journal_mode": journal, "schema_version": version,
            "sqlite": sqlite, "wal_reset_fix": has_wal_reset_fix(sqlite), "sessions": list,
        }));
    } else {
        out::line(format!("database   {}", db.display()));
        out::line(format!("integrity  {integrity}"));
        out::line(format!("journal    {journal}"));
        out::line(format!("schema     version {version}"));
        out::line(format!(
            "sqlite     {sqlite}{}",
            if has_wal_reset_fix(sqlite) {
                ""
            } else {
                " (lacks the WAL-reset fix!)"
            }
        ));
        out::line(format!("sessions   {}", sessions.len()));
        for (id, status, h) in &sessions {
            let verdict = match h {
                Health::Done => "done",
                Health::Zombie => "zombie",
                Health::Orphan => "orphan",
                Health::Dead => "dead",
                Health::Active => "active",
            };
            out::line(format!("  {id:<36} {status:<16} {verdict}"));
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
