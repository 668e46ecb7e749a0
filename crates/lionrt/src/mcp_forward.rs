//! The MCP server set `lionrt run` forwards to a Claude Code or Codex leg,
//! admitted before the leg starts.
//!
//! The config is resolved by `tool_gate::resolve_mcp_config`, the function
//! `lionrt mcp` (native loading) uses too: `--mcp-config FILE`, then the
//! workspace's `.lionagi/.mcp.json` and `.mcp.json` only with
//! `--trust-project`, then `~/.lionagi/.mcp.json` (GATE-017..021). The file
//! is read once; every server in it is connected with `mcp-pool` (a
//! cli-supervisor leg), its tools listed and each run through admission.
//!
//! - A server whose tools were all admitted is forwarded as written.
//! - A server with a refused tool: for Claude Code it is forwarded and each
//!   refused tool is disallowed by flag (`--disallowedTools
//!   mcp__SERVER__TOOL`); where that rule could not name the tool exactly
//!   (a name outside `[A-Za-z0-9_-]`, which Claude rewrites), and for Codex
//!   (no per-tool flag), the server is not forwarded.
//! - A server that could not be connected or listed is not forwarded.
//!
//! The set is forwarded as the whole set: Claude gets `--strict-mcp-config`,
//! so it does not add the servers it would discover on its own, the
//! unexamined project `.mcp.json` among them. Codex gets its exclusive
//! kwarg and the servers its own config layers declare
//! (`providers_codex::codex_declared_mcp_servers`: `/etc/codex`,
//! `$CODEX_HOME/config.toml`, default `~/.codex/config.toml`, and every
//! `.codex/config.toml` from the workspace up, and with `--sandbox` HEAD's
//! `.codex/config.toml`, which the worktree holds), each disabled by `-c`
//! unless it is in the admitted set; the decision lists them under
//! `disabled`. A layer that exists but cannot be read or parsed, or that
//! declares a name no `-c` override can name, refuses the run before any
//! session (nothing is guessed). A forwarded server whose name Codex's
//! own config also declares is not forwarded (reason
//! `name-in-codex-config`): codex merges same-named entries field by
//! field, so what started would not be what was admitted. A `--set config`
//! override of `mcp_servers.*` (or `profile`) is refused like `--set
//! mcp_servers`.
//!
//! No resolved config: nothing is forwarded and the CLI's own configuration
//! is left alone: Claude loads what it discovers itself, Codex every server
//! its config layers declare, unexamined (as when the CLI is run by hand).
//!
//! Every refusal is printed before the run (a JSON event line under
//! `--json`), recorded on the session as its first message (role
//! [`NOTE_ROLE`]), and written as one `admin_events` row each (kind
//! [`REFUSED_KIND`], entity the session, actor `system`
//! [`ACTOR_ID`]) on the run's store, SQLite or PostgreSQL, just before the
//! session starts.
//!
//! Reading of an open point: the CLI lists the tools again when it
//! connects; a server that changes its list in between is not re-examined
//! here (a tool it adds was never admitted). The disallow rules still hold
//! by name.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use mcp_pool::{McpPool, PoolConfig, SecurityConfig};
use providers_core::{AgentRequest, ForwardedMcp, McpServers, Provider};
use runner::{RunConfig, RunNote};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::run::ProviderName;

/// The role of the session message that records the admission.
pub(crate) const NOTE_ROLE: &str = "mcp_admission";

/// Why a server that was not listed is refused as a whole.
const NOT_AUDITED: &str = "server-not-audited";
/// Why a server whose name Codex's own config declares is not forwarded.
const NAME_IN_CODEX_CONFIG: &str = "name-in-codex-config";

/// The `admin_events.kind` of a refusal of the forwarded set (beside
/// mcp-pool's `mcp.tool_denied`, which records the admission verdict).
pub(crate) const REFUSED_KIND: &str = "mcp.forward_refused";
/// The `admin_events.entity_type` of such a row: the run's session.
const REFUSED_ENTITY: &str = "session";
/// The `admin_events.actor_id` of such a row (actor type `system`).
pub(crate) const ACTOR_ID: &str = "lionrt-mcp-forward";

