//! The tool call a gate judges: which server, which tool, which arguments.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool invocation as the gate sees it, before it runs.
///
/// `arguments` is the JSON value the caller is about to send (for an MCP
/// server, the `arguments` of `tools/call`). `cwd` is the working directory
/// of the session making the call, when it has one; the path guard does not
/// use it (relative paths are formed against the guard's first root).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The server (or toolkit) that offers the tool; empty for a native tool.
    pub server: String,
    /// The tool's name as the server advertises it.
    pub tool: String,
    /// The call's arguments.
    pub arguments: Value,
    /// The calling session's working directory, when known.
    pub cwd: Option<PathBuf>,
}

impl ToolCall {
    /// A call of `tool` on `server` with `arguments` and no working directory.
    pub fn new(server: impl Into<String>, tool: impl Into<String>, arguments: Value) -> Self {
        Self {
            server: server.into(),
            tool: tool.into(),
            arguments,
            cwd: None,
        }
    }

    /// The same call with a working directory.
    #[must_use]
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }
}
