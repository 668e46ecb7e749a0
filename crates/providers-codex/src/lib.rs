//! The Codex CLI provider (`codex exec --json`).
//!
//! - The workspace is conveyed only by `-C`; the child gets no cwd
//!   override, so codex never resolves a bogus `repo/repo`.
//! - Effort is clamped to the model's ceiling ([`clamp_codex_effort`], the
//!   provider's `clamp_effort`) and passed as a `-c` override. Reading of
//!   the spec's open point (CONTRACTS.md, Ambiguities B.7): a model matches
//!   exactly after stripping a `provider/` prefix and a `-YYYY-MM-DD`
//!   suffix; `ultra` on gpt-5.6-luna clamps to `max`.
//! - A forwarded MCP set becomes `-c mcp_servers.<name>.<field>=...`
//!   overrides ([`codex_mcp_overrides`]); each server's `env` and
//!   `http_headers` go to an owner-only profile file
//!   ([`providers_core::PrivateFile`]), never to argv. `exclusive` is the
//!   kwarg [`MCP_EXCLUSIVE_KEY`]. An exclusive set disables by `-c` every
//!   server codex's own config layers declare
//!   ([`codex_declared_mcp_servers`] reads them; kwargs
//!   [`CONFIGURED_MCP_KEY`] and [`PROJECT_MCP_KEY`]).
//! - [`CodexParser`] reads error text from `message` (`error` events) and
//!   `error.message` (`turn.failed`), and applies the benign end-of-stream
//!   rule ([`is_benign_eos`]).
//! - `env` and `on_spawn` are runtime-only fields of [`CodexRequest`] (set
//!   from a [`providers_core::CliCall`] by [`CodexRequest::from_call`]):
//!   `Serialize` skips them, Debug renders `<env: N variable(s)>` and
//!   `<on_spawn>`, and the env becomes the invocation's `env`. No JSON
//!   schema is generated for the request.
//!
//! ```
//! use providers_core::{AgentRequest, Effort, Provider};
//! use providers_codex::CodexProvider;
//!
//! let mut req = AgentRequest::new("fix #42");
//! req.model = Some("gpt-5".into());
//! req.effort = Some(Effort::Max);
//! req.workspace = Some("/repo".into());
//! let inv = CodexProvider::default().invocation(&req)?;
//! assert_eq!(inv.argv, ["codex", "exec", "--json", "--model", "gpt-5",
//!     "-c", "model_reasoning_effort=\"xhigh\"", "-C", "/repo", "--", "fix #42"]);
//! assert_eq!(inv.cwd, None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Features: none.
#![forbid(unsafe_code)]

mod config;
mod effort;
mod error;
mod mcp;
mod parser;
mod provider;
mod request;

pub use config::{
    CODEX_SYSTEM_DIR, CodexConfigLayers, CodexDeclaredMcp, DeclaredMcpServer,
    codex_declared_mcp_servers, mcp_servers_in_toml,
};
pub use effort::{clamp_codex_effort, codex_effort_ceiling};
pub use error::Error;
pub use mcp::{
    CODEX_SECRET_FIELDS, CONFIGURED_MCP_KEY, CodexConfiguredMcp, CodexMcpPlan, MCP_EXCLUSIVE_KEY,
    McpTransportKind, PROJECT_MCP_KEY, codex_mcp_overrides, codex_mcp_overrides_for,
    codex_profile_file_name,
};
pub use parser::{CodexParser, error_text, is_benign_eos};
pub use provider::{CodexProvider, MCP_PROFILE};
pub use request::{CODEX_FLAGS, CodexRequest};
