//! Tool descriptors the fixture servers offer, and the stdio serving loop.

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
