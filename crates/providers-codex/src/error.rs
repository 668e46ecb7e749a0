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
    /// An MCP server name that cannot be used as a config key: codex splits
    /// a `-c` key at every `.` and takes quotes literally, so no override
    /// can name (or disable) it.
    #[error(
        "invalid mcp server name {0:?}: not a bare toml key (letters, digits, '_' and '-'), so no codex -c override can name it"
    )]
    InvalidMcpServerName(String),
    /// A `project_mcp_servers` kind other than `stdio` or `http`.
    #[error(
        "project_mcp_servers: server {server:?} has kind {kind}, expected \"stdio\" or \"http\""
    )]
    InvalidMcpTransportKind {
        /// The server.
        server: String,
        /// What was given.
        kind: String,
    },
    /// A codex config file that exists but could not be read.
    #[error("codex config {}: cannot be read: {source}", file.display())]
    CodexConfigUnreadable {
        /// The file.
        file: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A codex config file that is not valid TOML, or whose `mcp_servers`
    /// is not a table of tables: its servers cannot be known, so nothing
    /// is guessed.
    #[error("codex config {}: cannot be parsed: {message}", file.display())]
    CodexConfigInvalid {
        /// The file.
        file: std::path::PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A codex config file declaring a server whose name no `-c` override
    /// can name, so an exclusive forwarded set could not disable it.
    #[error(
        "codex config {}: mcp server {server:?} is not a bare toml key (letters, digits, '_' and '-'), so lionrt cannot disable it by a -c override and the forwarded set would not be the whole set; rename or remove it", file.display()
    )]
    CodexConfigServerName {
        /// The file.
        file: std::path::PathBuf,
        /// The server.
        server: String,
    },
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
