//! The Codex request: flag metadata and the MCP/effort extras.

use std::collections::BTreeMap;
use std::path::PathBuf;

use providers_core::{
    AgentRequest, ChildEnv, CliCall, CliFields, Effort, FlagKind, FlagSpec, FlagValue, Kwargs,
    MCP_SERVERS_KEY, McpServers, OnSpawn,
};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::Error;
use crate::mcp::{CONFIGURED_MCP_KEY, MCP_EXCLUSIVE_KEY, McpTransportKind, PROJECT_MCP_KEY};

/// Every CLI-mappable field, in argv order.
pub const CODEX_FLAGS: &[FlagSpec] = &[
    FlagSpec::new("model", "--model", FlagKind::Value),
    FlagSpec::new("sandbox", "--sandbox", FlagKind::Value),
    FlagSpec::new(
        "dangerously_bypass_approvals_and_sandbox",
        "--dangerously-bypass-approvals-and-sandbox",
        FlagKind::Bool,
    ),
    FlagSpec::new(
        "skip_git_repo_check",
        "--skip-git-repo-check",
        FlagKind::Bool,
    ),
    FlagSpec::new("output_schema", "--output-schema", FlagKind::Value),
    // `-i/--image FILE...` takes several values: joined (`--image=FILE`)
    // it never swallows a following `resume ID` or other positional.
    FlagSpec::new("images", "--image", FlagKind::RepeatJoined),
    FlagSpec::new("add_dir", "--add-dir", FlagKind::Repeat),
    FlagSpec::new("config", "-c", FlagKind::Repeat),
];

/// A `codex exec --json` request.
///
/// `env` and `on_spawn` are runtime-only: they stay in memory for the leg
/// that uses them and are left out of the serialised form (`Serialize`
/// skips them, so a dump has no `env` or `on_spawn` key), and Debug renders
/// them as `<env: N variable(s)>` and `<on_spawn>`. The crate generates no
/// JSON schema, so there is no schema for them to leak into.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CodexRequest {
    /// The prompt (after `--`).
    pub prompt: String,
    /// The repository, conveyed only by `-C`; never the child's cwd.
    pub workspace: Option<PathBuf>,
    /// `--model`.
    pub model: Option<String>,
    /// Reasoning effort, clamped to the model's ceiling and passed as
    /// `-c model_reasoning_effort="<level>"`.
    #[serde(serialize_with = "effort_name")]
    pub effort: Option<Effort>,
    /// `--sandbox read-only|workspace-write|danger-full-access`.
    pub sandbox: Option<String>,
    /// `--dangerously-bypass-approvals-and-sandbox`.
    pub dangerously_bypass_approvals_and_sandbox: bool,
    /// `--skip-git-repo-check`.
    pub skip_git_repo_check: bool,
    /// `--output-schema <file>`.
    pub output_schema: Option<String>,
    /// `--image=FILE`, once per file (joined, so nothing after it is read
    /// as another image).
    pub images: Vec<String>,
    /// `--add-dir`, once per directory.
    pub add_dir: Vec<String>,
    /// Extra `-c key=value` overrides, verbatim.
    pub config: Vec<String>,
    /// The thread to resume (`exec resume <id>`).
    pub resume: Option<String>,
    /// A forwarded MCP server set (`None`: leave codex's own config alone).
    /// Its `env` and `http_headers` go to an owner-only profile file, never
    /// argv; Debug and serde render the set redacted.
    pub mcp_servers: Option<McpServers>,
    /// The forwarded set is the whole set.
    pub mcp_exclusive: bool,
    /// Servers codex's own config always loads (disabled by name when
    /// `mcp_exclusive`; kwarg [`CONFIGURED_MCP_KEY`]).
    pub configured_mcp_servers: Vec<String>,
    /// Servers only a project's `.codex/config.toml` declares, with their
    /// transport kind (disabled with a placeholder transport when
    /// `mcp_exclusive`; kwarg [`PROJECT_MCP_KEY`], an object of name to
    /// `"stdio"` or `"http"`).
    pub project_mcp_servers: BTreeMap<String, McpTransportKind>,
    /// Codex's home for the child (`$CODEX_HOME`, usually `~/.codex`):
    /// codex 0.171 reads `--profile NAME` only from
    /// `$CODEX_HOME/NAME.config.toml`, so the owner-only MCP profile is
    /// written there and the child's `CODEX_HOME` is set to this directory
    /// (a request env naming another `CODEX_HOME` is refused).
    pub mcp_profile_dir: Option<PathBuf>,
    /// Runtime-only: variables added to the child's environment
    /// ([`Invocation::env`](providers_core::Invocation::env)). Never
    /// serialised; rendered as a count only.
    #[serde(skip)]
    pub env: Option<ChildEnv>,
    /// Runtime-only: the spawn callback the runner hands to the supervisor.
    /// Never serialised; rendered opaquely.
    #[serde(skip)]
    pub on_spawn: Option<OnSpawn>,
}

