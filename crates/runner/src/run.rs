//! One run, end to end: session start, the supervised leg, every event as
//! a message, usage, the end-of-run rule, the sandbox decision, cancellation.

use std::future::Future;
use std::path::PathBuf;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use cli_supervisor::{
    ChildEnv, ContainmentPolicy, EnvPolicy, Event, Leg, LegSpec, LookupConfig, OnSpawn, ProcTable,
    Redactor, StdinPolicy, Watchdogs,
};
use lifecycle_core::{
    Actor, Cancellation, LegEnd, LegRecord, RunFacts, RunVerdict, SessionEnd, SessionRecorder,
    SessionStart, Usage, WorkEvidence, end_of_run, leg_columns, reasons::RunReasons,
};
use providers_core::{AgentRequest, Effort, Provider, Stdin, StreamEvent, StreamParser};
use providers_scripted::{ScriptModel, ScriptedProvider};
use sandbox_git::{
    CompletionEvidence, CreateOptions, SandboxSession, cleanup_sandbox, create_sandbox,
    probe_completion_evidence,
};
use serde::Serialize;
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use crate::error::{BoxError, Error};
use crate::sweep::current_owner;

/// The program (and leading arguments) that replays a scripted leg:
/// `scripted-leg`, or a host binary's subcommand that calls
/// `providers_scripted::run_leg`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegProgram {
    /// The program.
    pub program: PathBuf,
    /// Arguments before `--script FILE`.
    pub args: Vec<String>,
}

/// Which provider drives the leg.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProviderChoice {
    /// The scripted provider: a parsed script (parse it before the run, so
    /// a bad script never starts a session) and the program replaying it.
    Scripted {
        /// The script.
        script: ScriptModel,
        /// The leg program.
        leg: LegProgram,
    },
    /// Claude Code.
    Claude,
    /// Codex CLI.
    Codex,
    /// Antigravity / Gemini.
    Gemini,
    /// pi.
    Pi,
}

impl ProviderChoice {
    /// The provider's name as recorded on the session.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Scripted { .. } => "scripted",
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
            Self::Pi => "pi",
        }
    }
}

/// Called once after the run's terminal transition committed (the notify
/// and outbox crates plug in here). It cannot change the recorded outcome.
pub type OnTerminal = Arc<dyn Fn(&RunReport) + Send + Sync>;

/// What a run reports while it goes (for live progress): the leg's spawn,
/// then every parsed stream event, in order, before it is recorded.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Progress<'a> {
    /// The leg was spawned with this pid.
    Spawned {
        /// The leg's pid.
        pid: i32,
    },
    /// One parsed stream event.
    Event(&'a StreamEvent),
}

