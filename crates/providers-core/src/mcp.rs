//! Forwarding an MCP server set to a CLI leg.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::error::Error;

/// The kwargs key the server set is forwarded under (never `mcp_config`,
/// the path field, whose validation refuses absolute paths).
pub const MCP_SERVERS_KEY: &str = "mcp_servers";
/// The Claude kwargs key `exclusive` sets.
pub const STRICT_MCP_CONFIG_KEY: &str = "strict_mcp_config";
/// The Codex kwargs key `exclusive` sets.
pub const MCP_EXCLUSIVE_KEY: &str = "mcp_exclusive";

/// Server-config fields whose values may be secrets (environment values,
/// HTTP headers such as `Authorization`). [`McpServers`] never renders
/// them, and no provider puts them on argv.
pub const MCP_SECRET_FIELDS: [&str; 3] = ["env", "headers", "http_headers"];

/// What a redacted secret value renders as.
pub const REDACTED: &str = "<redacted>";

/// An MCP server set as a request carries it: server name to its config
/// object (`command`, `args`, `url`, `env`, `headers`, ...).
///
/// The configs may hold secrets, so `Debug` and `Serialize` render the
/// set redacted: under every [`MCP_SECRET_FIELDS`] field the keys stay
/// (variable and header names are not secret) and every value becomes
/// [`REDACTED`]. Read the real set with [`McpServers::as_map`] (or through
/// `Deref`) where the leg is built.
///
/// ```
/// use providers_core::McpServers;
/// use serde_json::json;
///
/// let set = json!({"github": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_secret"}}});
/// let servers = McpServers::from(set.as_object().cloned().unwrap_or_default());
/// assert!(servers.carries_secrets());
/// let shown = format!("{servers:?} {}", serde_json::to_string(&servers)?);
/// assert!(!shown.contains("ghp_secret"));
/// assert!(shown.contains("GITHUB_TOKEN") && shown.contains("gh-mcp"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default, PartialEq)]
pub struct McpServers(Map<String, Value>);

impl McpServers {
    /// The set as given, secrets included.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The set as given, secrets included.
    pub fn into_map(self) -> Map<String, Value> {
        self.0
    }

    /// Whether any server has a secret field with something in it. A
    /// field that is present but not an object counts (it is not known to
    /// be empty).
    pub fn carries_secrets(&self) -> bool {
        self.0.values().any(|config| {
            let Value::Object(fields) = config else {
                return false;
            };
            MCP_SECRET_FIELDS
                .iter()
                .any(|field| match fields.get(*field) {
                    None | Some(Value::Null) => false,
                    Some(Value::Object(entries)) => !entries.is_empty(),
                    Some(_) => true,
                })
        })
    }

    /// The set with every secret value replaced by [`REDACTED`].
    pub fn redacted(&self) -> Map<String, Value> {
        let mut out = self.0.clone();
        for config in out.values_mut() {
            let Value::Object(fields) = config else {
                continue;
            };
            for field in MCP_SECRET_FIELDS {
                match fields.get_mut(field) {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(entries)) => {
                        for value in entries.values_mut() {
                            *value = Value::String(REDACTED.into());
                        }
                    }
                    Some(other) => *other = Value::String(REDACTED.into()),
                }
            }
        }
        out
    }
}

impl From<Map<String, Value>> for McpServers {
    fn from(map: Map<String, Value>) -> Self {
        Self(map)
    }
}

impl std::ops::Deref for McpServers {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("McpServers").field(&self.redacted()).finish()
    }
}

impl serde::Serialize for McpServers {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.redacted().serialize(serializer)
    }
}

/// A resolved MCP server set to hand to a CLI leg.
#[derive(Clone, PartialEq, Default)]
pub struct ForwardedMcp {
    /// Server name to its configuration object (`command`, `args`, `url`,
    /// `env`, `http_headers`, ...). Empty means "zero servers", which is
    /// still forwarded.
    pub servers: Map<String, Value>,
    /// The set is the whole set: servers the CLI would load on its own are
    /// turned off.
    pub exclusive: bool,
}

impl std::fmt::Debug for ForwardedMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Server configs may carry env values and headers.
        f.debug_struct("ForwardedMcp")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .field("exclusive", &self.exclusive)
            .finish()
    }
}

/// Whether `provider` can be given an MCP server set. The one answer every
/// forwarding site uses.
pub fn provider_accepts_forwarded_mcp(provider: &str) -> bool {
    matches!(
        provider.trim().to_ascii_lowercase().as_str(),
        "claude" | "claude-code" | "claude_code" | "codex" | "codex-cli" | "codex_cli"
    )
}

fn is_codex(provider: &str) -> bool {
    matches!(
        provider.trim().to_ascii_lowercase().as_str(),
        "codex" | "codex-cli" | "codex_cli"
    )
}

/// Applies a forwarded set to a provider's plain kwargs map. Returns
/// whether anything was applied; a provider that does not accept a set has
/// its kwargs left unchanged.
///
/// The set goes under `mcp_servers` even when empty (an explicit empty
/// selection forces zero servers instead of the CLI's own discovery).
/// `exclusive` adds `strict_mcp_config` for Claude and `mcp_exclusive` for
/// Codex (which then disables every configured server outside the set).
pub fn apply_forwarded_mcp_servers(
    provider: &str,
    kwargs: &mut Map<String, Value>,
    forwarded: &ForwardedMcp,
) -> bool {
    if !provider_accepts_forwarded_mcp(provider) {
        return false;
    }
    kwargs.insert(
        MCP_SERVERS_KEY.into(),
        Value::Object(forwarded.servers.clone()),
    );
    if forwarded.exclusive {
        let key = if is_codex(provider) {
            MCP_EXCLUSIVE_KEY
        } else {
            STRICT_MCP_CONFIG_KEY
        };
        kwargs.insert(key.into(), Value::Bool(true));
    }
    true
}

