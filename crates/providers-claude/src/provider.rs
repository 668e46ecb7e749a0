//! The `Provider` impl: argv, cwd and stdin for a Claude Code leg.

use std::path::PathBuf;

use providers_core::{
    AgentRequest, CliFields, Effort, Invocation, McpForwarding, PrivateFile, Provider, Stdin,
    invocation_env,
};

use crate::error::Error;
use crate::parser::ClaudeParser;
use crate::request::{ClaudeCodeRequest, STRICT_MCP_CONFIG_KEY, clamp_claude_effort};

/// Drives `claude -p --output-format stream-json --verbose`.
#[derive(Debug, Clone)]
pub struct ClaudeProvider {
    /// The program to run.
    pub program: PathBuf,
}

impl Default for ClaudeProvider {
    fn default() -> Self {
        Self {
            program: PathBuf::from("claude"),
        }
    }
}

impl ClaudeProvider {
    /// The invocation for a fully typed request.
    ///
    /// argv: program, `-p`, `--output-format stream-json --verbose` (the
    /// CLI refuses stream-json without `--verbose`), the metadata-driven
    /// flags, then `--` and the prompt, so a prompt starting with `-` is
    /// never read as a flag and no variadic flag swallows it. The
    /// workspace becomes the cwd; stdin is the null device; the request's
    /// runtime-only `env` becomes [`Invocation::env`]. `on_spawn` is not
    /// part of an invocation (plain data): a caller hands it to the runner
    /// with the env (`RunConfig::on_spawn`, `RunConfig::env`), which chains
    /// it after the session's own spawn recorder.
    pub fn invocation_for(&self, req: &ClaudeCodeRequest) -> Result<Invocation, Error> {
        req.validate()?;
        let mut argv = vec![
            self.program.to_string_lossy().into_owned(),
            "-p".into(),
            "--output-format".into(),
            "stream-json".into(),
            "--verbose".into(),
        ];
        argv.extend(req.cli_args()?);
        argv.push("--".into());
        argv.push(req.prompt.clone());
        // `cli_args` refused a secret-bearing set without a directory, so
        // both are present together here.
        let files = match (req.private_mcp_config(), req.private_mcp_config_path()) {
            (Some(config), Some(path)) => vec![PrivateFile {
                path,
                contents: config.to_string(),
            }],
            _ => Vec::new(),
        };
        Ok(Invocation {
            files,
            argv,
            cwd: req.workspace.clone(),
            stdin: Stdin::Null,
            env: invocation_env(req.env.as_ref())?,
        })
    }
}

impl Provider for ClaudeProvider {
    type Parser = ClaudeParser;
    type Error = Error;

    fn name(&self) -> &'static str {
        "claude"
    }

    /// An [`AgentRequest`] carries no runtime wiring, so this invocation's
    /// env is empty; build from a [`CliCall`](providers_core::CliCall) with
    /// [`ClaudeCodeRequest::from_call`] to pass one.
    fn invocation(&self, request: &AgentRequest) -> Result<Invocation, Error> {
        self.invocation_for(&ClaudeCodeRequest::from_agent_request(request)?)
    }

    fn parser(&self) -> ClaudeParser {
        ClaudeParser::default()
    }

    /// `system/init` arrives right after spawn.
    fn streams_first_output_early(&self) -> bool {
        true
    }

    /// `--effort` takes `low` to `max` on every model
    /// ([`clamp_claude_effort`]).
    fn clamp_effort(&self, _model: Option<&str>, effort: Effort) -> Option<Effort> {
        Some(clamp_claude_effort(effort))
    }

    /// Claude Code takes a set as `--mcp-config`; `exclusive` is
    /// [`STRICT_MCP_CONFIG_KEY`].
    fn mcp_forwarding(&self) -> Option<McpForwarding> {
        Some(McpForwarding::new(STRICT_MCP_CONFIG_KEY))
    }
}