/// Called with the run's [`Progress`] on the runner's task; it must not
/// block (print, or send to a channel).
pub type OnProgress = Arc<dyn Fn(Progress<'_>) + Send + Sync>;

/// Everything one run needs. The binary builds it (and reads the
/// environment and settings); the runner reads nothing itself.
pub struct RunConfig {
    /// The session id.
    pub session_id: String,
    /// The provider.
    pub provider: ProviderChoice,
    /// The prompt.
    pub prompt: String,
    /// The model, as the provider names it.
    pub model: Option<String>,
    /// The normalised effort.
    pub effort: Option<Effort>,
    /// The workspace the agent works in.
    pub workspace: PathBuf,
    /// Run in a fresh worktree sandbox of the workspace.
    pub sandbox: bool,
    /// Default watchdogs (applied to early-streaming transports).
    pub watchdogs: Watchdogs,
    /// The global secret lookup configuration.
    pub secret_lookup: LookupConfig,
    /// The orphan guard's grace: if the runner's process dies, the leg's
    /// group gets SIGTERM, this long, then SIGKILL.
    pub orphan_grace: Duration,
    /// Whether the leg also gets a cgroup of its own (where cgroup v2 is
    /// writable): `cgroup.kill` then reaches descendants that left the
    /// process group with `setsid()`.
    pub containment: ContainmentPolicy,
    /// Who records the run.
    pub actor: Actor,
    /// Who asked for the run, when not [`RunConfig::actor`] itself (e.g.
    /// `agent:mcp:<client>` for a run submitted through `lionrt mcp
    /// serve`): recorded as the actor of the session's start row, so the
    /// lifecycle shows the caller. Every later row is `actor`'s.
    pub submitted_by: Option<Actor>,
    /// The terminal callback, after commit.
    pub on_terminal: Option<OnTerminal>,
    /// The progress observer (spawn and every stream event).
    pub on_progress: Option<OnProgress>,
    /// The provider's session/thread id to resume.
    pub resume: Option<String>,
    /// Provider-specific request fields by name (checked by the provider
    /// against its flag metadata when the invocation is built).
    pub kwargs: serde_json::Map<String, Value>,
    /// Messages recorded on the session right after its start, before the
    /// leg is spawned (e.g. the admission verdicts on the MCP servers
    /// forwarded to the leg).
    pub notes: Vec<RunNote>,
    /// The caller's runtime-only child environment (e.g. a [`CliCall`](providers_core::CliCall)'s
    /// `env`): laid over this process's environment, under the variables
    /// the provider's invocation sets. Renders only as a count.
    pub env: Option<ChildEnv>,
    /// The caller's runtime-only spawn callback (e.g. a [`CliCall`](providers_core::CliCall)'s
    /// `on_spawn`): called once with the spawn record, after the record is
    /// on the session and before any output is read; its failure ends the
    /// leg like the recorder's.
    pub on_spawn: Option<OnSpawn>,
    /// Values the binary put into the leg's environment or files that must
    /// never come back out (a forwarded MCP server's env and headers). The
    /// leg adds the secrets it sees itself (looked-up and lookup-named
    /// variables, secret-looking names) and redacts everything it reads
    /// from the child, so no record, report or log line carries them.
    pub redact: Redactor,
    /// The invocation this session belongs to (a leg of a flow), recorded
    /// as the session's `invocation_id`.
    pub invocation_id: Option<String>,
    /// The session's `agent_name` (default `lionrt-run`).
    pub agent_name: Option<String>,
}

/// A message the binary records on the session before the leg runs: a
/// decision made about the run (which forwarded MCP tools were refused and
/// why), kept in the session's own record. Its message id is
/// `<session>:note:<n>`; notes are not counted in [`RunReport::messages`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunNote {
    /// The message role (e.g. `mcp_admission`).
    pub role: String,
    /// The message content (JSON text by convention).
    pub content: String,
}

impl std::fmt::Debug for RunConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunConfig")
            .field("session_id", &self.session_id)
            .field("provider", &self.provider.name())
            .field("workspace", &self.workspace)
            .field("sandbox", &self.sandbox)
            .finish_non_exhaustive()
    }
}

impl RunConfig {
    /// A config with the defaults: no sandbox, no effort or model, default
    /// watchdogs, no secret lookup, a 500 ms orphan grace, a cgroup where
    /// available, actor `executor:runner-<pid>` (no separate submitter),
    /// no terminal callback, no progress observer, no resume id, no
    /// provider kwargs, no notes and no invocation.
    pub fn new(
        session_id: impl Into<String>,
        provider: ProviderChoice,
        prompt: impl Into<String>,
        workspace: impl Into<PathBuf>,
    ) -> Self {
        Self {
            session_id: session_id.into(),
            provider,
            prompt: prompt.into(),
            model: None,
            effort: None,
            workspace: workspace.into(),
            sandbox: false,
            watchdogs: Watchdogs::default(),
            secret_lookup: LookupConfig::NotConfigured,
            orphan_grace: Duration::from_millis(500),
            containment: ContainmentPolicy::CgroupIfAvailable { parent: None },
            actor: Actor::new(
                lifecycle_core::ActorType::Executor,
                format!("runner-{}", std::process::id()),
            ),
            submitted_by: None,
            on_terminal: None,
            on_progress: None,
            resume: None,
            kwargs: serde_json::Map::new(),
            notes: Vec::new(),
            env: None,
            on_spawn: None,
            redact: Redactor::new(),
            invocation_id: None,
            agent_name: None,
        }
    }
}

/// What happened to the run's sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxNote {
    /// The sandbox id.
    pub id: String,
    /// Its branch.
    pub branch: String,
    /// Its worktree.
    pub worktree: PathBuf,
    /// Kept for review (`false`: removed as empty).
    pub kept: bool,
}

