//! `lionrt run`: the main job, end to end.
//!
//! Today's walk: open (or create) the state database, record the session's
//! start, build the provider's invocation through the `Provider` seam (argv,
//! cwd, stdin, env, owner-only files), spawn it under the supervisor (own
//! process group, bounded NDJSON, watchdogs for early-streaming transports),
//! parse every line into stream events and record them as messages, record
//! the end with usage and the terminal status, and print the history. The
//! scripted provider's "CLI" is this binary itself (`lionrt
//! __scripted-leg`), so the job runs with no agent CLI installed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use cli_supervisor::{
    ChildEnv, EnvPolicy, Event, Leg, LegSpec, LookupConfig, SettingsFile, StdinPolicy, Watchdogs,
};
use lifecycle_core::{Actor, ActorType};
use providers_core::{AgentRequest, Provider, Stdin, StreamEvent, StreamParser, normalize_effort};
use providers_scripted::{ScriptModel, ScriptedProvider};
use sandbox_git::{CreateOptions, cleanup_sandbox, create_sandbox, probe_completion_evidence};
use serde_json::{Value, json};
use state_sqlite::{Engine, EngineConfig, SessionEnd, SessionStart, Store, Usage, now_micros};
use tokio::io::AsyncWriteExt;
use tokio::signal::unix::{SignalKind, signal};

use crate::out;

/// The agent CLIs `lionrt run` can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProviderName {
    /// Replays a script; needs no agent CLI (the default).
    Scripted,
    /// Claude Code (`claude`).
    Claude,
    /// Codex CLI (`codex`).
    Codex,
    /// Antigravity / Gemini (`agy`).
    Gemini,
    /// pi (`pi`).
    Pi,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The provider to drive.
    #[arg(long, value_enum, default_value = "scripted")]
    provider: ProviderName,
    /// The prompt.
    #[arg(long, default_value = "Update the README with a short usage note.")]
    prompt: String,
    /// The model, as the provider names it.
    #[arg(long)]
    model: Option<String>,
    /// Effort: none, minimal, low, medium, high, xhigh, max or ultra (clamped per provider and model).
    #[arg(long)]
    effort: Option<String>,
    /// The workspace the agent works in (default: the current directory).
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// The session id (default: run-<microseconds>).
    #[arg(long)]
    session: Option<String>,
    /// For the scripted provider: a JSON script (entries text, tool_call, structured, stream, error).
    #[arg(long)]
    script: Option<PathBuf>,
    /// Run the agent in a fresh git worktree sandbox of the workspace (which
    /// must be a git repository on a branch); a run that leaves no commits
    /// and no changes there ends `completed_empty` and its sandbox is
    /// removed, otherwise the sandbox is kept for `lionrt sandbox merge`.
    #[arg(long)]
    sandbox: bool,
}

/// The built-in demo script: one streamed answer.
pub(crate) const DEMO_SCRIPT: &str = r#"[
  {"type": "stream", "chunks": ["Reading the task. ", "Planning the change. ", "Done: README updated."]}
]"#;

