//! The provider seam and everything the agent-CLI providers share.
//!
//! - [`CliFields`], [`FlagSpec`], [`FlagKind`]: the CLI flag metadata
//!   protocol. A request declares one kind per field (`value`, `bool`,
//!   `bool_pair`, `list_args`, `json_value`, `repeat`) and argv is built
//!   from that metadata alone, one value per argv element, never a shell
//!   string.
//! - [`Effort`], [`normalize_effort`]: the effort vocabulary. Unknown
//!   levels are an error, never a silent clamp. Each provider clamps the
//!   levels onto its CLI in [`Provider::clamp_effort`].
//! - [`StreamEvent`]: the provider-neutral event every parser yields.
//! - [`Provider`], [`StreamParser`], [`Invocation`]: the seam the supervisor
//!   runs. Synchronous; it names no async runtime. What differs between
//!   providers is asked of the provider ([`Provider::clamp_effort`],
//!   [`Provider::mcp_forwarding`]); nothing here branches on a provider's
//!   name.
//! - [`retry_with_backoff`], [`call_with_retries`], [`call_with_retries_on`]:
//!   retries with per-instance exclusion and the endpoint retry contract;
//!   [`replayable_body`] for request bodies a retry may resend. They take
//!   plain closures returning futures and hold no borrow of them across an
//!   `.await`, so their futures are `Send` whenever what they are given is
//!   (they can be `tokio::spawn`ed on a multi-threaded runtime).
//! - [`apply_forwarded_mcp_servers`], [`McpServers`]: MCP server set
//!   forwarding (an explicit empty set is still forwarded) and its redacted
//!   rendering.
//! - [`EndpointConfig`], [`Endpoint`]: endpoint configuration whose
//!   runtime-only values ([`RUNTIME_STATE_NAMES`]: `env`, `on_spawn`) never
//!   reach serialisation, iteration or Debug; [`Endpoint::copy`] carries
//!   them to a copy shallowly. The carriers are the supervisor's own
//!   ([`ChildEnv`], [`OnSpawn`], re-exported from `cli-supervisor`), so a
//!   value set on a request or endpoint is the very value a leg is spawned
//!   with; [`invocation_env`] reads an env into an [`Invocation`].
//!
//! **Readings of open points in the spec** (CONTRACTS.md, Ambiguities B;
//! the effort readings 6 and 7 are in the providers that clamp:
//! `providers-gemini` and `providers-codex`):
//! - Effort (6): eight levels, one enum.
//! - `max_retries` (8): `0` is one attempt; after the active layer gives up
//!   the caller receives the non-retryable sentinel, whose source is the
//!   HTTP error.
//! - Runtime-only values (21): [`CliCall`] carries `env`/`on_spawn` for any
//!   provider, so all four CLIs get the same redaction.
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
mod provider;
mod retry;
mod seam;

pub use body::{BodyFactory, BodySource, ReadSeek, replayable_body};
pub use effort::{Effort, normalize_effort, strip_provider};
pub use endpoint::{
    ChildEnv, CliCall, ConfigFields, Endpoint, EndpointConfig, KwargValue, OnSpawn,
    RUNTIME_STATE_NAMES, RuntimeState, SpawnedProcess, accepted_keys, invocation_env,
};
pub use error::{Error, HttpError};
pub use event::{ErrorKind, FinalResult, StreamEvent, Usage};
pub use flags::{
    CliFields, FlagKind, FlagSpec, FlagValue, build_cli_args_from_map, build_declarative_cli_args,
    parse_declarative_cli_args,
};
pub use kwargs::Kwargs;
pub use mcp::{
    ForwardedMcp, MCP_SECRET_FIELDS, MCP_SERVERS_KEY, McpForwarding, McpServers, REDACTED,
    apply_forwarded_mcp_servers,
};
pub use provider::{
    AgentRequest, Invocation, PrivateFile, Provider, Stdin, StreamParser, parse_stream,
};
pub use retry::{
    Backoff, EndpointRetry, RetryConfig, TransportFailure, call_with_retries, call_with_retries_on,
    classify_http_error, retry_with_backoff,
};
pub use seam::check_provider_contract;