/// What a run did.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The session id.
    pub session: String,
    /// The provider name.
    pub provider: &'static str,
    /// The end-of-run rule's verdict.
    pub verdict: RunVerdict,
    /// The status the store holds now (differs from the verdict when the
    /// session was ended from outside first, e.g. by `lionrt kill`).
    pub recorded_status: String,
    /// Whether the run succeeded.
    pub ok: bool,
    /// Messages recorded.
    pub messages: u64,
    /// Error events and unusable lines.
    pub errors: u64,
    /// The provider's resume id.
    pub resume_id: Option<String>,
    /// The error, if any.
    pub error: Option<String>,
    /// The agent's text.
    pub text: String,
    /// How the leg exited.
    pub exit_status: String,
    /// Usage totals.
    pub usage: Usage,
    /// The sandbox, with `--sandbox`.
    pub sandbox: Option<SandboxNote>,
    /// The completion evidence, when probed.
    pub evidence: Option<CompletionEvidence>,
}

/// What the supervised leg produced.
#[derive(Debug)]
struct LegReport {
    leg: LegEnd,
    exit_status: String,
    messages: u64,
    errors: u64,
    usage: Usage,
    final_error: Option<String>,
    saw_final: bool,
    resume_id: Option<String>,
    cancelled: Option<Cancellation>,
    text: String,
}

impl Default for LegReport {
    fn default() -> Self {
        Self {
            leg: LegEnd::NotStarted,
            exit_status: "not started".into(),
            messages: 0,
            errors: 0,
            usage: Usage::default(),
            final_error: None,
            saw_final: false,
            resume_id: None,
            cancelled: None,
            text: String::new(),
        }
    }
}

async fn blocking<T, F>(what: &'static str, f: F) -> Result<T, Error>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, Error> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| Error::Panicked { what })?
}

fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// Runs one session to its end.
///
/// Before the session start: the sandbox is created (a failure returns an
/// error and records nothing). After it, every failure ends the session in
/// a terminal status with a reason code and comes back in the report; only
/// a store that cannot record the end returns an error. `cancel` resolving
/// ends the leg's group and records `cancelled` with its reason.
pub async fn run<R>(
    recorder: Arc<R>,
    config: RunConfig,
    cancel: impl Future<Output = Cancellation>,
) -> Result<RunReport, Error>
where
    R: SessionRecorder + Send + Sync + 'static,
{
    let mut cancel = pin!(cancel);
    let provider_name = config.provider.name();
    let mut sandbox = if config.sandbox {
        let repo = config.workspace.clone();
        Some(
            blocking("sandbox", move || {
                create_sandbox(&repo, &CreateOptions::default()).map_err(|source| Error::Sandbox {
                    workspace: repo.display().to_string(),
                    source,
                })
            })
            .await?,
        )
    } else {
        None
    };
    let agent_dir = sandbox
        .as_ref()
        .map_or_else(|| config.workspace.clone(), |s| s.worktree_path.clone());
    let start = SessionStart {
        kind: Some("orchestrated".into()),
        provider: Some(provider_name.into()),
        model: config.model.clone(),
        agent_name: Some(
            config
                .agent_name
                .clone()
                .unwrap_or_else(|| "lionrt-run".into()),
        ),
        invocation_id: config.invocation_id.clone(),
        cwd: Some(agent_dir.display().to_string()),
        owner: Some(current_owner(&ProcTable)),
        ..SessionStart::new(&config.session_id, RunReasons::STARTED_OK)
    };
    {
        let actor = config
            .submitted_by
            .clone()
            .unwrap_or_else(|| config.actor.clone());
        let recorder = Arc::clone(&recorder);
        let started = blocking("store", move || {
            recorder
                .persist_session_start(&start, &actor)
                .map_err(Error::store("recording the session start"))
        })
        .await;
        if let Err(e) = started {
            if let Some(mut s) = sandbox.take() {
                let _ = blocking("sandbox", move || {
                    cleanup_sandbox(&mut s)
                        .map(|_| ())
                        .map_err(|source| Error::Sandbox {
                            workspace: String::new(),
                            source,
                        })
                })
                .await;
            }
            return Err(e);
        }
    }
    // From here on every failure ends the session.
    let request = AgentRequest {
        prompt: config.prompt.clone(),
        model: config.model.clone(),
        effort: config.effort,
        workspace: Some(agent_dir.clone()),
        resume: config.resume.clone(),
        kwargs: config.kwargs.clone(),
    };
    let leg = match record_notes(&recorder, &config).await {
        Ok(()) => drive(&recorder, &config, &request, cancel.as_mut()).await,
        Err(e) => Err((LegReport::default(), e)),
    };
    let report = match leg {
        Ok(report) => report,
        Err((mut partial, e)) => {
            partial.final_error = Some(error_chain(&e));
            partial
        }
    };
    finish(recorder, config, report, sandbox).await
}

