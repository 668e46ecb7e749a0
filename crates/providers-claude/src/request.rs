//! The Claude Code request: every CLI-mappable field with its flag kind.

use std::path::{Component, Path, PathBuf};

use providers_core::{
    AgentRequest, ChildEnv, CliCall, CliFields, Effort, FlagKind, FlagSpec, FlagValue, Kwargs,
    McpServers, OnSpawn, build_declarative_cli_args,
};
use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use crate::error::Error;

/// The kwargs key a forwarded MCP set's `exclusive` sets for Claude Code:
/// `--strict-mcp-config`, so only the forwarded servers load.
pub const STRICT_MCP_CONFIG_KEY: &str = "strict_mcp_config";

/// The level Claude Code's `--effort` gets for `effort`: the CLI takes
/// `low|medium|high|xhigh|max` (2.1.x), so `none` and `minimal` rise to
/// `low` and `ultra` falls to `max`; the rest pass as they are.
pub fn clamp_claude_effort(effort: Effort) -> Effort {
    effort.clamp(Effort::Low, Effort::Max)
}

/// The file a secret-bearing `mcp_servers` set is written to, inside
/// [`ClaudeCodeRequest::mcp_config_dir`].
pub const MCP_CONFIG_FILE: &str = "lionrt-mcp.json";

/// Every CLI-mappable field, in argv order. Building argv reads only this.
pub const CLAUDE_FLAGS: &[FlagSpec] = &[
    FlagSpec::new("model", "--model", FlagKind::Value),
    FlagSpec::new("fallback_model", "--fallback-model", FlagKind::Value),
    FlagSpec::new("effort", "--effort", FlagKind::Value),
    FlagSpec::new("permission_mode", "--permission-mode", FlagKind::Value),
    FlagSpec::new("max_turns", "--max-turns", FlagKind::Value),
    FlagSpec::new("system_prompt", "--system-prompt", FlagKind::Value),
    FlagSpec::new(
        "system_prompt_file",
        "--system-prompt-file",
        FlagKind::Value,
    ),
    FlagSpec::new(
        "append_system_prompt",
        "--append-system-prompt",
        FlagKind::Value,
    ),
    FlagSpec::new(
        "append_system_prompt_file",
        "--append-system-prompt-file",
        FlagKind::Value,
    ),
    FlagSpec::new("allowed_tools", "--allowedTools", FlagKind::ListArgs),
    FlagSpec::new("disallowed_tools", "--disallowedTools", FlagKind::ListArgs),
    FlagSpec::new("add_dir", "--add-dir", FlagKind::ListArgs),
    FlagSpec::new("mcp_config", "--mcp-config", FlagKind::Value),
    FlagSpec::new("mcp_servers", "--mcp-config", FlagKind::JsonValue),
    FlagSpec::new("strict_mcp_config", "--strict-mcp-config", FlagKind::Bool),
    FlagSpec::new("settings", "--settings", FlagKind::Value),
    FlagSpec::new("setting_sources", "--setting-sources", FlagKind::Value),
    FlagSpec::new("agents", "--agents", FlagKind::JsonValue),
    FlagSpec::new("plugin_dirs", "--plugin-dir", FlagKind::Repeat),
    FlagSpec::new("resume", "--resume", FlagKind::Value),
    FlagSpec::new("continue_conversation", "--continue", FlagKind::Bool),
    FlagSpec::new("fork_session", "--fork-session", FlagKind::Bool),
    FlagSpec::new("session_id", "--session-id", FlagKind::Value),
    FlagSpec::new(
        "include_partial_messages",
        "--include-partial-messages",
        FlagKind::Bool,
    ),
    FlagSpec::new(
        "dangerously_skip_permissions",
        "--dangerously-skip-permissions",
        FlagKind::Bool,
    ),
];

