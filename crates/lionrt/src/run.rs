//! `lionrt run`: argument parsing, configuration and printing around the
//! `runner` crate, which does the run itself.
//!
//! Every input is validated before the session starts (the script is read
//! and parsed, the effort normalised, the workspace resolved), so a bad
//! `--script` leaves no session behind. Then the orphan sweep runs (sessions
//! whose owner is provably gone end as `failed`), SIGINT/SIGTERM become the
//! run's cancellation, and the report is printed. The scripted provider's
//! leg is this binary itself (`lionrt __scripted-leg`, which calls
//! `providers_scripted::run_leg`), so the job needs no agent CLI.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use cli_supervisor::{LookupConfig, OsSignaller, ProcTable, SettingsFile, Watchdogs};
use lifecycle_core::{Actor, ActorType, Cancellation, SessionRecorder};
use providers_core::normalize_effort;
use providers_scripted::ScriptModel;
use runner::{LegProgram, Processes, ProviderChoice, RunConfig, RunReport};
use serde_json::json;
use state_sqlite::{Engine, EngineConfig, Store, now_micros};
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
    /// The prompt, as li takes it: `lionrt run "fix the flaky test"` (the
    /// same as --prompt).
    #[arg(value_name = "PROMPT", conflicts_with = "prompt")]
    prompt_arg: Option<String>,
    /// The provider to drive (default: scripted, or the one a
    /// `--model PROVIDER/MODEL` spec names).
    #[arg(long, value_enum)]
    provider: Option<ProviderName>,
    /// The prompt (required, except by the scripted provider, whose demo
    /// has one).
    #[arg(long, conflicts_with = "prompt_file")]
    prompt: Option<String>,
    /// Read the prompt from FILE (UTF-8) instead of --prompt: a long prompt
    /// stays out of argv (and out of `ps`).
    #[arg(long, value_name = "FILE", conflicts_with = "prompt_arg")]
    prompt_file: Option<PathBuf>,
    /// Who submitted the run (`lionrt mcp serve` passes `mcp:<client>`):
    /// recorded as the actor (type agent) of the session's start row.
    #[arg(long, hide = true, value_name = "ID")]
    submitted_by: Option<String>,
    /// A free label the submitter gave the run (recorded with
    /// --submitted-by as the session's `mcp_submission` note).
    #[arg(long, hide = true, requires = "submitted_by")]
    label: Option<String>,
    /// The model, as the provider names it, or li's PROVIDER/MODEL spec
    /// (`claude/opus`, `claude-code/opus-4-7`, `codex/gpt-5`,
    /// `gemini/gemini-3.1-pro`, `pi/openrouter/qwen/qwen3-coder`).
    #[arg(long, short = 'm')]
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
    #[command(flatten)]
    live: crate::progress::LiveArgs,
    #[command(flatten)]
    agent: crate::runopts::AgentArgs,
    #[command(flatten)]
    notify: crate::notify_wiring::NotifyArgs,
    #[command(flatten)]
    mcp: crate::mcp_forward::McpForwardArgs,
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

/// What one leg needs, as typed options: `lionrt run`'s flags, or an op
/// of a flow. [`prepare_leg`] turns them into the leg's [`RunConfig`].
#[derive(Debug)]
pub(crate) struct LegOptions<'a> {
    /// The provider (default: scripted, or the one `model` names).
    pub(crate) provider: Option<ProviderName>,
    /// The model, or li's PROVIDER/MODEL spec.
    pub(crate) model: Option<&'a str>,
    /// The prompt.
    pub(crate) prompt: Option<&'a str>,
    /// The effort, as given.
    pub(crate) effort: Option<&'a str>,
    /// The workspace.
    pub(crate) workspace: PathBuf,
    /// The session id.
    pub(crate) session: String,
    /// The scripted provider's script (default: the demo).
    pub(crate) script: Option<&'a Path>,
    /// Run in a fresh worktree sandbox.
    pub(crate) sandbox: bool,
    /// `--resume`, `--set` and the watchdog timeouts.
    pub(crate) agent: &'a crate::runopts::AgentArgs,
    /// The MCP servers to forward once their tools are admitted.
    pub(crate) mcp: &'a crate::mcp_forward::McpForwardArgs,
    /// Whether the command prints JSON (the admission decision's form).
    pub(crate) json: bool,
    /// Who submitted the run (`lionrt mcp serve`'s caller), recorded as
    /// the actor of its start, with its label.
    pub(crate) submitted_by: Option<&'a str>,
    /// The submitter's label for the run.
    pub(crate) label: Option<&'a str>,
}

