//! The `Provider` impl: argv for `codex exec --json`, never a cwd.

use std::path::PathBuf;

use std::hash::BuildHasher as _;

use providers_core::{
    AgentRequest, CliFields, Effort, Invocation, McpForwarding, PrivateFile, Provider, Stdin,
    invocation_env,
};

use crate::effort::clamp_codex_effort;
use crate::error::Error;
use crate::mcp::{
    CodexConfiguredMcp, MCP_EXCLUSIVE_KEY, codex_mcp_overrides_for, codex_profile_file_name,
};
use crate::parser::CodexParser;
use crate::request::CodexRequest;

/// The prefix of the profile name the forwarded MCP env/headers are
/// written under: the name is `lionrt-mcp-<16 hex>`, the suffix keyed at
/// random per call, so two legs sharing a `CODEX_HOME` never read each
/// other's secrets and the name says nothing about the contents.
pub const MCP_PROFILE: &str = "lionrt-mcp";

/// The environment variable naming codex's home.
const CODEX_HOME: &str = "CODEX_HOME";

/// A fresh profile name: [`MCP_PROFILE`] plus a suffix from a randomly
/// keyed SipHash (std's `RandomState`) of the contents.
fn profile_name(contents: &str) -> String {
    let suffix = std::collections::hash_map::RandomState::new().hash_one(contents);
    format!("{MCP_PROFILE}-{suffix:016x}")
}

/// Drives `codex exec --json`.
#[derive(Debug, Clone)]
pub struct CodexProvider {
    /// The program to run.
    pub program: PathBuf,
}

impl Default for CodexProvider {
    fn default() -> Self {
        Self {
            program: PathBuf::from("codex"),
        }
    }
}

impl CodexProvider {
    /// The invocation for a typed request.
    ///
    /// argv: program, `exec --json`, metadata flags (images joined as
    /// `--image=FILE`), the clamped effort as `-c model_reasoning_effort=...`,
    /// the MCP overrides (secrets in `$CODEX_HOME/<profile>.config.toml`,
    /// `--profile <profile>`), `-C <workspace>`,
    /// `resume <id>` when resuming, then `--` and the prompt. The cwd is
    /// never set: `-C` already names the workspace, and a cwd as well would
    /// make codex resolve a relative `-C repo` to `repo/repo`. The
    /// request's runtime-only `env` becomes [`Invocation::env`];
    /// `on_spawn` is not part of an invocation (plain data): a caller hands
    /// it to the runner with the env (`RunConfig::on_spawn`,
    /// `RunConfig::env`), which chains it after the session's own spawn
    /// recorder.
    pub fn invocation_for(&self, req: &CodexRequest) -> Result<Invocation, Error> {
        if req.prompt.trim().is_empty() {
            return Err(Error::EmptyPrompt);
        }
        let mut argv = vec![
            self.program.to_string_lossy().into_owned(),
            "exec".into(),
            "--json".into(),
        ];
        argv.extend(req.cli_args()?);
        if let Some(level) = req
            .effort
            .and_then(|e| self.clamp_effort(req.model.as_deref(), e))
        {
            argv.push("-c".into());
            argv.push(format!("model_reasoning_effort=\"{level}\""));
        }
        let mut files = Vec::new();
        let mut env = invocation_env(req.env.as_ref())?;
        if let Some(servers) = &req.mcp_servers {
            let configured = CodexConfiguredMcp {
                loaded: req.configured_mcp_servers.clone(),
                project: req.project_mcp_servers.clone(),
            };
            let mut plan = codex_mcp_overrides_for(
                servers.as_map(),
                req.mcp_exclusive,
                &configured,
                MCP_PROFILE,
            )?;
            if let Some(toml) = plan.profile_toml.take() {
                let dir = req.mcp_profile_dir.as_ref().ok_or(Error::NoProfileDir)?;
                // Codex reads the profile only from its own home: a child
                // told to look elsewhere would silently run without the
                // secrets, so that is refused, and the home is pinned.
                match env.get(CODEX_HOME) {
                    Some(home) if std::path::Path::new(home) != dir.as_path() => {
                        return Err(Error::ProfileDirNotCodexHome {
                            profile_dir: dir.clone(),
                            codex_home: home.clone(),
                        });
                    }
                    _ => {
                        env.insert(CODEX_HOME.into(), dir.to_string_lossy().into_owned());
                    }
                }
                let name = profile_name(&toml);
                if let Some(last) = plan.args.last_mut() {
                    // `codex_mcp_overrides` ends with `--profile NAME`.
                    last.clone_from(&name);
                }
                files.push(PrivateFile {
                    path: dir.join(codex_profile_file_name(&name)),
                    contents: toml,
                });
            }
            argv.extend(plan.args);
        }
        if let Some(ws) = &req.workspace {
            argv.push("-C".into());
            argv.push(ws.to_string_lossy().into_owned());
        }
        if let Some(id) = &req.resume {
            if id.is_empty() || id.starts_with('-') {
                return Err(Error::BadResumeId);
            }
            argv.push("resume".into());
            argv.push(id.clone());
        }
        argv.push("--".into());
        argv.push(req.prompt.clone());
        Ok(Invocation {
            argv,
            cwd: None,
            stdin: Stdin::Null,
            env,
            files,
        })
    }
}

impl Provider for CodexProvider {
    type Parser = CodexParser;
    type Error = Error;

    fn name(&self) -> &'static str {
        "codex"
    }

    /// An [`AgentRequest`] carries no runtime wiring, so this invocation's
    /// env is empty; build from a [`CliCall`](providers_core::CliCall) with
    /// [`CodexRequest::from_call`] to pass one.
    fn invocation(&self, request: &AgentRequest) -> Result<Invocation, Error> {
        self.invocation_for(&CodexRequest::from_agent_request(request)?)
    }

    fn parser(&self) -> CodexParser {
        CodexParser::default()
    }

    /// `thread.started` arrives right after spawn.
    fn streams_first_output_early(&self) -> bool {
        true
    }

    /// The model's ceiling ([`clamp_codex_effort`]); without a model, or
    /// for a model the table does not know, the level as asked.
    fn clamp_effort(&self, model: Option<&str>, effort: Effort) -> Option<Effort> {
        Some(model.map_or(effort, |m| clamp_codex_effort(m, effort)))
    }

    /// Codex takes a set as `-c` overrides (secrets in a profile file);
    /// `exclusive` is [`MCP_EXCLUSIVE_KEY`].
    fn mcp_forwarding(&self) -> Option<McpForwarding> {
        Some(McpForwarding::new(MCP_EXCLUSIVE_KEY))
    }
}
