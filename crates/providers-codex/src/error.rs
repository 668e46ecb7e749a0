//! The crate's error type.

/// Everything building a Codex invocation can refuse.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A shared-protocol refusal (unknown kwarg, wrong shape, bad MCP set).
    #[error(transparent)]
    Core(#[from] providers_core::Error),
    /// The prompt is empty.
    #[error("prompt is empty")]
    EmptyPrompt,
    /// A resume id that could be read as a flag.
    #[error("resume id is empty or starts with '-'")]
    BadResumeId,
    /// MCP env/headers need an owner-only profile file, but no directory
    /// to write it in was given.
    #[error("mcp server env or headers need mcp_profile_dir")]
    NoProfileDir,
}
