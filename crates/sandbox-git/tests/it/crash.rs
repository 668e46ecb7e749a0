//! Half-made sandboxes, as a create or cleanup killed at any instant leaves
//! them, built by hand from a whole sandbox: listed, cleaned up completely,
//! and no obstacle to a later create. The random-instant SIGKILL test of the
//! real binary is in lionrt's tests.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sandbox_git::{
    CreateOptions, SandboxSession, StepOutcome, cleanup_sandbox_by_id, create_sandbox,
    list_sandboxes,
};

use crate::support::{TestRepo, git};

fn with_id(id: &str) -> CreateOptions {
    CreateOptions {
        id: Some(id.to_owned()),
        ..CreateOptions::default()
    }
}

fn admin(repo: &TestRepo, id: &str) -> PathBuf {
    repo.root
        .join(format!(".git/worktrees/lionrt-sandbox-{id}"))
}

fn meta(repo: &TestRepo, id: &str) -> PathBuf {
    repo.root
        .join(format!(".git/lionrt-sandbox-meta/{id}.json"))
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Empties `dir` but keeps the directory.
fn empty_dir(dir: &Path) {
    for name in names(dir) {
        let path = dir.join(name);
        if path.is_dir() {
            std::fs::remove_dir_all(&path).expect("rm dir");
        } else {
            std::fs::remove_file(&path).expect("rm file");
        }
    }
}

/// Where a create was killed.
#[derive(Debug, Clone, Copy)]
enum Stage {
    /// After the metadata, before the branch.
    MetaOnly,
    /// After the branch, before the worktree.
    Branch,
    /// libgit2 made both directories and nothing in them.
    EmptyDirs,
    /// The work tree's `.git` file cut short; the admin folder empty.
    GitFileCut,
    /// `commondir` written, `gitdir` created but empty.
    AdminPartial,
    /// The admin folder whole, the checkout not begun.
    NoCheckout,
    /// A whole worktree, the metadata not yet marked complete.
    Unmarked,
}

const STAGES: [Stage; 7] = [
    Stage::MetaOnly,
    Stage::Branch,
    Stage::EmptyDirs,
    Stage::GitFileCut,
    Stage::AdminPartial,
    Stage::NoCheckout,
    Stage::Unmarked,
];

/// Makes a whole sandbox, then takes it back to what a create killed at
/// `stage` leaves.
fn half_made(repo: &TestRepo, id: &str, stage: Stage) -> SandboxSession {
    let session = create_sandbox(&repo.root, &with_id(id)).expect("create");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(meta(repo, id)).expect("meta")).expect("json");
    json["creating"] = true.into();
    std::fs::write(meta(repo, id), json.to_string()).expect("write meta");
    let wt = &session.worktree_path;
    let admin = admin(repo, id);
    let gitfile = std::fs::read(wt.join(".git")).expect(".git");
    match stage {
        Stage::MetaOnly | Stage::Branch => {
            std::fs::remove_dir_all(wt).expect("rm worktree");
            std::fs::remove_dir_all(&admin).expect("rm admin");
            if matches!(stage, Stage::MetaOnly) {
                let reference = format!("refs/heads/{}", session.branch);
                git(&repo.root, &["update-ref", "-d", &reference]);
            }
        }
        Stage::EmptyDirs => {
            empty_dir(wt);
            empty_dir(&admin);
        }
        Stage::GitFileCut => {
            empty_dir(wt);
            std::fs::write(wt.join(".git"), &gitfile[..12]).expect("cut .git");
            empty_dir(&admin);
        }
        Stage::AdminPartial => {
            empty_dir(wt);
            std::fs::write(wt.join(".git"), &gitfile).expect(".git");
            let commondir = std::fs::read(admin.join("commondir")).expect("commondir");
            empty_dir(&admin);
            std::fs::write(admin.join("commondir"), commondir).expect("commondir");
            std::fs::write(admin.join("gitdir"), "").expect("gitdir");
        }
        Stage::NoCheckout => {
            empty_dir(wt);
            std::fs::write(wt.join(".git"), &gitfile).expect(".git");
            std::fs::remove_file(admin.join("index")).expect("index");
        }
        Stage::Unmarked => {}
    }
    session
}