/// `lionrt __scripted-leg --script FILE`: the scripted provider's leg
/// (`providers_scripted::run_leg`), so `lionrt run` needs no other binary.
pub(crate) fn scripted_leg(script: &Path) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    providers_scripted::run_leg(script, &mut stdout.lock())?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn run(db: &Path, json: bool, args: RunArgs) -> Result<ExitCode> {
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

/// What one supervised leg produced.
#[derive(Debug, Default)]
struct LegReport {
    exit_ok: bool,
    exit_status: String,
    messages: u64,
    errors: u64,
    usage: Usage,
    final_error: Option<String>,
    saw_final: bool,
    resume_id: Option<String>,
    cancelled: Option<&'static str>,
    text: String,
}

async fn main_job(db: &Path, json: bool, args: RunArgs) -> Result<ExitCode> {
    let mut signals = Signals::install()?;
    let workspace = match &args.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let effort = args.effort.as_deref().map(normalize_effort).transpose()?;
    let mut sandbox = if args.sandbox {
        let repo = workspace.clone();
        Some(
            tokio::task::spawn_blocking(move || create_sandbox(&repo, &CreateOptions::default()))
                .await
                .context("sandbox task panicked")?
                .with_context(|| format!("creating a sandbox of {}", workspace.display()))?,
        )
    } else {
        None
    };
    let agent_dir = sandbox
        .as_ref()
        .map_or_else(|| workspace.clone(), |s| s.worktree_path.clone());
    let request = AgentRequest {
        prompt: args.prompt.clone(),
        model: args.model.clone(),
        effort,
        workspace: Some(agent_dir.clone()),
        resume: None,
        kwargs: Default::default(),
    };
    let db = db.to_path_buf();
    let store =
        blocking(move || Ok(Store::new(Engine::create(&db, EngineConfig::default())?))).await?;
    let session = args
        .session
        .clone()
        .unwrap_or_else(|| format!("run-{}", now_micros()));
    let actor = Actor::new(
        ActorType::Executor,
        format!("lionrt-{}", std::process::id()),
    );
    let provider_name = format!("{:?}", args.provider).to_lowercase();

    let start = SessionStart {
        session_id: session.clone(),
        reason_code: "run.started.ok".into(),
        kind: Some("orchestrated".into()),
        provider: Some(provider_name.clone()),
        model: args.model.clone(),
        agent_name: Some("lionrt-run".into()),
        cwd: Some(agent_dir.display().to_string()),
        ..SessionStart::default()
    };
    {
        let (store, actor) = (store.clone(), actor.clone());
        blocking(move || Ok(store.persist_session_start(&start, &actor)?)).await?;
    }

    let scratch = tempfile::tempdir().context("creating a scratch directory for leg files")?;
    let leg = match args.provider {
        ProviderName::Scripted => {
            let text = match &args.script {
                Some(path) => std::fs::read_to_string(path)
                    .with_context(|| format!("reading script {}", path.display()))?,
                None => DEMO_SCRIPT.to_owned(),
            };
            let script = ScriptModel::from_json(&text)?;
            let exe = std::env::current_exe().context("locating the lionrt binary")?;
            let provider =
                ScriptedProvider::new(exe, scratch.path(), script).with_leg_args(["__scripted-leg"]);
            supervise(&provider, &request, &store, &session, &mut signals).await
        }
        ProviderName::Claude => {
            supervise(
                &providers_claude::ClaudeProvider::default(),
                &request,
                &store,
                &session,
                &mut signals,
            )
            .await
        }
        ProviderName::Codex => {
            supervise(
                &providers_codex::CodexProvider::default(),
                &request,
                &store,
                &session,
                &mut signals,
            )
            .await
        }
        ProviderName::Gemini => {
            supervise(
                &providers_gemini::GeminiProvider::default(),
                &request,
                &store,
                &session,
                &mut signals,
            )
            .await
        }
        ProviderName::Pi => {
            supervise(
                &providers_pi::PiProvider::default(),
                &request,
                &store,
                &session,
                &mut signals,
            )
            .await
        }
    };
    // A leg that could not even start still ends its session, as failed.
    let report = match leg {
        Ok(report) => report,
        Err(e) => LegReport {
            exit_status: "not started".into(),
            final_error: Some(format!("{e:#}")),
            ..LegReport::default()
        },
    };
    let ok = report.exit_ok
        && report.saw_final
        && report.final_error.is_none()
        && report.cancelled.is_none();
    // Completion evidence: only a probe that ran may report "nothing done";
    // a failed probe keeps the run's own verdict.
    let evidence = match &sandbox {
        Some(s) if ok => {
            let (dir, base) = (s.worktree_path.clone(), s.base_branch.clone());
            Some(
                tokio::task::spawn_blocking(move || probe_completion_evidence(&dir, &base))
                    .await
                    .context("evidence task panicked")?,
            )
        }
        _ => None,
    };
    let empty = evidence
        .as_ref()
        .is_some_and(|e| e.checked && !e.has_evidence());
    let (status, reason) = match (&report.final_error, report.exit_ok) {
        _ if report.cancelled.is_some() => (
            "cancelled",
            report.cancelled.unwrap_or("run.cancelled.system"),
        ),
        _ if ok && empty => ("completed_empty", "run.completed_empty.no_evidence"),
        _ if ok => ("completed", "run.completed.ok"),
        (Some(_), true) => ("failed", "run.failed.provider_nonretryable"),
        (_, false) if report.exit_status == "not started" => ("failed", "run.failed.exception"),
        _ => ("failed", "run.failed.exit_nonzero"),
    };
    let end = SessionEnd {
        session_id: session.clone(),
        status: status.into(),
        reason_code: reason.into(),
        usage: report.usage.clone(),
        error: report
            .final_error
            .clone()
            .or_else(|| (!ok).then(|| format!("leg ended: {}", report.exit_status))),
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
    let mut sandbox_note = None;
    if let Some(mut s) = sandbox.take() {
        if empty {
            let cleaned =
                tokio::task::spawn_blocking(move || cleanup_sandbox(&mut s).map(|_| s.id.clone()))
                    .await
                    .context("sandbox task panicked")?;
            match cleaned {
                Ok(id) => sandbox_note = Some(json!({"id": id, "kept": false})),
                Err(e) => tracing::warn!(error = %e, "could not remove the empty run's sandbox"),
            }
        } else {
            sandbox_note = Some(
                json!({"id": s.id, "branch": s.branch, "worktree": s.worktree_path, "kept": true}),
            );
        }
    }
    if json {
        out::json(&json!({
            "session": session, "provider": provider_name, "ok": ok, "sandbox": sandbox_note, "evidence": evidence, "messages": report.messages,
            "errors": report.errors, "resume_id": report.resume_id, "error": report.final_error,
            "text": report.text, "history": history,
        }));
    } else {
        out::line(format!(
            "session {session} ({provider_name}): {} message(s), {} error event(s), leg {}",
            report.messages, report.errors, report.exit_status
        ));
        if !report.text.is_empty() {
            out::line(format!("agent: {}", report.text.trim()));
        }
        if let Some(note) = &sandbox_note {
            if note["kept"] == true {
                out::line(format!(
                    "sandbox {} kept for review: lionrt sandbox merge {}",
                    note["id"],
                    note["id"].as_str().unwrap_or_default()
                ));
            } else {
                out::line(
                    "the run left no commits and no changes: completed_empty, sandbox removed",
                );
            }
        }
        if let Some(e) = &report.final_error {
            out::line(format!("error: {e}"));
        }
        crate::state::print_history(false, &history);
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn event_role(event: &StreamEvent) -> &'static str {
    match event {
        StreamEvent::SessionId { .. } => "session",
        StreamEvent::Text { .. } => "assistant",
        StreamEvent::Thinking { .. } => "thinking",
        StreamEvent::ToolUse { .. } => "tool_use",
        StreamEvent::ToolResult { .. } => "tool_result",
        StreamEvent::Usage(_) => "usage",
        StreamEvent::Final(_) => "result",
        StreamEvent::BenignEnd => "end",
        StreamEvent::Error { .. } => "error",
        _ => "event",
    }
}

/// SIGINT and SIGTERM, caught for the whole run: they end the leg's group
/// (SIGTERM, grace, SIGKILL) and record the session as cancelled instead of
/// leaving a `running` row behind. Installed before the leg is spawned, so
/// no signal can arrive while a leg runs unwatched.
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Result<Self> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
            terminate: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
        })
    }
}

