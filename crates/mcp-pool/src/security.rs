//! Transport authorization (the original's `MCPSecurityConfig`): which
//! commands may be started and which URLs reached, and which inherited
//! environment variables a server process never sees.
//!
//! Independent of admission both ways (ADM-002, ADM-003): authorizing a
//! server says nothing about its tools, and a refused tool never changes
//! whether its server may connect.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;

use crate::config::ServerSpec;
use crate::error::Error;

/// The inherited variables dropped by default: any whose name contains one
/// of these (case-insensitively).
pub const DEFAULT_ENV_DENYLIST: [&str; 15] = [
    "API_KEY",
    "API_SECRET",
    "API_TOKEN",
    "ACCESS_TOKEN",
    "AUTH_TOKEN",
    "AWS_SECRET",
    "AWS_SESSION_TOKEN",
    "CREDENTIAL",
    "DATABASE_URL",
    "DB_PASSWORD",
    "PASSWORD",
    "PRIVATE_KEY",
    "REFRESH_TOKEN",
    "SECRET_KEY",
    "SERVICE_TOKEN",
];

/// Which servers the pool may reach. The default refuses every command and
/// every URL (fail closed); [`SecurityConfig::trusted`] allows both.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SecurityConfig {
    /// Whether command (stdio) servers may be started at all.
    pub allow_commands: bool,
    /// When set, the only commands allowed, as bare names: a command with
    /// a path separator is then refused.
    pub command_allowlist: Option<BTreeSet<String>>,
    /// Whether URL servers may be reached at all (https only, but see
    /// `allow_loopback_http`).
    pub allow_urls: bool,
    /// Whether plain `http://` is allowed to a loopback host (`localhost`,
    /// `127.0.0.0/8`, `::1`): traffic that never leaves the machine. Off by
    /// default; plain http to any other host is always refused.
    pub allow_loopback_http: bool,
    /// When set, the only hosts allowed (exact, case-insensitive).
    pub url_allowlist: Option<BTreeSet<String>>,
    /// CA certificates trusted for `https` servers besides the platform's
    /// roots (a private CA, a test CA): each entry is PEM text with one or
    /// more `CERTIFICATE` blocks. They add to the platform's roots and
    /// never replace them; an entry that holds no certificate makes every
    /// https connection fail ([`Error::Tls`], setup) rather than be ignored.
    /// There is no setting that skips certificate verification.
    pub extra_tls_roots_pem: Vec<String>,
    /// Inherited variables whose name contains one of these are dropped.
    pub env_denylist_patterns: BTreeSet<String>,
    /// Whether to drop them.
    pub filter_sensitive_env: bool,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        Self {
            allow_commands: false,
            command_allowlist: None,
            allow_urls: false,
            allow_loopback_http: false,
            url_allowlist: None,
            extra_tls_roots_pem: Vec::new(),
            env_denylist_patterns: DEFAULT_ENV_DENYLIST
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            filter_sensitive_env: true,
        }
    }
}

impl SecurityConfig {
    /// Commands and URLs allowed, no allowlists; the env filter stays on.
    pub fn trusted() -> Self {
        Self {
            allow_commands: true,
            allow_urls: true,
            ..Self::default()
        }
    }

