//! The crate's error type.

/// Everything loading or replaying a script can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The script text is not JSON.
    #[error("script is not valid json")]
    NotJson(#[source] serde_json::Error),
    /// The script's top level is malformed.
    #[error("script: {0}")]
    BadScript(String),
    /// The script breaks the published schema (path and expectation).
    #[error(transparent)]
    Schema(config_schema::Error),
    /// An entry has no `type`.
    #[error("script entry {index}: missing `type`")]
    MissingType {
        /// 0-based entry index.
        index: usize,
    },
    /// An entry's `type` is not one of the five kinds.
    #[error(
        "script entry {index}: unknown type {kind:?} (expected text, tool_call, structured, stream or error)"
    )]
    UnknownType {
        /// 0-based entry index.
        index: usize,
        /// The type given.
        kind: String,
    },
    /// An entry of a known kind with a bad field.
    #[error("script entry {index} ({kind}): field `{field}` {problem}")]
    InvalidEntry {
        /// 0-based entry index.
        index: usize,
        /// The entry's kind.
        kind: &'static str,
        /// The offending field.
        field: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// Positional entries are used up and no `when` entry matched.
    #[error("script exhausted after {calls} call(s)")]
    ScriptExhausted {
        /// Calls served before this one.
        calls: usize,
    },
    /// Mode `when_only` and no `when` entry matched this call.
    #[error("no when-entry matches call {call_index} (mode when_only)")]
    NoWhenMatch {
        /// 0-based index of the call.
        call_index: usize,
    },
    /// The provider's endpoint lock was poisoned by a panic elsewhere.
    #[error("scripted endpoint state is poisoned")]
    Poisoned,
    /// The scripted leg could not read its file, write stdout or act on a tool.
    #[error("scripted leg: {what}")]
    LegIo {
        /// What it was doing.
        what: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A tool line the scripted leg acts on has bad input.
    #[error("scripted leg: tool {tool} {problem}")]
    LegTool {
        /// The tool name.
        tool: &'static str,
        /// What is wrong.
        problem: &'static str,
    },
    /// The request could not be turned into an invocation.
    #[error(transparent)]
    Core(#[from] providers_core::Error),
}
