//! `lionrt mcp serve`: lionrt as an MCP server (rmcp's server side), over
//! stdio or streamable HTTP, so other agents submit and follow jobs.
//!
//! One tool, `request(ops=[{op, args}], help?)`, as li's `mcp serve`: a
//! compact `tools/list` (the catalogue is behind `help`), at most
//! [`verbs::MAX_OPS`] ops a call, each op's `args` checked against its
//! verb's closed schema before it runs. Submitted jobs are detached `lionrt
//! run` processes recorded in the store (see `jobs`), so the server keeps
//! no state of its own: a restarted server reads the same jobs.
//!
//! A call holding a `job.wait`, from a client that declared the MCP Tasks
//! extension, runs as a task (`tasks/get` polls it, `tasks/cancel` ends the
//! legs of the jobs it waits on); other clients poll `job.wait`.
//!
//! HTTP listens on loopback only unless a bearer token is configured, and
//! the `Host` header must name an allowed host (rmcp's DNS-rebinding check,
//! with the loopback names and the bound address).

mod jobs;
mod verbs;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, GetTaskParams, GetTaskResult, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use serde_json::{Map, Value, json};

use jobs::Place;

/// The variable the bearer token is read from (removed from every child's
/// environment).
const TOKEN_VAR: &str = "LIONRT_MCP_TOKEN";

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Serve streamable HTTP at ADDR (e.g. 127.0.0.1:8766, path /mcp)
    /// instead of stdio. A non-loopback address needs --token.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// With --http: every request must carry `Authorization: Bearer
    /// TOKEN`. Read from $LIONRT_MCP_TOKEN when set (keep it out of argv).
    #[arg(
        long,
        env = "LIONRT_MCP_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    token: Option<Token>,
    /// With --http: another `Host` header value to accept (host or
    /// host:port; repeatable), beside localhost, 127.0.0.1, ::1 and the
    /// bound address.
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// Where each job keeps its prompt file and its log (default:
    /// `mcp-serve/` beside the SQLite store).
    #[arg(long, value_name = "DIR")]
    jobs_dir: Option<PathBuf>,
}

/// A bearer token; never printed.
#[derive(Clone)]
struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl std::str::FromStr for Token {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.len() < 16 || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("a token is at least 16 characters, without blanks".into());
        }
        Ok(Token(s.to_owned()))
    }
}

/// The tool descriptor `tools/list` serves.
pub(crate) fn tool() -> Tool {
    let schema = match verbs::tool_schema() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    Tool::new(verbs::TOOL, verbs::DESCRIPTION, Arc::new(schema))
}

pub(crate) fn run(db: &std::path::Path, args: ServeArgs) -> Result<ExitCode> {
    let jobs_dir = match &args.jobs_dir {
        Some(d) => d.clone(),
        None => {
            let base = if crate::dbpath::is_url(db) {
                crate::dbpath::default_db()
            } else {
                db.to_owned()
            };
            base.parent()
                .map_or_else(|| PathBuf::from("."), std::path::Path::to_owned)
                .join("mcp-serve")
        }
    };
    let place = Place {
        db: db.to_owned(),
        jobs_dir,
        exe: std::env::current_exe().context("locating the lionrt binary")?,
    };
    if let Some(addr) = args.http
        && !addr.ip().is_loopback()
        && args.token.is_none()
    {
        bail!(
            "refusing to serve MCP on {addr} without a token: give --token (or $LIONRT_MCP_TOKEN), or a loopback address"
        );
    }
    // The store exists from the start (as `lionrt run` makes it), so the
    // read verbs answer before the first submission.
    if !crate::dbpath::is_url(db) {
        crate::dbpath::ensure_parent(db)?;
        state_sqlite::Engine::create(db, state_sqlite::EngineConfig::default())
            .with_context(|| format!("opening {}", db.display()))?;
    }
    // As every run does: jobs whose `lionrt run` died with the last server
    // (or the machine) end as orphaned before anyone reads them.
    jobs::sweep(&place);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let place = Arc::new(place);
    match args.http {
        None => runtime.block_on(async {
            use rmcp::ServiceExt;
            let running = Lion {
                place: Arc::clone(&place),
                tasks: TaskManager::new(),
            }
            .serve(rmcp::transport::stdio())
            .await
            .context("serving MCP on stdio")?;
            running.waiting().await.context("the MCP session")?;
            anyhow::Ok(())
        })?,
        Some(addr) => runtime.block_on(serve_http(place, addr, &args))?,
    }
    Ok(ExitCode::SUCCESS)
}

