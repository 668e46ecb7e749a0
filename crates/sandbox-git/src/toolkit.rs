//! The coding toolkit's sandbox tool: the agent-facing request and the
//! operator-level settings it never carries.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::merge::{MergeOptions, MergeReport, merge_sandbox_by_id};
use crate::session::{
    CleanupReport, CreateOptions, SandboxSession, cleanup_sandbox_by_id, create_sandbox,
    list_sandboxes,
};

/// Operator-level settings, fixed when the toolkit is composed from code the
/// operator controls (say a CI job that always merges into `main`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolkitConfig {
    /// The repository the sandbox tool works on.
    pub repo_root: PathBuf,
    /// Where sandbox worktrees go; see [`CreateOptions::worktrees_dir`].
    pub worktrees_dir: Option<PathBuf>,
    /// Whether the sandbox tool's merge may target a protected branch
    /// (`main`, `master`, `release*`). An agent cannot change this: no
    /// [`SandboxRequest`] has such a field.
    pub sandbox_allow_protected: bool,
}

/// What an agent may ask of the sandbox tool, as JSON with an `action` tag.
///
/// Unknown fields are rejected, so a request smuggling
/// `"allow_protected": true` fails to parse instead of being silently
/// ignored: the agent learns it cannot self-approve a protected merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum SandboxRequest {
    /// Create a sandbox from the repository's current branch.
    Create {
        /// A sandbox id; generated when absent.
        #[serde(default)]
        id: Option<String>,
    },
    /// Merge a sandbox into its base branch.
    Merge {
        /// The sandbox id or branch.
        id: String,
        /// Clean the sandbox up after merging.
        #[serde(default)]
        cleanup: bool,
    },
    /// Remove a sandbox's worktree and branch.
    Cleanup {
        /// The sandbox id or branch.
        id: String,
    },
    /// List the sandboxes.
    List,
}

/// The sandbox tool's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SandboxResponse {
    /// A new sandbox.
    Created {
        /// The sandbox.
        session: SandboxSession,
    },
    /// A merge result.
    Merged {
        /// The merge.
        report: MergeReport,
    },
    /// A cleanup result.
    CleanedUp {
        /// The cleanup.
        report: CleanupReport,
    },
    /// The sandboxes.
    Sandboxes {
        /// The sandboxes, by id.
        sessions: Vec<SandboxSession>,
    },
}

/// The coding toolkit's sandbox tool, bound to one repository and one set of
/// operator settings.
#[derive(Debug, Clone)]
pub struct CodingToolkit {
    config: ToolkitConfig,
}

impl CodingToolkit {
    /// Composes the toolkit. This is the only place `sandbox_allow_protected`
    /// is decided.
    pub fn new(config: ToolkitConfig) -> Self {
        CodingToolkit { config }
    }

    /// Parses an agent's JSON request and runs it.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] for malformed JSON or an unknown field, and
    /// whatever the action fails with.
    pub fn sandbox_json(&self, request: &str) -> Result<SandboxResponse, Error> {
        let request: SandboxRequest =
            serde_json::from_str(request).map_err(|e| Error::InvalidRequest {
                source: Box::new(e),
            })?;
        self.sandbox(&request)
    }

    /// Runs an agent's request. Merges use the toolkit's
    /// `sandbox_allow_protected`, never anything from the request.
    ///
    /// # Errors
    /// Whatever the action fails with, refusals included.
    pub fn sandbox(&self, request: &SandboxRequest) -> Result<SandboxResponse, Error> {
        let root = &self.config.repo_root;
        match request {
            SandboxRequest::Create { id } => {
                let options = CreateOptions {
                    id: id.clone(),
                    worktrees_dir: self.config.worktrees_dir.clone(),
                };
                Ok(SandboxResponse::Created {
                    session: create_sandbox(root, &options)?,
                })
            }
            SandboxRequest::Merge { id, cleanup } => {
                let options = MergeOptions {
                    allow_protected: self.config.sandbox_allow_protected,
                    cleanup: *cleanup,
                };
                Ok(SandboxResponse::Merged {
                    report: merge_sandbox_by_id(root, id, &options)?,
                })
            }
            SandboxRequest::Cleanup { id } => Ok(SandboxResponse::CleanedUp {
                report: cleanup_sandbox_by_id(root, id)?,
            }),
            SandboxRequest::List => Ok(SandboxResponse::Sandboxes {
                sessions: list_sandboxes(root)?,
            }),
        }
    }
}
