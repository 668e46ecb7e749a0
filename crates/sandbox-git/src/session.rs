//! Worktree sandboxes: create, list, find and retry-safe cleanup.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use git2::{BranchType, ErrorCode, Repository, WorktreeAddOptions, WorktreePruneOptions};
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// Every sandbox branch is `lionrt/sandbox/<id>`; [`list_sandboxes`] finds
/// sandboxes by this prefix.
pub const BRANCH_PREFIX: &str = "lionrt/sandbox/";

/// Git worktree names cannot contain `/`, so the worktree is registered as
/// `lionrt-sandbox-<id>`.
const WORKTREE_PREFIX: &str = "lionrt-sandbox-";

/// The directory, in the common git dir, of one `<id>.json` file per sandbox
/// recording its base branch, base commit and worktree path. It outlives a
/// partial cleanup so a retry, or `lionrt sandbox ls`, still knows the
/// sandbox; it is removed once the worktree and the branch are both gone.
/// A file per sandbox rather than entries in `.git/config`: creating
/// sandboxes in parallel then takes no shared lock, and nothing accumulates
/// (libgit2 leaves an empty section header behind per removed section).
const META_DIR: &str = "lionrt-sandbox-meta";

/// Options of [`create_sandbox`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateOptions {
    /// The sandbox id: 1 to 64 characters of `[A-Za-z0-9._-]`, not starting
    /// with `.` or `-`. `None` generates one.
    pub id: Option<String>,
    /// The directory the worktree goes in, as `<dir>/<id>`. `None` uses
    /// `<git common dir>/lionrt-sandboxes`, which is inside `.git` so the
    /// sandbox never shows up as untracked files of the main checkout.
    pub worktrees_dir: Option<PathBuf>,
}

/// A sandbox: a branch and a worktree of its own, and the branch it will be
/// merged into. This is also the serialisable summary `lionrt sandbox`
/// prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSession {
    /// The sandbox id.
    pub id: String,
    /// The main repository's work tree (canonical path).
    pub repo_root: PathBuf,
    /// The sandbox branch, `lionrt/sandbox/<id>`.
    pub branch: String,
    /// The branch that was checked out in `repo_root` at creation: the
    /// merge target. Never the literal `HEAD`.
    pub base_branch: String,
    /// The commit the sandbox started from (hex), empty when unknown.
    pub base_commit: String,
    /// The sandbox's worktree.
    pub worktree_path: PathBuf,
    active: bool,
}

/// What one cleanup step found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOutcome {
    /// This call removed the resource.
    Removed,
    /// The resource was already gone (an earlier, partial cleanup or a
    /// manual removal); this counts as cleaned up.
    AlreadyAbsent,
}

/// The result of a complete cleanup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[must_use]
pub struct CleanupReport {
    /// The sandbox id.
    pub id: String,
    /// The worktree step.
    pub worktree: StepOutcome,
    /// The branch step.
    pub branch: StepOutcome,
}

impl SandboxSession {
    /// The worktree's registered name, `lionrt-sandbox-<id>`.
    pub fn worktree_name(&self) -> String {
        format!("{WORKTREE_PREFIX}{}", self.id)
    }

    /// False only once a cleanup has seen both the worktree and the branch
    /// gone. A partial cleanup leaves it true.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Asks the repository whether the worktree or the branch still exists,
    /// and updates [`SandboxSession::is_active`] to match.
    ///
    /// # Errors
    /// When the repository cannot be read.
    pub fn refresh_active(&mut self) -> Result<bool, Error> {
        let repo = open(&self.repo_root)?;
        let active = worktree_registered(&repo, &self.worktree_name(), &self.repo_root)?
            || branch_exists(&repo, &self.branch, &self.repo_root)?;
        self.active = active;
        Ok(active)
    }
}

