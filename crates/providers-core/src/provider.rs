//! The `Provider` seam: a request in, an invocation out; lines in, events out.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use crate::effort::Effort;
use crate::event::{ErrorKind, StreamEvent};
use crate::mcp::McpForwarding;

/// A provider-neutral request for one agent leg.
///
/// Provider-specific settings travel in `kwargs` (a plain map, as the MCP
/// forwarder expects); each provider refuses keys it does not know.
#[derive(Clone, Default, PartialEq)]
pub struct AgentRequest {
    /// The prompt.
    pub prompt: String,
    /// The model, as the caller named it.
    pub model: Option<String>,
    /// The effort level, already normalised.
    pub effort: Option<Effort>,
    /// The workspace (repository root) the agent works in.
    pub workspace: Option<PathBuf>,
    /// A session/thread/conversation id to resume.
    pub resume: Option<String>,
    /// Provider-specific fields by name.
    pub kwargs: serde_json::Map<String, serde_json::Value>,
}

impl fmt::Debug for AgentRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // kwargs may hold MCP server env values; only the keys are shown.
        f.debug_struct("AgentRequest")
            .field("prompt_len", &self.prompt.len())
            .field("model", &self.model)
            .field("effort", &self.effort)
            .field("workspace", &self.workspace)
            .field("resume", &self.resume)
            .field("kwargs", &self.kwargs.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl AgentRequest {
    /// A request with `prompt` and every other field unset.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            prompt: prompt.into(),
            ..Self::default()
        }
    }
}

/// What the child's stdin is.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum Stdin {
    /// The null device (print-mode CLIs read nothing).
    #[default]
    Null,
    /// These bytes, then end of file.
    Bytes(Vec<u8>),
}

impl fmt::Debug for Stdin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Null => f.write_str("Null"),
            Self::Bytes(b) => write!(f, "Bytes(<{} byte(s)>)", b.len()),
        }
    }
}

/// A file that must exist, readable by the owner only (mode 0600), before
/// the child is spawned; it holds values that must never reach argv.
#[derive(Clone, PartialEq, Eq)]
pub struct PrivateFile {
    /// Where to write it.
    pub path: PathBuf,
    /// Its contents.
    pub contents: String,
}

impl fmt::Debug for PrivateFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PrivateFile({:?}, <{} byte(s)>)",
            self.path,
            self.contents.len()
        )
    }
}

/// Everything needed to spawn one leg: argv (program first, never a shell
/// string), working directory, stdin, environment additions and private
/// files to write first.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Invocation {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Working directory; `None` keeps the parent's.
    pub cwd: Option<PathBuf>,
    /// What stdin is.
    pub stdin: Stdin,
    /// Variables added to the child's environment.
    pub env: BTreeMap<String, String>,
    /// Files to write (mode 0600) before spawning.
    pub files: Vec<PrivateFile>,
}

impl fmt::Debug for Invocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Invocation")
            .field("argv", &self.argv)
            .field("cwd", &self.cwd)
            .field("stdin", &self.stdin)
            .field(
                "env",
                &format_args!("<env: {} variable(s)>", self.env.len()),
            )
            .field("files", &self.files)
            .finish()
    }
}

/// Turns a provider's output, one line (or parsed JSON value) at a time,
/// into [`StreamEvent`]s. A malformed line yields an error event and parsing
/// continues; no input panics.
pub trait StreamParser {
    /// Events for one parsed JSON value.
    fn parse_value(&mut self, value: &serde_json::Value) -> Vec<StreamEvent>;

    /// Events at end of stream; an [`ErrorKind::Incomplete`] error when no
    /// terminal event was seen.
    fn finish(&mut self) -> Vec<StreamEvent>;

    /// The id to resume this session with, once seen.
    fn resume_id(&self) -> Option<&str>;

    /// Events for one raw line. Blank lines yield nothing; a line that is
    /// not JSON yields an [`ErrorKind::InvalidJson`] error (its text is not
    /// quoted, it may hold anything).
    fn parse_line(&mut self, line: &str) -> Vec<StreamEvent> {
        let line = line.trim();
        if line.is_empty() {
            return Vec::new();
        }
        match serde_json::from_str::<serde_json::Value>(line) {
            Ok(v) => self.parse_value(&v),
            Err(e) => vec![StreamEvent::error(
                ErrorKind::InvalidJson,
                format!("line is not json ({})", e.classify_name()),
            )],
        }
    }
}

trait ClassifyName {
    fn classify_name(&self) -> &'static str;
}

impl ClassifyName for serde_json::Error {
    fn classify_name(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "io",
            serde_json::error::Category::Syntax => "syntax",
            serde_json::error::Category::Data => "data",
            serde_json::error::Category::Eof => "eof",
        }
    }
}

/// Parses a whole NDJSON text with `parser`, including the end-of-stream
/// events.
pub fn parse_stream<P: StreamParser + ?Sized>(parser: &mut P, text: &str) -> Vec<StreamEvent> {
    let mut out: Vec<StreamEvent> = text.lines().flat_map(|l| parser.parse_line(l)).collect();
    out.extend(parser.finish());
    out
}

/// One agent CLI (or CLI-like transport). Synchronous on purpose: building
/// argv and reading a line need no I/O; the supervisor does the spawning.
pub trait Provider {
    /// The parser for this provider's output.
    type Parser: StreamParser;
    /// What building an invocation can refuse.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The provider's canonical name.
    fn name(&self) -> &'static str;

    /// argv, env, cwd and stdin for `request`.
    fn invocation(&self, request: &AgentRequest) -> Result<Invocation, Self::Error>;

    /// A fresh parser for one leg's output.
    fn parser(&self) -> Self::Parser;

    /// Whether the transport emits a first event shortly after spawn, so a
    /// stalled first output reliably means a dead worker. Only then do the
    /// default first-output and idle watchdogs apply.
    fn streams_first_output_early(&self) -> bool;

    /// The level a leg of this provider runs at when `effort` is asked for
    /// on `model` (`None`: the provider's default model), after the
    /// provider's own clamp table; `None` when the provider expresses no
    /// effort for that model. The default takes every level as it is.
    fn clamp_effort(&self, model: Option<&str>, effort: Effort) -> Option<Effort> {
        let _ = model;
        Some(effort)
    }

    /// How this provider takes a forwarded MCP server set, `None` when it
    /// cannot be given one (the default). The one answer every forwarding
    /// site uses, through [`apply_forwarded_mcp_servers`](crate::apply_forwarded_mcp_servers).
    fn mcp_forwarding(&self) -> Option<McpForwarding> {
        None
    }
}

impl PrivateFile {
    /// Writes the file readable and writable by the owner only (0600),
    /// replacing any earlier content. The mode is set at creation, so the
    /// content is never readable by others, not even briefly.
    pub fn write_owner_only(&self) -> std::io::Result<()> {
        use std::io::Write as _;
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
            opts.mode(0o600);
            let mut f = opts.open(&self.path)?;
            // An existing file keeps its old mode through `open`; force it.
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            // No fsync: the file is read by a leg on this host (through
            // the page cache) and removed when the leg ends, so it is of
            // no use after a power loss; an fsync cost a disk flush per run.
            f.write_all(self.contents.as_bytes())
        }
        #[cfg(not(unix))]
        {
            let mut f = opts.open(&self.path)?;
            f.write_all(self.contents.as_bytes())
        }
    }
}