/// A prepared leg: its config and the MCP guard to hold
/// until it ends (and whose refusals are recorded once the store is open).
#[derive(Debug)]
pub(crate) struct Leg {
    pub(crate) config: RunConfig,
    pub(crate) mcp: crate::mcp_forward::Guard,
}

/// The one run builder: checks a leg's options and builds its
/// [`RunConfig`] (workspace, model spec, effort, script, prompt, watchdogs
/// from LIONAGI_WORKER_*, `secrets.lookup`, the submitter, the agent
/// options and the provider's dry run, then MCP resolution and admission).
/// Everything that can be wrong is found here, before a session exists.
/// `lionrt run`, every leg of a flow and every `mcp serve` submission
/// (through `lionrt run`) start through it.
pub(crate) fn prepare_leg(db: &Path, opts: &LegOptions<'_>) -> Result<Leg> {
    match std::fs::metadata(&opts.workspace) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => bail!(
            "--workspace {} is not a directory",
            opts.workspace.display()
        ),
        Err(e) => bail!("--workspace {}: {e}", opts.workspace.display()),
    }
    let effort = opts.effort.map(normalize_effort).transpose()?;
    let (provider_name, model) = model_spec(opts.provider, opts.model)?;
    let provider = provider_choice(provider_name, opts.script)?;
    let prompt = prompt_of(provider_name, opts.prompt)?;
    let mut config = RunConfig::new(
        opts.session.clone(),
        provider,
        &prompt,
        opts.workspace.clone(),
    );
    config.model = model;
    config.effort = effort;
    config.sandbox = opts.sandbox;
    // The binary is where configuration is read: the watchdog defaults from
    // LIONAGI_WORKER_* and `secrets.lookup` from the global settings file.
    config.watchdogs = Watchdogs::from_env()?;
    config.secret_lookup =
        SettingsFile::locate().map_or(LookupConfig::NotConfigured, |f| f.secret_lookup());
    config.actor = Actor::new(
        ActorType::Executor,
        format!("lionrt-{}", std::process::id()),
    );
    if let Some(by) = opts.submitted_by {
        if by.trim().is_empty() || by.chars().any(char::is_control) {
            bail!("--submitted-by must name the submitter");
        }
        config.submitted_by = Some(Actor::new(ActorType::Agent, by.to_owned()));
        config.notes.push(runner::RunNote {
            role: "mcp_submission".into(),
            content: json!({"submitted_by": by, "label": opts.label}).to_string(),
        });
    }
    crate::runopts::apply(db, provider_name, opts.agent, &mut config)?;
    // Held until the run ends (Claude's owner-only MCP config directory);
    // its refusals become admin_events rows before the session starts.
    let mcp = crate::mcp_forward::admit(provider_name, opts.mcp, &mut config, opts.json)?;
    Ok(Leg { config, mcp })
}

pub(crate) fn run(db: &Path, json: bool, args: RunArgs) -> Result<ExitCode> {
    // Everything that can be wrong with the input is found here, before a
    // session exists.
    let workspace = match &args.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    // Checked first, as before the run builder existed: a bad effort or
    // model spec is reported before the session id is looked up.
    args.effort.as_deref().map(normalize_effort).transpose()?;
    model_spec(args.provider, args.model.as_deref())?;
    let from_file = match &args.prompt_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading --prompt-file {}", path.display()))?,
        ),
        None => None,
    };
    let session = match &args.session {
        Some(id) => {
            check_session_id(id)?;
            refuse_existing(db, id)?;
            id.clone()
        }
        None => format!("run-{}", now_micros()),
    };
    let Leg { mut config, mcp } = prepare_leg(
        db,
        &LegOptions {
            provider: args.provider,
            model: args.model.as_deref(),
            prompt: args
                .prompt
                .as_deref()
                .or(args.prompt_arg.as_deref())
                .or(from_file.as_deref()),
            effort: args.effort.as_deref(),
            workspace: workspace.clone(),
            session: session.clone(),
            script: args.script.as_deref(),
            sandbox: args.sandbox,
            agent: &args.agent,
            mcp: &args.mcp,
            json,
            submitted_by: args.submitted_by.as_deref(),
            label: args.label.as_deref(),
        },
    )?;
    // Durable notify uses the outbox of the same store (file or server).
    let notify =
        crate::notify_wiring::prepare(&args.notify, &workspace, Some(db.to_owned()), &session);
    crate::progress::attach(&mut config, json, &args.live);
    match crate::pg::url(db) {
        Some(url) => {
            let store = Arc::new(crate::pg::open(&url)?);
            mcp.record_pg(&store)?;
            execute(store, config, notify, json)
        }
        None => {
            let store = Arc::new(Store::new(Engine::create(db, EngineConfig::default())?));
            mcp.record_sqlite(store.engine())?;
            execute(store, config, notify, json)
        }
    }
}