#[derive(Debug, Args)]
pub(crate) struct McpForwardArgs {
    /// The `.mcp.json` whose servers are forwarded to a Claude Code or
    /// Codex leg once their tools are admitted. Without it:
    /// WORKSPACE/.lionagi/.mcp.json or WORKSPACE/.mcp.json with
    /// `--trust-project`, else ~/.lionagi/.mcp.json.
    #[arg(long = "mcp-config", value_name = "FILE")]
    mcp_config: Option<PathBuf>,
    /// Consider the workspace's own `.mcp.json` files for forwarding.
    #[arg(long = "trust-project")]
    trust_project: bool,
    /// Seconds a forwarded server gets to answer `initialize` while its
    /// tools are admitted.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    mcp_init_timeout: u64,
}

impl McpForwardArgs {
    /// The options of a leg that is not `lionrt run` (an op of a flow):
    /// `config` as its `--mcp-config`, the workspace's own files not
    /// trusted, the default init timeout.
    pub(crate) fn for_config(config: Option<PathBuf>) -> Self {
        Self {
            mcp_config: config,
            trust_project: false,
            mcp_init_timeout: 10,
        }
    }
}

/// What happened to one refused tool, or to a server refused as a whole.
#[derive(Debug, Clone, Serialize)]
struct Refusal {
    server: String,
    /// `None`: the whole server (it could not be audited).
    tool: Option<String>,
    reason: String,
    message: String,
    /// `disallowed` (forwarded, the tool disallowed by flag) or
    /// `server_not_forwarded`.
    action: &'static str,
}

/// A forwarded server and its admitted tools.
#[derive(Debug, Clone, Serialize)]
struct Forwarded {
    server: String,
    admitted: Vec<String>,
    disallowed: Vec<String>,
}

/// A server the CLI's own configuration declares, disabled because it is
/// not in the admitted set.
#[derive(Debug, Clone, Serialize)]
struct Disabled {
    server: String,
    /// The file that declares it.
    config: String,
}

/// The admission of the forwarded set, as printed and recorded.
#[derive(Debug, Serialize)]
struct Decision {
    #[serde(rename = "type")]
    kind: &'static str,
    config: String,
    source: &'static str,
    forwarded: Vec<Forwarded>,
    refused: Vec<Refusal>,
    /// Codex's own servers, each disabled (empty for Claude, which gets
    /// `--strict-mcp-config` instead).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    disabled: Vec<Disabled>,
}

/// Held until the run ends: the directory of Claude's owner-only MCP
/// config, when the forwarded set carries secrets; and the refusals, to be
/// written as `admin_events` rows once the store is open.
#[derive(Debug, Default)]
pub(crate) struct Guard {
    _dir: Option<tempfile::TempDir>,
    audit: Vec<(String, Value)>,
}

impl Guard {
    /// Writes one `admin_events` row per refusal on a SQLite store.
    pub(crate) fn record_sqlite(&self, engine: &state_sqlite::Engine) -> Result<()> {
        if self.audit.is_empty() {
            return Ok(());
        }
        let conn = engine.conn()?;
        for (session, detail) in &self.audit {
            state_sqlite::admin::record_admin_event(
                &conn,
                &state_sqlite::admin::NewAdminEvent {
                    kind: REFUSED_KIND,
                    entity_type: Some(REFUSED_ENTITY),
                    entity_id: Some(session),
                    actor_type: lifecycle_core::ActorType::System.as_str(),
                    actor_id: ACTOR_ID,
                    detail,
                },
            )
            .context("recording an mcp forwarding refusal in admin_events")?;
        }
        Ok(())
    }

    /// Writes one `admin_events` row per refusal on a PostgreSQL store, in
    /// one transaction.
    pub(crate) fn record_pg(&self, store: &state_postgres::PgStore) -> Result<()> {
        if self.audit.is_empty() {
            return Ok(());
        }
        let actor = lifecycle_core::Actor::new(lifecycle_core::ActorType::System, ACTOR_ID);
        store
            .record_admin_events(
                REFUSED_KIND,
                REFUSED_ENTITY,
                &actor,
                self.audit
                    .iter()
                    .map(|(session, detail)| (session.as_str(), detail)),
            )
            .context("recording the mcp forwarding refusals in admin_events")
    }
}

fn accepts_forwarding(provider: ProviderName) -> bool {
    matches!(provider, ProviderName::Claude | ProviderName::Codex)
}

