//! Completion evidence, including failing probes.

use sandbox_git::{CompletionEvidence, CreateOptions, create_sandbox, probe_completion_evidence};

use crate::support::{TestRepo, commit_file, git};

fn assert_unchecked(ev: &CompletionEvidence) {
    assert!(!ev.checked, "{ev:?}");
    assert!(!ev.is_completed_empty(), "{ev:?}");
    assert!(ev.failure.is_some(), "{ev:?}");
}

// contract: GIT-015
#[test]
fn a_sandbox_with_nothing_done_is_checked_and_empty() {
    let repo = TestRepo::new("work");
    let session = create_sandbox(&repo.root, &CreateOptions::default()).expect("create");
    let ev = probe_completion_evidence(&session.worktree_path, &session.base_branch);
    assert_eq!(
        ev,
        CompletionEvidence {
            checked: true,
            commits_ahead: Some(0),
            uncommitted_changes: Some(false),
            failure: None
        }
    );
    assert!(!ev.has_evidence());
    assert!(ev.is_completed_empty());
}

// contract: GIT-014
#[test]
fn commits_ahead_of_the_base_are_evidence() {
    let repo = TestRepo::new("work");
    let session = create_sandbox(&repo.root, &CreateOptions::default()).expect("create");
    commit_file(&session.worktree_path, "a.txt", "a", "one");
    commit_file(&session.worktree_path, "b.txt", "b", "two");
    let ev = probe_completion_evidence(&session.worktree_path, "work");
    assert!(ev.checked);
    assert_eq!(ev.commits_ahead, Some(2));
    assert_eq!(ev.uncommitted_changes, Some(false));
    assert!(ev.has_evidence() && !ev.is_completed_empty());
}

// contract: GIT-014
#[test]
fn uncommitted_changes_are_evidence() {
    let repo = TestRepo::new("work");
    let session = create_sandbox(&repo.root, &CreateOptions::default()).expect("create");
    let wt = &session.worktree_path;

    std::fs::write(wt.join("README.md"), "modified").expect("write");
    let ev = probe_completion_evidence(wt, "work");
    assert_eq!(
        (ev.checked, ev.commits_ahead, ev.uncommitted_changes),
        (true, Some(0), Some(true))
    );

    git(wt, &["checkout", "--", "README.md"]);
    std::fs::create_dir_all(wt.join("new dir")).expect("mkdir");
    std::fs::write(wt.join("new dir/file.rs"), "fn main() {}").expect("write");
    let ev = probe_completion_evidence(wt, "work");
    assert_eq!(
        ev.uncommitted_changes,
        Some(true),
        "an untracked file is work too"
    );

    // An ignored file is not.
    std::fs::remove_dir_all(wt.join("new dir")).expect("rm");
    std::fs::write(wt.join("trace.log"), "noise").expect("write");
    assert!(probe_completion_evidence(wt, "work").is_completed_empty());
}

// contract: GIT-014
#[test]
fn a_remote_tracking_base_is_read_locally_without_any_fetch() {
    let repo = TestRepo::new("work");
    // A remote nobody can reach; the probe must not need it.
    git(
        &repo.root,
        &[
            "remote",
            "add",
            "origin",
            "https://unreachable.invalid/repo.git",
        ],
    );
    let tip = repo.branch_tip("work").to_string();
    git(
        &repo.root,
        &["update-ref", "refs/remotes/origin/work", &tip],
    );
    let session = create_sandbox(&repo.root, &CreateOptions::default()).expect("create");
    commit_file(&session.worktree_path, "a.txt", "a", "one");
    let ev = probe_completion_evidence(&session.worktree_path, "origin/work");
    assert!(ev.checked, "{ev:?}");
    assert_eq!(ev.commits_ahead, Some(1));
}

// contract: GIT-016
#[test]
fn a_missing_base_ref_is_unchecked_not_empty() {
    let repo = TestRepo::new("work");
    let session = create_sandbox(&repo.root, &CreateOptions::default()).expect("create");
    let ev = probe_completion_evidence(&session.worktree_path, "no-such-branch");
    assert_unchecked(&ev);
    assert_eq!(ev.commits_ahead, None);
    assert!(
        ev.failure
            .as_deref()
            .is_some_and(|f| f.contains("base ref")),
        "{ev:?}"
    );
}

// contract: GIT-016
#[test]
fn a_corrupt_base_ref_is_unchecked_not_empty() {
    let repo = TestRepo::new("work");
    let session = create_sandbox(&repo.root, &CreateOptions::default()).expect("create");
    std::fs::write(
        repo.root.join(".git/refs/heads/corrupt"),
        "this is not an object id\n",
    )
    .expect("write");
    let ev = probe_completion_evidence(&session.worktree_path, "corrupt");
    assert_unchecked(&ev);
    // The same tree with a good base ref is checked and empty: the failure,
    // not the tree, made the difference.
    assert!(probe_completion_evidence(&session.worktree_path, "work").is_completed_empty());
}

// contract: GIT-016
#[test]
fn a_corrupt_head_is_unchecked() {
    let repo = TestRepo::new("work");
    let session = create_sandbox(&repo.root, &CreateOptions::default()).expect("create");
    // The sandbox's HEAD is its branch; point the branch at garbage.
    let branch_file = repo.root.join(".git/refs/heads").join(&session.branch);
    std::fs::write(&branch_file, "garbage\n").expect("write");
    let ev = probe_completion_evidence(&session.worktree_path, "work");
    assert_unchecked(&ev);
    assert_eq!((ev.commits_ahead, ev.uncommitted_changes), (None, None));
}

// contract: GIT-016
#[test]
fn a_failing_status_probe_unchecks_the_whole_result() {
    let repo = TestRepo::new("work");
    let session = create_sandbox(&repo.root, &CreateOptions::default()).expect("create");
    commit_file(&session.worktree_path, "a.txt", "a", "one");
    // Corrupt the worktree's index: the status probe fails after the ahead
    // probe succeeded.
    let index = repo
        .root
        .join(".git/worktrees")
        .join(format!("lionrt-sandbox-{}", session.id))
        .join("index");
    assert!(index.is_file(), "{}", index.display());
    std::fs::write(&index, b"DIRC garbage that is no index").expect("write");
    let ev = probe_completion_evidence(&session.worktree_path, "work");
    assert_unchecked(&ev);
    assert_eq!(
        ev.commits_ahead,
        Some(1),
        "a probe that succeeded keeps what it found"
    );
    assert_eq!(
        ev.uncommitted_changes, None,
        "the failed probe reports nothing"
    );
}

// contract: GIT-016
#[test]
fn a_path_that_is_no_repository_is_unchecked() {
    let dir = tempfile::tempdir().expect("dir");
    assert_unchecked(&probe_completion_evidence(dir.path(), "main"));
}