/// An effort serialises as its level name (`"xhigh"`).
fn effort_name<S: Serializer>(effort: &Option<Effort>, s: S) -> Result<S::Ok, S::Error> {
    match effort {
        Some(e) => s.collect_str(e),
        None => s.serialize_none(),
    }
}

impl CliFields for CodexRequest {
    fn flag_specs(&self) -> &'static [FlagSpec] {
        CODEX_FLAGS
    }

    fn flag_value(&self, field: &str) -> Option<FlagValue> {
        let list = |v: &[String]| (!v.is_empty()).then(|| FlagValue::List(v.to_vec()));
        match field {
            "model" => self.model.clone().map(FlagValue::Str),
            "sandbox" => self.sandbox.clone().map(FlagValue::Str),
            "dangerously_bypass_approvals_and_sandbox" => Some(FlagValue::Bool(
                self.dangerously_bypass_approvals_and_sandbox,
            )),
            "skip_git_repo_check" => Some(FlagValue::Bool(self.skip_git_repo_check)),
            "output_schema" => self.output_schema.clone().map(FlagValue::Str),
            "images" => list(&self.images),
            "add_dir" => list(&self.add_dir),
            "config" => list(&self.config),
            _ => None,
        }
    }
}

impl CodexRequest {
    /// Builds the request from a provider-neutral one; every kwarg must be
    /// known. `full_auto: true` is refused with [`Error::RemovedFlag`]:
    /// codex 0.171 rejects `--full-auto` ("unexpected argument").
    pub fn from_agent_request(req: &AgentRequest) -> Result<Self, Error> {
        let k = Kwargs::new(&req.kwargs);
        if k.bool("full_auto")? == Some(true) {
            return Err(Error::RemovedFlag {
                flag: "--full-auto",
                instead: "sandbox = \"workspace-write\"",
            });
        }
        let out = Self {
            prompt: req.prompt.clone(),
            workspace: req.workspace.clone(),
            model: req.model.clone(),
            effort: req.effort,
            sandbox: k.string("sandbox")?,
            dangerously_bypass_approvals_and_sandbox: k
                .bool("dangerously_bypass_approvals_and_sandbox")?
                .unwrap_or(false),
            skip_git_repo_check: k.bool("skip_git_repo_check")?.unwrap_or(false),
            output_schema: k.string("output_schema")?,
            images: k.strings("images")?,
            add_dir: k.strings("add_dir")?,
            config: k.strings("config")?,
            resume: req.resume.clone(),
            mcp_servers: k.object(MCP_SERVERS_KEY)?.map(McpServers::from),
            mcp_exclusive: k.bool(MCP_EXCLUSIVE_KEY)?.unwrap_or(false),
            configured_mcp_servers: k.strings(CONFIGURED_MCP_KEY)?,
            project_mcp_servers: project_kinds(k.object(PROJECT_MCP_KEY)?)?,
            mcp_profile_dir: k.string("mcp_profile_dir")?.map(PathBuf::from),
            env: None,
            on_spawn: None,
        };
        k.finish()?;
        Ok(out)
    }

    /// Builds the request from a call: the provider-neutral request plus
    /// its runtime wiring. `env` and `on_spawn` arrive already wrapped
    /// ([`ChildEnv`], [`OnSpawn`]), so the redaction travels on the values
    /// and no check here or added later can render them.
    pub fn from_call(call: &CliCall) -> Result<Self, Error> {
        let mut out = Self::from_agent_request(&call.request)?;
        out.env = call.env.clone();
        out.on_spawn = call.on_spawn.clone();
        Ok(out)
    }
}

/// The `project_mcp_servers` kwarg: an object of name to `"stdio"` or
/// `"http"`.
fn project_kinds(
    map: Option<Map<String, Value>>,
) -> Result<BTreeMap<String, McpTransportKind>, Error> {
    let mut out = BTreeMap::new();
    for (server, kind) in map.unwrap_or_default() {
        let parsed = kind.as_str().and_then(McpTransportKind::parse);
        let Some(parsed) = parsed else {
            return Err(Error::InvalidMcpTransportKind {
                server,
                kind: kind.to_string(),
            });
        };
        out.insert(server, parsed);
    }
    Ok(out)
}
