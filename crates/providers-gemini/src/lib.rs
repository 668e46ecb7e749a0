//! The Gemini provider, driving Google's Antigravity CLI (`agy`) in
//! headless print mode with `--output-format json`.
//!
//! - Names `gemini-code`, `gemini-cli` and `gemini_cli` (and `gemini`,
//!   `agy`) resolve here ([`resolve_provider_name`]).
//! - agy has no effort flag: [`resolve_agy_model`] bakes effort into the
//!   model's display suffix (`Gemini 3.1 Pro (High)`); a concrete
//!   `(...)`-qualified model wins over effort unless a persisted one is
//!   re-resolved with `reapply_effort`, and a model typed this turn always
//!   wins. The one clamp table is [`clamp_agy_effort`] (none/minimal/low to
//!   Low, medium to Medium, high and above to High; Gemini 3.1 Pro has no
//!   Medium, so medium rounds up to High).
//! - The workspace is the child's cwd (agy resolves relative `--add-dir`
//!   against it); stdin is the null device; `streams_first_output_early`
//!   is false because the single result arrives at the very end.
//! - `conversation_id` is the resume id, passed back via `--conversation`.
//!
//! ```
//! use providers_core::{AgentRequest, Effort, Provider};
//! use providers_gemini::GeminiProvider;
//!
//! let mut req = AgentRequest::new("explain the config loader");
//! req.model = Some("gemini-3.1-pro".into());
//! req.effort = Some(Effort::Medium);
//! req.workspace = Some("/repo".into());
//! let inv = GeminiProvider::default().invocation(&req)?;
//! assert_eq!(inv.argv, ["agy", "--output-format", "json", "--model", "Gemini 3.1 Pro (High)",
//!     "-p", "explain the config loader"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Features: none.
#![forbid(unsafe_code)]

mod error;
mod model;
mod parser;
mod provider;

pub use error::Error;
pub use model::{
    AGY_MODELS, AgyModel, AgyTier, DEFAULT_AGY_MODEL, ModelSource, agy_effort_tier,
    clamp_agy_effort, resolve_agy_model,
};
pub use parser::{
    AgyParser, parse_agy_error_line, parse_gemini_cli_output, parse_with_tool_callbacks,
};
pub use provider::{AGY_FLAGS, AgyRequest, GEMINI_NAMES, GeminiProvider, resolve_provider_name};