fn label(provider: ProviderName) -> &'static str {
    match provider {
        ProviderName::Scripted => "scripted",
        ProviderName::Claude => "claude",
        ProviderName::Codex => "codex",
        ProviderName::Gemini => "gemini",
        ProviderName::Pi => "pi",
    }
}

/// Resolves, admits and forwards the MCP set of a run into `config`
/// (kwargs and notes), prints the decision, and dry-runs the provider's
/// invocation again, all before the session starts.
pub(crate) fn admit(
    provider: ProviderName,
    args: &McpForwardArgs,
    config: &mut RunConfig,
    json: bool,
) -> Result<Guard> {
    for key in ["mcp_servers", "mcp_config"] {
        if config.kwargs.contains_key(key) {
            bail!(
                "--set {key} would forward MCP servers unexamined; put them in a file and pass --mcp-config FILE (their tools are admitted first)"
            );
        }
    }
    if provider == ProviderName::Codex {
        refuse_mcp_overrides(config)?;
    }
    if !accepts_forwarding(provider) {
        if args.mcp_config.is_some() {
            bail!(
                "--mcp-config: the {} provider takes no forwarded MCP servers",
                label(provider)
            );
        }
        return Ok(Guard::default());
    }
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let query = tool_gate::McpConfigQuery {
        // A path on the command line is relative to where it was typed.
        explicit: args.mcp_config.as_ref().map(|p| cwd.join(p)),
        project_dir: Some(config.workspace.clone()),
        trust_project_settings: args.trust_project,
        home: std::env::var_os("HOME").map(PathBuf::from),
    };
    let Some(resolved) =
        tool_gate::resolve_mcp_config(&query, tool_gate::McpConsumer::CliForwarding)?
    else {
        return Ok(Guard::default());
    };
    let servers = mcp_pool::read_config_file(&resolved.path)?;
    // Codex's own servers are read before any server is started: a layer
    // that cannot be parsed refuses the run first.
    let own = if provider == ProviderName::Codex {
        Some(codex_own_servers(&config.workspace, config.sandbox)?)
    } else {
        None
    };
    let timeout = Duration::from_secs(args.mcp_init_timeout.max(1));
    let (mut decision, mut forwarded) = audit(provider, &resolved, servers, timeout)?;
    if let Some(own) = &own {
        disable_own(own, &mut forwarded, &mut decision, config)?;
    }
    let mut guard = apply(provider, forwarded, &decision, config)?;
    dry_run(provider, config).with_context(|| {
        format!(
            "the {} request with the forwarded mcp servers is refused",
            label(provider)
        )
    })?;
    let event = serde_json::to_value(&decision).context("rendering the mcp admission")?;
    guard.audit = decision
        .refused
        .iter()
        .map(|r| {
            let detail = json!({
                "session": config.session_id,
                "provider": label(provider),
                "config": decision.config,
                "server": r.server,
                "tool": r.tool,
                "reason": r.reason,
                "message": r.message,
                "action": r.action,
            });
            (config.session_id.clone(), detail)
        })
        .collect();
    config.notes.push(RunNote {
        role: NOTE_ROLE.into(),
        content: event.to_string(),
    });
    print(json, &config.session_id, &decision, &event);
    Ok(guard)
}

