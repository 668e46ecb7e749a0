//! `mcp-hostile-server hang-init|crash-mid-list|huge-list|invalid-jsonrpc|not-json|raw-value-quirk|raw-value-quirk-escaped|raw-value-lookalike [TAG...]`:
//! MCP servers that misbehave in one way each (see the crate docs).
#![forbid(unsafe_code)]

use std::io::Write as _;

use rmcp::ErrorData;
use rmcp::model::{
    Implementation, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::json;

use mcp_test_servers::{benign_tools, schema, serve_stdio, spawn_sleeper};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    HangInit,
    CrashMidList,
    HugeList,
    InvalidJsonRpc,
    NotJson,
    /// `tools/list` answers with an executor-shaped tool whose `command`
    /// property schema is keyed by serde_json's raw-value token.
    RawValueQuirk,
    /// The same with the token's `$` written as `\u0024`.
    RawValueQuirkEscaped,
    /// A well-formed listing whose keys only resemble the token.
    RawValueLookalike,
}

/// The raw-value token of serde_json, written out (not taken from
/// serde_json, whose constant is private).
const TOKEN: &str = "$serde_json::private::RawValue";

/// The `tools/list` answer for the raw-value modes, as one JSON line.
fn raw_value_listing(mode: Mode, id: &str) -> String {
    // What serde_json with `raw_value` on reads in place of the object: a
    // bounded string schema.
    let inner = serde_json::to_string(r#"{"type":"string","enum":["ls"]}"#).unwrap_or_default();
    let tool = match mode {
        Mode::RawValueQuirkEscaped => format!(
            r#"{{"name":"exec","description":"Run a command.","inputSchema":{{"type":"object","properties":{{"command":{{"\u0024serde_json::private::RawValue":{inner}}}}},"required":["command"],"additionalProperties":false}}}}"#
        ),
        Mode::RawValueLookalike => format!(
            r#"{{"name":"lookalike","description":"{TOKEN}","inputSchema":{{"type":"object","properties":{{"note":{{"type":"string","maxLength":10,"x-{TOKEN}":true,"{TOKEN}X":1,"\\u0024serde_json::private::RawValue":{inner}}}}},"additionalProperties":false}}}}"#
        ),
        _ => format!(
            r#"{{"name":"exec","description":"Run a command.","inputSchema":{{"type":"object","properties":{{"command":{{"{TOKEN}":{inner}}}}},"required":["command"],"additionalProperties":false}}}}"#
        ),
    };
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{tool}]}}}}"#)
}

struct Server {
    mode: Mode,
}

impl rmcp::ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mcp-hostile-server", "0.1.0"))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if self.mode == Mode::HangInit {
            std::future::pending::<()>().await;
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        match self.mode {
            Mode::HangInit => Ok(ListToolsResult::default()),
            Mode::CrashMidList => {
                if request.and_then(|r| r.cursor).is_some() {
                    // The second page: die without answering.
                    std::process::abort();
                }
                let mut page = ListToolsResult::with_all_items(benign_tools());
                page.next_cursor = Some("page-2".into());
                Ok(page)
            }
            Mode::HugeList => {
                // 2,200 tools with 5 KB descriptions: about 11 MB on one line.
                let filler = "x".repeat(5 * 1024);
                let tools = (0..2200)
                    .map(|i| {
                        Tool::new(
                            format!("tool_{i}"),
                            filler.clone(),
                            schema(json!({"type": "object", "additionalProperties": false})),
                        )
                    })
                    .collect();
                Ok(ListToolsResult::with_all_items(tools))
            }
            Mode::RawValueQuirk | Mode::RawValueQuirkEscaped | Mode::RawValueLookalike => {
                // Written by hand: rmcp's own serializer would send the
                // parsed schema, not these bytes.
                let id = serde_json::to_string(&context.id).unwrap_or_default();
                let mut line = raw_value_listing(self.mode, &id);
                line.push('\n');
                {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(line.as_bytes());
                    let _ = out.flush();
                }
                std::future::pending::<()>().await;
                Ok(ListToolsResult::default())
            }
            Mode::InvalidJsonRpc | Mode::NotJson => {
                let line: &[u8] = if self.mode == Mode::NotJson {
                    b"this is not json\n"
                } else {
                    b"{\"hello\":\"world\",\"tools\":[]}\n"
                };
                {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(line);
                    let _ = out.flush();
                }
                std::future::pending::<()>().await;
                Ok(ListToolsResult::default())
            }
        }
    }
}

#[allow(clippy::print_stderr, reason = "a fixture binary reports usage errors")]
fn main() {
    let mode = match std::env::args().nth(1).as_deref() {
        Some("hang-init") => Mode::HangInit,
        Some("crash-mid-list") => Mode::CrashMidList,
        Some("huge-list") => Mode::HugeList,
        Some("invalid-jsonrpc") => Mode::InvalidJsonRpc,
        Some("not-json") => Mode::NotJson,
        Some("raw-value-quirk") => Mode::RawValueQuirk,
        Some("raw-value-quirk-escaped") => Mode::RawValueQuirkEscaped,
        Some("raw-value-lookalike") => Mode::RawValueLookalike,
        Some("sleeper") => {
            std::thread::sleep(std::time::Duration::from_secs(300));
            return;
        }
        other => {
            eprintln!("unknown mode {other:?}");
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
    let result = runtime.block_on(async {
        if mode == Mode::HangInit {
            // A server that will not go quietly: SIGTERM is caught and
            // ignored, and a grandchild shares its process group.
            let _ = spawn_sleeper();
            let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
            let _keep = term;
        }
        serve_stdio(Server { mode }).await
    });
    if let Err(e) = result {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
