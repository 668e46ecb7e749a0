//! `lionrt mcp ls|audit|call`: connect to the servers of an `.mcp.json`,
//! show which tools admission lets through and why the others are refused,
//! and call an admitted tool through the gate; `lionrt mcp serve`: lionrt
//! itself as an MCP server (see `serve`).

mod serve;

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use clap::{Args, Subcommand, ValueEnum};
use mcp_pool::{McpPool, PoolConfig, SecurityConfig, ToolListing};
use serde_json::{Value, json};

use crate::out;

/// Exit status when every tool of every server was admitted.
const EXIT_CLEAN: u8 = 0;
/// Exit status when a tool was refused.
const EXIT_DENIED: u8 = 1;
/// Exit status when a server (or the config) could not be audited.
const EXIT_UNAUDITED: u8 = 2;

#[derive(Debug, Subcommand)]
pub(crate) enum McpCmd {
    /// List every configured server with its admitted tools and its refused
    /// tools and their reasons.
    ///
    /// Exit status: 0, or 2 when the config or a server could not be read.
    #[command(visible_alias = "list")]
    Ls(CommonArgs),
    /// Connect to every configured server, list its tools and run each
    /// through admission: the CI check for an `.mcp.json`.
    ///
    /// Exit status: 0 all admitted, 1 any tool refused, 2 the config or a
    /// server could not be audited (wins over 1). Progress per server goes
    /// to stderr when it is a terminal.
    Audit(AuditArgs),
    /// Call one admitted tool: its arguments are validated against the
    /// tool's input schema and the call passes the tool-call gate (the
    /// destructive-command guard) first. Prints the result as JSON.
    ///
    /// Exit status: 0, 1 when the call is refused or fails, or when the tool
    /// reports an error.
    Call(CallArgs),
    /// Serve lionrt over MCP (stdio, or streamable HTTP with --http): one
    /// tool, `request(ops=[{op, args}], help?)`, whose verbs submit agent
    /// jobs (detached `lionrt run`s recorded in --db), follow, wait for and
    /// kill them, and read state, schedules and the outbox.
    ///
    /// At most 8 ops a call; each op's args are checked against the verb's
    /// closed schema (`help="VERB"` prints it; an unknown key is refused by
    /// name). Plugin trust, migrations and settings have no verb. A job's
    /// start row records the caller as `agent:mcp:<clientInfo.name>`.
    /// HTTP listens on loopback only unless --token is given, and checks
    /// the Host header.
    Serve(serve::ServeArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CommonArgs {
    /// The `.mcp.json` to use. Without it: `./.lionagi/.mcp.json` or
    /// `./.mcp.json` with `--trust-project`, else `~/.lionagi/.mcp.json`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Consider the project's own `.mcp.json` files.
    #[arg(long)]
    trust_project: bool,
    /// Start only these commands (bare names, repeatable); default: any.
    #[arg(long = "allow-command", value_name = "NAME")]
    allow_commands: Vec<String>,
    /// Reach only these URL hosts (repeatable); default: any https host.
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// Also allow plain `http://` URLs to loopback hosts (`localhost`,
    /// `127.0.0.0/8`, `::1`). `https` servers need no flag: their
    /// certificates are checked against the system's roots, or against
    /// those in `SSL_CERT_FILE` / `SSL_CERT_DIR` when either is set.
    #[arg(long)]
    allow_loopback_http: bool,
    /// Seconds a server gets to answer `initialize`.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    init_timeout: u64,
    /// Admission rules: `strict` (the default) also denies a tool that says
    /// it runs code and leaves the code free; `original` gives lionagi
    /// 0.36.0's verdicts.
    #[arg(long, value_enum, default_value_t = crate::admission::PolicyArg::Strict)]
    policy: crate::admission::PolicyArg,
    /// The original's verdicts: the same as `--policy original`.
    #[arg(long, conflicts_with = "policy")]
    compat: bool,
}

#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Output format: table (people), jsonl (one line per tool or failed
    /// server), sarif (SARIF 2.1.0 for code scanning). `--json` means jsonl.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The server, as named in the config.
    server: String,
    /// The tool.
    tool: String,
    /// The arguments, a JSON object.
    #[arg(long, default_value = "{}", value_name = "JSON")]
    args: String,
    #[command(flatten)]
    common: CommonArgs,
}

/// One server's outcome: its listing, or why it could not be listed.
struct Audited {
    server: String,
    outcome: std::result::Result<ToolListing, mcp_pool::Error>,
}

pub(crate) fn run(db: &std::path::Path, json: bool, cmd: McpCmd) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match cmd {
        McpCmd::Ls(common) => runtime.block_on(ls(json, &common)),
        McpCmd::Audit(args) => {
            let format = match (json, args.format) {
                (true, Format::Table) => Format::Jsonl,
                (_, format) => format,
            };
            runtime.block_on(audit(format, &args.common))
        }
        McpCmd::Call(args) => runtime.block_on(call(&args)),
        McpCmd::Serve(args) => {
            // The server builds its own runtime.
            drop(runtime);
            serve::run(db, args)
        }
    }
}