/// Builds the leg from the provider's invocation, supervises it and records
/// every parsed event as a message.
async fn supervise<P: Provider>(
    provider: &P,
    request: &AgentRequest,
    store: &Store,
    session: &str,
    signals: &mut Signals,
) -> Result<LegReport>
where
    P::Error: Send + Sync + 'static,
{
    let invocation = provider.invocation(request)?;
    for file in &invocation.files {
        file.write_owner_only()
            .with_context(|| format!("writing {}", file.path.display()))?;
    }
    let mut spec = LegSpec::new(&invocation.argv);
    spec.cwd = invocation.cwd.clone();
    spec.streams_first_output_early = provider.streams_first_output_early();
    if !invocation.env.is_empty() {
        let mut env = ChildEnv::from_current_process();
        for (k, v) in &invocation.env {
            env.insert(k, v)?;
        }
        spec.env = EnvPolicy::Explicit(env);
    }
    let stdin_bytes = match &invocation.stdin {
        Stdin::Null => None,
        Stdin::Bytes(bytes) => {
            spec.stdin = StdinPolicy::Piped;
            Some(bytes.clone())
        }
    };
    // The binary is where configuration is read: the watchdog defaults from
    // LIONAGI_WORKER_* and `secrets.lookup` from the global settings file.
    spec.default_watchdogs = Watchdogs::from_env()?;
    spec.secret_lookup =
        SettingsFile::locate().map_or(LookupConfig::NotConfigured, |f| f.secret_lookup());
    let program = invocation.argv.first().cloned().unwrap_or_default();
    let mut leg = Leg::spawn(spec)
        .await
        .with_context(|| format!("spawning {program}"))?;
    if let (Some(bytes), Some(mut stdin)) = (stdin_bytes, leg.take_stdin()) {
        stdin
            .write_all(&bytes)
            .await
            .context("writing the prompt to the leg")?;
        drop(stdin);
    }
    let pid = i64::from(leg.record().pid);
    {
        let (store, session) = (store.clone(), session.to_owned());
        blocking(move || {
            Ok(store.update_session(&session, &[("pid".to_owned(), json!(pid))].into())?)
        })
        .await?;
    }
    let mut parser = provider.parser();
    let mut report = LegReport::default();
    let mut seq = 0u64;
    loop {
        let next = tokio::select! {
            next = leg.next_event() => next?,
            _ = signals.interrupt.recv() => {
                report.cancelled = Some("run.cancelled.sigint");
                break;
            }
            _ = signals.terminate.recv() => {
                report.cancelled = Some("run.cancelled.sigterm");
                break;
            }
        };
        let events = match next {
            None => break,
            Some(Event::Json { value, .. }) => parser.parse_value(&value),
            Some(Event::LineTooLong { line, len }) => {
                tracing::warn!(line, len, "leg printed an over-long line; discarded");
                report.errors += 1;
                continue;
            }
            Some(Event::InvalidJson { line, error }) => {
                tracing::warn!(line, %error, "leg printed a line that is not JSON");
                report.errors += 1;
                continue;
            }
            Some(other) => {
                tracing::debug!(?other, "unhandled leg event");
                continue;
            }
        };
        record(store, session, &events, &mut seq, &mut report).await?;
    }
    let tail = parser.finish();
    record(store, session, &tail, &mut seq, &mut report).await?;
    report.resume_id = parser.resume_id().map(str::to_owned);
    let exit = if report.cancelled.is_some() {
        leg.end().await?
    } else {
        leg.wait().await?
    };
    report.exit_ok = exit.status.success();
    report.exit_status = exit.status.to_string();
    if !report.exit_ok && report.final_error.is_none() {
        let tail = String::from_utf8_lossy(&exit.stderr_tail);
        let last = tail
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default();
        if !last.is_empty() {
            report.final_error = Some(last.chars().take(500).collect());
        }
    }
    Ok(report)
}