/// The Codex form of a server set: `-c` overrides for argv and, when any
/// server carries `env` or `http_headers`, a TOML profile holding them.
///
/// The profile is the file codex reads for `--profile NAME`:
/// `$CODEX_HOME/NAME.config.toml` ([`codex_profile_file_name`]), layered on
/// the base config, with the servers as top-level `[mcp_servers.X.env]` /
/// `[mcp_servers.X.http_headers]` tables.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct CodexMcpPlan {
    /// argv elements: `-c`, `mcp_servers.<name>.<field>=<toml>`, ...
    pub args: Vec<String>,
    /// The profile file's TOML, `None` when no server has env or headers.
    pub profile_toml: Option<String>,
}

impl std::fmt::Debug for CodexMcpPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodexMcpPlan")
            .field("args", &self.args)
            .field("profile_toml", &self.profile_toml.as_ref().map(|t| t.len()))
            .finish()
    }
}

/// The file name codex 0.171 reads for `--profile NAME` inside
/// `$CODEX_HOME`: `NAME.config.toml`.
pub fn codex_profile_file_name(profile: &str) -> String {
    format!("{profile}.config.toml")
}

/// Fields whose values may be secrets: they go to the profile file, never
/// to argv.
pub const CODEX_SECRET_FIELDS: [&str; 2] = ["env", "http_headers"];

/// Builds the Codex overrides for `servers` under profile `profile`.
///
/// With `exclusive`, every name in `configured` (the servers Codex would
/// otherwise load) that is not in the set gets `enabled=false`: an empty
/// `mcp_servers` override merges rather than replaces.
pub fn codex_mcp_overrides(
    servers: &Map<String, Value>,
    exclusive: bool,
    configured: &[String],
    profile: &str,
) -> Result<CodexMcpPlan, Error> {
    if !is_bare_key(profile) {
        return Err(Error::InvalidRequest(
            "codex profile name is not a bare toml key".into(),
        ));
    }
    let mut plan = CodexMcpPlan::default();
    let mut profile_toml = String::new();
    for (name, config) in servers {
        if !is_bare_key(name) {
            return Err(Error::InvalidMcpServerName(name.clone()));
        }
        let Value::Object(fields) = config else {
            return Err(Error::InvalidMcpField {
                server: name.clone(),
                field: "<config>".into(),
            });
        };
        for (field, value) in fields {
            let bad = || Error::InvalidMcpField {
                server: name.clone(),
                field: field.clone(),
            };
            if !is_bare_key(field) {
                return Err(bad());
            }
            // A secret field codex does not take (Claude's `headers`) would
            // otherwise land on argv as an override: refused instead.
            if MCP_SECRET_FIELDS.contains(&field.as_str())
                && !CODEX_SECRET_FIELDS.contains(&field.as_str())
            {
                return Err(bad());
            }
            if CODEX_SECRET_FIELDS.contains(&field.as_str()) {
                let Value::Object(entries) = value else {
                    return Err(bad());
                };
                if entries.is_empty() {
                    continue;
                }
                // Codex 0.171 layers `$CODEX_HOME/<profile>.config.toml` on
                // its base config, where servers are top-level tables; a
                // `[profiles.X]` table there is ignored (and an error in
                // config.toml), so the secrets would never arrive.
                let _ = writeln!(profile_toml, "[mcp_servers.{name}.{field}]");
                for (k, v) in entries {
                    let Value::String(s) = v else {
                        return Err(bad());
                    };
                    let _ = writeln!(profile_toml, "{} = {}", toml_key(k), toml_string(s));
                }
                continue;
            }
            let rendered = toml_value(value).ok_or_else(bad)?;
            plan.args.push("-c".into());
            plan.args
                .push(format!("mcp_servers.{name}.{field}={rendered}"));
        }
    }
    if exclusive {
        for name in configured {
            if servers.contains_key(name) {
                continue;
            }
            if !is_bare_key(name) {
                return Err(Error::InvalidMcpServerName(name.clone()));
            }
            plan.args.push("-c".into());
            plan.args.push(format!("mcp_servers.{name}.enabled=false"));
        }
    }
    if !profile_toml.is_empty() {
        plan.args.push("--profile".into());
        plan.args.push(profile.to_owned());
        plan.profile_toml = Some(profile_toml);
    }
    Ok(plan)
}

fn is_bare_key(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn toml_key(k: &str) -> String {
    if is_bare_key(k) {
        k.to_owned()
    } else {
        toml_string(k)
    }
}

/// A TOML basic string. JSON string escapes (`\"`, `\\`, `\n`, `\uXXXX`)
/// are all valid TOML escapes, so serde_json's rendering is reused.
fn toml_string(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

fn toml_value(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(toml_string(s)),
        Value::Array(items) => {
            let parts: Option<Vec<String>> = items.iter().map(toml_value).collect();
            Some(format!("[{}]", parts?.join(", ")))
        }
        Value::Object(map) => {
            let parts: Option<Vec<String>> = map
                .iter()
                .map(|(k, v)| toml_value(v).map(|r| format!("{} = {r}", toml_key(k))))
                .collect();
            Some(format!("{{{}}}", parts?.join(", ")))
        }
    }
}