/// How `mcp audit` prints its findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Table,
    Jsonl,
    Sarif,
}

fn pool(common: &CommonArgs, gate: bool) -> Result<(McpPool, Vec<String>, PathBuf)> {
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let query = tool_gate::McpConfigQuery {
        explicit: common.config.clone(),
        project_dir: Some(cwd),
        trust_project_settings: common.trust_project,
        home: std::env::var_os("HOME").map(PathBuf::from),
    };
    let resolved = tool_gate::resolve_mcp_config(&query, tool_gate::McpConsumer::NativeLoading)?
        .ok_or_else(|| {
            anyhow!(
                "no mcp config found: pass --config FILE (or --trust-project to use ./.mcp.json)"
            )
        })?;
    // The file was named explicitly or found under the trust rules, so its
    // servers may be reached; the flags narrow that.
    let mut security = SecurityConfig::trusted();
    if !common.allow_commands.is_empty() {
        security.command_allowlist = Some(
            common
                .allow_commands
                .iter()
                .cloned()
                .collect::<BTreeSet<_>>(),
        );
    }
    if !common.allow_hosts.is_empty() {
        security.url_allowlist = Some(common.allow_hosts.iter().cloned().collect::<BTreeSet<_>>());
    }
    security.allow_loopback_http = common.allow_loopback_http;
    let mut config = PoolConfig::with_security(security);
    config.init_timeout = Duration::from_secs(common.init_timeout.max(1));
    config.admission_policy = crate::admission::policy_of(common.policy, common.compat);
    config.redact = crate::mcp_forward::inherited_secrets();
    if gate {
        let gate = tool_gate::Gate::builder()
            .security(tool_gate::DestructiveGuard::default())
            .build();
        config.gate = Some(Arc::new(gate));
    }
    let pool = McpPool::new(config);
    let servers = pool.load_config(&resolved.path)?;
    Ok((pool, servers, resolved.path))
}

async fn list_all(pool: &McpPool, servers: &[String], progress: bool) -> Vec<Audited> {
    let mut out = Vec::new();
    for server in servers {
        if progress {
            let _ = write!(std::io::stderr(), "auditing {server} ... ");
        }
        let outcome = pool.list_tools(server).await;
        if progress {
            let summary = match &outcome {
                Ok(l) => format!("{} admitted, {} denied", l.admitted.len(), l.denied.len()),
                Err(_) => "failed".to_owned(),
            };
            let _ = writeln!(std::io::stderr(), "{summary}");
        }
        out.push(Audited {
            server: server.clone(),
            outcome,
        });
    }
    pool.shutdown().await;
    out
}

fn exit_code(audited: &[Audited]) -> ExitCode {
    if audited.iter().any(|a| a.outcome.is_err()) {
        ExitCode::from(EXIT_UNAUDITED)
    } else if audited
        .iter()
        .any(|a| a.outcome.as_ref().is_ok_and(|l| !l.denied.is_empty()))
    {
        ExitCode::from(EXIT_DENIED)
    } else {
        ExitCode::from(EXIT_CLEAN)
    }
}

fn config_failure(e: &anyhow::Error) -> ExitCode {
    out::error(e);
    ExitCode::from(EXIT_UNAUDITED)
}

async fn ls(json: bool, common: &CommonArgs) -> Result<ExitCode> {
    let (pool, servers, _) = match pool(common, false) {
        Ok(p) => p,
        Err(e) => return Ok(config_failure(&e)),
    };
    let audited = list_all(&pool, &servers, false).await;
    if json {
        let rows: Vec<Value> = audited
            .iter()
            .map(|a| match &a.outcome {
                Ok(l) => json!({"server": a.server, "admitted": l.admitted, "denied": l.denied, "error": null}),
                Err(e) => json!({"server": a.server, "admitted": [], "denied": [], "error": e.to_string()}),
            })
            .collect();
        out::json(&Value::Array(rows));
    } else {
        print_table(&audited);
    }
    Ok(if audited.iter().any(|a| a.outcome.is_err()) {
        ExitCode::from(EXIT_UNAUDITED)
    } else {
        ExitCode::from(EXIT_CLEAN)
    })
}