/// Creates a sandbox: a new branch at the current commit of the branch checked
/// out in `repo_root`, and a worktree of that branch. The checked-out branch
/// is recorded as the merge target.
///
/// # Errors
/// [`Error::DetachedHead`] when `repo_root`'s HEAD is detached (there is no
/// branch to record, and the literal `HEAD` is never recorded);
/// [`Error::UnbornHead`] before the first commit; [`Error::InvalidId`],
/// [`Error::BranchExists`], [`Error::SandboxExists`]; git and io failures.
/// A failure after the branch was made removes the branch again.
#[tracing::instrument(skip_all, fields(repo_root = %repo_root.display()))]
pub fn create_sandbox(repo_root: &Path, options: &CreateOptions) -> Result<SandboxSession, Error> {
    let repo_root = canonical(repo_root)?;
    let repo = open(&repo_root)?;
    let base_branch = current_branch(&repo, &repo_root)?;
    let head_commit = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(|e| Error::git("resolve HEAD", &repo_root, e))?;

    let id = match &options.id {
        Some(id) => {
            validate_id(id)?;
            id.clone()
        }
        None => generate_id(),
    };
    let branch = format!("{BRANCH_PREFIX}{id}");
    let _lock = lock_repo(&repo, &repo_root)?;
    if branch_exists(&repo, &branch, &repo_root)? {
        return Err(Error::BranchExists { branch });
    }
    // A worktree left registered under this id (its branch gone) belongs to
    // an earlier sandbox: refuse rather than let a failed create's rollback
    // remove it.
    if worktree_registered(&repo, &format!("{WORKTREE_PREFIX}{id}"), &repo_root)? {
        return Err(Error::SandboxExists { id });
    }
    let dir = match &options.worktrees_dir {
        Some(dir) => dir.clone(),
        None => repo.commondir().join("lionrt-sandboxes"),
    };
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
        op: "create directory",
        path: dir.clone(),
        source,
    })?;
    let worktree_path = canonical(&dir)?.join(&id);
    if worktree_path.exists() {
        return Err(Error::Io {
            op: "create worktree",
            path: worktree_path,
            source: std::io::ErrorKind::AlreadyExists.into(),
        });
    }

    let mut session = SandboxSession {
        id,
        repo_root: repo_root.clone(),
        branch,
        base_branch,
        base_commit: head_commit.id().to_string(),
        worktree_path,
        active: true,
    };

    let branch_ref = repo
        .branch(&session.branch, &head_commit, false)
        .map_err(|e| Error::git("create branch", &repo_root, e))?;
    let made = write_meta(&repo, &session).and_then(|()| {
        let mut add = WorktreeAddOptions::new();
        add.reference(Some(branch_ref.get()));
        repo.worktree(&session.worktree_name(), &session.worktree_path, Some(&add))
            .map_err(|e| Error::git("add worktree", &session.worktree_path, e))
    });
    if let Err(err) = made {
        // Roll back so a failed create leaves nothing for cleanup to find.
        drop(branch_ref);
        drop(_lock);
        if let Err(rollback) = cleanup_sandbox(&mut session) {
            tracing::warn!(id = %session.id, error = %rollback, "rollback of failed sandbox create incomplete");
        }
        return Err(err);
    }
    tracing::info!(id = %session.id, branch = %session.branch, base = %session.base_branch, "sandbox created");
    Ok(session)
}

