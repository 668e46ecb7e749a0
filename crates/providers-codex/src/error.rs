//! The crate's error type.

/// Everything building a Codex invocation can refuse.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A shared-protocol refusal (unknown kwarg, wrong shape).
    #[error(transparent)]
    Core(#[from] providers_core::Error),
    /// The prompt is empty.
    #[error("prompt is empty")]
    EmptyPrompt,
    /// A resume id that could be read as a flag.
    #[error("resume id is empty or starts with '-'")]
    BadResumeId,
    /// A flag the current codex CLI no longer has.
    #[error("codex no longer accepts {flag}; use {instead}")]
    RemovedFlag {
        /// The removed flag.
        flag: &'static str,
        /// What to ask for instead.
        instead: &'static str,
    },
    /// The request's env names a `CODEX_HOME` other than the directory the
    /// MCP profile is written to, so codex would never read the profile.
    #[error("mcp profile dir {profile_dir:?} is not the child's CODEX_HOME {codex_home:?}")]
    ProfileDirNotCodexHome {
        /// Where the profile would be written.
        profile_dir: std::path::PathBuf,
        /// The `CODEX_HOME` the child would use.
        codex_home: String,
    },
    /// MCP env/headers need an owner-only profile file, but no directory
    /// to write it in was given.
    #[error("mcp server env or headers need mcp_profile_dir")]
    NoProfileDir,
    /// An MCP server name that cannot be used as a config key.
    #[error("invalid mcp server name {0:?}")]
    InvalidMcpServerName(String),
    /// An MCP server field that cannot be forwarded to codex.
    #[error("mcp server {server:?}: field {field:?} cannot be forwarded")]
    InvalidMcpField {
        /// The server.
        server: String,
        /// The offending field.
        field: String,
    },
    /// A profile name that is not a bare TOML key.
    #[error("codex profile name is not a bare toml key")]
    InvalidProfileName,
}
