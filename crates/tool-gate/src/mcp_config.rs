//! MCP config resolution: which `.mcp.json` a session uses, and under which
//! trust gate. One function, for native loading and CLI forwarding alike.

use std::path::{Path, PathBuf};

use crate::error::Error;

/// The inputs of [`resolve_mcp_config`]. The library reads no environment
/// variable: the caller passes the home directory and the project directory
/// it means.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpConfigQuery {
    /// The spec's explicit `mcp_config_path`. A relative path is taken
    /// against `project_dir`.
    pub explicit: Option<PathBuf>,
    /// The project (working) directory of the session.
    pub project_dir: Option<PathBuf>,
    /// Whether project-scoped settings are trusted.
    pub trust_project_settings: bool,
    /// The user's home directory.
    pub home: Option<PathBuf>,
}

/// Where the chosen file came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpConfigSource {
    /// The spec's explicit path.
    Explicit,
    /// `<project>/.lionagi/.mcp.json` (trusted project).
    ProjectLionagi,
    /// `<project>/.mcp.json` (trusted project).
    Project,
    /// `<home>/.lionagi/.mcp.json`.
    UserHome,
}

impl McpConfigSource {
    /// A stable lowercase name for logs and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Explicit => "explicit",
            Self::ProjectLionagi => "project-lionagi",
            Self::Project => "project",
            Self::UserHome => "user-home",
        }
    }
}

/// Who is asking. It changes nothing in the answer (GATE-021); it is logged
/// so an operator can tell the two islands' lookups apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpConsumer {
    /// The runtime's own MCP connections (`mcp-pool`).
    NativeLoading,
    /// The server set forwarded to a CLI leg (`--mcp-config` and the like).
    CliForwarding,
}

/// The chosen config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedMcpConfig {
    /// Its absolute, resolved path.
    pub path: PathBuf,
    /// Where it came from.
    pub source: McpConfigSource,
}

/// Picks the authoritative `.mcp.json`:
///
/// 1. the explicit path always wins (GATE-017); one that does not resolve to
///    a file is [`Error::Configuration`] (GATE-020);
/// 2. then `<project>/.lionagi/.mcp.json`, then `<project>/.mcp.json`, both
///    only when `trust_project_settings` is true, and ignored otherwise even
///    when present (GATE-018);
/// 3. then `<home>/.lionagi/.mcp.json`, without the trust flag (GATE-019).
///
/// A missing discovered candidate falls through silently (GATE-020); so does
/// one that exists but is not a regular file. `Ok(None)`: no config.
///
/// Reading of an open point (the spec gives no order among the project
/// candidates, nor between them and the home file): the runtime's own
/// `.lionagi/` directory before the generic `.mcp.json`, and a trusted
/// project before the user-wide file, the more specific declaration first.
pub fn resolve_mcp_config(
    query: &McpConfigQuery,
    consumer: McpConsumer,
) -> Result<Option<ResolvedMcpConfig>, Error> {
    let consumer_name = match consumer {
        McpConsumer::NativeLoading => "native-loading",
        McpConsumer::CliForwarding => "cli-forwarding",
    };
    let found = |path: PathBuf, source: McpConfigSource| {
        tracing::debug!(
            consumer = consumer_name,
            source = source.as_str(),
            path = %path.display(),
            "mcp config resolved"
        );
        Ok(Some(ResolvedMcpConfig { path, source }))
    };
    if let Some(explicit) = &query.explicit {
        return found(
            resolve_explicit(explicit, query.project_dir.as_deref())?,
            McpConfigSource::Explicit,
        );
    }
    if let Some(project) = &query.project_dir {
        let candidates = [
            (
                project.join(".lionagi").join(".mcp.json"),
                McpConfigSource::ProjectLionagi,
            ),
            (project.join(".mcp.json"), McpConfigSource::Project),
        ];
        for (path, source) in candidates {
            if !query.trust_project_settings {
                if path.exists() {
                    tracing::debug!(
                        consumer = consumer_name,
                        path = %path.display(),
                        "project mcp config ignored: project settings are not trusted"
                    );
                }
                continue;
            }
            if let Some(path) = existing_file(&path) {
                return found(path, source);
            }
        }
    }
    if let Some(home) = &query.home
        && let Some(path) = existing_file(&home.join(".lionagi").join(".mcp.json"))
    {
        return found(path, McpConfigSource::UserHome);
    }
    Ok(None)
}

fn resolve_explicit(explicit: &Path, project_dir: Option<&Path>) -> Result<PathBuf, Error> {
    let config_error = |reason: &str| Error::Configuration {
        path: explicit.to_path_buf(),
        reason: reason.to_owned(),
    };
    let path = if explicit.is_absolute() {
        explicit.to_path_buf()
    } else {
        project_dir
            .ok_or_else(|| {
                config_error(
                    "relative mcp_config_path with no project directory to resolve it against",
                )
            })?
            .join(explicit)
    };
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() => std::fs::canonicalize(&path)
            .map_err(|_| config_error("mcp_config_path cannot be resolved")),
        Ok(_) => Err(config_error("mcp_config_path is not a regular file")),
        Err(_) => Err(config_error("mcp_config_path does not exist")),
    }
}

fn existing_file(path: &Path) -> Option<PathBuf> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => std::fs::canonicalize(path).ok(),
        _ => None,
    }
}