/// Lists the sandboxes of `repo_root`: every sandbox whose branch, worktree or
/// metadata is still there, sorted by id. A sandbox left half-cleaned is
/// listed with [`SandboxSession::is_active`] true.
///
/// # Errors
/// When the repository cannot be read.
pub fn list_sandboxes(repo_root: &Path) -> Result<Vec<SandboxSession>, Error> {
    let repo_root = canonical(repo_root)?;
    let repo = open(&repo_root)?;
    let mut ids = std::collections::BTreeSet::new();

    let branches = repo
        .branches(Some(BranchType::Local))
        .map_err(|e| Error::git("list branches", &repo_root, e))?;
    for item in branches {
        let (branch, _) = item.map_err(|e| Error::git("list branches", &repo_root, e))?;
        if let Ok(Some(name)) = branch.name()
            && let Some(id) = name.strip_prefix(BRANCH_PREFIX)
        {
            ids.insert(id.to_owned());
        }
    }
    let worktrees = repo
        .worktrees()
        .map_err(|e| Error::git("list worktrees", &repo_root, e))?;
    for name in worktrees.iter_bytes() {
        if let Some(id) = name.strip_prefix(WORKTREE_PREFIX.as_bytes())
            && let Ok(id) = std::str::from_utf8(id)
        {
            ids.insert(id.to_owned());
        }
    }
    let meta_dir = repo.commondir().join(META_DIR);
    match std::fs::read_dir(&meta_dir) {
        Ok(entries) => {
            for entry in entries.flatten() {
                let name = entry.file_name();
                if let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) {
                    ids.insert(id.to_owned());
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(Error::Io {
                op: "list sandbox metadata",
                path: meta_dir,
                source,
            });
        }
    }

    ids.into_iter()
        .filter(|id| validate_id(id).is_ok())
        .map(|id| load_session(&repo, &repo_root, &id))
        .collect()
}

/// Finds one sandbox by id or by its branch name (`lionrt/sandbox/<id>`).
///
/// # Errors
/// [`Error::SandboxNotFound`] when neither its branch, its worktree nor its
/// metadata exists.
pub fn find_sandbox(repo_root: &Path, id_or_branch: &str) -> Result<SandboxSession, Error> {
    let id = id_or_branch
        .strip_prefix(BRANCH_PREFIX)
        .unwrap_or(id_or_branch);
    let repo_root_c = canonical(repo_root)?;
    list_sandboxes(&repo_root_c)?
        .into_iter()
        .find(|s| s.id == id)
        .ok_or_else(|| Error::SandboxNotFound {
            id: id_or_branch.to_owned(),
            repo_root: repo_root_c,
        })
}

/// Removes the sandbox's worktree (discarding anything uncommitted in it),
/// then its branch (whether merged or not), then its metadata.
///
/// Retry-safe: a worktree or branch that is already gone counts as removed
/// ([`StepOutcome::AlreadyAbsent`]). When a step fails (say the branch is
/// checked out in another worktree) the error is
/// [`Error::CleanupIncomplete`], the session stays active, and calling again
/// once the obstacle is gone completes the cleanup.
///
/// Only the worktree registered under the sandbox's name in `repo_root` is
/// ever deleted, never an arbitrary `worktree_path` taken from a session
/// value, so a forged session cannot make cleanup delete a foreign
/// directory.
///
/// # Errors
/// [`Error::CleanupIncomplete`] on a partial failure; git errors when the
/// repository cannot be opened.
#[tracing::instrument(skip_all, fields(id = %session.id))]
pub fn cleanup_sandbox(session: &mut SandboxSession) -> Result<CleanupReport, Error> {
    validate_id(&session.id)?;
    let repo = open(&session.repo_root)?;
    let incomplete =
        |step: &'static str, target: String, source: git2::Error| Error::CleanupIncomplete {
            id: session.id.clone(),
            step,
            target,
            source,
        };

    let _lock = lock_repo(&repo, &session.repo_root)?;
    let wt_name = session.worktree_name();
    let worktree = if worktree_registered(&repo, &wt_name, &session.repo_root)? {
        let wt = repo
            .find_worktree(&wt_name)
            .map_err(|e| incomplete("remove worktree", wt_name.clone(), e))?;
        let target = wt.path().display().to_string();
        let mut prune = WorktreePruneOptions::new();
        prune.valid(true).working_tree(true);
        wt.prune(Some(&mut prune))
            .map_err(|e| incomplete("remove worktree", target, e))?;
        StepOutcome::Removed
    } else {
        StepOutcome::AlreadyAbsent
    };

    let branch = match repo.find_branch(&session.branch, BranchType::Local) {
        Ok(mut b) => {
            b.delete()
                .map_err(|e| incomplete("delete branch", session.branch.clone(), e))?;
            StepOutcome::Removed
        }
        Err(e) if e.code() == ErrorCode::NotFound => StepOutcome::AlreadyAbsent,
        Err(e) => return Err(incomplete("delete branch", session.branch.clone(), e)),
    };
    // Both resources are gone: from here the sandbox is inactive whatever
    // happens to the metadata.
    session.active = false;
    forget_meta(&repo, &session.id)?;
    tracing::info!(id = %session.id, ?worktree, ?branch, "sandbox cleaned up");
    Ok(CleanupReport {
        id: session.id.clone(),
        worktree,
        branch,
    })
}

