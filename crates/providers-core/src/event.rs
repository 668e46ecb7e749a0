//! The stream event every provider's output is mapped onto.

use serde::Serialize;

/// Token counts reported by a provider: the run's totals so far.
///
/// Fields a provider does not report stay `None` (a missing cost is
/// "unpriced", never 0). Each report replaces the one before, so a parser
/// whose CLI reports usage per message (pi) sums the messages itself, and
/// one whose CLI reports running totals passes them on as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Usage {
    /// Input (prompt) tokens.
    pub input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// Input tokens served from a cache.
    pub cached_input_tokens: Option<u64>,
    /// Input tokens written to a cache.
    pub cache_write_tokens: Option<u64>,
    /// Reasoning/thinking tokens.
    pub reasoning_tokens: Option<u64>,
    /// Total tokens, where reported.
    pub total_tokens: Option<u64>,
    /// Cost in US dollars, where reported.
    pub cost_usd: Option<f64>,
    /// The model of the latest turn, where reported.
    pub model: Option<String>,
    /// Model turns (API round trips) of the run, where reported.
    pub num_turns: Option<u64>,
    /// The run's duration in milliseconds as the CLI measured it, where
    /// reported.
    pub duration_ms: Option<u64>,
}

/// How a run ended according to its own output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FinalResult {
    /// `true` when the provider reports failure.
    pub is_error: bool,
    /// The final answer text, where the provider gives one.
    pub text: Option<String>,
    /// The error text, when `is_error`.
    pub error: Option<String>,
    /// The provider's own subtype/status word (`success`, `error_max_turns`,
    /// `SUCCESS`, ...), verbatim.
    pub subtype: Option<String>,
}

/// Why an error event was produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A line that is not JSON (a banner or warning on stdout).
    InvalidJson,
    /// A JSON line whose shape the parser could not read.
    BadShape,
    /// The provider reported a non-fatal error or warning; the run goes on.
    Warning,
    /// The provider reported a fatal failure.
    Failed,
    /// The stream ended with no terminal event: a crashed or interrupted run.
    Incomplete,
}

/// One event of a provider's output, provider-neutral.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StreamEvent {
    /// The session/thread/conversation id to resume with.
    SessionId {
        /// The id.
        id: String,
    },
    /// Assistant text.
    Text {
        /// The text.
        text: String,
    },
    /// Assistant reasoning.
    Thinking {
        /// The text.
        text: String,
    },
    /// A tool call started.
    ToolUse {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// The call's input.
        input: serde_json::Value,
    },
    /// A tool call's result.
    ToolResult {
        /// The id of the call this answers.
        id: String,
        /// The result content, verbatim.
        content: serde_json::Value,
        /// Whether the tool reported failure.
        is_error: bool,
    },
    /// Token usage (replaces any earlier report).
    Usage(Usage),
    /// The run's terminal result.
    Final(FinalResult),
    /// The stream ended normally on a sentinel that looks like an error
    /// (codex's `{"type":"error","error":{}}` after a resumed session).
    BenignEnd,
    /// The model API answered with an error (authentication, rate limit,
    /// overload, ...). The CLI's synthetic text for it is carried here and
    /// never reported as assistant text.
    ApiError {
        /// The error's class as the CLI names it (`authentication_failed`,
        /// `rate_limit`, ...), where given.
        class: Option<String>,
        /// The HTTP status of the API's answer, where given.
        status: Option<u16>,
        /// The CLI's description of it.
        message: String,
    },
    /// Something went wrong; parsing continues after it.
    Error {
        /// What kind of problem.
        kind: ErrorKind,
        /// A description; never a whole input line.
        message: String,
        /// 1-based line number, where known.
        line: Option<u64>,
    },
}

impl StreamEvent {
    /// An error event.
    pub fn error(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self::Error {
            kind,
            message: message.into(),
            line: None,
        }
    }

    /// Whether the event ends the run (a final result or a benign end).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Final(_) | Self::BenignEnd)
    }
}