/// Records the config's notes on the session, in order.
async fn record_notes<R>(recorder: &Arc<R>, config: &RunConfig) -> Result<(), Error>
where
    R: SessionRecorder + Send + Sync + 'static,
{
    for (n, note) in config.notes.iter().enumerate() {
        let (recorder, session) = (Arc::clone(recorder), config.session_id.clone());
        let note = note.clone();
        blocking("store", move || {
            recorder
                .record_message(
                    &session,
                    &format!("{session}:note:{n}"),
                    &note.role,
                    &note.content,
                    now_micros(),
                )
                .map_err(Error::store("recording a note"))
        })
        .await?;
    }
    Ok(())
}

fn observe(config: &RunConfig, events: &[StreamEvent]) {
    if let Some(observe) = &config.on_progress {
        for event in events {
            observe(Progress::Event(event));
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

type Partial = (LegReport, Error);

async fn drive<R>(
    recorder: &Arc<R>,
    config: &RunConfig,
    request: &AgentRequest,
    cancel: std::pin::Pin<&mut impl Future<Output = Cancellation>>,
) -> Result<LegReport, Partial>
where
    R: SessionRecorder + Send + Sync + 'static,
{
    let scratch = tempfile::tempdir().map_err(|source| {
        (
            LegReport::default(),
            Error::Io {
                what: "creating a scratch directory for leg files".into(),
                source,
            },
        )
    })?;
    match &config.provider {
        ProviderChoice::Scripted { script, leg } => {
            let provider = ScriptedProvider::new(&leg.program, scratch.path(), script.clone())
                .with_leg_args(leg.args.clone());
            supervise(&provider, request, recorder, config, cancel).await
        }
        ProviderChoice::Claude => {
            let provider = providers_claude::ClaudeProvider::default();
            supervise(&provider, request, recorder, config, cancel).await
        }
        ProviderChoice::Codex => {
            let provider = providers_codex::CodexProvider::default();
            supervise(&provider, request, recorder, config, cancel).await
        }
        ProviderChoice::Gemini => {
            let provider = providers_gemini::GeminiProvider::default();
            supervise(&provider, request, recorder, config, cancel).await
        }
        ProviderChoice::Pi => {
            let provider = providers_pi::PiProvider::default();
            supervise(&provider, request, recorder, config, cancel).await
        }
    }
}

/// The owner-only files an invocation wrote before its leg (e.g. Codex's
/// MCP secrets profile in `CODEX_HOME`): they hold secrets, so they are
/// removed when this guard drops, which is when the leg has ended (or when
/// writing a later file failed). A file already gone is fine; a failure to
/// remove one is logged.
#[derive(Debug, Default)]
pub(crate) struct LegFiles(Vec<PathBuf>);

impl LegFiles {
    /// Writes `files` owner-only, in order; on a failure the ones already
    /// written are removed again.
    pub(crate) fn write(files: &[providers_core::PrivateFile]) -> Result<Self, Error> {
        let mut written = LegFiles::default();
        for file in files {
            file.write_owner_only().map_err(|source| Error::Io {
                what: format!("writing {}", file.path.display()),
                source,
            })?;
            written.0.push(file.path.clone());
        }
        Ok(written)
    }
}

impl Drop for LegFiles {
    fn drop(&mut self) {
        for path in &self.0 {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    tracing::warn!(%error, path = %path.display(), "leg file not removed");
                }
            }
        }
    }
}

fn leg_spec<P: Provider>(
    provider: &P,
    request: &AgentRequest,
    config: &RunConfig,
) -> Result<(LegSpec, Option<Vec<u8>>, LegFiles), Error>
where
    P::Error: Send + Sync + 'static,
{
    let invocation = provider.invocation(request).map_err(|e| Error::Provider {
        provider: config.provider.name(),
        source: Box::new(e),
    })?;
    let files = LegFiles::write(&invocation.files)?;
    let mut spec = LegSpec::new(&invocation.argv);
    spec.cwd = invocation.cwd.clone();
    spec.streams_first_output_early = provider.streams_first_output_early();
    if !invocation.env.is_empty() || config.env.is_some() {
        let mut env = ChildEnv::from_current_process();
        if let Some(caller) = &config.env {
            for (k, v) in caller.iter() {
                env.insert(k, v)?;
            }
        }
        for (k, v) in &invocation.env {
            env.insert(k, v)?;
        }
        spec.env = EnvPolicy::Explicit(env);
    }
    let stdin = match &invocation.stdin {
        Stdin::Null => None,
        Stdin::Bytes(bytes) => {
            spec.stdin = StdinPolicy::Piped;
            Some(bytes.clone())
        }
    };
    spec.default_watchdogs = config.watchdogs;
    spec.secret_lookup = config.secret_lookup.clone();
    spec.containment = config.containment.clone();
    spec.orphan_guard = Some(config.orphan_grace);
    spec.redact = config.redact.clone();
    Ok((spec, stdin, files))
}

/// Records the spawn record on the session before any output is read; a
/// failure to record ends the leg (SUP-013).
fn record_spawn<R>(recorder: &Arc<R>, session: &str) -> OnSpawn
where
    R: SessionRecorder + Send + Sync + 'static,
{
    let (recorder, session) = (Arc::clone(recorder), session.to_owned());
    OnSpawn::asynchronous(move |record| {
        let (recorder, session) = (Arc::clone(&recorder), session.clone());
        async move {
            let leg = LegRecord {
                pid: i64::from(record.pid),
                pgid: i64::from(record.pgid),
                create_time: record.create_time.and_then(|t| i64::try_from(t).ok()),
            };
            tokio::task::spawn_blocking(move || {
                recorder
                    .update_session(&session, &leg_columns(&leg))
                    .map(|_| ())
                    .map_err(|e| Box::new(e) as BoxError)
            })
            .await
            .map_err(|e| Box::new(e) as BoxError)?
        }
    })
}

async fn supervise<P, R>(
    provider: &P,
    request: &AgentRequest,
    recorder: &Arc<R>,
    config: &RunConfig,
    mut cancel: std::pin::Pin<&mut impl Future<Output = Cancellation>>,
) -> Result<LegReport, Partial>
where
    P: Provider,
    P::Error: Send + Sync + 'static,
    R: SessionRecorder + Send + Sync + 'static,
{
    let mut report = LegReport::default();
    // `_files` lives until this function returns, after the leg ended.
    let (mut spec, stdin, _files) = match leg_spec(provider, request, config) {
        Ok(built) => built,
        Err(e) => return Err((report, e)),
    };
    let recording = record_spawn(recorder, &config.session_id);
    spec.on_spawn = Some(match &config.on_spawn {
        Some(caller) => recording.then(caller.clone()),
        None => recording,
    });
    let spawned = tokio::select! {
        spawned = Leg::spawn(spec) => spawned,
        why = cancel.as_mut() => {
            report.cancelled = Some(why);
            return Ok(report);
        }
    };
    let mut leg = match spawned {
        Ok(leg) => leg,
        Err(e) => return Err((report, e.into())),
    };
    report.leg = LegEnd::SupervisionFailed;
    report.exit_status = "running".into();
    // Every event and the stderr tail arrive redacted; what is assembled
    // from several events (the text) is redacted again as a whole.
    let redactor = leg.redactor().clone();
    if let Some(observe) = &config.on_progress {
        observe(Progress::Spawned {
            pid: leg.record().pid,
        });
    }
    if let (Some(bytes), Some(mut pipe)) = (stdin, leg.take_stdin()) {
        if let Err(source) = pipe.write_all(&bytes).await {
            let _ = leg.end().await;
            return Err((
                report,
                Error::Io {
                    what: "writing the prompt to the leg".into(),
                    source,
                },
            ));
        }
        drop(pipe);
    }
    let mut parser = provider.parser();
    let mut seq = 0u64;
    let mut events = Vec::new();
    let failure = loop {
        let next = tokio::select! {
            next = leg.next_event() => next,
            why = cancel.as_mut() => {
                report.cancelled = Some(why);
                break None;
            }
        };
        let first = match next {
            Ok(None) => break None,
            Ok(Some(event)) => event,
            Err(e) => break Some(e),
        };
        // Every event the same read delivered is parsed now and recorded in
        // one trip to the store, in order.
        absorb(first, &mut parser, &mut events, &mut report);
        while let Some(event) = leg.next_buffered_event() {
            absorb(event, &mut parser, &mut events, &mut report);
        }
        if events.is_empty() {
            continue;
        }
        observe(config, &events);
        let recorded = record(recorder, &config.session_id, &events, &mut seq, &mut report).await;
        events.clear();
        if let Err(e) = recorded {
            let _ = leg.end().await;
            return Err((report, e));
        }
    };
    if let Some(e) = failure {
        // A watchdog already ended the group; any other error ends it here.
        let watchdog = matches!(
            e,
            cli_supervisor::Error::FirstOutputTimeout { .. }
                | cli_supervisor::Error::IdleTimeout { .. }
                | cli_supervisor::Error::DeadlineExceeded { .. }
        );
        let exit = leg.end().await;
        report.leg = if watchdog {
            LegEnd::WatchdogFired
        } else {
            LegEnd::SupervisionFailed
        };
        report.exit_status = exit.map_or_else(|_| "ended".into(), |x| x.status.to_string());
        return Err((report, e.into()));
    }
    let tail = parser.finish();
    observe(config, &tail);
    if let Err(e) = record(recorder, &config.session_id, &tail, &mut seq, &mut report).await {
        let _ = leg.end().await;
        return Err((report, e));
    }
    report.resume_id = parser.resume_id().map(str::to_owned);
    let exit = if report.cancelled.is_some() {
        leg.end().await
    } else {
        leg.wait().await
    };
    report.text = redactor.redact_str(&report.text).into_owned();
    let exit = match exit {
        Ok(exit) => exit,
        Err(e) => return Err((report, e.into())),
    };
    report.leg = LegEnd::Exited {
        success: exit.status.success(),
    };
    report.exit_status = exit.status.to_string();
    if !exit.status.success() && report.final_error.is_none() {
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

/// Parses one line event into stream events (appended to `events`); a
/// line that is too long or not JSON is counted as an error.
fn absorb<S: StreamParser>(
    event: Event,
    parser: &mut S,
    events: &mut Vec<StreamEvent>,
    report: &mut LegReport,
) {
    match event {
        Event::Json { value, .. } => events.extend(parser.parse_value(&value)),
        Event::LineTooLong { line, len } => {
            tracing::warn!(line, len, "leg printed an over-long line; discarded");
            report.errors += 1;
        }
        Event::InvalidJson { line, error } => {
            tracing::warn!(line, %error, "leg printed a line that is not JSON");
            report.errors += 1;
        }
        other => tracing::debug!(?other, "unhandled leg event"),
    }
}

/// The message role of a stream event.
pub fn event_role(event: &StreamEvent) -> &'static str {
    match event {
        StreamEvent::SessionId { .. } => "session",
        StreamEvent::Text { .. } => "assistant",
        StreamEvent::Thinking { .. } => "thinking",
        StreamEvent::ToolUse { .. } => "tool_use",
        StreamEvent::ToolResult { .. } => "tool_result",
        StreamEvent::Usage(_) => "usage",
        StreamEvent::Final(_) => "result",
        StreamEvent::BenignEnd => "end",
        StreamEvent::Error { .. } | StreamEvent::ApiError { .. } => "error",
        _ => "event",
    }
}

async fn record<R>(
    recorder: &Arc<R>,
    session: &str,
    events: &[StreamEvent],
    seq: &mut u64,
    report: &mut LegReport,
) -> Result<(), Error>
where
    R: SessionRecorder + Send + Sync + 'static,
{
    let mut batch = Vec::with_capacity(events.len());
    for event in events {
        match event {
            // Each report is the run's totals so far (the parsers sum
            // per-message usage themselves): it replaces the one before.
            // A missing cost stays unknown ("unpriced"), never 0.
            StreamEvent::Usage(u) => {
                let count = |n: Option<u64>| n.and_then(|n| i64::try_from(n).ok());
                report.usage.input_tokens = count(u.input_tokens);
                report.usage.output_tokens = count(u.output_tokens);
                report.usage.total_cost_usd = u.cost_usd.filter(|c| c.is_finite());
                report.usage.num_turns = count(u.num_turns).or(report.usage.num_turns);
                report.usage.duration_ms = count(u.duration_ms).or(report.usage.duration_ms);
                if u.model.is_some() {
                    report.usage.model.clone_from(&u.model);
                }
            }
            StreamEvent::ApiError { .. } => report.errors += 1,
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
        let content = serde_json::to_string(event).unwrap_or_else(|_| Value::Null.to_string());
        batch.push((format!("{session}:{seq}"), event_role(event), content));
    }
    if batch.is_empty() {
        return Ok(());
    }
    // One hop to the blocking pool for the whole batch; `messages` counts
    // the rows actually recorded, also when one fails midway.
    let (recorder, session) = (Arc::clone(recorder), session.to_owned());
    let (recorded, outcome) = blocking("store", move || {
        let mut recorded = 0u64;
        for (id, role, content) in &batch {
            if let Err(e) = recorder.record_message(&session, id, role, content, now_micros()) {
                return Ok((recorded, Err(Error::store("recording a message")(e))));
            }
            recorded += 1;
        }
        Ok((recorded, Ok(())))
    })
    .await?;
    report.messages += recorded;
    outcome
}

async fn finish<R>(
    recorder: Arc<R>,
    config: RunConfig,
    report: LegReport,
    mut sandbox: Option<SandboxSession>,
) -> Result<RunReport, Error>
where
    R: SessionRecorder + Send + Sync + 'static,
{
    let mut facts = RunFacts {
        leg: report.leg,
        saw_final: report.saw_final,
        provider_error: report.final_error.is_some(),
        cancelled: report.cancelled,
        evidence: WorkEvidence::Unknown,
    };
    // Completion evidence: only a probe that ran may report "nothing done".
    let evidence = match &sandbox {
        Some(s) if facts.clean() => {
            let (dir, base) = (s.worktree_path.clone(), s.base_branch.clone());
            let probed = blocking("evidence", move || {
                Ok(probe_completion_evidence(&dir, &base))
            })
            .await?;
            facts.evidence = match (probed.checked, probed.has_evidence()) {
                (true, false) => WorkEvidence::NoneFound,
                (true, true) => WorkEvidence::Found,
                (false, _) => WorkEvidence::Unknown,
            };
            Some(probed)
        }
        _ => None,
    };
    let verdict = end_of_run(&facts);
    let error = report
        .final_error
        .clone()
        .or_else(|| (!verdict.ok()).then(|| format!("leg ended: {}", report.exit_status)));
    let end = SessionEnd {
        usage: report.usage.clone(),
        error: error.clone(),
        ..SessionEnd::new(
            &config.session_id,
            verdict.status,
            verdict.reason_code,
            now_micros(),
        )
    };
    let outcome = {
        let (recorder, actor) = (Arc::clone(&recorder), config.actor.clone());
        let session = config.session_id.clone();
        blocking("store", move || {
            let outcome = recorder
                .persist_session_end(&end, &actor)
                .map_err(Error::store("recording the session end"))?;
            // The model the provider reported serving the run is the
            // session's model (the requested one may be an alias).
            if let Some(model) = &end.usage.model {
                let columns = std::collections::BTreeMap::from([(
                    "model".to_owned(),
                    Value::String(model.clone()),
                )]);
                recorder
                    .update_session(&session, &columns)
                    .map_err(Error::store("recording the session's model"))?;
            }
            Ok(outcome)
        })
        .await?
    };
    let recorded_status = outcome
        .current_status
        .unwrap_or_else(|| verdict.status.to_owned());
    let ok = verdict.ok() && recorded_status == verdict.status;
    let mut note = None;
    if let Some(mut s) = sandbox.take() {
        let empty = facts.evidence == WorkEvidence::NoneFound && ok;
        let mut kept = SandboxNote {
            id: s.id.clone(),
            branch: s.branch.clone(),
            worktree: s.worktree_path.clone(),
            kept: true,
        };
        if empty {
            let cleaned = blocking("sandbox", move || {
                cleanup_sandbox(&mut s)
                    .map(|_| ())
                    .map_err(|source| Error::Sandbox {
                        workspace: String::new(),
                        source,
                    })
            })
            .await;
            match cleaned {
                Ok(()) => kept.kept = false,
                Err(e) => tracing::warn!(error = %e, "could not remove the empty run's sandbox"),
            }
        }
        note = Some(kept);
    }
    let run = RunReport {
        session: config.session_id.clone(),
        provider: config.provider.name(),
        verdict,
        recorded_status,
        ok,
        messages: report.messages,
        errors: report.errors,
        resume_id: report.resume_id,
        error,
        text: report.text,
        exit_status: report.exit_status,
        usage: report.usage,
        sandbox: note,
        evidence,
    };
    if let (Some(callback), Some(_)) = (&config.on_terminal, outcome.transition_id) {
        // After commit, outside the store: a panicking callback cannot undo
        // it. The callback is synchronous and may block on a store whose
        // driver runs its own runtime (the `postgres` crate does), which
        // panics on a runtime thread: it runs on a plain thread of its own.
        let panicked = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let call = std::panic::AssertUnwindSafe(|| callback(&run));
                    std::panic::catch_unwind(call).is_err()
                })
                .join()
                .unwrap_or(true)
        });
        if panicked {
            tracing::warn!(session = %run.session, "terminal callback panicked; ignored");
        }
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use providers_core::{Invocation, PrivateFile};
    use providers_scripted::ScriptedParser;

    use super::*;

    /// The scripted provider, with extra owner-only files in its
    /// invocation (as Codex's MCP secrets profile in `CODEX_HOME`).
    struct WithFiles {
        inner: ScriptedProvider,
        extra: Vec<PathBuf>,
    }

    impl Provider for WithFiles {
        type Parser = ScriptedParser;
        type Error = providers_scripted::Error;

        fn name(&self) -> &'static str {
            "scripted"
        }

        fn invocation(&self, request: &AgentRequest) -> Result<Invocation, Self::Error> {
            let mut invocation = self.inner.invocation(request)?;
            for path in &self.extra {
                invocation.files.push(PrivateFile {
                    path: path.clone(),
                    contents: "token = \"sekrit\"\n".into(),
                });
            }
            Ok(invocation)
        }

        fn parser(&self) -> ScriptedParser {
            self.inner.parser()
        }

        fn streams_first_output_early(&self) -> bool {
            true
        }
    }

    fn fixture(extra: Vec<PathBuf>, dir: &std::path::Path) -> (WithFiles, AgentRequest, RunConfig) {
        let script = ScriptModel::from_json(r#"[{"type": "text", "text": "hi"}]"#).expect("script");
        let inner = ScriptedProvider::new("/bin/true", dir, script.clone());
        let config = RunConfig::new(
            "s",
            ProviderChoice::Scripted {
                script,
                leg: LegProgram {
                    program: "/bin/true".into(),
                    args: Vec::new(),
                },
            },
            "do it",
            dir,
        );
        let request = AgentRequest {
            prompt: "do it".into(),
            model: None,
            effort: None,
            workspace: Some(dir.to_owned()),
            resume: None,
            kwargs: serde_json::Map::new(),
        };
        (WithFiles { inner, extra }, request, config)
    }

    #[test]
    fn the_invocations_secret_files_live_exactly_as_long_as_the_leg() {
        let dir = tempfile::tempdir().expect("tempdir");
        let secret = dir.path().join("codex-home").join("mcp-profile.toml");
        std::fs::create_dir_all(secret.parent().expect("parent")).expect("dir");
        let (provider, request, config) = fixture(vec![secret.clone()], dir.path());
        let (_spec, _stdin, files) = leg_spec(&provider, &request, &config).expect("leg spec");
        let mode = std::fs::metadata(&secret)
            .expect("written")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        drop(files);
        assert!(!secret.exists(), "the secrets file outlived the leg");
    }

    #[test]
    fn a_failed_later_write_removes_the_files_already_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = dir.path().join("first.toml");
        let unwritable = dir.path().join("missing-dir").join("second.toml");
        let (provider, request, config) = fixture(vec![first.clone(), unwritable], dir.path());
        let err = leg_spec(&provider, &request, &config).expect_err("second write fails");
        assert!(err.to_string().contains("second.toml"), "{err}");
        assert!(!first.exists(), "the first secrets file was left behind");
    }
}