/// A Claude Code (`claude -p --output-format stream-json`) request.
///
/// `env` and `on_spawn` are runtime-only: they stay in memory for the leg
/// that uses them and are left out of the serialised form (`Serialize`
/// skips them, so a dump has no `env` or `on_spawn` key), and Debug renders
/// them as `<env: N variable(s)>` and `<on_spawn>`. The crate generates no
/// JSON schema, so there is no schema for them to leak into.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClaudeCodeRequest {
    /// The prompt (passed after `--`).
    pub prompt: String,
    /// The repository the leg works in; becomes the child's cwd and the
    /// containment root of write-target paths.
    pub workspace: Option<PathBuf>,
    /// `--model`.
    pub model: Option<String>,
    /// `--fallback-model`.
    pub fallback_model: Option<String>,
    /// `--effort`, clamped onto the CLI's `low|medium|high|xhigh|max`
    /// ([`clamp_claude_effort`]).
    #[serde(serialize_with = "effort_name")]
    pub effort: Option<Effort>,
    /// `--permission-mode`.
    pub permission_mode: Option<String>,
    /// `--max-turns`.
    pub max_turns: Option<u64>,
    /// `--system-prompt`.
    pub system_prompt: Option<String>,
    /// `--system-prompt-file` (contained in the repository).
    pub system_prompt_file: Option<PathBuf>,
    /// `--append-system-prompt`.
    pub append_system_prompt: Option<String>,
    /// `--append-system-prompt-file` (contained in the repository).
    pub append_system_prompt_file: Option<PathBuf>,
    /// `--allowedTools a b ...`.
    pub allowed_tools: Vec<String>,
    /// `--disallowedTools a b ...`.
    pub disallowed_tools: Vec<String>,
    /// `--add-dir a b ...`: read-only grants, absolute paths allowed.
    pub add_dir: Vec<PathBuf>,
    /// `--mcp-config <path>` (relative, contained in the repository).
    pub mcp_config: Option<PathBuf>,
    /// `--mcp-config {"mcpServers":...}`. `None` emits nothing; `Some({})`
    /// forces zero servers. A set whose servers carry `env` or headers
    /// ([`McpServers::carries_secrets`]) never goes on argv (any local user
    /// can read a process's argv): it is written to an owner-only file in
    /// `mcp_config_dir` and `--mcp-config` gets that file's path. Debug and
    /// serde render the set redacted.
    pub mcp_servers: Option<McpServers>,
    /// Where a secret-bearing `mcp_servers` set is written
    /// ([`MCP_CONFIG_FILE`], mode 0600); required when the set carries
    /// secrets, unused otherwise.
    pub mcp_config_dir: Option<PathBuf>,
    /// `--strict-mcp-config`.
    pub strict_mcp_config: bool,
    /// `--settings` (contained in the repository).
    pub settings: Option<PathBuf>,
    /// `--setting-sources`.
    pub setting_sources: Option<String>,
    /// `--agents <json>`.
    pub agents: Option<Value>,
    /// `--plugin-dir`, once per entry.
    pub plugin_dirs: Vec<String>,
    /// `--resume <session id>`.
    pub resume: Option<String>,
    /// `--continue`.
    pub continue_conversation: bool,
    /// `--fork-session`.
    pub fork_session: bool,
    /// `--session-id`: must be a UUID (Claude Code refuses anything else),
    /// and with `resume`/`continue_conversation` needs `fork_session`.
    pub session_id: Option<String>,
    /// `--include-partial-messages`.
    pub include_partial_messages: bool,
    /// `--dangerously-skip-permissions`.
    pub dangerously_skip_permissions: bool,
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

/// An effort serialises as its level name (`"high"`).
fn effort_name<S: Serializer>(effort: &Option<Effort>, s: S) -> Result<S::Ok, S::Error> {
    match effort {
        Some(e) => s.collect_str(e),
        None => s.serialize_none(),
    }
}

fn path_value(p: &Option<PathBuf>) -> Option<FlagValue> {
    p.as_ref()
        .map(|p| FlagValue::Str(p.to_string_lossy().into_owned()))
}

fn str_value(s: &Option<String>) -> Option<FlagValue> {
    s.clone().map(FlagValue::Str)
}

fn list_value(v: &[String]) -> Option<FlagValue> {
    (!v.is_empty()).then(|| FlagValue::List(v.to_vec()))
}

