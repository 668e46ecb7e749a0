//! The pi coding agent CLI provider (`pi --mode json`).
//!
//! - [`resolve_pi_model`] maps unambiguous model prefixes to `--provider`
//!   ([`PI_MODEL_PROVIDER_MAP`]); ambiguous families (llama, gemma,
//!   mistral) are never guessed.
//! - The prompt is a bare positional argument with no `--` (pi's parser has
//!   none). Stated limit: a prompt starting with `-` or `@` may be misread
//!   by pi; it is passed through unchanged.
//! - [`PiParser`] handles both meanings of `"done"` and yields nothing until
//!   an event carries content; `streams_first_output_early` is false.
//!
//! ```
//! use providers_core::{AgentRequest, Effort, Provider};
//! use providers_pi::PiProvider;
//!
//! let mut req = AgentRequest::new("summarise README.md");
//! req.model = Some("openrouter/qwen/qwen3-coder".into());
//! req.effort = Some(Effort::Max);
//! let inv = PiProvider::default().invocation(&req)?;
//! assert_eq!(inv.argv, ["pi", "--mode", "json", "--print", "--provider", "openrouter",
//!     "--model", "qwen/qwen3-coder", "--thinking", "xhigh", "summarise README.md"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Features: none.
#![forbid(unsafe_code)]

mod error;
mod parser;
mod provider;
mod request;

pub use error::Error;
pub use parser::PiParser;
pub use provider::PiProvider;
pub use request::{
    PI_FLAGS, PI_MODEL_PROVIDER_MAP, PiProviderEntry, PiRequest, pi_thinking, resolve_pi_model,
};
