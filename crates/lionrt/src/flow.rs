//! `lionrt flow`, `lionrt fanout` and `lionrt play` (and `lionrt o flow`,
//! `lionrt o fanout`): many agent legs as one flow.
//!
//! A plan (a file, a fan-out, a playbook) is validated by the `conductor`
//! crate, then every op's leg is prepared through the one run builder
//! ([`crate::run::prepare_leg`], as `lionrt run`), so a bad plan, script,
//! model or MCP file is refused before anything is written. Then one
//! `invocation` row is created (`running`, `run.started.ok`), and ready
//! ops run concurrently as `runner::run` legs on one tokio runtime, up to
//! `--max-concurrent`; each is a session whose `invocation_id` is the
//! flow's, working in the workspace, with its own artifact subdirectory
//! (`ARTIFACTS/<op>`, named in its prompt, its expected artifacts checked
//! there when it ends). A dependent's prompt carries its dependencies'
//! results. An op whose dependency failed never starts: it is recorded as
//! a `play` row `<invocation>/<op>`, `pending` (`play.pending.waiting_on_deps`)
//! then `blocked` (`play.blocked.dep_failed`). The invocation ends with
//! [`conductor::flow_outcome`]'s status and reason. SIGINT/SIGTERM cancel
//! the running legs and start no more.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use conductor::{Agent, DepResult, OpEnd, OpState, Plan, Playbook, Scheduler, ValidPlan};
use lifecycle_core::reasons::{PlayReasons, RunReasons};
use lifecycle_core::{
    Actor, ActorType, Cancellation, InitialCommand, Reason, SessionRecorder, TransitionCommand,
};
use runner::RunReport;
use serde_json::{Value, json};
use state_sqlite::{Engine, EngineConfig, Store, now_micros};

use crate::out;
use crate::run::{Leg, LegOptions, ProviderName};

/// The options every flow takes.
#[derive(Debug, Args)]
pub(crate) struct FlowOpts {
    /// At most this many ops run at once.
    #[arg(long, default_value_t = 4, value_name = "N")]
    max_concurrent: usize,
    /// A plan of more ops than this is refused before anything starts.
    #[arg(long, default_value_t = 64, value_name = "N")]
    max_ops: usize,
    /// The workspace every leg works in (default: the current directory).
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// The invocation id (default: flow-<microseconds>); op sessions are
    /// ID-OP.
    #[arg(long, value_name = "ID")]
    id: Option<String>,
    /// Where the ops' artifact subdirectories go (default:
    /// WORKSPACE/.lionrt/flows/ID); op OP writes in ARTIFACTS/OP.
    #[arg(long, value_name = "DIR")]
    artifacts: Option<PathBuf>,
}

/// `lionrt flow`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct FlowArgs {
    /// The plan: a JSON or YAML file (docs/schemas/plan.schema.json);
    /// relative paths in it are relative to the file.
    #[arg(long, value_name = "FILE", required = true)]
    plan: Option<PathBuf>,
    #[command(flatten)]
    opts: FlowOpts,
    #[command(subcommand)]
    action: Option<FlowAction>,
}

/// What else `lionrt flow` does.
#[derive(Debug, Subcommand)]
pub(crate) enum FlowAction {
    /// Continue a flow whose conductor died (SIGKILL, a crash, a reboot):
    /// ops that succeeded are not run again, legs that died are swept
    /// (failed, session.orphaned.no_process) and run again only with
    /// --retry-failed, the rest runs as the plan says.
    Resume(ResumeArgs),
}

/// `lionrt flow resume`.
#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The flow's invocation id.
    #[arg(value_name = "ID")]
    id: String,
    /// Run again, as a new session ID-OP.N, every op that failed or whose
    /// leg died (default: they stay failed and block their dependents).
    #[arg(long)]
    retry_failed: bool,
    /// The workspace the flow ran in (default: the current directory);
    /// the flow's record is WORKSPACE/.lionrt/flows/ID/flow.json.
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// At most this many ops at once (default: as the flow was started).
    #[arg(long, value_name = "N")]
    max_concurrent: Option<usize>,
}

/// `lionrt fanout`.
#[derive(Debug, Args)]
pub(crate) struct FanoutArgs {
    /// How many agents get the task (1-32).
    #[arg(value_name = "N", value_parser = clap::value_parser!(u8).range(1..=32))]
    n: u8,
    /// The task every agent is given.
    #[arg(long)]
    prompt: String,
    /// End with a synthesis op that receives every worker's result.
    #[arg(long)]
    synthesis: bool,
    /// The model of every leg, or li's PROVIDER/MODEL spec (default: the
    /// scripted provider).
    #[arg(long, short = 'm')]
    model: Option<String>,
    /// The effort of every leg.
    #[arg(long)]
    effort: Option<String>,
    /// For the scripted provider: the workers' JSON script.
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// For the scripted provider: the synthesis op's JSON script (default:
    /// the workers').
    #[arg(long, value_name = "FILE")]
    synthesis_script: Option<PathBuf>,
    #[command(flatten)]
    opts: FlowOpts,
}

