//! `.mcp.json` loading and the typed view of one server's entry.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use providers_core::McpServers;
use serde_json::{Map, Value};

use crate::error::Error;

/// Reads an `.mcp.json` file: a JSON object whose `mcpServers` object maps
/// server names to their config objects.
///
/// The original's `load_config` semantics: a missing file is
/// [`Error::ConfigNotFound`]; a root that is not an object, or an
/// `mcpServers` that is not an object, is [`Error::ConfigInvalid`]; a file
/// without `mcpServers` declares no servers; other top-level keys are
/// ignored; an entry is kept as written (it is checked when the server is
/// connected, so one bad entry does not hide the others).
///
/// # Errors
///
/// See above.
pub fn read_config_file(path: &Path) -> Result<McpServers, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(source) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::ConfigNotFound {
                path: path.to_owned(),
            });
        }
        Err(source) => {
            return Err(Error::ConfigRead {
                path: path.to_owned(),
                source,
            });
        }
    };
    parse_config(path, &text)
}

/// [`read_config_file`] on text already read; `path` only names it in
/// errors.
///
/// # Errors
///
/// [`Error::ConfigInvalid`], also for a file holding an object key equal to
/// one of [`RESERVED_SERDE_JSON_KEYS`](crate::RESERVED_SERDE_JSON_KEYS)
/// anywhere.
pub fn parse_config(path: &Path, text: &str) -> Result<McpServers, Error> {
    let invalid = |detail: String| Error::ConfigInvalid {
        path: path.to_owned(),
        detail,
    };
    // Keys are checked as written before the Value parse, which would give
    // serde_json's private tokens a meaning of their own (see `reserved`).
    if let Err(crate::reserved::Finding::Reserved(key)) = crate::reserved::scan(text) {
        return Err(invalid(crate::reserved::describe(key)));
    }
    let root: Value = serde_json::from_str(text).map_err(|e| {
        invalid(format!(
            "not JSON (line {}, column {})",
            e.line(),
            e.column()
        ))
    })?;
    let Value::Object(mut root) = root else {
        return Err(invalid("the config must be a JSON object".into()));
    };
    match root.remove("mcpServers") {
        None => Ok(McpServers::default()),
        Some(Value::Object(servers)) => Ok(McpServers::from(servers)),
        Some(_) => Err(invalid("mcpServers must be an object".into())),
    }
}

/// How to reach one server, parsed from its config entry.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerSpec {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program (a bare name is looked up on `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment.
        env: BTreeMap<String, String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint.
    Url {
        /// The endpoint.
        url: String,
        /// Extra request headers.
        headers: BTreeMap<String, String>,
    },
}

impl std::fmt::Debug for ServerSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Environment values and headers may be secrets: names only.
        match self {
            Self::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Self::Url { url, headers } => f
                .debug_struct("Url")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

impl ServerSpec {
    /// Parses server `name`'s entry. As in the original, `url` wins when
    /// both `url` and `command` are present.
    ///
    /// # Errors
    ///
    /// [`Error::ServerConfigInvalid`] naming the field at fault.
    pub fn from_entry(name: &str, entry: &Value) -> Result<Self, Error> {
        let invalid = |detail: &str| Error::ServerConfigInvalid {
            server: name.to_owned(),
            detail: detail.to_owned(),
        };
        let Value::Object(fields) = entry else {
            return Err(invalid("the entry must be an object"));
        };
        if let Some(url) = fields.get("url") {
            let Value::String(url) = url else {
                return Err(invalid("url must be a string"));
            };
            let headers = string_map(fields, "headers").map_err(|d| invalid(&d))?;
            return Ok(Self::Url {
                url: url.clone(),
                headers,
            });
        }
        let Some(command) = fields.get("command") else {
            return Err(invalid("the entry must have either 'url' or 'command'"));
        };
        let Value::String(command) = command else {
            return Err(invalid("command must be a string"));
        };
        if command.trim().is_empty() {
            return Err(invalid("command is empty"));
        }
        let args = match fields.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| invalid("args must be an array of strings"))?,
            Some(_) => return Err(invalid("args must be an array of strings")),
        };
        let env = string_map(fields, "env").map_err(|d| invalid(&d))?;
        let cwd = match fields.get("cwd") {
            None | Some(Value::Null) => None,
            Some(Value::String(cwd)) => Some(PathBuf::from(cwd)),
            Some(_) => return Err(invalid("cwd must be a string")),
        };
        Ok(Self::Stdio {
            command: command.clone(),
            args,
            env,
            cwd,
        })
    }
}

fn string_map(fields: &Map<String, Value>, key: &str) -> Result<BTreeMap<String, String>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(entries)) => entries
            .iter()
            .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
            .collect::<Option<BTreeMap<_, _>>>()
            .ok_or_else(|| format!("{key} values must be strings")),
        Some(_) => Err(format!("{key} must be an object of strings")),
    }
}