/// Connects to every server of the file, admits its tools and splits the
/// set into what is forwarded and what is refused.
fn audit(
    provider: ProviderName,
    resolved: &tool_gate::ResolvedMcpConfig,
    servers: McpServers,
    init_timeout: Duration,
) -> Result<(Decision, Map<String, Value>)> {
    // The file was named explicitly or found under the trust rules, as for
    // `lionrt mcp audit`: its servers may be started.
    let mut pool_config = PoolConfig::with_security(SecurityConfig::trusted());
    pool_config.init_timeout = init_timeout;
    // lionrt's default admission rules (`lionrt mcp audit --compat` shows
    // the original's verdicts on the same file).
    pool_config.admission_policy = mcp_admission::Policy::Strict;
    pool_config.redact = inherited_secrets();
    let pool = McpPool::new(pool_config);
    for (name, entry) in servers.as_map() {
        pool.add_server(name, entry.clone());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let listings = runtime.block_on(async {
        let mut out = Vec::new();
        for name in servers.keys() {
            out.push((name.clone(), pool.list_tools(name).await));
        }
        pool.shutdown().await;
        out
    });
    let mut decision = Decision {
        kind: NOTE_ROLE,
        config: resolved.path.display().to_string(),
        source: resolved.source.as_str(),
        forwarded: Vec::new(),
        refused: Vec::new(),
        disabled: Vec::new(),
    };
    let mut forwarded = Map::new();
    for (server, listing) in listings {
        let listing = match listing {
            Ok(listing) => listing,
            Err(error) => {
                tracing::info!(%server, %error, "forwarded mcp server not audited");
                decision.refused.push(Refusal {
                    server,
                    tool: None,
                    reason: NOT_AUDITED.into(),
                    message: error.to_string(),
                    action: "server_not_forwarded",
                });
                continue;
            }
        };
        let admitted: Vec<String> = listing.admitted.iter().map(|t| t.name.clone()).collect();
        // Claude names a tool `mcp__SERVER__TOOL` after rewriting characters
        // outside this set; a rule on the original name could then miss.
        let by_flag = provider == ProviderName::Claude
            && is_rule_safe(&server)
            && listing.denied.iter().all(|d| is_rule_safe(&d.name));
        let action = if by_flag {
            "disallowed"
        } else {
            "server_not_forwarded"
        };
        for denied in &listing.denied {
            // mcp-pool already logged the denial; this is the action taken.
            tracing::info!(
                %server, tool = %denied.name, reason = denied.reason.code(),
                action, "forwarded mcp tool refused"
            );
            decision.refused.push(Refusal {
                server: server.clone(),
                tool: Some(denied.name.clone()),
                reason: denied.reason.code().to_owned(),
                message: denied.message.clone(),
                action,
            });
        }
        if listing.denied.is_empty() || by_flag {
            if let Some(entry) = servers.get(&server) {
                forwarded.insert(server.clone(), entry.clone());
            }
            decision.forwarded.push(Forwarded {
                disallowed: listing
                    .denied
                    .iter()
                    .map(|d| format!("mcp__{server}__{}", d.name))
                    .collect(),
                server,
                admitted,
            });
        }
    }
    Ok((decision, forwarded))
}

/// The values of the variables the global `secrets.lookup` names that are
/// set in this process: an MCP server inherits them, and must not hand
/// them back.
pub(crate) fn inherited_secrets() -> cli_supervisor::Redactor {
    cli_supervisor::SettingsFile::locate().map_or_else(cli_supervisor::Redactor::new, |f| {
        cli_supervisor::inherited_secrets(&f.secret_lookup())
    })
}

fn is_rule_safe(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Puts the forwarded set, as the whole set, and the disallow rules into
/// the run's kwargs.
fn apply(
    provider: ProviderName,
    servers: Map<String, Value>,
    decision: &Decision,
    config: &mut RunConfig,
) -> Result<Guard> {
    let set = McpServers::from(servers.clone());
    let secrets = set.carries_secrets();
    // The leg hands the forwarded servers' env and headers to them; none
    // of those values may come back out of it (a server's stderr the CLI
    // quotes, an error event) into a record or a report.
    config.redact.extend(set.secret_values());
    let forwarded = ForwardedMcp {
        servers,
        exclusive: true,
    };
    let applied = match provider {
        ProviderName::Claude => providers_core::apply_forwarded_mcp_servers(
            &providers_claude::ClaudeProvider::default(),
            &mut config.kwargs,
            &forwarded,
        ),
        ProviderName::Codex => providers_core::apply_forwarded_mcp_servers(
            &providers_codex::CodexProvider::default(),
            &mut config.kwargs,
            &forwarded,
        ),
        _ => false,
    };
    if !applied {
        bail!(
            "the {} provider takes no forwarded MCP servers",
            label(provider)
        );
    }
    let mut guard = Guard::default();
    match provider {
        ProviderName::Claude => {
            let rules: Vec<Value> = decision
                .forwarded
                .iter()
                .flat_map(|f| f.disallowed.iter().cloned().map(Value::String))
                .collect();
            if !rules.is_empty() {
                let list = config
                    .kwargs
                    .entry("disallowed_tools")
                    .or_insert_with(|| Value::Array(Vec::new()));
                match list {
                    Value::Array(items) => items.extend(rules),
                    _ => bail!("--set disallowed_tools must be a list"),
                }
            }
            if secrets {
                // Env values and headers never go on argv: Claude reads them
                // from an owner-only file in a directory of this run's own.
                let dir = tempfile::Builder::new()
                    .prefix("lionrt-mcp-")
                    .tempdir()
                    .context("creating the directory of the forwarded mcp config")?;
                config.kwargs.insert(
                    "mcp_config_dir".into(),
                    Value::String(dir.path().to_string_lossy().into_owned()),
                );
                guard._dir = Some(dir);
            }
        }
        ProviderName::Codex if secrets => {
            // Codex reads the secrets profile only from its own home.
            let home = codex_home().context(
                "neither CODEX_HOME nor HOME is set: nowhere to put the mcp secrets profile",
            )?;
            config.kwargs.insert(
                "mcp_profile_dir".into(),
                Value::String(home.to_string_lossy().into_owned()),
            );
        }
        _ => {}
    }
    Ok(guard)
}

/// Codex's home as the child will see it: `$CODEX_HOME`, else
/// `~/.codex`.
fn codex_home() -> Option<PathBuf> {
    std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".codex")))
}

