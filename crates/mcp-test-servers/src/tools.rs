//! Tool descriptors the fixture servers offer, and the stdio and
//! streamable-HTTP serving loops.

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

/// The names of the executor-shaped tools `executor` mode adds.
pub const EXECUTOR_TOOLS: [&str; 2] = ["bash", "run_script"];

/// A JSON Schema object from a literal (a non-object literal gives `{}`).
pub fn schema(value: Value) -> Arc<JsonObject> {
    Arc::new(match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    })
}

/// Narrow tools every admission check lets through.
pub fn benign_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "echo",
            "Echo the given text back.",
            schema(json!({
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": 1000}},
                "required": ["text"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "add",
            "Add two integers.",
            schema(json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "search_code",
            "Search the code base.",
            schema(json!({
                "type": "object",
                "properties": {"query": {"type": "string"}, "repo_id": {"type": "string"}}
            })),
        ),
    ]
}

/// Generic executors dressed as tools: a `bash` with a free-form command
/// and a `run_script` with a free-form script.
pub fn executor_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "bash",
            "Run a shell command.",
            schema(json!({
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"]
            })),
        ),
        Tool::new(
            "run_script",
            "Runs a script with the given interpreter.",
            schema(json!({
                "type": "object",
                "properties": {
                    "interpreter": {"type": "string", "enum": ["python", "node"]},
                    "script": {"type": "string"}
                }
            })),
        ),
    ]
}

/// `n` narrow tools named `tool_00000`, `tool_00001`, ..., each with a
/// small closed schema (the bench's 1,000-tool list).
pub fn many_tools(n: usize) -> Vec<Tool> {
    (0..n)
        .map(|i| {
            Tool::new(
                format!("tool_{i:05}"),
                format!("Look up record {i} by its id."),
                schema(json!({
                    "type": "object",
                    "properties": {
                        "record_id": {"type": "string", "maxLength": 64},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                        "order": {"type": "string", "enum": ["asc", "desc"]}
                    },
                    "required": ["record_id"],
                    "additionalProperties": false
                })),
            )
        })
        .collect()
}

/// Serves `handler` on this process's stdin/stdout until the client goes
/// away.
pub async fn serve_stdio<H: rmcp::ServerHandler>(handler: H) -> Result<(), String> {
    let running = handler
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("serve failed: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| format!("server task failed: {e}"))?;
    Ok(())
}

/// Serves a fresh handler from `factory` per MCP session over streamable
/// HTTP on `127.0.0.1`, at an ephemeral port, path `/mcp`. The endpoint's
/// URL is printed as the first line on stdout once the socket listens; the
/// server runs until stdin reaches end of file (its parent went away or
/// closed it) or the process is killed.
///
/// # Errors
///
/// A message when the socket cannot be bound or stdout written.
pub async fn serve_http<H, F>(factory: F) -> Result<(), String>
where
    H: rmcp::ServerHandler,
    F: Fn() -> H + Send + Sync + 'static,
{
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| format!("bind: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("local_addr: {e}"))?
        .port();
    let service = StreamableHttpService::new(
        move || Ok(factory()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let mut stdout = tokio::io::stdout();
    stdout
        .write_all(format!("http://127.0.0.1:{port}/mcp\n").as_bytes())
        .await
        .map_err(|e| format!("stdout: {e}"))?;
    stdout.flush().await.map_err(|e| format!("stdout: {e}"))?;
    let accept = async {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let service = hyper_util::service::TowerToHyperService::new(service.clone());
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                // A connection's failure concerns that client alone.
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    };
    let stdin_closed = async {
        let mut stdin = tokio::io::stdin();
        let mut buf = [0_u8; 256];
        while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
    };
    tokio::select! {
        () = accept => {}
        () = stdin_closed => {}
    }
    Ok(())
}

/// Starts a long sleeper in this process's group (the same binary in mode
/// `sleeper`, carrying this process's arguments so a test's tag finds it):
/// the grandchild a teardown must not leave behind.
pub fn spawn_sleeper() -> std::io::Result<()> {
    let exe = std::env::current_exe()?;
    let mut args = std::env::args_os().skip(2);
    let mut command = std::process::Command::new(exe);
    command.arg("sleeper");
    command.args(&mut args);
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Deliberately not waited for: it must outlive this function.
    let _child = command.spawn()?;
    Ok(())
}