/// `lionrt play`.
#[derive(Debug, Args)]
pub(crate) struct PlayArgs {
    /// For a playbook whose model is the scripted provider: its JSON script.
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    #[command(flatten)]
    opts: FlowOpts,
    /// The playbook: NAME.playbook.yaml in $LIONAGI_HOME/playbooks, else
    /// ~/.lionagi/playbooks; `list` lists them, `help NAME` shows one's
    /// arguments.
    #[arg(value_name = "NAME")]
    name: String,
    /// The input text and the playbook's own arguments (`--ARG VALUE`,
    /// `--FLAG`); `lionrt play help NAME` shows them. lionrt's options
    /// go before NAME.
    #[arg(
        value_name = "INPUT | --ARG VALUE",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    rest: Vec<String>,
}

/// `lionrt orchestrate` (`lionrt o`): li's spelling of flow and fanout.
#[derive(Debug, Subcommand)]
pub(crate) enum OrchestrateCmd {
    /// Run a plan of ops (a DAG) as one flow: the same as `lionrt flow`.
    Flow(FlowArgs),
    /// N agents, one task, an optional synthesis: the same as `lionrt fanout`.
    Fanout(FanoutArgs),
}

pub(crate) fn orchestrate(db: &Path, json: bool, cmd: OrchestrateCmd) -> Result<ExitCode> {
    match cmd {
        OrchestrateCmd::Flow(args) => flow(db, json, args),
        OrchestrateCmd::Fanout(args) => fanout(db, json, args),
    }
}

pub(crate) fn flow(db: &Path, json: bool, args: FlowArgs) -> Result<ExitCode> {
    if let Some(FlowAction::Resume(r)) = args.action {
        return resume(db, json, r);
    }
    let Some(plan_path) = args.plan else {
        bail!("--plan FILE is required");
    };
    let text = std::fs::read_to_string(&plan_path)
        .with_context(|| format!("reading plan {}", plan_path.display()))?;
    let json_file = plan_path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let plan = if json_file {
        Plan::from_json(&text)
    } else {
        Plan::from_yaml(&text)
    }
    .with_context(|| format!("plan {}", plan_path.display()))?;
    let base = plan_path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    execute_plan(db, json, plan, &base, &args.opts)
}

pub(crate) fn fanout(db: &Path, json: bool, args: FanoutArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let worker = Agent {
        model: args.model.clone(),
        effort: args.effort.clone(),
        script: args.script.as_ref().map(|p| cwd.join(p)),
        ..Agent::default()
    };
    let synthesis = args.synthesis.then(|| Agent {
        script: args
            .synthesis_script
            .as_ref()
            .map(|p| cwd.join(p))
            .or_else(|| worker.script.clone()),
        ..worker.clone()
    });
    if args.synthesis_script.is_some() && !args.synthesis {
        bail!("--synthesis-script needs --synthesis");
    }
    let plan = conductor::fanout_plan(
        usize::from(args.n),
        &args.prompt,
        &worker,
        synthesis.as_ref(),
    );
    execute_plan(db, json, plan, &cwd, &args.opts)
}

/// Where playbooks live: $LIONAGI_HOME/playbooks, else ~/.lionagi/playbooks.
fn playbook_dir() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("LIONAGI_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home).join("playbooks"));
    }
    let home = std::env::var_os("HOME").context("HOME is not set (or set LIONAGI_HOME)")?;
    Ok(PathBuf::from(home).join(".lionagi").join("playbooks"))
}

const PLAYBOOK_SUFFIX: &str = ".playbook.yaml";

fn read_playbook(dir: &Path, name: &str) -> Result<Playbook> {
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        bail!("playbook name {name:?} must be a file name (no path)");
    }
    let path = dir.join(format!("{name}{PLAYBOOK_SUFFIX}"));
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!(
                "no playbook {name}: {} does not exist (`lionrt play list` lists them)",
                path.display()
            )
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    Playbook::from_yaml(name, &text).with_context(|| format!("playbook {}", path.display()))
}

