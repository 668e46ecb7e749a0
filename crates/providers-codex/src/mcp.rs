//! The Codex form of a forwarded MCP server set: `-c` overrides for argv,
//! and the secrets (`env`, `http_headers`) in a TOML profile file.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use providers_core::MCP_SECRET_FIELDS;
use serde_json::{Map, Value};

use crate::error::Error;

/// The kwargs key `exclusive` sets for Codex: every configured server
/// outside the forwarded set is then disabled by name.
pub const MCP_EXCLUSIVE_KEY: &str = "mcp_exclusive";

/// The kwargs key of [`CodexConfiguredMcp::loaded`]: a list of names.
pub const CONFIGURED_MCP_KEY: &str = "configured_mcp_servers";

/// The kwargs key of [`CodexConfiguredMcp::project`]: an object of name to
/// `stdio` or `http`.
pub const PROJECT_MCP_KEY: &str = "project_mcp_servers";

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

/// The transport of a server codex's own configuration declares, as far as
/// disabling it needs: an override `enabled=false` on a name codex does not
/// load makes an entry with no transport, which codex 0.171 refuses
/// ("invalid transport"), so a name that may not be loaded is disabled
/// together with a placeholder transport of its own kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum McpTransportKind {
    /// `command` (stdio); also assumed when a layer names no transport.
    Stdio,
    /// `url` (streamable HTTP).
    Http,
}

impl McpTransportKind {
    /// The kwarg spelling: `stdio` or `http`.
    pub fn as_str(self) -> &'static str {
        match self {
            McpTransportKind::Stdio => "stdio",
            McpTransportKind::Http => "http",
        }
    }

    /// The kind `s` spells ([`Self::as_str`]).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "stdio" => Some(McpTransportKind::Stdio),
            "http" => Some(McpTransportKind::Http),
            _ => None,
        }
    }

    /// The placeholder override that makes a disabled entry complete
    /// (never the server's own command or URL, which may carry a token).
    fn placeholder(self) -> &'static str {
        match self {
            McpTransportKind::Stdio => "command=\"false\"",
            McpTransportKind::Http => "url=\"http://127.0.0.1/lionrt-disabled\"",
        }
    }
}

/// The servers codex's own configuration declares, which an exclusive
/// forwarded set disables by name
/// ([`codex_declared_mcp_servers`](crate::codex_declared_mcp_servers)
/// reads them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodexConfiguredMcp {
    /// Declared in a layer codex always loads (the system, managed and
    /// user `config.toml`): disabled with `enabled=false`.
    pub loaded: Vec<String>,
    /// Declared only in a project's `.codex/config.toml`, which codex
    /// loads only when that project is trusted: disabled with
    /// `enabled=false` and a placeholder transport of the kind the layer
    /// gives, so the override is a complete, disabled server whether codex
    /// loaded that layer or not.
    pub project: BTreeMap<String, McpTransportKind>,
}

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
    let configured = CodexConfiguredMcp {
        loaded: configured.to_vec(),
        project: BTreeMap::new(),
    };
    codex_mcp_overrides_for(servers, exclusive, &configured, profile)
}

/// [`codex_mcp_overrides`] with the whole [`CodexConfiguredMcp`]: with
/// `exclusive`, each loaded name outside the set gets `enabled=false`, and
/// each project-only name also its placeholder transport. A name that is
/// not a bare TOML key is refused ([`Error::InvalidMcpServerName`]): codex
/// splits a `-c` key at every `.` and takes quotes literally, so no
/// override can name it.
pub fn codex_mcp_overrides_for(
    servers: &Map<String, Value>,
    exclusive: bool,
    configured: &CodexConfiguredMcp,
    profile: &str,
) -> Result<CodexMcpPlan, Error> {
    if !is_bare_key(profile) {
        return Err(Error::InvalidProfileName);
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
        for name in &configured.loaded {
            if servers.contains_key(name) {
                continue;
            }
            if !is_bare_key(name) {
                return Err(Error::InvalidMcpServerName(name.clone()));
            }
            plan.args.push("-c".into());
            plan.args.push(format!("mcp_servers.{name}.enabled=false"));
        }
        for (name, kind) in &configured.project {
            if servers.contains_key(name) || configured.loaded.contains(name) {
                continue;
            }
            if !is_bare_key(name) {
                return Err(Error::InvalidMcpServerName(name.clone()));
            }
            plan.args.push("-c".into());
            plan.args.push(format!("mcp_servers.{name}.enabled=false"));
            plan.args.push("-c".into());
            plan.args
                .push(format!("mcp_servers.{name}.{}", kind.placeholder()));
        }
    }
    if !profile_toml.is_empty() {
        plan.args.push("--profile".into());
        plan.args.push(profile.to_owned());
        plan.profile_toml = Some(profile_toml);
    }
    Ok(plan)
}

pub(crate) fn is_bare_key(s: &str) -> bool {
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