/// The demo prompt of the scripted provider.
const DEMO_PROMPT: &str = "Update the README with a short usage note.";

/// The prompt to send: `--prompt`, which a real provider needs (an agent
/// is never sent the demo's prompt in the user's workspace); only the
/// scripted demo has a default.
fn prompt_of(provider: ProviderName, prompt: Option<&str>) -> Result<String> {
    match (provider, prompt) {
        (_, Some(p)) if !p.trim().is_empty() => Ok(p.to_owned()),
        (ProviderName::Scripted, None) => Ok(DEMO_PROMPT.to_owned()),
        (ProviderName::Scripted, Some(_)) => bail!("--prompt is empty"),
        (other, _) => bail!(
            "--provider {} needs --prompt TEXT (only the scripted demo has a default prompt)",
            clap::ValueEnum::to_possible_value(&other)
                .map_or_else(String::new, |v| v.get_name().to_owned())
        ),
    }
}

/// A `--session` id must name something: not empty, no blank ends, no
/// control characters.
pub(crate) fn check_session_id(id: &str) -> Result<()> {
    if id.trim().is_empty() {
        bail!("--session must not be empty");
    }
    if id.trim() != id || id.chars().any(char::is_control) {
        bail!("--session {id:?} has leading or trailing blanks or control characters");
    }
    Ok(())
}

/// Refuses a `--session` id the store already holds, before anything
/// starts (a second run under one id would record nothing of its own).
fn refuse_existing(db: &Path, id: &str) -> Result<()> {
    fn exists<R: lifecycle_core::StateReader>(reader: &R, id: &str) -> Result<bool> {
        Ok(reader.match_id("session", id)? == lifecycle_core::IdMatch::One(id.to_owned()))
    }
    let (found, shown) = match crate::pg::url(db) {
        Some(url) => (exists(&crate::pg::open(&url)?, id)?, url.to_string()),
        None if matches!(
            state_sqlite::recognise(db)?,
            state_sqlite::StoreKind::Lionrt { .. }
        ) =>
        {
            let (engine, _conn) = crate::view::open_read(db)?;
            (exists(&engine, id)?, db.display().to_string())
        }
        None => (false, String::new()),
    };
    if found {
        bail!(
            "session {id} already exists in {shown}; give another --session or leave it out \
             (`--resume {id}` continues it, with a provider that resumes)"
        );
    }
    Ok(())
}

/// Sweeps, runs the job on `store` and prints its report (any recorder:
/// the SQLite file or a PostgreSQL database). The terminal notification
/// (`notify_wiring`) starts once the terminal transition committed and is
/// flushed before the report is printed.
fn execute<R>(
    store: Arc<R>,
    mut config: RunConfig,
    notify: crate::notify_wiring::Prepared,
    json: bool,
) -> Result<ExitCode>
where
    R: SessionRecorder + Send + Sync + 'static,
{
    sweep_before_run(&*store);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let wiring = Arc::new(notify.install(runtime.handle().clone()));
    let (w, s) = (Arc::clone(&wiring), Arc::clone(&store));
    config.on_terminal = Some(Arc::new(move |report: &RunReport| {
        match s.history("session", &report.session) {
            Ok(history) => {
                if let Some(last) = history.into_iter().last() {
                    w.on_terminal(last);
                }
            }
            Err(error) => tracing::warn!(%error, "terminal row not read; no notification"),
        }
    }));
    let report = runtime.block_on(async {
        // Installed before anything is spawned: no signal can arrive while a
        // leg runs unwatched.
        let cancel = cancellation()?;
        let report = runner::run(Arc::clone(&store), config, cancel).await;
        wiring.finish().await;
        anyhow::Ok(report?)
    })?;
    wiring.record_on(&*store, &report.session);
    let history = store.history("session", &report.session)?;
    print_report(json, &report, &history);
    Ok(ExitCode::from(crate::progress::exit_code(&report)))
}

