//! `lionrt run`: the main job, end to end on the embedded defaults.
//!
//! Today's walk: open (or create) the state database, record the session's
//! start, spawn the provider's leg under the supervisor (its own process
//! group, bounded NDJSON, watchdogs), record every event as a message,
//! record the end with usage and the terminal status, print the history.
//! The scripted provider's "CLI" is this binary itself (`lionrt
//! __scripted-leg`), so the job runs with no agent CLI installed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use cli_supervisor::{Event, Leg, LegSpec};
use lifecycle_core::{Actor, ActorType};
use serde_json::{Value, json};
use state_sqlite::{Engine, EngineConfig, SessionEnd, SessionStart, Store, Usage, now_micros};

use crate::out;

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The provider to drive. Only `scripted` (replays NDJSON, no agent CLI needed) for now.
    #[arg(long, default_value = "scripted")]
    provider: String,
    /// The session id (default: run-<microseconds>).
    #[arg(long)]
    session: Option<String>,
    /// For the scripted provider: an NDJSON file to replay (default: a built-in demo script).
    #[arg(long)]
    script: Option<PathBuf>,
}

/// The built-in demo script: what a streaming agent CLI prints for a short,
/// successful run.
pub(crate) const DEMO_SCRIPT: &str = r#"{"type":"system","subtype":"init","model":"scripted-demo","tools":["read","edit"]}
{"type":"assistant","text":"Reading the task and planning the change."}
{"type":"tool_use","name":"edit","input":{"path":"README.md"}}
{"type":"tool_result","name":"edit","ok":true}
{"type":"assistant","text":"Done: README updated."}
{"type":"result","subtype":"success","num_turns":2,"usage":{"input_tokens":1200,"output_tokens":340},"total_cost_usd":0.0,"duration_ms":42}
"#;

/// `lionrt __scripted-leg`: prints the script as NDJSON on stdout.
pub(crate) fn scripted_leg(script: Option<&Path>) -> Result<ExitCode> {
    let text = match script {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading script {}", path.display()))?,
        None => DEMO_SCRIPT.to_owned(),
    };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        out::line(line);
    }
    Ok(ExitCode::SUCCESS)
}

fn role_of(value: &Value) -> &str {
    value.get("type").and_then(Value::as_str).unwrap_or("event")
}

pub(crate) fn run(db: &Path, json: bool, args: RunArgs) -> Result<ExitCode> {
    if args.provider != "scripted" {
        bail!(
            "provider {:?} is not available yet; use --provider scripted",
            args.provider
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(main_job(db, json, args))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .context("store task panicked")?
}

async fn main_job(db: &Path, json: bool, args: RunArgs) -> Result<ExitCode> {
    let db = db.to_path_buf();
    let store =
        blocking(move || Ok(Store::new(Engine::create(&db, EngineConfig::default())?))).await?;
    let session = args
        .session
        .unwrap_or_else(|| format!("run-{}", now_micros()));
    let actor = Actor::new(
        ActorType::Executor,
        format!("lionrt-{}", std::process::id()),
    );

    let start = SessionStart {
        session_id: session.clone(),
        reason_code: "run.started.ok".into(),
        kind: Some("orchestrated".into()),
        provider: Some(args.provider.clone()),
        model: Some("scripted-demo".into()),
        agent_name: Some("demo".into()),
        cwd: std::env::current_dir()
            .ok()
            .map(|p| p.display().to_string()),
        ..SessionStart::default()
    };
    {
        let (store, actor) = (store.clone(), actor.clone());
        blocking(move || Ok(store.persist_session_start(&start, &actor)?)).await?;
    }

    let exe = std::env::current_exe().context("locating the lionrt binary")?;
    let mut argv = vec![exe.into_os_string(), "__scripted-leg".into()];
    if let Some(script) = &args.script {
        argv.push("--script".into());
        argv.push(script.clone().into_os_string());
    }
    let mut spec = LegSpec::new(argv);
    spec.streams_first_output_early = true;
    let mut leg = Leg::spawn(spec).await?;
    let pid = i64::from(leg.record().pid);
    {
        let (store, session) = (store.clone(), session.clone());
        blocking(move || {
            Ok(store.update_session(&session, &[("pid".to_owned(), json!(pid))].into())?)
        })
        .await?;
    }

    let mut usage = Usage::default();
    let mut bad_lines = 0u64;
    let mut messages = 0u64;
    while let Some(event) = leg.next_event().await? {
        match event {
            Event::Json { line, value } => {
                if role_of(&value) == "result" {
                    usage = Usage {
                        input_tokens: value.pointer("/usage/input_tokens").and_then(Value::as_i64),
                        output_tokens: value
                            .pointer("/usage/output_tokens")
                            .and_then(Value::as_i64),
                        total_cost_usd: value.get("total_cost_usd").and_then(Value::as_f64),
                        num_turns: value.get("num_turns").and_then(Value::as_i64),
                        duration_ms: value.get("duration_ms").and_then(Value::as_i64),
                    };
                }
                let (store, session) = (store.clone(), session.clone());
                let role = role_of(&value).to_owned();
                blocking(move || {
                    Ok(store.record_message(
                        &session,
                        &format!("{session}:{line}"),
                        &role,
                        &value.to_string(),
                        now_micros(),
                    )?)
                })
                .await?;
                messages += 1;
            }
            Event::LineTooLong { line, len } => {
                bad_lines += 1;
                tracing::warn!(line, len, "leg printed an over-long line; discarded");
            }
            Event::InvalidJson { line, error } => {
                bad_lines += 1;
                tracing::warn!(line, %error, "leg printed a line that is not JSON");
            }
            other => tracing::debug!(?other, "unhandled leg event"),
        }
    }
    let exit = leg.wait().await?;
    let ok = exit.status.success();
    let end = SessionEnd {
        session_id: session.clone(),
        status: if ok { "completed" } else { "failed" }.into(),
        reason_code: if ok {
            "run.completed.ok"
        } else {
            "run.failed.exit_nonzero"
        }
        .into(),
        usage,
        error: (!ok).then(|| format!("leg exited with {}", exit.status)),
        ended_at: now_micros(),
    };
    let history = {
        let (store, session) = (store.clone(), session.clone());
        blocking(move || {
            store.persist_session_end(&end, &actor)?;
            Ok(store.history("session", &session)?)
        })
        .await?
    };
    if json {
        out::json(&json!({
            "session": session, "ok": ok, "messages": messages, "bad_lines": bad_lines, "history": history,
        }));
    } else {
        out::line(format!(
            "session {session}: {messages} message(s), {bad_lines} bad line(s), leg {}",
            exit.status
        ));
        crate::state::print_history(false, &history);
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