fn assert_nothing_left(repo: &TestRepo) {
    assert!(list_sandboxes(&repo.root).expect("list").is_empty());
    assert_eq!(
        names(&repo.root.join(".git/worktrees")),
        Vec::<String>::new()
    );
    assert_eq!(
        names(&repo.root.join(".git/lionrt-sandboxes")),
        Vec::<String>::new()
    );
    assert_eq!(
        names(&repo.root.join(".git/lionrt-sandbox-meta")),
        vec!["lock"]
    );
    let branches = git(&repo.root, &["branch", "--list", "lionrt/*"]);
    assert!(branches.stdout.is_empty(), "{branches:?}");
}

// contract: GIT-001
#[test]
fn two_half_made_admin_folders_in_a_row_no_longer_wedge_the_repository() {
    let repo = TestRepo::new("work");
    let whole = create_sandbox(&repo.root, &with_id("whole")).expect("create");
    std::fs::create_dir_all(admin(&repo, "h1")).expect("mkdir");
    std::fs::create_dir_all(admin(&repo, "h2")).expect("mkdir");
    // The state reproduces the reported wedge in libgit2 itself: its list
    // keeps one of the two broken folders, and looking it up fails.
    let raw = repo.repo();
    let listed = raw.worktrees().expect("libgit2 list");
    let broken = (0..listed.len())
        .filter_map(|i| listed.get(i).ok().flatten())
        .filter(|name| raw.find_worktree(name).is_err())
        .count();
    assert!(broken > 0, "the libgit2 wedge did not reproduce");
    drop(raw);

    let ids: Vec<String> = list_sandboxes(&repo.root)
        .expect("list must not fail")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, ["h1", "h2", "whole"]);
    // A create now prunes the broken folders (git's prune rules) and works.
    let mut other = create_sandbox(&repo.root, &with_id("other")).expect("create");
    assert!(!admin(&repo, "h1").exists() && !admin(&repo, "h2").exists());
    for id in ["h1", "h2"] {
        let report = cleanup_sandbox_by_id(&repo.root, id).expect("cleanup");
        assert_eq!(report.branch, StepOutcome::AlreadyAbsent);
    }
    let report = cleanup_sandbox_by_id(&repo.root, &whole.id).expect("cleanup");
    assert_eq!(
        (report.worktree, report.branch),
        (StepOutcome::Removed, StepOutcome::Removed)
    );
    let _report = sandbox_git::cleanup_sandbox(&mut other).expect("cleanup");
    assert_nothing_left(&repo);
}

// contract: GIT-001, GIT-003
#[test]
fn a_create_killed_at_each_stage_is_listed_and_cleaned_up_completely() {
    for stage in STAGES {
        let repo = TestRepo::new("work");
        let session = half_made(&repo, "half", stage);
        let listed = list_sandboxes(&repo.root).expect("list");
        assert_eq!(listed.len(), 1, "{stage:?}");
        assert_eq!(listed[0].id, "half", "{stage:?}");
        assert_eq!(listed[0].base_branch, "work", "{stage:?}");
        assert_eq!(
            listed[0].is_active(),
            !matches!(stage, Stage::MetaOnly),
            "{stage:?}: active while anything but the metadata is left"
        );
        let report = cleanup_sandbox_by_id(&repo.root, "half").expect("cleanup");
        assert_eq!(
            report.branch == StepOutcome::Removed,
            !matches!(stage, Stage::MetaOnly),
            "{stage:?}"
        );
        assert!(!session.worktree_path.exists(), "{stage:?}");
        assert_nothing_left(&repo);
    }
}

#[test]
fn a_create_with_the_id_of_a_half_made_sandbox_rolls_it_back_and_succeeds() {
    for stage in STAGES {
        let repo = TestRepo::new("work");
        let _half = half_made(&repo, "again", stage);
        let mut session = create_sandbox(&repo.root, &with_id("again"))
            .unwrap_or_else(|e| panic!("{stage:?}: {e}"));
        assert!(
            session.worktree_path.join("README.md").is_file(),
            "{stage:?}"
        );
        let _report = sandbox_git::cleanup_sandbox(&mut session).expect("cleanup");
        assert_nothing_left(&repo);
    }
}