async fn serve_http(place: Arc<Place>, addr: SocketAddr, args: &ServeArgs) -> Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let bound = listener.local_addr().context("reading the bound address")?;
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    hosts.push(bound.ip().to_string());
    hosts.extend(args.allow_hosts.iter().cloned());
    let config = StreamableHttpServerConfig::default().with_allowed_hosts(hosts);
    let tasks = TaskManager::new();
    let service = StreamableHttpService::new(
        move || {
            Ok(Lion {
                place: Arc::clone(&place),
                tasks: tasks.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    // The address, once the socket listens: a caller (or a test) that
    // asked for port 0 learns the port here.
    tracing::info!(%bound, "serving MCP over streamable HTTP at /mcp");
    {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "lionrt mcp serve: http://{bound}/mcp");
    }
    let token = args.token.clone().map(|t| Arc::new(t.0));
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(error) => {
                tracing::warn!(%error, "accept failed");
                continue;
            }
        };
        let service = service.clone();
        let token = token.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request| {
                let service = service.clone();
                let token = token.clone();
                async move {
                    if let Some(token) = &token
                        && !authorized(request.headers(), token)
                    {
                        return Ok::<_, std::convert::Infallible>(unauthorized());
                    }
                    Ok(service.handle(request).await)
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, handler)
                .await;
        });
    }
}

/// Whether the request carries `Authorization: Bearer <token>` (compared in
/// constant time).
fn authorized(headers: &http::HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0_u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn unauthorized() -> http::Response<
    http_body_util::combinators::BoxBody<hyper::body::Bytes, std::convert::Infallible>,
> {
    use http_body_util::BodyExt;
    let mut response = http::Response::new(
        http_body_util::Full::new(hyper::body::Bytes::from_static(
            b"missing or wrong bearer token\n",
        ))
        .boxed(),
    );
    *response.status_mut() = http::StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(
        http::header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static("Bearer"),
    );
    response
}

/// The server: where it works (the store, the jobs' directory), and the
/// MCP Tasks it materialized (shared by every HTTP session).
#[derive(Clone)]
struct Lion {
    place: Arc<Place>,
    tasks: TaskManager,
}

impl Lion {
    /// The caller as an actor id: `mcp:<clientInfo.name>` from its
    /// `initialize` (`mcp:unknown` when it gave none).
    fn caller(context: &RequestContext<RoleServer>) -> String {
        let name = context
            .peer
            .peer_info()
            .map(|info| info.client_info.name.clone())
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| "unknown".into());
        let name: String = name.chars().filter(|c| !c.is_control()).take(100).collect();
        format!("mcp:{name}")
    }

    /// Runs one op; `cancelled` gives the future a long verb (`job.wait`)
    /// ends early on (the request's cancellation, or the task's).
    async fn op<F>(&self, caller: &str, op: &Value, cancelled: impl FnOnce() -> F) -> Value
    where
        F: std::future::Future<Output = ()>,
    {
        let (verb, args) = match verbs::check(op) {
            Ok(v) => v,
            Err(refusal) => {
                return json!({"op": op.get("op"), "ok": false, "error": refusal.message,
                              "schema": refusal.schema});
            }
        };
        let place = &self.place;
        let result = match verb.name {
            "run.submit" => jobs::submit(place, jobs::Launch::Run, caller, &args).await,
            "job.status" => jobs::status(place, &args),
            "job.output" => jobs::output(place, &args),
            "job.list" => jobs::list(place, &args),
            "job.wait" => jobs::wait(place, &args, cancelled()).await,
            "job.kill" => jobs::kill(place, caller, &args).await,
            "job.timeline" => jobs::timeline(place, &args),
            other => jobs::cli_read(place, other, &args).await,
        };
        match result {
            Ok(value) => json!({"op": verb.name, "ok": true, "result": value}),
            Err(e) => json!({"op": verb.name, "ok": false, "error": format!("{e:#}")}),
        }
    }
}

fn result(value: &Value, is_error: bool) -> CallToolResult {
    let text = serde_json::to_string(value).unwrap_or_default();
    let mut result = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(value.clone());
    result
}

fn answer(value: &Value, is_error: bool) -> CallToolResponse {
    CallToolResponse::Complete(result(value, is_error))
}