/// Why the run is refused when Codex's own servers cannot be known.
const OWN_UNKNOWN: &str = "the run is refused: codex's own mcp servers cannot be known, so the forwarded set could not be made the whole set";

/// The servers Codex's own config layers declare for a leg in `workspace`.
/// With `--sandbox` codex works in a fresh worktree of HEAD, whose
/// `.codex/config.toml` is the committed file, not the one on disk: that
/// one is read too (a project layer).
fn codex_own_servers(workspace: &Path, sandbox: bool) -> Result<providers_codex::CodexDeclaredMcp> {
    let layers = providers_codex::CodexConfigLayers::new(codex_home(), Some(workspace.to_owned()));
    let mut own = providers_codex::codex_declared_mcp_servers(&layers).context(OWN_UNKNOWN)?;
    if sandbox && let Some((file, text)) = committed_project_layer(workspace)? {
        let servers = providers_codex::mcp_servers_in_toml(&file, &text).context(OWN_UNKNOWN)?;
        for (name, kind) in servers {
            own.servers.push(providers_codex::DeclaredMcpServer {
                name,
                file: file.clone(),
                kind,
                always_loaded: false,
            });
        }
    }
    Ok(own)
}

/// HEAD's `.codex/config.toml` in the repository at `workspace` (read with
/// libgit2, as the sandbox reads the repository), named `<path>@HEAD`;
/// `None` only when HEAD's tree has no such entry. Anything else that keeps
/// the file from being known (no repository, no HEAD, an entry that is not
/// a plain file, a read error) refuses the run: a server it declares would
/// otherwise start unexamined.
fn committed_project_layer(workspace: &Path) -> Result<Option<(PathBuf, String)>> {
    let file = PathBuf::from(format!(
        "{}@HEAD",
        workspace.join(".codex/config.toml").display()
    ));
    let fail = |what: &str, e: git2::Error| {
        anyhow::anyhow!(
            "{OWN_UNKNOWN}: {what} for {}: {}",
            file.display(),
            e.message()
        )
    };
    let repo = git2::Repository::open(workspace).map_err(|e| fail("opening the repository", e))?;
    let tree = repo
        .head()
        .and_then(|head| head.peel_to_tree())
        .map_err(|e| fail("reading HEAD", e))?;
    let entry = match tree.get_path(Path::new(".codex/config.toml")) {
        Ok(entry) => entry,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(fail("looking up the file in HEAD", e)),
    };
    if entry.filemode() != i32::from(git2::FileMode::Blob)
        && entry.filemode() != i32::from(git2::FileMode::BlobExecutable)
    {
        bail!(
            "{OWN_UNKNOWN}: {} is not a plain file in HEAD (mode {:o})",
            file.display(),
            entry.filemode()
        );
    }
    let blob = entry
        .to_object(&repo)
        .and_then(|o| o.peel_to_blob())
        .map_err(|e| fail("reading the file from HEAD", e))?;
    let text = String::from_utf8(blob.content().to_vec())
        .with_context(|| format!("{OWN_UNKNOWN}: {} is not UTF-8", file.display()))?;
    Ok(Some((file, text)))
}

