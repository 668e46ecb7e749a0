//! The MCP servers codex's own configuration declares, read from its
//! config layers, so that an exclusive forwarded set can disable each one
//! by name ([`CodexConfiguredMcp`]).
//!
//! The layers codex 0.171 reads, and what is read here:
//!
//! - always loaded: `/etc/codex/config.toml`, `/etc/codex/managed_config.toml`
//!   and `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`);
//! - a project's `.codex/config.toml`, in the work dir and each directory
//!   up to the project root, loaded only when codex trusts the project
//!   (`[projects."<path>"] trust_level = "trusted"`). Trust is not
//!   re-derived here: every `.codex/config.toml` from the workspace up to
//!   `/` is read, and a name declared only there is disabled with a
//!   placeholder transport ([`McpTransportKind`]), which is a complete,
//!   disabled server whether codex loaded that layer or not.
//!
//! A file that is absent declares nothing. A file that exists but cannot be
//! read or parsed, or whose `mcp_servers` is not a table of tables, is an
//! error naming the file: its servers cannot be known, so nothing is
//! guessed. So is a server whose name is not a bare TOML key, which no
//! `-c` override can name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::mcp::{CodexConfiguredMcp, McpTransportKind, is_bare_key};

/// Where codex's system-wide configuration lives on Unix.
pub const CODEX_SYSTEM_DIR: &str = "/etc/codex";

/// The places [`codex_declared_mcp_servers`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexConfigLayers {
    /// The system directory ([`CODEX_SYSTEM_DIR`]; a test names another).
    pub system_dir: PathBuf,
    /// `$CODEX_HOME` as the child will see it; `None`: no user layer.
    pub codex_home: Option<PathBuf>,
    /// The directory codex works in (`-C`); `None`: no project layers.
    pub workspace: Option<PathBuf>,
}

impl CodexConfigLayers {
    /// The layers for `codex_home` and `workspace`, with the system
    /// directory at [`CODEX_SYSTEM_DIR`].
    pub fn new(codex_home: Option<PathBuf>, workspace: Option<PathBuf>) -> Self {
        Self {
            system_dir: PathBuf::from(CODEX_SYSTEM_DIR),
            codex_home,
            workspace,
        }
    }

    /// The always-loaded files (user, managed, system), then the project
    /// files nearest the workspace first; each with whether codex always
    /// loads it.
    fn files(&self) -> Vec<(PathBuf, bool)> {
        let mut out = vec![
            (self.system_dir.join("managed_config.toml"), true),
            (self.system_dir.join("config.toml"), true),
        ];
        let user = self.codex_home.as_ref().map(|h| h.join("config.toml"));
        if let Some(user) = &user {
            out.insert(0, (user.clone(), true));
        }
        if let Some(ws) = &self.workspace {
            let ws = std::fs::canonicalize(ws).unwrap_or_else(|_| ws.clone());
            for dir in ws.ancestors() {
                let file = dir.join(".codex").join("config.toml");
                if user.as_ref().is_some_and(|u| same_file(u, &file)) {
                    continue;
                }
                out.push((file, false));
            }
        }
        out
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// One server a config layer declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredMcpServer {
    /// Its name (a bare key).
    pub name: String,
    /// The file that declares it.
    pub file: PathBuf,
    /// Its transport; `None` when the layer names neither `command` nor
    /// `url` (another layer may).
    pub kind: Option<McpTransportKind>,
    /// Whether codex always loads that file (system, managed or user
    /// config), or only for a trusted project.
    pub always_loaded: bool,
}

/// Every server codex's configuration layers declare, in layer order
/// (always-loaded layers first, then project layers nearest the workspace
/// first); a name may appear once per layer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodexDeclaredMcp {
    /// The declarations.
    pub servers: Vec<DeclaredMcpServer>,
}

impl CodexDeclaredMcp {
    /// Whether no layer declares a server.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The form an exclusive set disables: names from an always-loaded
    /// layer, and the others with the kind the nearest project layer
    /// naming a transport gives (stdio when none does).
    pub fn configured(&self) -> CodexConfiguredMcp {
        let mut loaded: Vec<String> = Vec::new();
        let mut project: BTreeMap<String, Option<McpTransportKind>> = BTreeMap::new();
        for s in &self.servers {
            if s.always_loaded {
                if !loaded.contains(&s.name) {
                    loaded.push(s.name.clone());
                }
                continue;
            }
            let slot = project.entry(s.name.clone()).or_insert(None);
            if slot.is_none() {
                *slot = s.kind;
            }
        }
        loaded.sort();
        let project = project
            .into_iter()
            .filter(|(name, _)| !loaded.contains(name))
            .map(|(name, kind)| (name, kind.unwrap_or(McpTransportKind::Stdio)))
            .collect();
        CodexConfiguredMcp { loaded, project }
    }
}

/// Reads the servers every layer of `layers` declares.
///
/// # Errors
///
/// [`Error::CodexConfigUnreadable`] for a file that exists but cannot be
/// read, [`Error::CodexConfigInvalid`] for one that is not TOML or whose
/// `mcp_servers` is not a table of tables, and
/// [`Error::CodexConfigServerName`] for a server name that is not a bare
/// key.
pub fn codex_declared_mcp_servers(layers: &CodexConfigLayers) -> Result<CodexDeclaredMcp, Error> {
    let mut out = CodexDeclaredMcp::default();
    for (file, always_loaded) in layers.files() {
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(Error::CodexConfigUnreadable { file, source }),
        };
        for (name, kind) in mcp_servers_in_toml(&file, &text)? {
            out.servers.push(DeclaredMcpServer {
                name,
                file: file.clone(),
                kind,
                always_loaded,
            });
        }
    }
    Ok(out)
}

/// The `[mcp_servers.NAME]` entries of one config file's text, in file
/// order, with the transport each names. `file` only names the file in an
/// error.
///
/// # Errors
///
/// As [`codex_declared_mcp_servers`], for this one file.
pub fn mcp_servers_in_toml(
    file: &Path,
    text: &str,
) -> Result<Vec<(String, Option<McpTransportKind>)>, Error> {
    let invalid = |message: String| Error::CodexConfigInvalid {
        file: file.to_owned(),
        message,
    };
    let doc = toml_edit::Document::parse(text).map_err(|e| invalid(e.to_string()))?;
    let Some(root) = doc.as_item().as_table_like() else {
        return Err(invalid("the document is not a table".into()));
    };
    let Some(servers) = root.get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let Some(servers) = servers.as_table_like() else {
        return Err(invalid("mcp_servers is not a table".into()));
    };
    let mut out = Vec::new();
    for (name, entry) in servers.iter() {
        let Some(entry) = entry.as_table_like() else {
            return Err(invalid(format!("mcp_servers.{name} is not a table")));
        };
        if !is_bare_key(name) {
            return Err(Error::CodexConfigServerName {
                file: file.to_owned(),
                server: name.to_owned(),
            });
        }
        let kind = if entry.contains_key("command") {
            Some(McpTransportKind::Stdio)
        } else if entry.contains_key("url") {
            Some(McpTransportKind::Http)
        } else {
            None
        };
        out.push((name.to_owned(), kind));
    }
    Ok(out)
}
