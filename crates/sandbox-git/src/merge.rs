//! Guarded, retry-safe merge of a sandbox branch into its base branch.

use std::path::Path;

use git2::{BranchType, ErrorCode, Repository, StatusOptions, build::CheckoutBuilder};
use serde::{Deserialize, Serialize};

use crate::admin::{self, AdminState};
use crate::error::Error;
use crate::session::{
    self, CleanupReport, SandboxSession, cleanup_sandbox, current_branch, find_sandbox,
};

/// Operator-level merge settings. `allow_protected` lives here and in
/// [`crate::ToolkitConfig`], never in the agent-facing
/// [`crate::SandboxRequest`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeOptions {
    /// Allow merging into a protected branch (see [`is_protected_branch`]).
    pub allow_protected: bool,
    /// Clean the sandbox up after a successful merge (sandbox-merge).
    pub cleanup: bool,
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum MergeOutcome {
    /// The base branch moved forward to the sandbox's commit.
    FastForward {
        /// The new tip of the base branch (hex).
        commit: String,
    },
    /// A merge commit was made on the base branch.
    MergeCommit {
        /// The merge commit (hex).
        commit: String,
    },
    /// The sandbox's commits are already in the base branch (for example an
    /// earlier merge whose cleanup then failed).
    UpToDate,
    /// The sandbox branch is already gone: an earlier sandbox-merge merged it
    /// and cleaned it up. Counted as done, so a retry does not fail.
    BranchAbsent,
}

/// The result of [`merge_sandbox`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[must_use]
pub struct MergeReport {
    /// The sandbox id.
    pub id: String,
    /// The branch merged into.
    pub base_branch: String,
    /// What happened.
    pub outcome: MergeOutcome,
    /// The cleanup, when [`MergeOptions::cleanup`] was set.
    pub cleanup: Option<CleanupReport>,
    /// Paths with uncommitted changes (untracked files included) left in
    /// the kept sandbox: only commits are merged, so these were not (at
    /// most [`MAX_LISTED_UNCOMMITTED`] are listed).
    #[serde(default)]
    pub uncommitted: Vec<String>,
    /// How many paths have uncommitted changes, listed or not.
    #[serde(default)]
    pub uncommitted_count: usize,
}

/// The most uncommitted paths a [`MergeReport`] lists.
pub const MAX_LISTED_UNCOMMITTED: usize = 100;

/// True for the protected branch names `main`, `master` and any name starting
/// with `release`. The comparison ignores ASCII case, so `Main` or
/// `RELEASE/1` (which name the same ref on a case-insensitive filesystem) are
/// protected too: the fail-closed reading.
pub fn is_protected_branch(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower == "main" || lower == "master" || lower.starts_with("release")
}

/// Merges the sandbox branch into the base branch checked out in
/// `session.repo_root`, updating that work tree (safe checkout: local changes
/// that the merge would overwrite make it fail with nothing changed).
///
/// Refusals, checked in this order, each leaving HEAD, refs and the work tree
/// untouched: [`Error::DetachedHead`] when `repo_root` is detached;
/// [`Error::NotOnBaseBranch`] when it is not on `session.base_branch` (no
/// checkout is ever made to fix that); [`Error::ProtectedBranch`] when the
/// base branch is protected and `options.allow_protected` is false.
///
/// With `options.cleanup`, a sandbox worktree holding uncommitted changes
/// (untracked files included) is refused up front with
/// [`Error::SandboxDirty`]: only commits are merged, and cleanup would
/// silently discard the rest.
///
/// Retry-safe: a sandbox branch already contained in the base branch is
/// [`MergeOutcome::UpToDate`], a branch already gone is
/// [`MergeOutcome::BranchAbsent`], and the cleanup that follows (with
/// `options.cleanup`) treats absent resources as cleaned.
///
/// # Errors
/// The refusals above, [`Error::MergeConflict`], [`Error::CleanupIncomplete`]
/// (the merge itself is done then; retrying completes the cleanup) and git
/// failures.
#[tracing::instrument(skip_all, fields(id = %session.id, base = %session.base_branch))]
pub fn merge_sandbox(
    session: &mut SandboxSession,
    options: &MergeOptions,
) -> Result<MergeReport, Error> {
    let repo_root = session.repo_root.clone();
    let repo = session::open(&repo_root)?;
    let current = current_branch(&repo, &repo_root)?;
    if session.base_branch.is_empty() || current != session.base_branch {
        return Err(Error::NotOnBaseBranch {
            repo_root,
            expected: session.base_branch.clone(),
            actual: current,
        });
    }
    if is_protected_branch(&session.base_branch) && !options.allow_protected {
        tracing::debug!(branch = %session.base_branch, "protected merge refused");
        return Err(Error::ProtectedBranch {
            branch: session.base_branch.clone(),
        });
    }

    let (uncommitted, uncommitted_count) = uncommitted_paths(&repo, session)?;
    if options.cleanup && uncommitted_count > 0 {
        return Err(Error::SandboxDirty {
            id: session.id.clone(),
            worktree: session.worktree_path.clone(),
        });
    }
    let outcome = merge_into_head(&repo, &repo_root, session)?;
    drop(repo);
    tracing::info!(id = %session.id, ?outcome, "sandbox merged");
    let cleanup = if options.cleanup {
        Some(cleanup_sandbox(session)?)
    } else {
        None
    };
    Ok(MergeReport {
        id: session.id.clone(),
        base_branch: session.base_branch.clone(),
        outcome,
        cleanup,
        uncommitted,
        uncommitted_count,
    })
}