pub(crate) fn play(db: &Path, json: bool, args: PlayArgs) -> Result<ExitCode> {
    let dir = playbook_dir()?;
    if args.name == "list" && args.rest.is_empty() {
        return list_playbooks(&dir, json);
    }
    if args.name == "help"
        && let [name] = args.rest.as_slice()
    {
        out::raw(read_playbook(&dir, name)?.help().as_bytes());
        return Ok(ExitCode::SUCCESS);
    }
    let book = read_playbook(&dir, &args.name)?;
    let (input, values) = book.parse_args(&args.rest)?;
    let prompt = book.render(input.as_deref(), &values)?;
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let agent = Agent {
        script: args.script.as_ref().map(|p| cwd.join(p)),
        ..Agent::default()
    };
    let mut opts = args.opts;
    if let Some(max) = book.max_ops {
        opts.max_ops = opts.max_ops.min(max);
    }
    execute_plan(db, json, book.plan(&prompt, &agent), &cwd, &opts)
}

fn list_playbooks(dir: &Path, json: bool) -> Result<ExitCode> {
    let mut books = Vec::new();
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            for entry in entries {
                let path = entry?.path();
                let Some(name) = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_suffix(PLAYBOOK_SUFFIX))
                else {
                    continue;
                };
                let described = read_playbook(dir, name);
                books.push(match described {
                    Ok(b) => json!({"name": name, "description": b.description,
                        "model": b.model, "args": b.args.keys().collect::<Vec<_>>()}),
                    Err(e) => json!({"name": name, "error": format!("{e:#}")}),
                });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    }
    books.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    if json {
        out::json(&json!({"dir": dir, "playbooks": books}));
    } else if books.is_empty() {
        out::line(format!("no playbooks in {}", dir.display()));
    } else {
        for b in &books {
            let name = b["name"].as_str().unwrap_or_default();
            match (b["error"].as_str(), b["description"].as_str()) {
                (Some(e), _) => out::line(format!("{name:<24} (refused: {e})")),
                (None, d) => out::line(format!("{name:<24} {}", d.unwrap_or("").trim())),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One op, ready to run.
struct Prepared {
    leg: Option<Leg>,
    prompt: String,
    artifact_dir: PathBuf,
    session: String,
}

/// How an op ended, as the flow saw it.
#[derive(Debug, Clone)]
struct Ended {
    status: String,
    reason: String,
    text: String,
    missing: Vec<String>,
    error: Option<String>,
}

fn provider_of(op: &str, name: Option<&str>) -> Result<Option<ProviderName>> {
    name.map(|n| {
        <ProviderName as clap::ValueEnum>::from_str(n, true)
            .map_err(|_| anyhow::anyhow!("op {op}: unknown provider {n:?}"))
    })
    .transpose()
}

/// The options of one op's leg, resolved against the plan's directory.
struct OpInput {
    prompt: String,
    script: Option<PathBuf>,
    mcp_config: Option<PathBuf>,
}

fn op_input(op: &conductor::Op, base: &Path) -> Result<OpInput> {
    let prompt = match (&op.agent.prompt, &op.agent.prompt_file) {
        (Some(p), _) => p.clone(),
        (None, Some(file)) => {
            let path = base.join(file);
            std::fs::read_to_string(&path)
                .with_context(|| format!("op {}: reading {}", op.id, path.display()))?
        }
        (None, None) => bail!("op {} has no prompt", op.id),
    };
    Ok(OpInput {
        prompt,
        script: op.agent.script.as_ref().map(|p| base.join(p)),
        mcp_config: op.agent.mcp_config.as_ref().map(|p| base.join(p)),
    })
}

/// Prepares one op's leg through the one run builder.
fn prepare_op(
    db: &Path,
    op: &conductor::Op,
    input: &OpInput,
    workspace: &Path,
    session: &str,
    json: bool,
) -> Result<Leg> {
    let agent_args = crate::runopts::AgentArgs::default();
    let mcp = crate::mcp_forward::McpForwardArgs::for_config(input.mcp_config.clone());
    crate::run::prepare_leg(
        db,
        &LegOptions {
            provider: provider_of(&op.id, op.agent.provider.as_deref())?,
            model: op.agent.model.as_deref(),
            prompt: Some(&input.prompt),
            effort: op.agent.effort.as_deref(),
            workspace: workspace.to_path_buf(),
            session: session.to_owned(),
            script: input.script.as_deref(),
            sandbox: false,
            agent: &agent_args,
            mcp: &mcp,
            json,
            submitted_by: None,
            label: None,
        },
    )
    .with_context(|| format!("op {}", op.id))
}

/// The file a flow is resumed from: WORKSPACE/.lionrt/flows/ID/flow.json.
fn record_path(workspace: &Path, invocation: &str) -> PathBuf {
    workspace
        .join(".lionrt")
        .join("flows")
        .join(invocation)
        .join("flow.json")
}

/// Validates `plan`, prepares every leg, then runs the flow on the store
/// `--db` names.
fn execute_plan(
    db: &Path,
    json: bool,
    plan: Plan,
    base: &Path,
    opts: &FlowOpts,
) -> Result<ExitCode> {
    let valid = conductor::validate(plan, opts.max_ops).map_err(|e| match e.reason_code() {
        Some(reason) => anyhow::anyhow!("the plan is refused ({reason}): {e}"),
        None => anyhow::anyhow!("the plan is refused: {e}"),
    })?;
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let workspace = match &opts.workspace {
        Some(w) => cwd.join(w),
        None => cwd.clone(),
    };
    let invocation = match &opts.id {
        Some(id) => {
            crate::run::check_session_id(id).context("--id")?;
            id.clone()
        }
        None => format!("flow-{}", now_micros()),
    };
    let artifacts = match &opts.artifacts {
        Some(dir) => cwd.join(dir),
        None => workspace.join(".lionrt").join("flows").join(&invocation),
    };
    let mut prepared = Vec::with_capacity(valid.ops().len());
    let mut resolved = Vec::with_capacity(valid.ops().len());
    for op in valid.ops() {
        let input = op_input(op, base)?;
        let session = format!("{invocation}-{}", op.id);
        let leg = prepare_op(db, op, &input, &workspace, &session, json)?;
        // The op as a resume reads it back: prompt inline, paths absolute.
        let mut op = op.clone();
        op.agent.prompt = Some(input.prompt.clone());
        op.agent.prompt_file = None;
        op.agent.script = input.script.as_ref().map(|p| cwd.join(p));
        op.agent.mcp_config = input.mcp_config.as_ref().map(|p| cwd.join(p));
        resolved.push(op);
        prepared.push(Prepared {
            leg: Some(leg),
            prompt: input.prompt,
            artifact_dir: artifacts.join(&resolved[resolved.len() - 1].id),
            session,
        });
    }
    let cap = opts.max_concurrent.max(1);
    let record = json!({
        "invocation": invocation, "workspace": workspace, "artifacts": artifacts,
        "max_concurrent": cap, "plan": Plan { name: None, ops: resolved },
    });
    let start = Start::Fresh {
        record,
        path: record_path(&workspace, &invocation),
    };
    on_store(
        db,
        Fresh {
            valid,
            prepared,
            invocation,
            cap,
            json,
            start,
        },
    )
}

/// Records a leg's MCP refusals on the open store.
type RecordGuard<'a> = &'a dyn Fn(&crate::mcp_forward::Guard) -> Result<()>;

/// Work done on whichever store `--db` names.
trait OnStore {
    fn run<R>(self, store: Arc<R>, record: RecordGuard<'_>) -> Result<ExitCode>
    where
        R: SessionRecorder + Send + Sync + 'static;
}

/// Opens the store `--db` names and runs `job` there.
fn on_store(db: &Path, job: impl OnStore) -> Result<ExitCode> {
    match crate::pg::url(db) {
        Some(url) => {
            let store = Arc::new(crate::pg::open(&url)?);
            let s = Arc::clone(&store);
            job.run(store, &move |g| g.record_pg(&s))
        }
        None => {
            let store = Arc::new(Store::new(Engine::create(db, EngineConfig::default())?));
            let s = Arc::clone(&store);
            job.run(store, &move |g| g.record_sqlite(s.engine()))
        }
    }
}

/// A new flow, its legs prepared.
struct Fresh {
    valid: ValidPlan,
    prepared: Vec<Prepared>,
    invocation: String,
    cap: usize,
    json: bool,
    start: Start,
}

impl OnStore for Fresh {
    fn run<R>(self, store: Arc<R>, record: RecordGuard<'_>) -> Result<ExitCode>
    where
        R: SessionRecorder + Send + Sync + 'static,
    {
        for p in &self.prepared {
            if let Some(leg) = &p.leg {
                record(&leg.mcp)?;
            }
        }
        conduct(
            store,
            &self.valid,
            self.prepared,
            &self.invocation,
            self.cap,
            self.json,
            self.start,
        )
    }
}

/// How a flow starts: new (its record is written for a resume), or
/// resumed with what each op already came to.
enum Start {
    Fresh { record: Value, path: PathBuf },
    Resume { seeds: Vec<Seed> },
}

/// What a resumed op already came to.
enum Seed {
    /// Run it (again).
    Run,
    /// It succeeded: not run again.
    Succeeded(Ended),
    /// It failed (and is not retried): its dependents are blocked.
    Failed(Ended),
}

/// `lionrt flow resume ID`.
fn resume(db: &Path, json: bool, args: ResumeArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let workspace = args
        .workspace
        .as_ref()
        .map_or_else(|| cwd.clone(), |w| cwd.join(w));
    let path = record_path(&workspace, &args.id);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading the record of flow {} ({}; give --workspace where it ran)",
            args.id,
            path.display()
        )
    })?;
    let record: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let plan: Plan = serde_json::from_value(record["plan"].clone())
        .with_context(|| format!("the plan in {}", path.display()))?;
    let valid = conductor::validate(plan, usize::MAX)
        .with_context(|| format!("the plan in {}", path.display()))?;
    let dir = |k: &str| {
        record[k]
            .as_str()
            .map(PathBuf::from)
            .with_context(|| format!("{} has no {k}", path.display()))
    };
    let recorded_cap = record["max_concurrent"]
        .as_u64()
        .and_then(|n| usize::try_from(n).ok());
    if crate::pg::url(db).is_none() && !db.exists() {
        bail!("{} does not exist: nothing to resume", db.display());
    }
    on_store(
        db,
        Resumed {
            db: db.to_owned(),
            valid,
            invocation: args.id,
            workspace: dir("workspace")?,
            artifacts: dir("artifacts")?,
            cap: args.max_concurrent.or(recorded_cap).unwrap_or(4).max(1),
            json,
            retry: args.retry_failed,
        },
    )
}

/// A flow to resume.
struct Resumed {
    db: PathBuf,
    valid: ValidPlan,
    invocation: String,
    workspace: PathBuf,
    artifacts: PathBuf,
    cap: usize,
    json: bool,
    retry: bool,
}

/// The op's text as its flow recorded it (`node_metadata.flow_result`).
fn recorded_text(snapshot: &lifecycle_core::SessionSnapshot) -> String {
    let meta = match snapshot.columns.get("node_metadata") {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
        Some(v) => v.clone(),
        None => Value::Null,
    };
    meta["flow_result"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

impl OnStore for Resumed {
    fn run<R>(self, store: Arc<R>, record: RecordGuard<'_>) -> Result<ExitCode>
    where
        R: SessionRecorder + Send + Sync + 'static,
    {
        let inv = &self.invocation;
        match store.history("invocation", inv)?.last() {
            None => bail!("no invocation {inv} in the store"),
            Some(t) if t.to_status != "running" => bail!(
                "flow {inv} already ended {} ({}); nothing to resume",
                t.to_status,
                t.reason_code
            ),
            Some(_) => {}
        }
        // Legs whose conductor is gone end failed (orphaned) first.
        crate::run::sweep_before_run(&*store);
        let mut seeds = Vec::new();
        let mut prepared = Vec::new();
        for op in self.valid.ops() {
            // The op's latest attempt: ID-OP, ID-OP.2, ...
            let mut attempt = 1;
            let mut latest = None;
            loop {
                let session = match attempt {
                    1 => format!("{inv}-{}", op.id),
                    n => format!("{inv}-{}.{n}", op.id),
                };
                match store.session(&session)? {
                    Some(s) => latest = Some(s),
                    None => break,
                }
                attempt += 1;
            }
            let artifact_dir = self.artifacts.join(&op.id);
            let ended = |s: &lifecycle_core::SessionSnapshot| Ended {
                status: s.status.clone(),
                reason: s.reason_code.clone().unwrap_or_default(),
                text: recorded_text(s),
                missing: if conductor::succeeded(&s.status) {
                    op.artifacts
                        .iter()
                        .filter(|a| !artifact_dir.join(a).is_file())
                        .cloned()
                        .collect()
                } else {
                    Vec::new()
                },
                error: None,
            };
            let (seed, session) = match &latest {
                None => (Seed::Run, format!("{inv}-{}", op.id)),
                Some(s) if s.status == "running" => bail!(
                    "op {} of flow {inv} is still running (session {}, its owner alive): \
                     is another conductor on it?",
                    op.id,
                    s.id
                ),
                Some(s) => {
                    let e = ended(s);
                    let ok = conductor::succeeded(&e.status) && e.missing.is_empty();
                    match (ok, self.retry) {
                        (true, _) => (Seed::Succeeded(e), s.id.clone()),
                        (false, true) => (Seed::Run, format!("{inv}-{}.{attempt}", op.id)),
                        (false, false) => (Seed::Failed(e), s.id.clone()),
                    }
                }
            };
            let input = op_input(op, Path::new("/"))?;
            let leg = match seed {
                Seed::Run => Some(prepare_op(
                    &self.db,
                    op,
                    &input,
                    &self.workspace,
                    &session,
                    self.json,
                )?),
                _ => None,
            };
            if let Some(leg) = &leg {
                record(&leg.mcp)?;
            }
            std::fs::create_dir_all(&artifact_dir)
                .with_context(|| format!("creating {}", artifact_dir.display()))?;
            seeds.push(seed);
            prepared.push(Prepared {
                leg,
                prompt: input.prompt,
                artifact_dir,
                session,
            });
        }
        conduct(
            store,
            &self.valid,
            prepared,
            inv,
            self.cap,
            self.json,
            Start::Resume { seeds },
        )
    }
}

fn actor() -> Actor {
    Actor::new(
        ActorType::Executor,
        format!("lionrt-flow-{}", std::process::id()),
    )
}

/// A store call off the async threads (PostgreSQL's driver blocks).
async fn blocking<R, T>(
    store: &Arc<R>,
    f: impl FnOnce(&R) -> Result<T> + Send + 'static,
) -> Result<T>
where
    R: Send + Sync + 'static,
    T: Send + 'static,
{
    let store = Arc::clone(store);
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .context("a store task panicked")?
}

fn refuse_existing<R: SessionRecorder>(
    store: &R,
    invocation: &str,
    plan: &ValidPlan,
) -> Result<()> {
    if !store.history("invocation", invocation)?.is_empty() {
        bail!("invocation {invocation} already exists; give another --id or leave it out");
    }
    for op in plan.ops() {
        let session = format!("{invocation}-{}", op.id);
        if store.session(&session)?.is_some() {
            bail!("session {session} already exists; give another --id");
        }
    }
    Ok(())
}

/// Runs the flow on `store`: the invocation row, the legs, the blocked
/// ops' rows, the invocation's end, the report.
fn conduct<R>(
    store: Arc<R>,
    plan: &ValidPlan,
    mut prepared: Vec<Prepared>,
    invocation: &str,
    cap: usize,
    json: bool,
    start: Start,
) -> Result<ExitCode>
where
    R: SessionRecorder + Send + Sync + 'static,
{
    let actor = actor();
    let seeds = match start {
        Start::Fresh { record, path } => {
            refuse_existing(&*store, invocation, plan)?;
            for p in &prepared {
                std::fs::create_dir_all(&p.artifact_dir)
                    .with_context(|| format!("creating {}", p.artifact_dir.display()))?;
            }
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(&path, serde_json::to_string_pretty(&record)?)
                .with_context(|| format!("writing {}", path.display()))?;
            crate::run::sweep_before_run(&*store);
            store.create(&InitialCommand {
                entity_type: "invocation".into(),
                entity_id: invocation.to_owned(),
                status: "running".into(),
                reason: Reason::new(RunReasons::STARTED_OK).with_summary(format!(
                    "flow of {} op(s), at most {cap} at once",
                    plan.ops().len()
                )),
                actor: actor.clone(),
                patch: BTreeMap::new(),
            })?;
            Vec::new()
        }
        Start::Resume { seeds } => seeds,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let n = plan.ops().len();
    let (ends, cancelled) = runtime.block_on(async {
        let signals = crate::run::cancellation()?;
        let (tx, rx) = tokio::sync::watch::channel(None::<Cancellation>);
        let watcher = tokio::spawn(async move {
            let c = signals.await;
            let _ = tx.send(Some(c));
        });
        let mut sched = Scheduler::new(plan, cap);
        let mut ends: Vec<Option<Ended>> = vec![None; n];
        // A resumed flow: what already ended stays ended, in dependency
        // order (an op moves once its dependencies have).
        let mut seeds: Vec<Option<Seed>> = seeds.into_iter().map(Some).collect();
        loop {
            let mut moved = false;
            for i in 0..seeds.len() {
                let blocked = match &seeds[i] {
                    Some(Seed::Succeeded(_)) if sched.mark_succeeded(i) => Vec::new(),
                    Some(Seed::Failed(_)) => match sched.mark_failed(i) {
                        Some(blocked) => blocked,
                        None => continue,
                    },
                    _ => continue,
                };
                if let Some(Seed::Succeeded(e) | Seed::Failed(e)) = seeds[i].take() {
                    ends[i] = Some(e);
                }
                moved = true;
                for b in blocked {
                    let (id, by) = (
                        format!("{invocation}/{}", plan.ops()[b].id),
                        plan.ops()[i].id.clone(),
                    );
                    let actor = actor.clone();
                    blocking(&store, move |s| block_play(s, &id, &by, &actor)).await?;
                }
            }
            if !moved {
                break;
            }
        }
        let mut legs = tokio::task::JoinSet::new();
        loop {
            if rx.borrow().is_none() {
                for i in sched.start_ready() {
                    let p = &mut prepared[i];
                    let Some(leg) = p.leg.take() else {
                        bail!("op {} started twice", plan.ops()[i].id);
                    };
                    let mut config = leg.config;
                    let deps: Vec<(String, Ended, String)> = plan
                        .deps(i)
                        .iter()
                        .filter_map(|&d| {
                            ends[d].clone().map(|e| {
                                (
                                    plan.ops()[d].id.clone(),
                                    e,
                                    prepared_dir(&prepared[d].artifact_dir),
                                )
                            })
                        })
                        .collect();
                    let results: Vec<DepResult<'_>> = deps
                        .iter()
                        .map(|(op, e, dir)| DepResult {
                            op,
                            status: &e.status,
                            text: &e.text,
                            artifact_dir: Some(dir),
                        })
                        .collect();
                    let p = &prepared[i];
                    config.prompt = conductor::op_prompt(
                        &p.prompt,
                        Some(&prepared_dir(&p.artifact_dir)),
                        &results,
                    );
                    // What the op was told, on its own record.
                    config.notes.push(runner::RunNote {
                        role: "flow_prompt".into(),
                        content: json!({"op": plan.ops()[i].id, "prompt": config.prompt})
                            .to_string(),
                    });
                    config.invocation_id = Some(invocation.to_owned());
                    config.agent_name = Some(format!("flow:{}", plan.ops()[i].id));
                    let mut cancel = rx.clone();
                    let store = Arc::clone(&store);
                    let guard = leg.mcp;
                    legs.spawn(async move {
                        let cancel = async move {
                            loop {
                                if let Some(c) = *cancel.borrow_and_update() {
                                    return c;
                                }
                                if cancel.changed().await.is_err() {
                                    std::future::pending::<()>().await;
                                }
                            }
                        };
                        let report = runner::run(store, config, cancel).await;
                        drop(guard);
                        (i, report)
                    });
                }
            }
            let Some(joined) = legs.join_next().await else {
                break;
            };
            let (i, report) = joined.context("a leg task panicked")?;
            let op = &plan.ops()[i];
            let ended = ended_of(report, &op.artifacts, &prepared[i].artifact_dir);
            // The op's result, on its session, for a resumed flow's
            // dependents.
            let (session, text) = (prepared[i].session.clone(), ended.text.clone());
            blocking(&store, move |s| {
                s.update_session_metadata(&session, "flow_result", &mut |_| {
                    Some(json!({"text": text}))
                })?;
                Ok(())
            })
            .await?;
            if !ended.missing.is_empty() {
                let (session, missing) = (prepared[i].session.clone(), ended.missing.clone());
                blocking(&store, move |s| {
                    s.record_message(
                        &session,
                        &format!("{session}:artifact_check"),
                        "artifact_check",
                        &json!({"missing": missing}).to_string(),
                        now_micros(),
                    )?;
                    Ok(())
                })
                .await?;
            }
            let ok = conductor::succeeded(&ended.status) && ended.missing.is_empty();
            ends[i] = Some(ended);
            let blocked = sched.finish(i, ok)?;
            for b in blocked {
                let by = match sched.state(b) {
                    Some(OpState::Blocked { by }) => plan.ops()[by].id.clone(),
                    _ => op.id.clone(),
                };
                let id = format!("{invocation}/{}", plan.ops()[b].id);
                let actor = actor.clone();
                blocking(&store, move |s| block_play(s, &id, &by, &actor)).await?;
            }
        }
        watcher.abort();
        let cancelled = *rx.borrow();
        anyhow::Ok((ends, cancelled))
    })?;
    // The ends, in plan order.
    let mut op_ends = Vec::with_capacity(n);
    for (i, end) in ends.iter().enumerate() {
        op_ends.push(match end {
            Some(e) if !e.missing.is_empty() => OpEnd::Ran {
                status: "failed",
                reason: RunReasons::FAILED_MISSING_ARTIFACT,
            },
            Some(e) => OpEnd::Ran {
                status: &e.status,
                reason: &e.reason,
            },
            None if blocked_op(plan, &ends, i) => OpEnd::Blocked,
            None => OpEnd::NotStarted,
        });
    }
    let outcome = conductor::flow_outcome(&op_ends);
    let counts = summary(&op_ends);
    store.transition(
        &TransitionCommand::new(
            "invocation",
            invocation,
            outcome.status,
            Reason::new(outcome.reason).with_summary(counts),
            actor,
        )
        .expecting("running")
        .with_patch("ended_at", json!(now_micros())),
    )?;
    let sessions: Vec<&str> = prepared.iter().map(|p| p.session.as_str()).collect();
    report(&*store, plan, invocation, &sessions, &ends, &op_ends, json)?;
    Ok(ExitCode::from(match (outcome.status, cancelled) {
        ("completed", _) => 0,
        (_, Some(Cancellation::Sigint)) => crate::progress::EXIT_SIGINT,
        (_, Some(Cancellation::Sigterm)) => crate::progress::EXIT_SIGTERM,
        _ => 1,
    }))
}

fn prepared_dir(dir: &Path) -> String {
    dir.display().to_string()
}

/// Whether op `i` never started because a dependency did not succeed.
fn blocked_op(plan: &ValidPlan, ends: &[Option<Ended>], i: usize) -> bool {
    plan.deps(i).iter().any(|&d| match &ends[d] {
        Some(e) => !conductor::succeeded(&e.status) || !e.missing.is_empty(),
        None => blocked_op(plan, ends, d),
    })
}

fn summary(ends: &[OpEnd<'_>]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for e in ends {
        let key = match e {
            OpEnd::Ran { status, .. } => status,
            OpEnd::Blocked => "blocked",
            OpEnd::NotStarted => "not started",
        };
        *counts.entry(key).or_default() += 1;
    }
    let parts: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    format!("{} op(s): {}", ends.len(), parts.join(", "))
}

/// What an op's leg came to: its recorded status and reason, its text, and
/// the expected artifacts missing from its subdirectory (checked only for
/// a leg that succeeded).
fn ended_of(report: Result<RunReport, runner::Error>, artifacts: &[String], dir: &Path) -> Ended {
    match report {
        Ok(r) => {
            let missing = if conductor::succeeded(&r.recorded_status) {
                artifacts
                    .iter()
                    .filter(|a| !dir.join(a).is_file())
                    .cloned()
                    .collect()
            } else {
                Vec::new()
            };
            Ended {
                status: r.recorded_status,
                reason: r.verdict.reason_code.to_owned(),
                text: r.text,
                missing,
                error: r.error,
            }
        }
        Err(e) => Ended {
            status: "failed".into(),
            reason: RunReasons::FAILED_EXCEPTION.into(),
            text: String::new(),
            missing: Vec::new(),
            error: Some(format!("{e}")),
        },
    }
}

/// Records an op that never starts: a `play` row, pending then blocked.
fn block_play<R: SessionRecorder>(store: &R, id: &str, by: &str, actor: &Actor) -> Result<()> {
    if !store.history("play", id)?.is_empty() {
        // Recorded by the run this one resumes.
        return Ok(());
    }
    store.create(&InitialCommand {
        entity_type: "play".into(),
        entity_id: id.to_owned(),
        status: "pending".into(),
        reason: Reason::new(PlayReasons::PENDING_WAITING_ON_DEPS),
        actor: actor.clone(),
        patch: BTreeMap::new(),
    })?;
    store.transition(
        &TransitionCommand::new(
            "play",
            id,
            "blocked",
            Reason::new(PlayReasons::BLOCKED_DEP_FAILED)
                .with_summary(format!("dependency {by} did not succeed")),
            actor.clone(),
        )
        .expecting("pending")
        .with_patch("ended_at", json!(now_micros())),
    )?;
    Ok(())
}

fn report<R: SessionRecorder>(
    store: &R,
    plan: &ValidPlan,
    invocation: &str,
    sessions: &[&str],
    ends: &[Option<Ended>],
    op_ends: &[OpEnd<'_>],
    json: bool,
) -> Result<()> {
    let history = store.history("invocation", invocation)?;
    let mut ops = Vec::new();
    for (i, op) in plan.ops().iter().enumerate() {
        let session = sessions[i];
        let mut row = json!({"id": op.id});
        match (&ends[i], op_ends[i]) {
            (Some(e), _) => {
                let h = store.history("session", session)?;
                row = json!({
                    "id": op.id, "session": session, "status": e.status, "reason": e.reason,
                    "started_at": h.first().map(|t| t.created_at),
                    "ended_at": h.last().filter(|t| t.to_status != "running").map(|t| t.created_at),
                    "text": e.text, "missing_artifacts": e.missing, "error": e.error,
                });
            }
            (None, OpEnd::Blocked) => {
                let play = format!("{invocation}/{}", op.id);
                let h = store.history("play", &play)?;
                let last = h.last();
                row = json!({
                    "id": op.id, "play": play,
                    "status": last.map(|t| t.to_status.clone()),
                    "reason": last.map(|t| t.reason_code.clone()),
                    "summary": last.map(|t| t.reason_summary.clone()),
                });
            }
            (None, _) => {
                row["status"] = Value::from("not started");
            }
        }
        ops.push(row);
    }
    let last = history.last();
    if json {
        out::json(&json!({
            "invocation": invocation,
            "status": last.map(|t| &t.to_status),
            "reason": last.map(|t| &t.reason_code),
            "summary": last.map(|t| &t.reason_summary),
            "ops": ops, "history": history,
        }));
        return Ok(());
    }
    for row in &ops {
        let s = |k: &str| row[k].as_str().unwrap_or("-").to_owned();
        out::line(format!(
            "{:<16} {:<12} {:<28} {}",
            s("id"),
            s("status"),
            s("reason"),
            row.get("session")
                .or_else(|| row.get("play"))
                .and_then(Value::as_str)
                .unwrap_or("")
        ));
    }
    if let Some(t) = last {
        out::line(format!(
            "invocation {invocation}: {} ({}) {}",
            t.to_status, t.reason_code, t.reason_summary
        ));
    }
    Ok(())
}