/// A `--set config` (`-c`) override that would add or change an MCP
/// server (or pick a profile, which may declare servers) bypasses the
/// admission: refused.
fn refuse_mcp_overrides(config: &RunConfig) -> Result<()> {
    let items = match config.kwargs.get("config") {
        None => return Ok(()),
        Some(Value::Array(items)) => items.as_slice(),
        Some(one) => std::slice::from_ref(one),
    };
    for item in items {
        let Some(text) = item.as_str() else {
            bail!("--set config takes strings (KEY=VALUE), got {item}");
        };
        let key = text.split('=').next().unwrap_or_default().trim();
        let first = key.split('.').next().unwrap_or_default().trim();
        let first = first.trim_matches(|c| c == '"' || c == '\'');
        if first == "mcp_servers" || first == "profile" {
            bail!(
                "--set config={text:?} would change codex's MCP servers unexamined; put the server in a file and pass --mcp-config FILE (its tools are admitted first)"
            );
        }
    }
    Ok(())
}

/// Puts Codex's own servers into the kwargs (each disabled by `-c`) and
/// the decision. A forwarded server whose name Codex's own config also
/// declares is not forwarded: codex would merge the two entries field by
/// field, so the server that starts would not be the one admitted.
fn disable_own(
    own: &providers_codex::CodexDeclaredMcp,
    forwarded: &mut Map<String, Value>,
    decision: &mut Decision,
    config: &mut RunConfig,
) -> Result<()> {
    let configured = own.configured();
    for server in &own.servers {
        if forwarded.remove(&server.name).is_some() {
            tracing::info!(server = %server.name, file = %server.file.display(),
                "forwarded mcp server shares its name with one of codex's own");
            decision.forwarded.retain(|f| f.server != server.name);
            decision.refused.push(Refusal {
                server: server.name.clone(),
                tool: None,
                reason: NAME_IN_CODEX_CONFIG.into(),
                message: format!(
                    "codex's own config {} declares a server of the same name; codex would merge the two, so it is not forwarded (rename one)",
                    server.file.display()
                ),
                action: "server_not_forwarded",
            });
        }
        if decision.disabled.iter().any(|d| d.server == server.name) {
            continue;
        }
        decision.disabled.push(Disabled {
            server: server.name.clone(),
            config: server.file.display().to_string(),
        });
    }
    decision.disabled.sort_by(|a, b| a.server.cmp(&b.server));
    config.kwargs.insert(
        providers_codex::CONFIGURED_MCP_KEY.into(),
        serde_json::to_value(&configured.loaded).context("rendering codex's own servers")?,
    );
    config.kwargs.insert(
        providers_codex::PROJECT_MCP_KEY.into(),
        serde_json::to_value(&configured.project).context("rendering codex's own servers")?,
    );
    Ok(())
}

fn dry_run(provider: ProviderName, config: &RunConfig) -> Result<()> {
    let request = AgentRequest {
        prompt: config.prompt.clone(),
        model: config.model.clone(),
        effort: config.effort,
        workspace: Some(config.workspace.clone()),
        resume: config.resume.clone(),
        kwargs: config.kwargs.clone(),
    };
    match provider {
        ProviderName::Claude => {
            providers_claude::ClaudeProvider::default().invocation(&request)?;
        }
        ProviderName::Codex => {
            providers_codex::CodexProvider::default().invocation(&request)?;
        }
        _ => {}
    }
    Ok(())
}

fn print(json: bool, session: &str, decision: &Decision, event: &Value) {
    if json {
        crate::out::json(&json!({"session": session, "event": event}));
        return;
    }
    crate::out::line(format!("mcp: {} ({})", decision.config, decision.source));
    for f in &decision.forwarded {
        crate::out::line(format!(
            "mcp: forwarding {} ({} admitted tool(s){})",
            f.server,
            f.admitted.len(),
            if f.disallowed.is_empty() {
                String::new()
            } else {
                format!(", disallowed: {}", f.disallowed.join(" "))
            }
        ));
    }
    for d in &decision.disabled {
        crate::out::line(format!(
            "mcp: codex's own server {} ({}) disabled: not in the admitted set",
            d.server, d.config
        ));
    }
    for r in &decision.refused {
        let what = match &r.tool {
            Some(tool) => format!("{}/{tool}", r.server),
            None => r.server.clone(),
        };
        let outcome = if r.action == "disallowed" {
            "disallowed by flag"
        } else {
            "server not forwarded"
        };
        crate::out::line(format!(
            "mcp: refused {what} [{}]: {} ({outcome})",
            r.reason, r.message
        ));
    }
}