/// [`find_sandbox`] then [`merge_sandbox`], for `lionrt sandbox merge`.
///
/// # Errors
/// As [`find_sandbox`] and [`merge_sandbox`].
pub fn merge_sandbox_by_id(
    repo_root: &Path,
    id_or_branch: &str,
    options: &MergeOptions,
) -> Result<MergeReport, Error> {
    let mut session = find_sandbox(repo_root, id_or_branch)?;
    merge_sandbox(&mut session, options)
}

/// The paths with uncommitted changes in the sandbox's worktree (the first
/// [`MAX_LISTED_UNCOMMITTED`]) and their count; none for a sandbox with no
/// worktree.
fn uncommitted_paths(
    repo: &Repository,
    session: &SandboxSession,
) -> Result<(Vec<String>, usize), Error> {
    let admin_dir = admin::admin_dir(repo.commondir(), &session.id);
    // A half-made sandbox has no worktree to be dirty; a locked one is
    // checked too, since its cleanup only waits for the unlock.
    let worktree = match admin::admin_state(&admin_dir, true) {
        AdminState::Valid { worktree } => worktree,
        AdminState::Locked => match admin::recorded_worktree(&admin_dir) {
            Some(worktree) => worktree,
            None => return Ok((Vec::new(), 0)),
        },
        AdminState::Absent | AdminState::Stale { .. } => return Ok((Vec::new(), 0)),
    };
    if !worktree.exists() {
        return Ok((Vec::new(), 0));
    }
    let sandbox =
        Repository::open(&worktree).map_err(|e| Error::git("open worktree", &worktree, e))?;
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = sandbox
        .statuses(Some(&mut opts))
        .map_err(|e| Error::git("read status", &worktree, e))?;
    let listed = statuses
        .iter()
        .take(MAX_LISTED_UNCOMMITTED)
        .map(|entry| String::from_utf8_lossy(entry.path_bytes()).into_owned())
        .collect();
    Ok((listed, statuses.len()))
}

fn merge_into_head(
    repo: &Repository,
    repo_root: &Path,
    session: &SandboxSession,
) -> Result<MergeOutcome, Error> {
    let git = |op: &'static str| move |e: git2::Error| Error::git(op, repo_root, e);
    let theirs = match repo.find_branch(&session.branch, BranchType::Local) {
        Ok(b) => b
            .get()
            .peel_to_commit()
            .map_err(git("resolve sandbox branch"))?,
        Err(e) if e.code() == ErrorCode::NotFound => return Ok(MergeOutcome::BranchAbsent),
        Err(e) => return Err(git("look up sandbox branch")(e)),
    };
    let base_ref_name = format!("refs/heads/{}", session.base_branch);
    let ours = repo
        .find_reference(&base_ref_name)
        .and_then(|r| r.peel_to_commit())
        .map_err(git("resolve base branch"))?;
    if ours.id() == theirs.id()
        || repo
            .graph_descendant_of(ours.id(), theirs.id())
            .map_err(git("compare commits"))?
    {
        return Ok(MergeOutcome::UpToDate);
    }

    let (new_tip, outcome) = if repo
        .graph_descendant_of(theirs.id(), ours.id())
        .map_err(git("compare commits"))?
    {
        (
            theirs.id(),
            MergeOutcome::FastForward {
                commit: theirs.id().to_string(),
            },
        )
    } else {
        let mut index = repo
            .merge_commits(&ours, &theirs, None)
            .map_err(git("merge"))?;
        if index.has_conflicts() {
            let mut paths = Vec::new();
            for conflict in index.conflicts().map_err(git("read conflicts"))? {
                let conflict = conflict.map_err(git("read conflicts"))?;
                if let Some(entry) = conflict.our.or(conflict.their).or(conflict.ancestor) {
                    paths.push(String::from_utf8_lossy(&entry.path).into_owned());
                }
            }
            return Err(Error::MergeConflict {
                branch: session.branch.clone(),
                base: session.base_branch.clone(),
                paths,
            });
        }
        let tree_id = index.write_tree_to(repo).map_err(git("write merge tree"))?;
        let tree = repo.find_tree(tree_id).map_err(git("write merge tree"))?;
        let sig = repo.signature().map_err(git("read committer identity"))?;
        let message = format!(
            "Merge sandbox branch '{}' into {}",
            session.branch, session.base_branch
        );
        // No ref is updated yet: the commit only becomes reachable once the
        // work tree was checked out safely below.
        let commit = repo
            .commit(None, &sig, &sig, &message, &tree, &[&ours, &theirs])
            .map_err(git("commit merge"))?;
        (
            commit,
            MergeOutcome::MergeCommit {
                commit: commit.to_string(),
            },
        )
    };

    let target = repo
        .find_commit(new_tip)
        .map_err(git("read merge result"))?;
    let mut checkout = CheckoutBuilder::new();
    checkout.safe();
    repo.checkout_tree(target.as_object(), Some(&mut checkout))
        .map_err(git("check out merge result"))?;
    // Compare-and-swap on the base branch: a concurrent move of the branch
    // fails the update instead of being overwritten.
    repo.reference_matching(
        &base_ref_name,
        new_tip,
        true,
        ours.id(),
        &format!("lionrt sandbox merge {}", session.id),
    )
    .map_err(git("update base branch"))?;
    Ok(outcome)
}
