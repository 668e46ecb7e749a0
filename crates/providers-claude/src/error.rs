//! The crate's error type.

use std::path::PathBuf;

/// Everything building a Claude Code invocation can refuse.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A shared-protocol refusal (unknown kwarg, wrong shape, ...).
    #[error(transparent)]
    Core(#[from] providers_core::Error),
    /// The prompt is empty.
    #[error("prompt is empty")]
    EmptyPrompt,
    /// A write-target path resolves outside the repository.
    #[error("{field} path {path:?} escapes the repository")]
    EscapesRepo {
        /// The request field.
        field: &'static str,
        /// The offending path.
        path: PathBuf,
    },
    /// A write-target path was given with no repository to contain it in.
    #[error("{field} needs a workspace to be contained in")]
    NoWorkspace {
        /// The request field.
        field: &'static str,
    },
    /// `mcp_config` must be relative to the repository.
    #[error("mcp_config must be a relative path")]
    AbsoluteMcpConfig,
    /// An `add_dir` entry that cannot be granted.
    #[error("add_dir entry {0:?} is not a usable directory path")]
    InvalidAddDir(PathBuf),
    /// `session_id` is not a UUID (Claude Code takes nothing else).
    #[error("session_id {0:?} is not a uuid (claude code's --session-id takes only a uuid)")]
    SessionIdNotUuid(String),
    /// Two flags Claude Code refuses together.
    #[error("{first} and {second} cannot be used together")]
    ExclusiveFlags {
        /// The first flag.
        first: &'static str,
        /// The flag it excludes.
        second: &'static str,
    },
    /// `session_id` with `resume` or `continue_conversation` but no
    /// `fork_session`.
    #[error("session_id with resume or continue_conversation needs fork_session")]
    SessionIdNeedsFork,
    /// Bypassing permissions as root without `IS_SANDBOX=1`, which Claude
    /// Code refuses.
    #[error(
        "claude code refuses --dangerously-skip-permissions / bypassPermissions as root unless IS_SANDBOX=1 is set"
    )]
    RootBypassNeedsSandbox,
}
