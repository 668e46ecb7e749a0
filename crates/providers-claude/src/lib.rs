//! The Claude Code CLI provider.
//!
//! [`ClaudeCodeRequest`] declares one flag kind per CLI-mappable field
//! ([`CLAUDE_FLAGS`]) and argv is built from that metadata alone.
//! `mcp_servers` is `None` by default and emits nothing; `Some({})` emits
//! `--mcp-config {"mcpServers":{}}`, forcing zero servers. A set whose
//! servers carry `env` or `headers` never goes on argv (readable by any
//! local user through `/proc`): it is written owner-only to
//! `mcp_config_dir`/[`MCP_CONFIG_FILE`] (an [`Invocation`] file) and
//! `--mcp-config` gets the path; without `mcp_config_dir` such a request is
//! refused. Debug and serde render the set redacted. Write-target
//! paths (`system_prompt_file`, `append_system_prompt_file`, `mcp_config`,
//! `settings`) must stay inside the workspace; `add_dir` is exempt (an
//! absolute `add_dir` is an intentional read-only grant).
//! [`ClaudeParser`] reads `--output-format stream-json`. Effort goes to
//! `--effort`, clamped onto the CLI's `low..=max` ([`clamp_claude_effort`],
//! the provider's `clamp_effort`: the spec gives no table for Claude Code,
//! the range is the 2.1 CLI's). A forwarded MCP set's `exclusive` is
//! [`STRICT_MCP_CONFIG_KEY`].
//!
//! `env` and `on_spawn` are runtime-only fields of [`ClaudeCodeRequest`]
//! (set from a [`providers_core::CliCall`] by
//! [`ClaudeCodeRequest::from_call`]): `Serialize` skips them, Debug renders
//! `<env: N variable(s)>` and `<on_spawn>`, and the env becomes the
//! invocation's `env`. No JSON schema is generated for the request.
//!
//! ```
//! use providers_core::{AgentRequest, Provider};
//! use providers_claude::ClaudeProvider;
//!
//! let mut req = AgentRequest::new("count the TODOs");
//! req.model = Some("sonnet".into());
//! let inv = ClaudeProvider::default().invocation(&req)?;
//! assert_eq!(inv.argv, ["claude", "-p", "--output-format", "stream-json", "--verbose",
//!     "--model", "sonnet", "--", "count the TODOs"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Features: none.
//!
//! [`Invocation`]: providers_core::Invocation
#![forbid(unsafe_code)]

mod error;
mod parser;
mod provider;
mod request;

pub use error::Error;
pub use parser::ClaudeParser;
pub use provider::ClaudeProvider;
pub use request::{
    CLAUDE_FLAGS, ClaudeCodeRequest, MCP_CONFIG_FILE, STRICT_MCP_CONFIG_KEY, clamp_claude_effort,
};
