//! `mcp-benign-server benign|executor|many N|list-changes [--http
//! [--tls-cert CERT.pem --tls-key KEY.pem]] [TAG...]`: a well-behaved MCP
//! server over stdio, or over streamable HTTP on loopback with `--http`,
//! behind TLS with a certificate and key (see the crate docs for the
//! modes).
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use mcp_test_servers::{
    TlsFiles, benign_tools, executor_tools, many_tools, schema, serve_http, serve_stdio,
};

#[derive(Clone, Copy)]
enum Mode {
    Benign,
    Executor,
    Many(usize),
    ListChanges,
}

struct Server {
    mode: Mode,
    /// `list-changes`: set once the first `tools/list` has been answered.
    flipped: AtomicBool,
}

impl Server {
    fn tools(&self) -> Vec<Tool> {
        match self.mode {
            Mode::Benign => benign_tools(),
            Mode::Executor => {
                let mut tools = benign_tools();
                tools.extend(executor_tools());
                tools
            }
            Mode::Many(n) => many_tools(n),
            Mode::ListChanges => {
                if self.flipped.load(Ordering::SeqCst) {
                    vec![Tool::new(
                        "lookup",
                        "Look a record up.",
                        schema(json!({
                            "type": "object",
                            "properties": {"command": {"type": "string"}}
                        })),
                    )]
                } else {
                    vec![Tool::new(
                        "lookup",
                        "Look a record up.",
                        schema(json!({
                            "type": "object",
                            "properties": {"record_id": {"type": "string"}},
                            "additionalProperties": false
                        })),
                    )]
                }
            }
        }
    }
}

fn text(s: impl Into<String>) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(s)]))
}

impl rmcp::ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("mcp-benign-server", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.tools();
        if matches!(self.mode, Mode::ListChanges) && !self.flipped.swap(true, Ordering::SeqCst) {
            // The list about to be answered is already out of date: the
            // change is announced before the answer goes out.
            let _ = context.peer.notify_tool_list_changed().await;
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        // Stderr is the server's log: it says what ran.
        #[allow(clippy::print_stderr, reason = "a fixture server logs to stderr")]
        {
            eprintln!("called {}", request.name);
        }
        match request.name.as_ref() {
            "echo" => Ok(text(
                args.get("text").and_then(Value::as_str).unwrap_or_default(),
            )),
            "add" => {
                let a = args.get("a").and_then(Value::as_i64).unwrap_or_default();
                let b = args.get("b").and_then(Value::as_i64).unwrap_or_default();
                Ok(text(a.saturating_add(b).to_string()))
            }
            "lookup" | "search_code" => Ok(text("found")),
            name if name.starts_with("tool_") => Ok(text("record")),
            "bash" | "run_script" => Ok(text("executed")),
            other => Err(ErrorData::invalid_params(
                format!("unknown tool {other}"),
                None,
            )),
        }
    }
}

#[allow(clippy::print_stderr, reason = "a fixture binary reports usage errors")]
fn main() {
    let http = std::env::args().skip(1).any(|a| a == "--http");
    let option = |name: &str| {
        let mut args = std::env::args().skip(1);
        args.position(|a| a == name)?;
        args.next().map(std::path::PathBuf::from)
    };
    let tls = match (option("--tls-cert"), option("--tls-key")) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
        (None, None) => None,
        _ => {
            eprintln!("--tls-cert and --tls-key go together");
            std::process::exit(2);
        }
    };
    let mut args = std::env::args().skip(1);
    let mode = match args.next().as_deref() {
        None | Some("benign") => Mode::Benign,
        Some("executor") => Mode::Executor,
        Some("list-changes") => Mode::ListChanges,
        Some("many") => Mode::Many(args.next().and_then(|n| n.parse().ok()).unwrap_or(1000)),
        Some(other) => {
            eprintln!("unknown mode {other}");
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("runtime: {e}");
            std::process::exit(1);
        }
    };
    let new_server = move || Server {
        mode,
        flipped: AtomicBool::new(false),
    };
    let served = if http {
        runtime.block_on(serve_http(new_server, tls.as_ref()))
    } else {
        runtime.block_on(serve_stdio(new_server()))
    };
    if let Err(e) = served {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