/// The provider names li's `PROVIDER/MODEL` specs use, beside lionrt's own.
const PROVIDER_SPELLINGS: &[(&str, ProviderName)] = &[
    ("scripted", ProviderName::Scripted),
    ("claude", ProviderName::Claude),
    ("claude-code", ProviderName::Claude),
    ("codex", ProviderName::Codex),
    ("gemini", ProviderName::Gemini),
    ("gemini-cli", ProviderName::Gemini),
    ("agy", ProviderName::Gemini),
    ("pi", ProviderName::Pi),
];

/// The provider and model of a run: `--model PROVIDER/MODEL` (li's spec)
/// names both, when its first segment is a provider; otherwise the model
/// is passed on as the provider names it. A spec naming another provider
/// than `--provider` is refused rather than guessed.
fn model_spec(
    provider: Option<ProviderName>,
    model: Option<&str>,
) -> Result<(ProviderName, Option<String>)> {
    let spelled = model.and_then(|m| {
        let (head, rest) = m.split_once('/')?;
        let head = head.to_ascii_lowercase();
        PROVIDER_SPELLINGS
            .iter()
            .find(|(name, _)| *name == head)
            .map(|(_, p)| (*p, rest.trim()))
    });
    match (provider, spelled) {
        (Some(given), Some((named, _))) if given != named => bail!(
            "--model {:?} names another provider than --provider {}",
            model.unwrap_or_default(),
            label(given)
        ),
        (_, Some((named, rest))) => Ok((named, (!rest.is_empty()).then(|| rest.to_owned()))),
        (given, None) => Ok((
            given.unwrap_or(ProviderName::Scripted),
            model.map(str::to_owned),
        )),
    }
}

fn label(provider: ProviderName) -> String {
    clap::ValueEnum::to_possible_value(&provider)
        .map_or_else(String::new, |v| v.get_name().to_owned())
}

fn provider_choice(provider: ProviderName, script: Option<&Path>) -> Result<ProviderChoice> {
    Ok(match provider {
        ProviderName::Scripted => {
            let text = match script {
                Some(path) => std::fs::read_to_string(path)
                    .with_context(|| format!("reading script {}", path.display()))?,
                None => DEMO_SCRIPT.to_owned(),
            };
            let script = ScriptModel::from_json(&text).with_context(|| match script {
                Some(path) => format!("script {}", path.display()),
                None => "the demo script".to_owned(),
            })?;
            let program = std::env::current_exe().context("locating the lionrt binary")?;
            ProviderChoice::Scripted {
                script,
                leg: LegProgram {
                    program,
                    args: vec!["__scripted-leg".into()],
                },
            }
        }
        ProviderName::Claude => ProviderChoice::Claude,
        ProviderName::Codex => ProviderChoice::Codex,
        ProviderName::Gemini => ProviderChoice::Gemini,
        ProviderName::Pi => ProviderChoice::Pi,
    })
}

/// The sweep at the start of every run: sessions whose owner is provably
/// gone end as orphaned. A failing sweep never stops the run (logged).
pub(crate) fn sweep_before_run<R: SessionRecorder>(store: &R) {
    let actor = sweep_actor();
    let procs = Processes {
        table: &ProcTable,
        signaller: &OsSignaller,
    };
    match runner::sweep_orphans(store, &procs, &actor, false) {
        Ok(report) => {
            for s in &report.orphans {
                tracing::info!(session = %s.id, ended = s.ended, "orphaned session swept");
            }
        }
        Err(error) => tracing::warn!(%error, "orphan sweep failed"),
    }
}

/// The actor of a sweep run by this process.
pub(crate) fn sweep_actor() -> Actor {
    Actor::new(
        ActorType::System,
        format!("lionrt-sweep-{}", std::process::id()),
    )
}

/// SIGINT and SIGTERM for the whole run, as its cancellation.
pub(crate) fn cancellation() -> Result<impl std::future::Future<Output = Cancellation>> {
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => Cancellation::Sigint,
            _ = terminate.recv() => Cancellation::Sigterm,
        }
    })
}