impl CliFields for ClaudeCodeRequest {
    fn flag_specs(&self) -> &'static [FlagSpec] {
        CLAUDE_FLAGS
    }

    /// As the default, except for a secret-bearing `mcp_servers` set: in
    /// its place `--mcp-config` gets the path of the owner-only file the
    /// invocation writes, and without an `mcp_config_dir` the request is
    /// refused (the set may go neither on argv nor away).
    fn cli_args(&self) -> Result<Vec<String>, providers_core::Error> {
        let by_file = if self.mcp_servers_by_file() {
            Some(self.private_mcp_config_path().ok_or_else(|| {
                providers_core::Error::InvalidRequest(
                    "mcp_servers with env or headers need mcp_config_dir (never passed on argv)"
                        .into(),
                )
            })?)
        } else {
            None
        };
        let mut argv = Vec::new();
        for spec in self.flag_specs() {
            match &by_file {
                Some(path) if spec.field == "mcp_servers" => {
                    argv.push(spec.flag.to_owned());
                    argv.push(path.to_string_lossy().into_owned());
                }
                _ => argv.extend(build_declarative_cli_args(&[*spec], |f| {
                    self.flag_value(f)
                })?),
            }
        }
        Ok(argv)
    }

    fn flag_value(&self, field: &str) -> Option<FlagValue> {
        match field {
            "model" => str_value(&self.model),
            "fallback_model" => str_value(&self.fallback_model),
            "effort" => self
                .effort
                .map(|e| FlagValue::Str(clamp_claude_effort(e).as_str().to_owned())),
            "permission_mode" => str_value(&self.permission_mode),
            "max_turns" => self.max_turns.map(|n| FlagValue::Str(n.to_string())),
            "system_prompt" => str_value(&self.system_prompt),
            "system_prompt_file" => path_value(&self.system_prompt_file),
            "append_system_prompt" => str_value(&self.append_system_prompt),
            "append_system_prompt_file" => path_value(&self.append_system_prompt_file),
            "allowed_tools" => list_value(&self.allowed_tools),
            "disallowed_tools" => list_value(&self.disallowed_tools),
            "add_dir" => {
                let dirs: Vec<String> = self
                    .add_dir
                    .iter()
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect();
                list_value(&dirs)
            }
            "mcp_config" => path_value(&self.mcp_config),
            // A presence check, not truthiness: `{}` still emits the flag.
            // A set with secrets has no inline value: `cli_args` passes it
            // by file.
            "mcp_servers" => self
                .mcp_servers
                .as_ref()
                .filter(|_| !self.mcp_servers_by_file())
                .map(|servers| FlagValue::Json(json!({ "mcpServers": servers.as_map() }))),
            "strict_mcp_config" => Some(FlagValue::Bool(self.strict_mcp_config)),
            "settings" => path_value(&self.settings),
            "setting_sources" => str_value(&self.setting_sources),
            "agents" => self.agents.clone().map(FlagValue::Json),
            "plugin_dirs" => list_value(&self.plugin_dirs),
            "resume" => str_value(&self.resume),
            "continue_conversation" => Some(FlagValue::Bool(self.continue_conversation)),
            "fork_session" => Some(FlagValue::Bool(self.fork_session)),
            "session_id" => str_value(&self.session_id),
            "include_partial_messages" => Some(FlagValue::Bool(self.include_partial_messages)),
            "dangerously_skip_permissions" => {
                Some(FlagValue::Bool(self.dangerously_skip_permissions))
            }
            _ => None,
        }
    }
}

impl ClaudeCodeRequest {
    /// The `{"mcpServers": ...}` document for a secret-bearing set, which
    /// the leg gets by file; `None` when the set (if any) has no secrets.
    pub fn private_mcp_config(&self) -> Option<Value> {
        self.mcp_servers
            .as_ref()
            .filter(|_| self.mcp_servers_by_file())
            .map(|servers| json!({ "mcpServers": servers.as_map() }))
    }

    /// Whether the `mcp_servers` set carries secrets and so reaches the
    /// leg by file, never inline on argv.
    fn mcp_servers_by_file(&self) -> bool {
        self.mcp_servers
            .as_ref()
            .is_some_and(McpServers::carries_secrets)
    }

    /// Where [`ClaudeCodeRequest::private_mcp_config`] is written.
    pub fn private_mcp_config_path(&self) -> Option<PathBuf> {
        self.mcp_config_dir
            .as_ref()
            .map(|dir| dir.join(MCP_CONFIG_FILE))
    }

