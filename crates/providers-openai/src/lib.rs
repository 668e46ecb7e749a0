//! OpenAI-compatible endpoints over a [`Transport`] seam (no HTTP client is
//! chosen here).
//!
//! - [`uses_developer_messages`]: the system-vs-developer role gate, prefix
//!   based and fail-closed (unknown models keep `system`).
//! - [`shape_chat_request`], [`chat`]: request shaping and a chat call
//!   under the endpoint retry contract of providers-core.
//! - [`upload`]: Groq transcription, OpenAI audio and OpenAI images share
//!   one replayable-body implementation ([`UploadEndpoint`]).
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

mod chat;
mod error;
mod transport;

pub use chat::{ChatMessage, ChatRequest, Role, shape_chat_request, uses_developer_messages};
pub use error::Error;
pub use transport::{Sleeper, Transport, UploadEndpoint, chat, upload};