    /// Checks that `spec` may be reached under this config.
    ///
    /// # Errors
    ///
    /// [`Error::TransportDenied`] naming the rule.
    pub fn authorize(&self, server: &str, spec: &ServerSpec) -> Result<(), Error> {
        let deny = |detail: String| Error::TransportDenied {
            server: server.to_owned(),
            detail,
        };
        match spec {
            ServerSpec::Stdio { command, .. } => {
                if !self.allow_commands {
                    return Err(deny(format!(
                        "command transport is disabled (allow_commands is off); blocked command '{command}'"
                    )));
                }
                if let Some(allowed) = &self.command_allowlist {
                    if command.contains('/') {
                        return Err(deny(format!(
                            "command '{command}' contains a path separator; an allowlist names bare commands"
                        )));
                    }
                    if !allowed.contains(command) {
                        return Err(deny(format!("command '{command}' is not in the allowlist")));
                    }
                }
                Ok(())
            }
            ServerSpec::Url { url, .. } => {
                if !self.allow_urls {
                    return Err(deny(format!(
                        "url transport is disabled (allow_urls is off); blocked url '{url}'"
                    )));
                }
                let (scheme, host) = scheme_and_host(url)
                    .ok_or_else(|| deny(format!("url '{url}' has no scheme and host")))?;
                let loopback_http =
                    scheme == "http" && self.allow_loopback_http && is_loopback_host(&host);
                if scheme != "https" && scheme != "wss" && !loopback_http {
                    let hint = if scheme == "http" && !self.allow_loopback_http {
                        " (plain http is allowed only to loopback, with allow_loopback_http)"
                    } else if scheme == "http" {
                        " (plain http is allowed only to loopback)"
                    } else {
                        ""
                    };
                    return Err(deny(format!(
                        "url transport requires https or wss, got '{scheme}'{hint}"
                    )));
                }
                if let Some(allowed) = &self.url_allowlist
                    && !allowed.iter().any(|h| h.eq_ignore_ascii_case(&host))
                {
                    return Err(deny(format!("url host '{host}' is not in the allowlist")));
                }
                Ok(())
            }
        }
    }

    /// The environment of a server process: this process's `inherited`
    /// variables minus the sensitive ones, plus the entry's own `env`
    /// (declared in the config, so kept as given).
    pub fn child_env(
        &self,
        inherited: impl IntoIterator<Item = (OsString, OsString)>,
        declared: &BTreeMap<String, String>,
    ) -> Vec<(OsString, OsString)> {
        let mut out: Vec<(OsString, OsString)> = inherited
            .into_iter()
            .filter(|(name, _)| !self.is_sensitive(&name.to_string_lossy()))
            .filter(|(name, _)| !declared.contains_key(name.to_string_lossy().as_ref()))
            .collect();
        out.extend(
            declared
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        out
    }

    /// Whether an inherited variable of that name is dropped.
    pub fn is_sensitive(&self, name: &str) -> bool {
        if !self.filter_sensitive_env {
            return false;
        }
        let upper = name.to_ascii_uppercase();
        self.env_denylist_patterns
            .iter()
            .any(|p| upper.contains(&p.to_ascii_uppercase()))
    }
}

/// Whether `host` (lowercased, brackets removed) names this machine:
/// `localhost`, an IPv4 address in `127.0.0.0/8` (four decimal parts) or
/// the IPv6 loopback `::1`. Anything else, other spellings of those
/// addresses included, is not loopback (fail closed).
pub(crate) fn is_loopback_host(host: &str) -> bool {
    if host == "localhost" {
        return true;
    }
    if host.contains(':') {
        return host
            .parse::<std::net::Ipv6Addr>()
            .is_ok_and(|ip| ip.is_loopback());
    }
    // `Ipv4Addr`'s parser takes only the dotted-quad decimal form, which
    // is the form every client resolves the same way.
    host.parse::<std::net::Ipv4Addr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// The lowercased scheme and host of `url`, userinfo and port removed, or
/// `None` when either cannot be told for certain.
///
/// Fail closed where URL parsers disagree: a backslash ends the authority
/// (WHATWG parsers read it as `/` for https), and a host with anything but
/// letters, digits, `.`, `-` and `_` (or a bracketed IPv6 literal) is
/// refused rather than guessed at.
pub(crate) fn scheme_and_host(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return None;
    }
    let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or_default();
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = hostport.strip_prefix('[') {
        let (inner, _) = v6.split_once(']')?;
        if inner.is_empty()
            || !inner
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        {
            return None;
        }
        inner
    } else {
        let host = hostport.split(':').next().unwrap_or_default();
        if host.is_empty()
            || !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
        {
            return None;
        }
        host
    };
    Some((scheme.to_ascii_lowercase(), host.to_ascii_lowercase()))
}