fn print_table(audited: &[Audited]) {
    let mut rows: Vec<[String; 4]> = Vec::new();
    for a in audited {
        match &a.outcome {
            Ok(l) => {
                for t in &l.admitted {
                    rows.push([
                        a.server.clone(),
                        t.name.clone(),
                        "admitted".into(),
                        String::new(),
                    ]);
                }
                for d in &l.denied {
                    rows.push([
                        a.server.clone(),
                        d.name.clone(),
                        "denied".into(),
                        d.reason.to_string(),
                    ]);
                }
                if l.admitted.is_empty() && l.denied.is_empty() {
                    rows.push([
                        a.server.clone(),
                        "-".into(),
                        "no tools".into(),
                        String::new(),
                    ]);
                }
            }
            Err(e) => rows.push([a.server.clone(), "-".into(), "error".into(), e.to_string()]),
        }
    }
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].len())
            .chain([6])
            .max()
            .unwrap_or(6)
    };
    let (w0, w1, w2) = (width(0), width(1), width(2).max(8));
    out::line(format!(
        "{:w0$}  {:w1$}  {:w2$}  REASON",
        "SERVER", "TOOL", "STATUS"
    ));
    for r in &rows {
        out::line(format!("{:w0$}  {:w1$}  {:w2$}  {}", r[0], r[1], r[2], r[3]).trim_end());
    }
}

async fn audit(format: Format, common: &CommonArgs) -> Result<ExitCode> {
    let (pool, servers, path) = match pool(common, false) {
        Ok(p) => p,
        Err(e) => return Ok(config_failure(&e)),
    };
    let progress = std::io::stderr().is_terminal();
    let audited = list_all(&pool, &servers, progress).await;
    match format {
        Format::Table => print_table(&audited),
        Format::Jsonl => {
            for a in &audited {
                match &a.outcome {
                    Ok(l) => {
                        for t in &l.admitted {
                            out::json(
                                &json!({"server": a.server, "tool": t.name, "verdict": "admit"}),
                            );
                        }
                        for d in &l.denied {
                            out::json(
                                &json!({"server": a.server, "tool": d.name, "verdict": "deny", "reason": d.reason.code(), "message": d.message}),
                            );
                        }
                    }
                    Err(e) => out::json(
                        &json!({"server": a.server, "verdict": "error", "message": e.to_string()}),
                    ),
                }
            }
        }
        Format::Sarif => out::json(&sarif(&audited, &path.display().to_string())),
    }
    Ok(exit_code(&audited))
}

/// SARIF 2.1.0: one result per refused tool (`error`) and per server that
/// could not be audited (`warning`), located in the config file.
fn sarif(audited: &[Audited], config: &str) -> Value {
    let location = |server: &str, tool: Option<&str>| {
        let name = tool.map_or_else(|| server.to_owned(), |t| format!("{server}/{t}"));
        json!([{
            "physicalLocation": {"artifactLocation": {"uri": config}},
            "logicalLocations": [{"name": name, "kind": "member"}]
        }])
    };
    let mut results = Vec::new();
    let mut rules = BTreeSet::new();
    for a in audited {
        match &a.outcome {
            Ok(l) => {
                for d in &l.denied {
                    rules.insert(d.reason.code());
                    results.push(json!({
                        "ruleId": d.reason.code(),
                        "level": "error",
                        "message": {"text": d.message},
                        "locations": location(&a.server, Some(&d.name)),
                    }));
                }
            }
            Err(e) => {
                rules.insert("server-not-audited");
                results.push(json!({
                    "ruleId": "server-not-audited",
                    "level": "warning",
                    "message": {"text": e.to_string()},
                    "locations": location(&a.server, None),
                }));
            }
        }
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "lionrt mcp audit",
                "rules": rules.into_iter().map(|id| json!({"id": id})).collect::<Vec<_>>(),
            }},
            "results": results,
        }]
    })
}

async fn call(args: &CallArgs) -> Result<ExitCode> {
    let arguments: Value = serde_json::from_str(&args.args).map_err(|e| {
        anyhow!(
            "--args is not JSON (line {}, column {})",
            e.line(),
            e.column()
        )
    })?;
    let (pool, _, _) = pool(&args.common, true)?;
    let result = pool.call_tool(&args.server, &args.tool, arguments).await;
    pool.shutdown().await;
    let result = result?;
    out::json(&result.result);
    Ok(if result.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
