//! `mcp-khive-server ok|fail|crash|slow LOG [TAG...]`: a fake khive daemon over
//! MCP stdio, for context-khive's tests.
//!
//! It offers one tool, `request`, taking `{"ops": [{"verb", "params"}]}`:
//! a batch of khive verbs answered in one round trip. Every `tools/call`
//! is appended to the file `LOG` as one JSON line (`{"tool", "arguments"}`)
//! before it is answered, so a test can see exactly what was emitted.
//!
//! Verbs and the parameters each accepts (any other parameter is refused,
//! as the real daemon's read verbs refuse unknown parameters):
//!
//! - `memory.recall`: `query` (required), `limit`;
//! - `memory.compose`: `query` (required), `limit`;
//! - `brain.auto_feedback`: `profile_id` (required, non-empty), `query`,
//!   `namespace`;
//! - `memory.remember`: `content` (required), `kind`, `salience`,
//!   `provenance`, `namespace`.
//!
//! Modes: `ok` answers; `fail` logs the call and answers every one with a
//! tool error; `crash` logs the call and exits without answering; `slow`
//! logs the call and answers it like `ok` after 5 s.
#![forbid(unsafe_code)]

use std::io::Write;
use std::path::PathBuf;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

use mcp_test_servers::{schema, serve_stdio};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Ok,
    Fail,
    Crash,
    Slow,
}

struct Server {
    mode: Mode,
    log: PathBuf,
}

/// The parameters a verb accepts, and the one it requires.
fn accepted(verb: &str) -> Option<(&'static [&'static str], &'static str)> {
    match verb {
        "memory.recall" | "memory.compose" => Some((&["query", "limit"], "query")),
        "brain.auto_feedback" => Some((&["profile_id", "query", "namespace"], "profile_id")),
        "memory.remember" => Some((
            &["content", "kind", "salience", "provenance", "namespace"],
            "content",
        )),
        _ => None,
    }
}

fn run_op(op: &Value) -> Result<Value, String> {
    let verb = op
        .get("verb")
        .and_then(Value::as_str)
        .ok_or("an op without a verb")?;
    let params = op
        .get("params")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("{verb}: params must be an object"))?;
    let (allowed, required) = accepted(verb).ok_or_else(|| format!("unknown verb {verb}"))?;
    if let Some(unknown) = params.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("{verb}: unknown parameter {unknown}"));
    }
    let required_value = params
        .get(required)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("{verb}: {required} is required"))?;
    let limit = params
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(2)
        .min(5);
    Ok(match verb {
        "memory.recall" => {
            let items: Vec<Value> = (0..limit)
                .map(|i| {
                    json!({
                        "id": format!("mem-{i}"),
                        "content": format!("note {i} about {required_value}"),
                        "score": 0.9 - (i as f64) / 10.0,
                    })
                })
                .collect();
            json!({"verb": verb, "items": items})
        }
        "memory.compose" => {
            json!({"verb": verb, "text": format!("composed context for {required_value}")})
        }
        "brain.auto_feedback" => json!({"verb": verb, "recorded": true}),
        _ => json!({"verb": verb, "id": "mem-new"}),
    })
}

fn answer(arguments: &Map<String, Value>) -> Result<Value, String> {
    let ops = arguments
        .get("ops")
        .and_then(Value::as_array)
        .ok_or("ops must be an array")?;
    let mut results = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        results.push(run_op(op).map_err(|e| format!("op {i}: {e}"))?);
    }
    Ok(json!({"results": results}))
}

impl Server {
    fn log_call(&self, tool: &str, arguments: &Map<String, Value>) {
        let line = json!({"tool": tool, "arguments": arguments}).to_string() + "\n";
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            #[allow(clippy::print_stderr, reason = "a fixture server logs to stderr")]
            {
                eprintln!("log {}: {e}", self.log.display());
            }
        }
    }
}

impl rmcp::ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mcp-khive-server", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "request",
            "Run a batch of khive memory verbs in one round trip.",
            schema(json!({
                "type": "object",
                "properties": {
                    "ops": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 16,
                        "items": {
                            "type": "object",
                            "properties": {
                                "verb": {
                                    "type": "string",
                                    "enum": [
                                        "memory.recall",
                                        "memory.compose",
                                        "brain.auto_feedback",
                                        "memory.remember"
                                    ]
                                },
                                "params": {"type": "object"}
                            },
                            "required": ["verb", "params"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["ops"],
                "additionalProperties": false
            })),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        self.log_call(&request.name, &args);
        match self.mode {
            Mode::Crash => std::process::exit(3),
            Mode::Fail => {
                return Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                    ContentBlock::text("khive store unavailable"),
                ])));
            }
            Mode::Slow => tokio::time::sleep(std::time::Duration::from_secs(5)).await,
            Mode::Ok => {}
        }
        if request.name != "request" {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {}", request.name),
                None,
            ));
        }
        Ok(CallToolResponse::Complete(match answer(&args) {
            Ok(value) => CallToolResult::success(vec![ContentBlock::text(value.to_string())]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e)]),
        }))
    }
}

#[allow(clippy::print_stderr, reason = "a fixture binary reports usage errors")]
fn main() {
    let mut args = std::env::args().skip(1);
    let mode = match args.next().as_deref() {
        Some("ok") => Mode::Ok,
        Some("fail") => Mode::Fail,
        Some("crash") => Mode::Crash,
        Some("slow") => Mode::Slow,
        other => {
            eprintln!("usage: mcp-khive-server ok|fail|crash|slow LOG [TAG...] (got {other:?})");
            std::process::exit(2);
        }
    };
    let Some(log) = args.next().map(PathBuf::from) else {
        eprintln!("usage: mcp-khive-server ok|fail|crash|slow LOG [TAG...]");
        std::process::exit(2);
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
    if let Err(e) = runtime.block_on(serve_stdio(Server { mode, log })) {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
