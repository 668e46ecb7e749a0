//! The scripted endpoint and provider: deterministic replay of scripted
//! responses, so the whole stack runs with no agent CLI installed.
//!
//! - [`ScriptModel`] loads a JSON script (entries of type `text`,
//!   `tool_call`, `structured`, `stream`, `error`, each with an optional
//!   `when` matcher) and serves calls: `when` entries first (each at most
//!   once), then positional entries in order; `when_only` and `positional`
//!   modes; [`Error::ScriptExhausted`] when nothing is left. A malformed
//!   entry is rejected naming its index, kind and field.
//! - [`ScriptedEndpoint`] records calls; cloning it gives an independent
//!   copy of the script.
//! - [`ScriptedProvider`] is a `Provider` whose argv is
//!   `[<program>, <leg args>..., "--script", <file>]`, with the file's
//!   NDJSON (from [`response_to_ndjson`]) in [`Invocation::files`];
//!   [`ScriptedParser`] reads it back.
//! - [`run_leg`] is the leg itself (prints the file, acts on the
//!   `write_file`, `sleep` and `run_command` tool lines). The crate's
//!   `scripted-leg` binary runs it, so the scripted provider needs no host
//!   binary: `ScriptedProvider::new(<path of scripted-leg>, dir, script)`.
//!
//! `when` semantics the spec leaves open, chosen here: every predicate in
//! one `when` must hold (AND), and `after_calls: n` holds once `n` calls
//! have been made before the current one.
//!
//! ```
//! use providers_scripted::{ScriptCall, ScriptModel, Response};
//!
//! let mut s = ScriptModel::from_json(r#"[
//!     {"type": "text", "text": "first"},
//!     {"type": "text", "text": "about tests", "when": {"prompt_contains": "test"}}
//! ]"#)?;
//! let call = |p: &str| ScriptCall { prompt: p.into(), tools: vec![] };
//! assert_eq!(s.next(&call("run the tests"))?, Response::Text { text: "about tests".into() });
//! assert_eq!(s.next(&call("hello"))?, Response::Text { text: "first".into() });
//! assert!(s.next(&call("again")).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Invocation::files`]: providers_core::Invocation::files
//!
//! Features: none.
#![forbid(unsafe_code)]

mod endpoint;
mod error;
mod leg;
mod provider;
mod script;

pub use endpoint::ScriptedEndpoint;
pub use error::Error;
pub use leg::run_leg;
pub use provider::{ScriptedParser, ScriptedProvider, response_to_ndjson};
pub use script::{Response, ScriptCall, ScriptEntry, ScriptMode, ScriptModel, When};
