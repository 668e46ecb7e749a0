//! Forwarding an MCP server set to a CLI leg.

use serde_json::{Map, Value};

use crate::provider::Provider;

/// The kwargs key the server set is forwarded under (never `mcp_config`,
/// the path field, whose validation refuses absolute paths).
pub const MCP_SERVERS_KEY: &str = "mcp_servers";

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

    /// Every secret value of the set (each string under a
    /// [`MCP_SECRET_FIELDS`] field; a header like `Bearer TOKEN` also gives
    /// its last word), for registering with a leg's redactor so nothing the
    /// leg writes back carries one.
    pub fn secret_values(&self) -> Vec<String> {
        fn leaves(value: &Value, out: &mut Vec<String>) {
            match value {
                Value::String(s) => {
                    out.push(s.clone());
                    if let Some((_, last)) = s.trim().rsplit_once(char::is_whitespace) {
                        out.push(last.to_owned());
                    }
                }
                Value::Array(items) => items.iter().for_each(|v| leaves(v, out)),
                Value::Object(map) => map.values().for_each(|v| leaves(v, out)),
                Value::Null => {}
                other => out.push(other.to_string()),
            }
        }
        let mut out = Vec::new();
        for config in self.0.values() {
            if let Value::Object(fields) = config {
                for field in MCP_SECRET_FIELDS {
                    if let Some(value) = fields.get(field) {
                        leaves(value, &mut out);
                    }
                }
            }
        }
        out
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

/// How a provider takes a forwarded MCP server set
/// ([`Provider::mcp_forwarding`](crate::Provider::mcp_forwarding)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpForwarding {
    /// The boolean kwargs key that `exclusive` sets: the provider then
    /// turns off every server outside the forwarded set.
    pub exclusive_key: &'static str,
}

impl McpForwarding {
    /// A provider that takes the set under [`MCP_SERVERS_KEY`] and reads
    /// `exclusive` from the boolean kwarg `exclusive_key`.
    pub const fn new(exclusive_key: &'static str) -> Self {
        Self { exclusive_key }
    }
}

/// Applies a forwarded set to `provider`'s plain kwargs map. Returns
/// whether anything was applied. Whether a provider can be given a set has
/// one answer, [`Provider::mcp_forwarding`](crate::Provider::mcp_forwarding);
/// a provider that does not accept one has its kwargs left unchanged.
///
/// The set goes under `mcp_servers` even when empty (an explicit empty
/// selection forces zero servers instead of the CLI's own discovery).
/// `exclusive` sets the provider's own exclusive key to `true`.
pub fn apply_forwarded_mcp_servers<P: Provider + ?Sized>(
    provider: &P,
    kwargs: &mut Map<String, Value>,
    forwarded: &ForwardedMcp,
) -> bool {
    let Some(forwarding) = provider.mcp_forwarding() else {
        return false;
    };
    kwargs.insert(
        MCP_SERVERS_KEY.into(),
        Value::Object(forwarded.servers.clone()),
    );
    if forwarded.exclusive {
        kwargs.insert(forwarding.exclusive_key.into(), Value::Bool(true));
    }
    true
}