fn print_report(json: bool, report: &RunReport, history: &[lifecycle_core::TransitionRecord]) {
    if json {
        out::json(&json!({
            "session": report.session, "provider": report.provider, "ok": report.ok,
            "status": report.recorded_status, "reason": report.verdict.reason_code,
            "sandbox": report.sandbox, "evidence": report.evidence, "messages": report.messages,
            "errors": report.errors, "resume_id": report.resume_id, "error": report.error,
            "text": report.text, "history": history,
        }));
        return;
    }
    out::line(format!(
        "session {} ({}): {} message(s), {} error event(s), leg {}",
        report.session, report.provider, report.messages, report.errors, report.exit_status
    ));
    if !report.text.is_empty() {
        out::line(format!("agent: {}", report.text.trim()));
    }
    if let Some(note) = &report.sandbox {
        if note.kept {
            out::line(format!(
                "sandbox {} kept for review: lionrt sandbox merge {}",
                note.id, note.id
            ));
        } else {
            out::line("the run left no commits and no changes: completed_empty, sandbox removed");
        }
    }
    if let Some(e) = &report.error {
        out::line(format!("error: {e}"));
    }
    crate::state::print_history(false, history);
}

#[cfg(test)]
mod spec_tests {
    use super::{ProviderName as P, model_spec};

    /// li's PROVIDER/MODEL specs pick the provider; a plain model or one
    /// whose first segment is no provider is passed on; a spec naming
    /// another provider than --provider is refused.
    #[test]
    fn model_specs_name_the_provider() {
        let ok = |p, m: &str| model_spec(p, Some(m)).expect(m);
        assert_eq!(ok(None, "claude/opus"), (P::Claude, Some("opus".into())));
        assert_eq!(
            ok(None, "claude-code/opus-4-7"),
            (P::Claude, Some("opus-4-7".into()))
        );
        assert_eq!(ok(None, "Codex/gpt-5"), (P::Codex, Some("gpt-5".into())));
        assert_eq!(
            ok(None, "pi/openrouter/qwen/qwen3-coder"),
            (P::Pi, Some("openrouter/qwen/qwen3-coder".into()))
        );
        assert_eq!(ok(None, "gemini/"), (P::Gemini, None));
        assert_eq!(
            ok(Some(P::Pi), "openrouter/qwen"),
            (P::Pi, Some("openrouter/qwen".into()))
        );
        assert_eq!(
            ok(Some(P::Claude), "sonnet"),
            (P::Claude, Some("sonnet".into()))
        );
        assert_eq!(
            ok(Some(P::Claude), "claude/opus"),
            (P::Claude, Some("opus".into()))
        );
        assert_eq!(model_spec(None, None).expect("none"), (P::Scripted, None));
        let e = model_spec(Some(P::Codex), Some("claude/opus")).expect_err("two providers");
        assert!(format!("{e:#}").contains("another provider"), "{e:#}");
    }
}

#[cfg(test)]
mod tests {
    use super::{ProviderName, check_session_id, prompt_of};

    #[test]
    fn a_session_id_with_any_control_character_or_blank_end_is_refused() {
        // Every control character, at the start, inside and at the end.
        for c in (0u32..=0x10_FFFF)
            .filter_map(char::from_u32)
            .filter(|c| c.is_control())
        {
            for id in [format!("{c}a"), format!("a{c}b"), format!("a{c}")] {
                assert!(check_session_id(&id).is_err(), "{id:?}");
            }
        }
        for id in ["", " ", "\u{3000}", " a", "a ", "a\u{a0}"] {
            assert!(check_session_id(id).is_err(), "{id:?}");
        }
        for id in ["a", "run-1", "s p a c e d", "ünïcode-ok", "a/b"] {
            assert!(check_session_id(id).is_ok(), "{id:?}");
        }
    }

    #[test]
    fn only_the_scripted_demo_has_a_default_prompt() {
        use clap::ValueEnum;
        for p in ProviderName::value_variants() {
            let scripted = matches!(p, ProviderName::Scripted);
            assert_eq!(prompt_of(*p, None).is_ok(), scripted, "{p:?}");
            assert!(prompt_of(*p, Some(" \t")).is_err(), "{p:?}");
            assert_eq!(prompt_of(*p, Some("do it")).expect("prompt"), "do it");
        }
    }
}