/// The sessions a call is about: those its `job.wait` ops name and those
/// its `run.submit` ops started (what cancelling its task ends).
fn sessions_of(ops: &[Value], results: &[Value]) -> Vec<String> {
    let waited = ops.iter().filter_map(|op| {
        (op["op"] == "job.wait")
            .then(|| op["args"]["session"].as_str().map(str::to_owned))
            .flatten()
    });
    let submitted = results.iter().filter_map(|r| {
        (r["op"] == "run.submit" && r["ok"] == true)
            .then(|| r["result"]["session"].as_str().map(str::to_owned))
            .flatten()
    });
    let mut all: Vec<String> = waited.chain(submitted).collect();
    all.sort();
    all.dedup();
    all
}

impl Lion {
    /// A call with a `job.wait`, from a client that declared the Tasks
    /// extension: it runs as a task the client polls (`tasks/get`);
    /// `tasks/cancel` ends the legs of the jobs it waits on or submitted,
    /// through `job.kill`'s guarded path, and the task settles cancelled.
    fn spawn_task(&self, caller: String, ops: Vec<Value>) -> CreateTaskResult {
        let lion = self.clone();
        let task = self.tasks.spawn(
            TaskOptions::new().with_poll_interval_ms(250),
            move |ctx: TaskContext| {
                Box::pin(async move {
                    let mut results = Vec::with_capacity(ops.len());
                    for op in &ops {
                        if ctx.is_cancel_requested() {
                            break;
                        }
                        if let Some(name) = op["op"].as_str() {
                            ctx.set_status_message(format!("{name} ({} of {})", results.len() + 1, ops.len()));
                        }
                        results.push(lion.op(&caller, op, || ctx.cancelled()).await);
                    }
                    if ctx.is_cancel_requested() {
                        for session in sessions_of(&ops, &results) {
                            let args = json!({"session": session, "grace_s": 5.0});
                            if let Value::Object(args) = args
                                && let Err(error) = jobs::kill(&lion.place, &caller, &args).await
                            {
                                tracing::info!(%session, %error, "cancelled task: kill not applied");
                            }
                        }
                        return Err(TaskExit::Cancelled);
                    }
                    let failed = results.iter().any(|r| r["ok"] != true);
                    Ok(result(&json!({"results": results}), failed))
                })
            },
        );
        CreateTaskResult::new(task)
    }
}

impl rmcp::ServerHandler for Lion {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("lionrt", env!("CARGO_PKG_VERSION")))
        .with_instructions("lionrt's agent runtime: call `request` with help=true for the verbs.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![tool()]))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel_task(&request.task_id)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != verbs::TOOL {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?} (the one tool is `request`)",
                    request.name
                ),
                None,
            ));
        }
        let args = request.arguments.unwrap_or_default();
        if let Some(key) = args.keys().find(|k| *k != "ops" && *k != "help") {
            return Ok(answer(
                &json!({"error": format!("unknown argument {key:?} (request takes ops and help)"),
                        "schema": verbs::tool_schema()}),
                true,
            ));
        }
        match args.get("help") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => return Ok(answer(&verbs::help_all(), false)),
            Some(Value::String(name)) => {
                return Ok(match verbs::help_one(name) {
                    Some(v) => answer(&v, false),
                    None => answer(
                        &json!({"error": format!("unknown verb {name:?}"), "help": verbs::help_all()}),
                        true,
                    ),
                });
            }
            Some(_) => {
                return Ok(answer(
                    &json!({"error": "help is true or a verb name"}),
                    true,
                ));
            }
        }
        let ops = match args.get("ops") {
            Some(Value::Array(ops)) => ops.clone(),
            None => {
                return Ok(answer(
                    &json!({"error": "give ops=[{op, args}] or help=true"}),
                    true,
                ));
            }
            Some(_) => return Ok(answer(&json!({"error": "ops is an array"}), true)),
        };
        if ops.len() > verbs::MAX_OPS {
            return Ok(answer(
                &json!({"error": format!("{} ops in one call; at most {} are taken", ops.len(), verbs::MAX_OPS)}),
                true,
            ));
        }
        let caller = Self::caller(&context);
        let tasks = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        if tasks && ops.iter().any(|op| op["op"] == "job.wait") {
            return Ok(CallToolResponse::Task(self.spawn_task(caller, ops)));
        }
        let mut results = Vec::with_capacity(ops.len());
        for op in &ops {
            let ct = context.ct.clone();
            results.push(self.op(&caller, op, move || ct.cancelled_owned()).await);
        }
        let failed = results.iter().any(|r| r["ok"] != true);
        Ok(answer(&json!({"results": results}), failed))
    }
}
