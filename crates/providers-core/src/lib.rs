//! The provider seam and everything the agent-CLI providers share.
//!
//! - [`CliFields`], [`FlagSpec`], [`FlagKind`]: the CLI flag metadata
//!   protocol. A request declares one kind per field (`value`, `bool`,
//!   `bool_pair`, `list_args`, `json_value`, `repeat`) and argv is built
//!   from that metadata alone, one value per argv element, never a shell
//!   string.
//! - [`Effort`], [`normalize_effort`], [`clamp_codex_effort`],
//!   [`clamp_agy_effort`]: the effort vocabulary and clamps. Unknown levels
//!   are an error, never a silent clamp.
//! - [`StreamEvent`]: the provider-neutral event every parser yields.
//! - [`Provider`], [`StreamParser`], [`Invocation`]: the seam the supervisor
//!   runs. Synchronous; it names no async runtime.
//! - [`retry_with_backoff`], [`call_with_retries`]: retries with per-instance
//!   exclusion and the endpoint retry contract; [`replayable_body`] for
//!   request bodies a retry may resend.
//! - [`apply_forwarded_mcp_servers`], [`codex_mcp_overrides`]: MCP server
//!   set forwarding (an explicit empty set is still forwarded).
//! - [`EndpointConfig`], [`Endpoint`], [`Model`], [`ModelManager`]: endpoint
//!   configuration whose runtime-only values ([`RUNTIME_STATE_NAMES`]:
//!   `env`, `on_spawn`) never reach serialisation, iteration or Debug; model
//!   copies; shutdown of every model.
//! - [`RateLimitedProcessor`]: rate-limit denial defers, each tick re-drives.
//!
//! **Readings of open points in the spec** (CONTRACTS.md, Ambiguities B):
//! - Effort (6): eight levels; agy's table maps none/minimal/low to Low,
//!   medium to Medium, high and above to High; for Gemini 3.1 Pro (no
//!   Medium) medium goes up to High.
//! - Codex ceilings (7): a model matches exactly after stripping a
//!   `provider/` prefix and a `-YYYY-MM-DD` suffix; `ultra` on
//!   gpt-5.6-luna clamps to `max`.
//! - `max_retries` (8): `0` is one attempt; after the active layer gives up
//!   the caller receives the non-retryable sentinel, whose source is the
//!   HTTP error.
//! - Runtime-only values (21): [`CliCall`] carries `env`/`on_spawn` for any
//!   provider, so all four CLIs get the same redaction.
//! - Effort on Claude Code: the spec gives no clamp table or flag, so the
//!   Claude provider passes no effort.
//!
//! **Invariant:** no process, file or network I/O happens here except
//! [`PrivateFile::write_owner_only`], the one place an owner-only file is
//! created, and reading a caller-supplied body in [`replayable_body`].
//!
//! ```
//! use providers_core::{build_declarative_cli_args, normalize_effort, Effort, FlagKind,
//!     FlagSpec, FlagValue};
//!
//! const SPECS: &[FlagSpec] = &[
//!     FlagSpec::new("model", "--model", FlagKind::Value),
//!     FlagSpec::new("verbose", "--verbose", FlagKind::Bool),
//! ];
//! let argv = build_declarative_cli_args(SPECS, |f| match f {
//!     "model" => Some(FlagValue::Str("sonnet".into())),
//!     "verbose" => Some(FlagValue::Bool(true)),
//!     _ => None,
//! })?;
//! assert_eq!(argv, ["--model", "sonnet", "--verbose"]);
//! assert_eq!(normalize_effort("  High ")?, Effort::High);
//! assert!(normalize_effort("extreme").is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Features: none.
#![forbid(unsafe_code)]

mod body;
mod effort;
mod endpoint;
mod error;
mod event;
mod flags;
mod kwargs;
mod mcp;
mod model;
mod processor;
mod provider;
mod registry;
mod retry;
mod seam;

pub use body::{BodyFactory, BodySource, ReadSeek, replayable_body};
pub use effort::{
    AgyTier, Effort, clamp_agy_effort, clamp_claude_effort, clamp_codex_effort,
    codex_effort_ceiling, normalize_effort, strip_provider,
};
pub use endpoint::{
    ChildEnv, CliCall, ConfigFields, Endpoint, EndpointConfig, KwargValue, OnSpawn,
    RUNTIME_STATE_NAMES, RuntimeState, SpawnInfo, accepted_keys,
};
pub use error::{Error, HttpError};
pub use event::{ErrorKind, FinalResult, StreamEvent, Usage};
pub use flags::{
    CliFields, FlagKind, FlagSpec, FlagValue, build_cli_args_from_map, build_declarative_cli_args,
    parse_declarative_cli_args,
};
pub use kwargs::Kwargs;
pub use mcp::{
    CODEX_SECRET_FIELDS, CodexMcpPlan, ForwardedMcp, MCP_EXCLUSIVE_KEY, MCP_SECRET_FIELDS,
    MCP_SERVERS_KEY, McpServers, REDACTED, STRICT_MCP_CONFIG_KEY, apply_forwarded_mcp_servers,
    codex_mcp_overrides, codex_profile_file_name, provider_accepts_forwarded_mcp,
};
pub use model::{
    CallGuard, CircuitBreaker, Close, DEFAULT_RATE_LIMIT, Executor, Model, ModelManager,
};
pub use processor::{EventStatus, RateLimitedProcessor, run_replenisher};
pub use provider::{
    AgentRequest, Invocation, PrivateFile, Provider, Stdin, StreamParser, parse_stream,
};
pub use registry::{
    EndpointMatch, EndpointRegistry, NoPlugins, PluginActivator, PluginTarget, ProviderFactory,
};
pub use retry::{
    Backoff, EndpointRetry, RetryConfig, TransportFailure, call_with_retries, classify_http_error,
    retry_with_backoff,
};
pub use seam::check_provider_contract;
