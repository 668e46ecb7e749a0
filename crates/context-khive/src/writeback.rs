//! The rule behind writeback: a tool call that failed and a later call of
//! the same tool that succeeded make one error/resolution pair.

use serde_json::{Map, Value};

use crate::policy::WRITEBACK_MAX_CONTENT_BYTES;
use crate::wire::truncate;

/// One tool call of a finished turn, as the operate() middle saw it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolEvent {
    /// The tool's name.
    pub tool: String,
    /// The arguments it was called with.
    pub arguments: Value,
    /// The error it ended with, or `None` when it succeeded.
    pub error: Option<String>,
}

impl ToolEvent {
    /// A call that succeeded.
    pub fn ok(tool: impl Into<String>, arguments: Value) -> Self {
        Self {
            tool: tool.into(),
            arguments,
            error: None,
        }
    }

    /// A call that failed with `error`.
    pub fn failed(tool: impl Into<String>, arguments: Value, error: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            arguments,
            error: Some(error.into()),
        }
    }
}

/// What [`crate::KhiveProvider::writeback`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WritebackOutcome {
    /// The policy does not opt in; nothing was sent.
    Disabled,
    /// The turn held no error/resolution pair; nothing was sent.
    NothingToWrite,
    /// This many items were stored with `memory.remember`.
    Written {
        /// How many.
        items: usize,
    },
    /// The daemon could not be reached or refused; logged, and the turn
    /// goes on.
    Failed,
}

/// Argument names whose values are never written to memory (matched
/// case-insensitively as substrings): the value is replaced by
/// [`REDACTED`].
pub const SENSITIVE_ARGUMENT_PATTERNS: [&str; 8] = [
    "token",
    "secret",
    "password",
    "passwd",
    "credential",
    "auth",
    "api_key",
    "private_key",
];

/// What a sensitive argument's value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The texts to remember for `events`: for each failed call, the first
/// later successful call of the same tool resolves it. A failure with no
/// resolution is not remembered. The resolving call's arguments are
/// written with the values of sensitive-looking names
/// ([`SENSITIVE_ARGUMENT_PATTERNS`], at any depth) redacted. Identical
/// texts are kept once, each cut to [`WRITEBACK_MAX_CONTENT_BYTES`].
pub fn resolution_pairs(events: &[ToolEvent]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let Some(error) = &event.error else {
            continue;
        };
        let Some(fix) = events[i + 1..]
            .iter()
            .find(|e| e.tool == event.tool && e.error.is_none())
        else {
            continue;
        };
        let text = format!(
            "tool {} failed: {}\nresolved by calling it with: {}",
            event.tool,
            error,
            redact(&fix.arguments)
        );
        let text = truncate(&text, WRITEBACK_MAX_CONTENT_BYTES).to_owned();
        if !out.contains(&text) {
            out.push(text);
        }
    }
    out
}

fn is_sensitive(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SENSITIVE_ARGUMENT_PATTERNS.iter().any(|p| name.contains(p))
}

/// `value` with the value of every sensitive-looking object key replaced.
fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_sensitive(k) {
                        Value::String(REDACTED.to_owned())
                    } else {
                        redact(v)
                    };
                    (k.clone(), v)
                })
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}
