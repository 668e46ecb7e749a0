//! Test repositories built with git2, and an isolated git CLI.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use git2::Repository;

/// A repository in a temp dir, with one commit on `branch`, and the
/// identity configured locally so nothing depends on the global config.
pub(crate) struct TestRepo {
    _dir: tempfile::TempDir,
    pub(crate) root: PathBuf,
}

impl TestRepo {
    pub(crate) fn new(branch: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical temp dir");
        let repo = Repository::init(&root).expect("init");
        let mut config = repo.config().expect("config");
        config
            .set_str("user.name", "Sandbox Test")
            .expect("set name");
        config
            .set_str("user.email", "sandbox@example.invalid")
            .expect("set email");
        // An empty excludes file overrides any global one, for the library
        // and the git CLI alike, so no test depends on the user's setup.
        let excludes = root.join(".git/test-excludes");
        std::fs::write(&excludes, "").expect("write excludes");
        config
            .set_str("core.excludesFile", excludes.to_str().expect("utf-8"))
            .expect("set excludes");
        std::fs::write(root.join("README.md"), "hello\n").expect("write");
        std::fs::write(root.join(".gitignore"), "*.log\nbuild/\n").expect("write");
        commit_all_on(&root, &format!("refs/heads/{branch}"), "init");
        repo.set_head(&format!("refs/heads/{branch}"))
            .expect("set head");
        repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
            .expect("checkout");
        TestRepo { _dir: dir, root }
    }

    pub(crate) fn repo(&self) -> Repository {
        Repository::open(&self.root).expect("open")
    }

    pub(crate) fn branch_tip(&self, branch: &str) -> git2::Oid {
        self.repo()
            .find_reference(&format!("refs/heads/{branch}"))
            .expect("branch")
            .peel_to_commit()
            .expect("commit")
            .id()
    }

    pub(crate) fn head_name(&self) -> Option<String> {
        let repo = self.repo();
        if repo.head_detached().expect("head") {
            None
        } else {
            repo.head()
                .ok()
                .and_then(|h| h.name().ok().map(str::to_owned))
        }
    }

    /// Detaches HEAD at its current commit.
    pub(crate) fn detach(&self) {
        let repo = self.repo();
        let oid = repo
            .head()
            .expect("head")
            .peel_to_commit()
            .expect("commit")
            .id();
        repo.set_head_detached(oid).expect("detach");
    }
}

/// Writes `rel` in the work tree at `worktree` and commits everything on
/// its HEAD branch.
pub(crate) fn commit_file(worktree: &Path, rel: &str, content: &str, message: &str) -> git2::Oid {
    let path = worktree.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(&path, content).expect("write");
    commit_all_on(worktree, "HEAD", message)
}

fn commit_all_on(worktree: &Path, update_ref: &str, message: &str) -> git2::Oid {
    let repo = Repository::open(worktree).expect("open");
    let mut index = repo.index().expect("index");
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .expect("add");
    index.write().expect("write index");
    let tree = repo
        .find_tree(index.write_tree().expect("tree"))
        .expect("find tree");
    let sig = repo.signature().expect("signature");
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(Some(update_ref), &sig, &sig, message, &tree, &parents)
        .expect("commit")
}

/// The git CLI, isolated from the user's and the system's config.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Checks the sandbox branch out in a second worktree so deleting the
/// branch is refused; returns that worktree's path.
pub(crate) fn block_branch(repo: &TestRepo, branch: &str, dir: &Path) -> PathBuf {
    let other = dir.join("blocker");
    git(
        &repo.root,
        &[
            "worktree",
            "add",
            "--force",
            other.to_str().expect("utf-8"),
            branch,
        ],
    );
    other
}

pub(crate) fn unblock(repo: &TestRepo, other: &Path) {
    git(
        &repo.root,
        &[
            "worktree",
            "remove",
            "--force",
            other.to_str().expect("utf-8"),
        ],
    );
}
