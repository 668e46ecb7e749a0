//! `mcp-hostile-server hang-init|crash-mid-list|huge-list|invalid-jsonrpc|not-json [TAG...]`:
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
        _context: RequestContext<RoleServer>,
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