// contract: GIT-001
#[test]
fn a_cleanup_killed_half_way_through_the_work_tree_is_completed() {
    let repo = TestRepo::new("work");
    let session = create_sandbox(&repo.root, &with_id("cut")).expect("create");
    // Killed after the files went and before the `.git` file did.
    for name in names(&session.worktree_path) {
        if name != ".git" {
            let path = session.worktree_path.join(name);
            if path.is_dir() {
                std::fs::remove_dir_all(path).expect("rm");
            } else {
                std::fs::remove_file(path).expect("rm");
            }
        }
    }
    let report = cleanup_sandbox_by_id(&repo.root, "cut").expect("cleanup");
    assert_eq!(report.worktree, StepOutcome::Removed);
    // Killed after the work tree went, with the admin folder half removed.
    let session = create_sandbox(&repo.root, &with_id("cut2")).expect("create");
    std::fs::remove_dir_all(&session.worktree_path).expect("rm");
    std::fs::remove_file(admin(&repo, "cut2").join("gitdir")).expect("rm");
    let report = cleanup_sandbox_by_id(&repo.root, "cut2").expect("cleanup");
    assert_eq!(report.branch, StepOutcome::Removed);
    assert_nothing_left(&repo);
}

#[test]
fn a_directory_that_is_not_the_sandboxes_own_is_never_deleted() {
    let repo = TestRepo::new("work");
    let foreign = tempfile::tempdir().expect("dir");
    std::fs::write(foreign.path().join("precious.txt"), "keep").expect("write");
    std::fs::write(foreign.path().join(".git"), "gitdir: /elsewhere/.git\n").expect("write");
    let _session = half_made(&repo, "f1", Stage::MetaOnly);
    // Metadata naming a foreign directory (a tampered or stale file).
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(meta(&repo, "f1")).expect("meta")).expect("json");
    json["worktree_path"] = foreign.path().to_str().expect("utf-8").into();
    std::fs::write(meta(&repo, "f1"), json.to_string()).expect("write meta");
    // A symlink where the default work tree would be.
    let default = repo.root.join(".git/lionrt-sandboxes/f1");
    std::os::unix::fs::symlink(foreign.path(), &default).expect("symlink");

    let report = cleanup_sandbox_by_id(&repo.root, "f1").expect("cleanup");
    assert_eq!(report.worktree, StepOutcome::AlreadyAbsent);
    assert!(foreign.path().join("precious.txt").is_file());
    assert!(foreign.path().join(".git").is_file());
    assert!(
        default.symlink_metadata().is_ok(),
        "the symlink is left too"
    );
}

#[test]
fn another_tools_stale_admin_folder_is_pruned_only_after_a_grace_period() {
    let repo = TestRepo::new("work");
    let fresh = repo.root.join(".git/worktrees/fresh");
    let old = repo.root.join(".git/worktrees/old");
    let locked = repo.root.join(".git/worktrees/kept");
    for dir in [&fresh, &old, &locked] {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    std::fs::write(locked.join("locked"), "").expect("lock");
    let long_ago = SystemTime::now() - Duration::from_secs(3600);
    for dir in [&old, &locked] {
        std::fs::File::open(dir)
            .and_then(|f| f.set_modified(long_ago))
            .expect("age");
    }
    let mut session = create_sandbox(&repo.root, &with_id("p")).expect("create");
    assert!(fresh.is_dir(), "a folder git may still be writing is kept");
    assert!(!old.exists(), "an old folder with no gitdir is pruned");
    assert!(locked.is_dir(), "a locked folder is kept");
    let _report = sandbox_git::cleanup_sandbox(&mut session).expect("cleanup");
}

#[test]
fn a_ref_lock_left_by_a_killed_writer_blocks_neither_create_nor_cleanup() {
    let repo = TestRepo::new("work");
    let lock = repo.root.join(".git/refs/heads/lionrt/sandbox/stuck.lock");
    std::fs::create_dir_all(lock.parent().expect("parent")).expect("mkdir");
    // A create killed while git wrote the branch ref leaves its lock file.
    std::fs::write(&lock, "").expect("stale lock");
    let mut session = create_sandbox(&repo.root, &with_id("stuck")).expect("create");
    assert!(!lock.exists(), "the stale lock was removed");
    // And one killed while cleanup deleted the ref.
    std::fs::write(&lock, "").expect("stale lock");
    let report = sandbox_git::cleanup_sandbox(&mut session).expect("cleanup");
    assert_eq!(report.branch, StepOutcome::Removed);
    assert!(!lock.exists());
    assert!(list_sandboxes(&repo.root).expect("list").is_empty());
    // The id is free again.
    let mut again = create_sandbox(&repo.root, &with_id("stuck")).expect("re-create");
    let _report = sandbox_git::cleanup_sandbox(&mut again).expect("cleanup");
}
