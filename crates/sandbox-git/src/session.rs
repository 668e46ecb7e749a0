//! Worktree sandboxes: create, list, find and retry-safe cleanup.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use git2::{BranchType, ErrorCode, Repository};
use serde::{Deserialize, Serialize};

use crate::admin::{self, AdminState, WORKTREE_PREFIX};
use crate::error::Error;

/// Every sandbox branch is `lionrt/sandbox/<id>`; [`list_sandboxes`] finds
/// sandboxes by this prefix.
pub const BRANCH_PREFIX: &str = "lionrt/sandbox/";

/// The directory, in the common git dir, of one `<id>.json` file per sandbox
/// recording its base branch, base commit and worktree path. It is written
/// first on create (marked `creating` until the worktree is complete) and
/// removed last on cleanup, so a create or cleanup killed at any instant
/// leaves a sandbox that `lionrt sandbox ls` lists and cleanup removes.
/// A file per sandbox rather than entries in `.git/config`: creating
/// sandboxes in parallel then takes no shared lock, and nothing accumulates
/// (libgit2 leaves an empty section header behind per removed section).
const META_DIR: &str = "lionrt-sandbox-meta";

/// The default directory, in the common git dir, of sandbox work trees.
const DEFAULT_DIR: &str = "lionrt-sandboxes";

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
        let meta = read_meta(&repo, &self.id);
        let active = is_active(&repo, &self.repo_root, &self.id, &meta)?;
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
/// A failure after the metadata was written removes the sandbox again.
///
/// Crash-safe: the metadata is written first (marked `creating`), then the
/// branch, then the worktree, then the metadata is marked complete. A create
/// killed at any instant leaves a sandbox that [`list_sandboxes`] lists and
/// [`cleanup_sandbox`] removes, and a later create with the same id rolls it
/// back itself. Stale worktree admin folders are pruned first (see
/// [`cleanup_sandbox`]).
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
    let lock = lock_repo(&repo, &repo_root)?;
    prune_stale(&repo, &repo_root)?;
    // Metadata still marked `creating` while we hold the lock belongs to a
    // create that died half-way: nothing was handed out, so it is rolled back.
    if meta_file(&repo, &id).is_some_and(|m| m.creating) {
        tracing::info!(%id, "rolling back a half-made sandbox of a create that died");
        let _rolled_back = remove_locked(&repo, &id)?;
    }
    if branch_exists(&repo, &branch, &repo_root)? {
        return Err(Error::BranchExists { branch });
    }
    // A worktree left registered under this id (its branch gone) belongs to
    // an earlier sandbox: refuse rather than let a failed create's rollback
    // remove it.
    if admin::admin_state(&admin::admin_dir(repo.commondir(), &id), true) != AdminState::Absent {
        return Err(Error::SandboxExists { id });
    }
    let dir = match &options.worktrees_dir {
        Some(dir) => dir.clone(),
        None => repo.commondir().join(DEFAULT_DIR),
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

    let session = SandboxSession {
        id,
        repo_root: repo_root.clone(),
        branch,
        base_branch,
        base_commit: head_commit.id().to_string(),
        worktree_path,
        active: true,
    };

    write_meta(&repo, &session, true)?;
    clear_stale_ref_lock(repo.commondir(), &format!("refs/heads/{}", session.branch))?;
    let made = repo
        .branch(&session.branch, &head_commit, false)
        .map_err(|e| Error::git("create branch", &repo_root, e))
        .and_then(|_branch| add_worktree(&repo, &session))
        .and_then(|()| write_meta(&repo, &session, false));
    if let Err(err) = made {
        // Roll back so a failed create leaves nothing for cleanup to find.
        if let Err(rollback) = remove_locked(&repo, &session.id) {
            tracing::warn!(id = %session.id, error = %rollback, "rollback of failed sandbox create incomplete");
        }
        return Err(err);
    }
    drop(lock);
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
    // Admin folders are read directly, half-made ones included: libgit2's
    // worktree list hides some and fails on others (see `admin`).
    let commondir = repo.commondir().to_owned();
    ids.extend(admin::admin_ids(&commondir).map_err(|source| Error::Io {
        op: "list worktree admin folders",
        path: admin::admin_root(&commondir),
        source,
    })?);
    // Work trees in the default directory with no other trace (left by an
    // older version that wrote the metadata last).
    if let Ok(entries) = std::fs::read_dir(commondir.join(DEFAULT_DIR)) {
        for entry in entries.flatten() {
            if let Some(id) = entry.file_name().to_str()
                && admin::owns(&entry.path(), &admin::admin_dir(&commondir, id))
            {
                ids.insert(id.to_owned());
            }
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

/// Removes the sandbox's worktree (discarding anything uncommitted in it)
/// and its admin folder, then its branch (whether merged or not), then its
/// metadata.
///
/// Retry-safe: a worktree or branch that is already gone counts as removed
/// ([`StepOutcome::AlreadyAbsent`]). When a step fails (say the branch is
/// checked out in another worktree, or the worktree is locked) the error is
/// [`Error::CleanupIncomplete`], the session stays active, and calling again
/// once the obstacle is gone completes the cleanup.
///
/// Crash-safe: a half-made sandbox (a create or cleanup killed at any
/// instant) is removed like a whole one. First, `git worktree prune` rules
/// are applied to the admin folders under `.git/worktrees`: an unlocked
/// folder whose `gitdir` is missing, empty or points at nothing is removed
/// (for this crate's own folders also one missing `commondir` or `HEAD`;
/// another tool's folder only after a minute unchanged). The work tree goes
/// before its admin folder, its `.git` file last, so what a kill leaves is
/// still recognised.
///
/// Only a directory that is this sandbox's work tree is ever deleted: the
/// one the admin folder, the metadata or the default location names, and
/// only if its `.git` file points at this sandbox's admin folder (or it is
/// empty, or holds nothing but a `.git` file cut short). A `worktree_path`
/// taken from a session value is never used, so a forged session cannot
/// make cleanup delete a foreign directory.
///
/// # Errors
/// [`Error::CleanupIncomplete`] on a partial failure; git errors when the
/// repository cannot be opened.
#[tracing::instrument(skip_all, fields(id = %session.id))]
pub fn cleanup_sandbox(session: &mut SandboxSession) -> Result<CleanupReport, Error> {
    validate_id(&session.id)?;
    let repo = open(&session.repo_root)?;
    let _lock = lock_repo(&repo, &session.repo_root)?;
    prune_stale(&repo, &session.repo_root)?;
    let report = remove_locked(&repo, &session.id)?;
    // Both resources are gone: the sandbox is inactive.
    session.active = false;
    Ok(report)
}

/// The cleanup steps, with the sandbox lock held by the caller.
fn remove_locked(repo: &Repository, id: &str) -> Result<CleanupReport, Error> {
    let incomplete =
        |step: &'static str, target: String, source: Box<dyn std::error::Error + Send + Sync>| {
            Error::CleanupIncomplete {
                id: id.to_owned(),
                step,
                target,
                source,
            }
        };
    let commondir = repo.commondir().to_owned();
    let admin_dir = admin::admin_dir(&commondir, id);
    if admin::admin_state(&admin_dir, true) == AdminState::Locked {
        return Err(incomplete(
            "remove worktree",
            admin_dir.display().to_string(),
            "the worktree is locked (git worktree unlock allows its removal)".into(),
        ));
    }
    let meta = read_meta(repo, id);
    let mut removed = false;
    for dir in worktree_candidates(&commondir, id, &meta) {
        if admin::owns(&dir, &admin_dir) {
            admin::remove_worktree(&dir)
                .map_err(|e| incomplete("remove worktree", dir.display().to_string(), e.into()))?;
            removed = true;
        }
    }
    if std::fs::symlink_metadata(&admin_dir).is_ok() {
        admin::remove_any(&admin_dir).map_err(|e| {
            incomplete("remove worktree", admin_dir.display().to_string(), e.into())
        })?;
        removed = true;
    }
    let worktree = if removed {
        StepOutcome::Removed
    } else {
        StepOutcome::AlreadyAbsent
    };

    let branch_name = format!("{BRANCH_PREFIX}{id}");
    let refname = format!("refs/heads/{branch_name}");
    clear_stale_ref_lock(&commondir, &refname)?;
    let branch = match repo.find_reference(&refname) {
        Ok(mut reference) => {
            // libgit2's branch delete refuses when its walk of the worktrees
            // meets one it cannot open; the check is made here instead.
            let holder = admin::checked_out_by(&commondir, &refname)
                .map_err(|e| incomplete("delete branch", branch_name.clone(), e.into()))?;
            if let Some(holder) = holder {
                return Err(incomplete(
                    "delete branch",
                    branch_name,
                    format!("it is checked out in {}", holder.display()).into(),
                ));
            }
            reference
                .delete()
                .map_err(|e| incomplete("delete branch", branch_name.clone(), e.into()))?;
            StepOutcome::Removed
        }
        Err(e) if e.code() == ErrorCode::NotFound => StepOutcome::AlreadyAbsent,
        Err(e) => return Err(incomplete("delete branch", branch_name, e.into())),
    };
    forget_meta(repo, id)?;
    tracing::info!(%id, ?worktree, ?branch, "sandbox cleaned up");
    Ok(CleanupReport {
        id: id.to_owned(),
        worktree,
        branch,
    })
}

/// Removes `<refname>.lock` of a sandbox ref, called with the sandbox lock
/// held. Every writer of sandbox refs (create and cleanup) takes that
/// lock, so such a file was left by a process killed while it wrote the
/// ref; git would refuse the ref ("failed to lock file") until someone
/// deleted it by hand. A git command run by hand on a sandbox ref at the
/// same instant is not covered.
fn clear_stale_ref_lock(commondir: &Path, refname: &str) -> Result<(), Error> {
    let path = commondir.join(format!("{refname}.lock"));
    match std::fs::remove_file(&path) {
        Ok(()) => {
            tracing::info!(path = %path.display(), "removed a stale sandbox ref lock");
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Io {
            op: "remove stale ref lock",
            path,
            source,
        }),
    }
}

/// Registers the worktree (see `admin::add_worktree`) and checks the branch
/// out in it, as libgit2's worktree add does (a safe checkout into an empty
/// directory).
fn add_worktree(repo: &Repository, session: &SandboxSession) -> Result<(), Error> {
    let refname = format!("refs/heads/{}", session.branch);
    admin::add_worktree(
        repo.commondir(),
        &session.id,
        &session.worktree_path,
        &refname,
    )
    .map_err(|(op, path, source)| Error::Io { op, path, source })?;
    let worktree = Repository::open(&session.worktree_path)
        .map_err(|e| Error::git("open worktree", &session.worktree_path, e))?;
    worktree
        .checkout_head(Some(git2::build::CheckoutBuilder::new().safe()))
        .map_err(|e| Error::git("check out worktree", &session.worktree_path, e))
}

/// Every place the sandbox's work tree may be: where its admin folder says,
/// where its metadata says, and the default location.
fn worktree_candidates(commondir: &Path, id: &str, meta: &Meta) -> Vec<PathBuf> {
    let mut dirs = Vec::with_capacity(3);
    if let Some(dir) = admin::recorded_worktree(&admin::admin_dir(commondir, id)) {
        dirs.push(dir);
    }
    if meta.worktree_path.is_absolute() {
        dirs.push(meta.worktree_path.clone());
    }
    dirs.push(commondir.join(DEFAULT_DIR).join(id));
    dirs.dedup();
    dirs
}

/// Whether anything of the sandbox is left to clean: its admin folder, its
/// branch or a work tree of it.
fn is_active(repo: &Repository, repo_root: &Path, id: &str, meta: &Meta) -> Result<bool, Error> {
    let commondir = repo.commondir();
    let admin_dir = admin::admin_dir(commondir, id);
    Ok(std::fs::symlink_metadata(&admin_dir).is_ok()
        || branch_exists(repo, &format!("{BRANCH_PREFIX}{id}"), repo_root)?
        || worktree_candidates(commondir, id, meta)
            .iter()
            .any(|dir| admin::owns(dir, &admin_dir)))
}

/// `git worktree prune` (see [`cleanup_sandbox`]) and leftover temporary
/// metadata files; the caller holds the sandbox lock.
fn prune_stale(repo: &Repository, repo_root: &Path) -> Result<(), Error> {
    let commondir = repo.commondir();
    let pruned = admin::prune(commondir).map_err(|source| Error::Io {
        op: "prune worktree admin folders",
        path: admin::admin_root(commondir),
        source,
    })?;
    if !pruned.is_empty() {
        tracing::info!(repo_root = %repo_root.display(), ?pruned, "stale worktree admin folders pruned");
    }
    let meta_dir = commondir.join(META_DIR);
    if let Ok(entries) = std::fs::read_dir(&meta_dir) {
        for entry in entries.flatten() {
            if entry.file_name().as_encoded_bytes().ends_with(b".json.tmp") {
                admin::remove_any(&entry.path()).map_err(|source| Error::Io {
                    op: "remove temporary sandbox metadata",
                    path: entry.path(),
                    source,
                })?;
            }
        }
    }
    Ok(())
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
    Repository::open(repo_root).map_err(|e| {
        if e.code() == git2::ErrorCode::NotFound && e.class() == git2::ErrorClass::Repository {
            Error::NotARepository {
                path: repo_root.to_owned(),
            }
        } else {
            Error::git("open repository", repo_root, e)
        }
    })
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
    /// True from the first write until the worktree is complete; absent in
    /// files of older versions, which wrote the metadata after the branch.
    #[serde(default)]
    creating: bool,
}

fn meta_path(repo: &Repository, id: &str) -> PathBuf {
    repo.commondir().join(META_DIR).join(format!("{id}.json"))
}

fn write_meta(repo: &Repository, s: &SandboxSession, creating: bool) -> Result<(), Error> {
    let path = meta_path(repo, &s.id);
    let io = |op: &'static str, path: &Path| {
        let path = path.to_owned();
        move |source| Error::Io { op, path, source }
    };
    let meta = Meta {
        base_branch: s.base_branch.clone(),
        base_commit: s.base_commit.clone(),
        worktree_path: s.worktree_path.clone(),
        creating,
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
    meta_file(repo, id).unwrap_or_default()
}

/// The sandbox's metadata, `None` when there is no readable file.
fn meta_file(repo: &Repository, id: &str) -> Option<Meta> {
    let path = meta_path(repo, id);
    let bytes = std::fs::read(&path).ok()?;
    serde_json::from_slice(&bytes)
        .inspect_err(|e| {
            tracing::warn!(path = %path.display(), error = %e, "unreadable sandbox metadata");
        })
        .ok()
}

fn load_session(repo: &Repository, repo_root: &Path, id: &str) -> Result<SandboxSession, Error> {
    let meta = read_meta(repo, id);
    let commondir = repo.commondir();
    let admin_dir = admin::admin_dir(commondir, id);
    let active = is_active(repo, repo_root, id, &meta)?;
    // The work tree the admin folder names when it is whole, else the one
    // the metadata recorded, else the default location.
    let worktree_path = match admin::admin_state(&admin_dir, true) {
        AdminState::Valid { worktree } => worktree,
        _ if !meta.worktree_path.as_os_str().is_empty() => meta.worktree_path.clone(),
        _ => admin::recorded_worktree(&admin_dir)
            .unwrap_or_else(|| commondir.join(DEFAULT_DIR).join(id)),
    };
    Ok(SandboxSession {
        id: id.to_owned(),
        repo_root: repo_root.to_owned(),
        branch: format!("{BRANCH_PREFIX}{id}"),
        base_branch: meta.base_branch,
        base_commit: meta.base_commit,
        worktree_path,
        active,
    })
}