/// [`find_sandbox`] then [`cleanup_sandbox`], for `lionrt sandbox cleanup`.
/// A sandbox that is not found at all is reported as already cleaned.
///
/// # Errors
/// As [`cleanup_sandbox`].
pub fn cleanup_sandbox_by_id(repo_root: &Path, id_or_branch: &str) -> Result<CleanupReport, Error> {
    match find_sandbox(repo_root, id_or_branch) {
        Ok(mut session) => cleanup_sandbox(&mut session),
        Err(Error::SandboxNotFound { .. }) => {
            let id = id_or_branch
                .strip_prefix(BRANCH_PREFIX)
                .unwrap_or(id_or_branch);
            validate_id(id)?;
            Ok(CleanupReport {
                id: id.to_owned(),
                worktree: StepOutcome::AlreadyAbsent,
                branch: StepOutcome::AlreadyAbsent,
            })
        }
        Err(e) => Err(e),
    }
}

/// The branch checked out in `repo`, refusing a detached HEAD.
pub(crate) fn current_branch(repo: &Repository, repo_root: &Path) -> Result<String, Error> {
    let detached = repo
        .head_detached()
        .map_err(|e| Error::git("read HEAD", repo_root, e))?;
    if detached {
        return Err(Error::DetachedHead {
            repo_root: repo_root.to_owned(),
        });
    }
    let head = match repo.head() {
        Ok(head) => head,
        Err(e) if e.code() == ErrorCode::UnbornBranch => {
            return Err(Error::UnbornHead {
                repo_root: repo_root.to_owned(),
            });
        }
        Err(e) => return Err(Error::git("read HEAD", repo_root, e)),
    };
    // HEAD is symbolic here, so its resolved name is a branch ref. Anything
    // else, or a branch literally named `HEAD` (the string `git rev-parse
    // --abbrev-ref HEAD` prints when detached), is treated as detached.
    let name = head
        .name_bytes()
        .strip_prefix(b"refs/heads/")
        .and_then(|n| std::str::from_utf8(n).ok());
    match name {
        Some(name) if name != "HEAD" && !name.is_empty() => Ok(name.to_owned()),
        _ => Err(Error::DetachedHead {
            repo_root: repo_root.to_owned(),
        }),
    }
}

pub(crate) fn open(repo_root: &Path) -> Result<Repository, Error> {
    Repository::open(repo_root).map_err(|e| Error::git("open repository", repo_root, e))
}

fn canonical(path: &Path) -> Result<PathBuf, Error> {
    std::fs::canonicalize(path).map_err(|source| Error::Io {
        op: "resolve path",
        path: path.to_owned(),
        source,
    })
}

fn validate_id(id: &str) -> Result<(), Error> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && !id.starts_with(['.', '-'])
        && !id.ends_with(".lock")
        && !id.contains("..")
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidId { id: id.to_owned() })
    }
}

fn generate_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{nanos:x}-{:x}-{n}", std::process::id())
}

fn branch_exists(repo: &Repository, branch: &str, repo_root: &Path) -> Result<bool, Error> {
    match repo.find_branch(branch, BranchType::Local) {
        Ok(_) => Ok(true),
        Err(e) if e.code() == ErrorCode::NotFound => Ok(false),
        Err(e) => Err(Error::git("look up branch", repo_root, e)),
    }
}

