//! OpenAI-compatible endpoints over a [`Transport`] seam (no HTTP client is
//! chosen here), called through an in-process model layer.
//!
//! - [`Model`]: the model handle (`iModel`) every API call goes through
//!   ([`Model::chat`], [`Model::upload`]). It owns an endpoint (config:
//!   model, base URL, body kwargs), an [`Executor`] (rate limit, queue,
//!   in-flight set), the native retry settings, and shares by reference an
//!   explicit [`RetryConfig`](providers_core::RetryConfig) and a
//!   [`CircuitBreaker`]. [`Model::copy`] gives a fresh id and its own
//!   config; [`Model::with_forwarded_mcp`] copies before it changes
//!   anything.
//! - [`Executor`]: a rate-limit denial defers a call (queued, pending) and
//!   each replenish tick re-drives the queue; only a stopped executor or a
//!   full queue refuses. [`Executor::replenisher`] is the refill task, run
//!   on the caller's runtime and ended by [`Executor::stop`].
//! - [`ModelManager`]: closes every registered model at shutdown, once,
//!   reporting a model whose close fails or panics and closing the rest.
//! - [`uses_developer_messages`]: the system-vs-developer role gate, prefix
//!   based and fail-closed (unknown models keep `system`);
//!   [`shape_chat_request`] builds the body.
//! - [`UploadEndpoint`]: Groq transcription, OpenAI audio and OpenAI images
//!   share one replayable-body implementation.
//!
//! **Why the model layer lives here and not in providers-core.** Its only
//! callers are API calls: a model executes requests through a
//! [`Transport`], and the transport, the request shapes and the upload
//! endpoints are this crate's. CLI legs do not queue on an executor: the
//! runner drives one supervised process per leg through the `Provider`
//! seam. So the layer depends on providers-core (endpoint config and its
//! runtime-only state, `Endpoint::copy`, the retry contract, MCP
//! forwarding) and providers-core stays free of it: no transport trait
//! moves down and providers-core keeps no code nothing calls.
//!
//! **Invariant:** no API call bypasses the model: the send functions are
//! private, so every call passes the breaker, the executor's permit and
//! the in-flight record.
//!
//! ```
//! use providers_openai::uses_developer_messages;
//!
//! assert!(uses_developer_messages(Some("openai/gpt-5-2025-08-07")));
//! assert!(!uses_developer_messages(Some("gpt-4o")));
//! assert!(!uses_developer_messages(None));
//! ```
//!
//! Features: none.
#![forbid(unsafe_code)]

mod breaker;
mod chat;
mod error;
mod executor;
mod model;
mod transport;

pub use breaker::CircuitBreaker;
pub use chat::{ChatMessage, ChatRequest, Role, shape_chat_request, uses_developer_messages};
pub use error::Error;
pub use executor::{Acquire, CallGuard, Executor, ExecutorStats, RateLimit};
pub use model::{Close, CloseFailure, Model, ModelConfig, ModelManager};
pub use transport::{Sleeper, Transport, UploadEndpoint};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