async fn record(
    store: &Store,
    session: &str,
    events: &[StreamEvent],
    seq: &mut u64,
    report: &mut LegReport,
) -> Result<()> {
    for event in events {
        match event {
            StreamEvent::Usage(u) => {
                report.usage.input_tokens = u.input_tokens.and_then(|n| i64::try_from(n).ok());
                report.usage.output_tokens = u.output_tokens.and_then(|n| i64::try_from(n).ok());
                report.usage.total_cost_usd = u.cost_usd;
            }
            StreamEvent::Final(f) => {
                report.saw_final = true;
                if f.is_error {
                    report.final_error = Some(
                        f.error
                            .clone()
                            .unwrap_or_else(|| "the provider reported failure".into()),
                    );
                }
            }
            StreamEvent::Error { .. } => report.errors += 1,
            StreamEvent::Text { text } => report.text.push_str(text),
            _ => {}
        }
        *seq += 1;
        report.messages += 1;
        let (store, session) = (store.clone(), session.to_owned());
        let role = event_role(event).to_owned();
        let content = serde_json::to_string(event).unwrap_or_else(|_| Value::Null.to_string());
        let id = format!("{session}:{seq}");
        blocking(move || Ok(store.record_message(&session, &id, &role, &content, now_micros())?))
            .await?;
    }
    Ok(())
}