fn worktree_registered(repo: &Repository, name: &str, repo_root: &Path) -> Result<bool, Error> {
    let names = repo
        .worktrees()
        .map_err(|e| Error::git("list worktrees", repo_root, e))?;
    Ok(names.iter_bytes().any(|n| n == name.as_bytes()))
}

/// Serialises creating and removing sandboxes of one repository, across
/// threads and processes (an advisory lock on a file beside the metadata):
/// libgit2's worktree add is not safe against a concurrent add or prune in
/// the same repository ("reference is already checked out" for a branch
/// nobody has checked out). The lock is released when the file is dropped.
fn lock_repo(repo: &Repository, repo_root: &Path) -> Result<std::fs::File, Error> {
    let dir = repo.commondir().join(META_DIR);
    let path = dir.join("lock");
    let io = |op: &'static str, path: &Path| {
        let path = path.to_owned();
        move |source| Error::Io { op, path, source }
    };
    std::fs::create_dir_all(&dir).map_err(io("create directory", &dir))?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io("open sandbox lock", &path))?;
    file.lock().map_err(io("take sandbox lock", &path))?;
    tracing::trace!(repo_root = %repo_root.display(), "sandbox lock taken");
    Ok(file)
}

/// What a sandbox's metadata file holds.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Meta {
    base_branch: String,
    base_commit: String,
    worktree_path: PathBuf,
}

fn meta_path(repo: &Repository, id: &str) -> PathBuf {
    repo.commondir().join(META_DIR).join(format!("{id}.json"))
}

fn write_meta(repo: &Repository, s: &SandboxSession) -> Result<(), Error> {
    let path = meta_path(repo, &s.id);
    let io = |op: &'static str, path: &Path| {
        let path = path.to_owned();
        move |source| Error::Io { op, path, source }
    };
    let meta = Meta {
        base_branch: s.base_branch.clone(),
        base_commit: s.base_commit.clone(),
        worktree_path: s.worktree_path.clone(),
    };
    let json = serde_json::to_vec(&meta).map_err(|e| Error::Io {
        op: "record sandbox metadata",
        path: path.clone(),
        source: e.into(),
    })?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io("create directory", dir))?;
    }
    // Write then rename, so a reader never sees half a file.
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, json).map_err(io("write sandbox metadata", &tmp))?;
    std::fs::rename(&tmp, &path).map_err(io("write sandbox metadata", &path))
}

fn forget_meta(repo: &Repository, id: &str) -> Result<(), Error> {
    let path = meta_path(repo, id);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Io {
            op: "remove sandbox metadata",
            path,
            source,
        }),
    }
}

fn read_meta(repo: &Repository, id: &str) -> Meta {
    let path = meta_path(repo, id);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!(path = %path.display(), error = %e, "unreadable sandbox metadata");
            Meta::default()
        }),
        Err(_) => Meta::default(),
    }
}

fn load_session(repo: &Repository, repo_root: &Path, id: &str) -> Result<SandboxSession, Error> {
    let meta = read_meta(repo, id);
    let branch = format!("{BRANCH_PREFIX}{id}");
    let wt_name = format!("{WORKTREE_PREFIX}{id}");
    let registered = worktree_registered(repo, &wt_name, repo_root)?;
    let worktree_path = if registered {
        repo.find_worktree(&wt_name)
            .map(|w| w.path().to_owned())
            .map_err(|e| Error::git("look up worktree", repo_root, e))?
    } else {
        meta.worktree_path
    };
    let active = registered || branch_exists(repo, &branch, repo_root)?;
    Ok(SandboxSession {
        id: id.to_owned(),
        repo_root: repo_root.to_owned(),
        branch,
        base_branch: meta.base_branch,
        base_commit: meta.base_commit,
        worktree_path,
        active,
    })
}
