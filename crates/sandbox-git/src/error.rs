//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong in this crate.
///
/// Refusals (a detached HEAD, the wrong checked-out branch, a protected merge
/// target, an edit without a visible read) are variants of their own so a
/// caller can tell a policy refusal from a git failure with
/// [`Error::is_refusal`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A git operation failed.
    #[error("git {op} failed in {path}")]
    Git {
        /// What was being done, e.g. `open repository`.
        op: &'static str,
        /// The repository or worktree the operation ran in.
        path: PathBuf,
        /// The libgit2 error.
        #[source]
        source: git2::Error,
    },
    /// A filesystem operation failed.
    #[error("io {op} failed for {path}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The path is not inside a git repository (or does not exist).
    #[error(
        "{path} is not a git repository (a sandbox is a worktree of a repository on a branch; `git init` and a first commit make one)"
    )]
    NotARepository {
        /// The path given.
        path: PathBuf,
    },
    /// The repository's HEAD is detached, so there is no branch to record or
    /// to merge into.
    #[error("repository {repo_root} has a detached head; check out a branch first")]
    DetachedHead {
        /// The repository.
        repo_root: PathBuf,
    },
    /// The repository has no commit yet.
    #[error("repository {repo_root} has no commit on its current branch")]
    UnbornHead {
        /// The repository.
        repo_root: PathBuf,
    },
    /// Merge refused: the repository is not checked out on the session's
    /// recorded base branch (no automatic checkout is ever made).
    #[error(
        "repository {repo_root} is on branch {actual}, not on the sandbox's base branch {expected}"
    )]
    NotOnBaseBranch {
        /// The repository.
        repo_root: PathBuf,
        /// The session's recorded base branch.
        expected: String,
        /// The branch currently checked out.
        actual: String,
    },
    /// Merge refused: the target branch is protected and the operator did not
    /// allow protected merges.
    #[error("merge into protected branch {branch} refused: allow_protected is not set")]
    ProtectedBranch {
        /// The protected branch.
        branch: String,
    },
    /// Merge with cleanup refused: the sandbox worktree has uncommitted
    /// changes that cleanup would discard. Commit them, or merge without
    /// cleanup.
    #[error(
        "sandbox {id} has uncommitted changes in {worktree}; commit them or merge without cleanup"
    )]
    SandboxDirty {
        /// The sandbox id.
        id: String,
        /// The sandbox worktree.
        worktree: PathBuf,
    },
    /// The merge produced conflicts; nothing was changed.
    #[error("merging {branch} into {base} conflicts in {} path(s)", paths.len())]
    MergeConflict {
        /// The sandbox branch.
        branch: String,
        /// The base branch.
        base: String,
        /// The conflicting paths (lossy UTF-8).
        paths: Vec<String>,
    },
    /// Walking a work tree for untracked files failed.
    #[error("walking work tree {path} failed")]
    Walk {
        /// The work tree.
        path: PathBuf,
        /// The walker's error.
        #[source]
        source: ignore::Error,
    },
    /// A sandbox id is empty, too long or has characters outside
    /// `[A-Za-z0-9._-]`.
    #[error("invalid sandbox id {id:?}")]
    InvalidId {
        /// The rejected id.
        id: String,
    },
    /// The branch a new sandbox would use already exists.
    #[error("branch {branch} already exists")]
    BranchExists {
        /// The branch.
        branch: String,
    },
    /// A worktree of an earlier sandbox with this id is still registered.
    #[error("a worktree of sandbox {id} still exists; clean it up first")]
    SandboxExists {
        /// The sandbox id.
        id: String,
    },
    /// No sandbox with this id or branch exists in the repository.
    #[error("no sandbox {id} in {repo_root}")]
    SandboxNotFound {
        /// The id or branch asked for.
        id: String,
        /// The repository.
        repo_root: PathBuf,
    },
    /// Cleanup removed what it could but a step failed; the session stays
    /// active and a retry completes it.
    #[error("cleanup of sandbox {id} incomplete: could not {step} {target}")]
    CleanupIncomplete {
        /// The sandbox id.
        id: String,
        /// The step that failed: `remove worktree` or `delete branch`.
        step: &'static str,
        /// The worktree path, admin folder or branch name.
        target: String,
        /// Why it failed (a git or filesystem error, or a locked worktree).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A completion-evidence probe failed (only inside
    /// [`crate::CompletionEvidence::failure`]).
    #[error("completion probe {probe} failed in {path}")]
    ProbeFailed {
        /// The probe: `head`, `base ref`, `ahead` or `status`.
        probe: &'static str,
        /// The worktree.
        path: PathBuf,
        /// The git error.
        #[source]
        source: git2::Error,
    },
    /// A cell was refused by the caller's policy given the backend's
    /// capabilities, or cannot run on this backend.
    #[error("cell refused: {reason}")]
    CellRefused {
        /// Why.
        reason: &'static str,
    },
    /// The cell's process could not be started.
    #[error("could not start cell program {program:?} in {cwd}")]
    CellSpawn {
        /// The program (argv\[0\]).
        program: String,
        /// The directory it was to run in.
        cwd: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The host-side prompt provider failed.
    #[error("host-side prompt provider failed")]
    Prompt {
        /// The provider's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Read-before-edit guard: the file has no read the agent can still see.
    #[error("edit of {path} refused: read the file first (no read of it is in context)")]
    EditWithoutRead {
        /// The file.
        path: PathBuf,
    },
    /// An agent-facing request could not be parsed.
    #[error("invalid sandbox request")]
    InvalidRequest {
        /// The parse error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    /// True when the error is a policy refusal rather than a failure: retrying
    /// the same call without changing the repository or the settings gives the
    /// same answer.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Error::DetachedHead { .. }
                | Error::NotOnBaseBranch { .. }
                | Error::ProtectedBranch { .. }
                | Error::SandboxDirty { .. }
                | Error::InvalidId { .. }
                | Error::CellRefused { .. }
                | Error::EditWithoutRead { .. }
                | Error::InvalidRequest { .. }
        )
    }

    pub(crate) fn git(op: &'static str, path: impl Into<PathBuf>, source: git2::Error) -> Self {
        Error::Git {
            op,
            path: path.into(),
            source,
        }
    }
}