    /// Builds the request from a provider-neutral one; every kwarg must be
    /// a known field of the right shape.
    pub fn from_agent_request(req: &AgentRequest) -> Result<Self, Error> {
        let k = Kwargs::new(&req.kwargs);
        let paths = |key| {
            k.strings(key)
                .map(|v| v.into_iter().map(PathBuf::from).collect())
        };
        let path = |key| k.string(key).map(|v| v.map(PathBuf::from));
        let out = Self {
            prompt: req.prompt.clone(),
            workspace: req.workspace.clone(),
            model: req.model.clone(),
            fallback_model: k.string("fallback_model")?,
            effort: req.effort,
            permission_mode: k.string("permission_mode")?,
            max_turns: k.u64("max_turns")?,
            system_prompt: k.string("system_prompt")?,
            system_prompt_file: path("system_prompt_file")?,
            append_system_prompt: k.string("append_system_prompt")?,
            append_system_prompt_file: path("append_system_prompt_file")?,
            allowed_tools: k.strings("allowed_tools")?,
            disallowed_tools: k.strings("disallowed_tools")?,
            add_dir: paths("add_dir")?,
            mcp_config: path("mcp_config")?,
            mcp_servers: k.object("mcp_servers")?.map(McpServers::from),
            mcp_config_dir: path("mcp_config_dir")?,
            strict_mcp_config: k.bool(STRICT_MCP_CONFIG_KEY)?.unwrap_or(false),
            settings: path("settings")?,
            setting_sources: k.string("setting_sources")?,
            agents: k.json("agents"),
            plugin_dirs: k.strings("plugin_dirs")?,
            resume: req.resume.clone(),
            continue_conversation: k.bool("continue_conversation")?.unwrap_or(false),
            fork_session: k.bool("fork_session")?.unwrap_or(false),
            session_id: k.string("session_id")?,
            include_partial_messages: k.bool("include_partial_messages")?.unwrap_or(false),
            dangerously_skip_permissions: k.bool("dangerously_skip_permissions")?.unwrap_or(false),
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

    /// Checks the write-target fields (`system_prompt_file`,
    /// `append_system_prompt_file`, `mcp_config`, `settings`) stay inside
    /// the workspace, and `add_dir` separately: `add_dir` is a read-only
    /// grant where an absolute path is intentional, so write-target
    /// containment never applies to it.
    ///
    /// It also refuses, before anything is spawned, the combinations
    /// Claude Code 2.1.x rejects after parsing: a `session_id` that is not a
    /// UUID, `system_prompt` with `system_prompt_file` (and the `append_`
    /// pair), and `session_id` with `resume`/`continue_conversation`
    /// without `fork_session`.
    pub fn validate(&self) -> Result<(), Error> {
        if self.prompt.trim().is_empty() {
            return Err(Error::EmptyPrompt);
        }
        if let Some(id) = &self.session_id
            && !is_uuid(id)
        {
            return Err(Error::SessionIdNotUuid(id.clone()));
        }
        let pairs = [
            (
                self.system_prompt.is_some() && self.system_prompt_file.is_some(),
                "--system-prompt",
                "--system-prompt-file",
            ),
            (
                self.append_system_prompt.is_some() && self.append_system_prompt_file.is_some(),
                "--append-system-prompt",
                "--append-system-prompt-file",
            ),
        ];
        for (both, first, second) in pairs {
            if both {
                return Err(Error::ExclusiveFlags { first, second });
            }
        }
        if self.session_id.is_some()
            && (self.resume.is_some() || self.continue_conversation)
            && !self.fork_session
        {
            return Err(Error::SessionIdNeedsFork);
        }
        // Claude Code refuses to bypass permissions as root unless told it
        // runs in a sandbox (`IS_SANDBOX=1`, from the request's env or the
        // environment the child inherits). Said here rather than by the
        // child's exit.
        let bypass = self.dangerously_skip_permissions
            || self.permission_mode.as_deref() == Some("bypassPermissions");
        if bypass && running_as_root() && !self.sandbox_declared() {
            return Err(Error::RootBypassNeedsSandbox);
        }
        if let Some(p) = &self.mcp_config
            && p.is_absolute()
        {
            return Err(Error::AbsoluteMcpConfig);
        }
        let targets = [
            ("system_prompt_file", &self.system_prompt_file),
            ("append_system_prompt_file", &self.append_system_prompt_file),
            ("mcp_config", &self.mcp_config),
            ("settings", &self.settings),
        ];
        for (field, path) in targets {
            if let Some(path) = path {
                let root = self
                    .workspace
                    .as_deref()
                    .ok_or(Error::NoWorkspace { field })?;
                if !contained(root, path) {
                    return Err(Error::EscapesRepo {
                        field,
                        path: path.clone(),
                    });
                }
            }
        }
        for dir in &self.add_dir {
            validate_add_dir(dir)?;
        }
        Ok(())
    }
}

/// Whether this process runs as root (the owner of `/proc/self` is the
/// effective uid); `false` where that cannot be read.
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

impl ClaudeCodeRequest {
    /// Whether the child will see `IS_SANDBOX=1`.
    fn sandbox_declared(&self) -> bool {
        match self.env.as_ref().and_then(|e| e.get("IS_SANDBOX")) {
            Some(v) => v == "1",
            None => std::env::var("IS_SANDBOX").is_ok_and(|v| v == "1"),
        }
    }
}

/// Whether `s` is a UUID in its hyphenated form (8-4-4-4-12 hex digits,
/// either case), the only form `--session-id` takes.
fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether `path` (relative to `root` unless absolute) stays inside `root`,
/// judged lexically after resolving `.` and `..`.
fn contained(root: &Path, path: &Path) -> bool {
    let joined = root.join(path);
    match (normalize(root), normalize(&joined)) {
        (Some(r), Some(p)) => p.starts_with(&r),
        _ => false,
    }
}

fn normalize(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// An `add_dir` grant: absolute paths are intentional; a relative one may
/// not climb out with `..`, and empty or NUL-carrying entries are refused.
fn validate_add_dir(dir: &Path) -> Result<(), Error> {
    let s = dir.to_string_lossy();
    let bad = s.is_empty()
        || s.contains('\0')
        || (dir.is_relative() && dir.components().any(|c| c == Component::ParentDir));
    if bad {
        return Err(Error::InvalidAddDir(dir.to_path_buf()));
    }
    Ok(())
}
