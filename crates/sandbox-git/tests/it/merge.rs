//! Guarded, retry-safe merges.

use sandbox_git::{
    CreateOptions, Error, MergeOptions, MergeOutcome, StepOutcome, create_sandbox,
    is_protected_branch, merge_sandbox, merge_sandbox_by_id,
};

use crate::support::{TestRepo, block_branch, commit_file, git, unblock};

fn create(repo: &TestRepo, id: &str) -> sandbox_git::SandboxSession {
    create_sandbox(
        &repo.root,
        &CreateOptions {
            id: Some(id.to_owned()),
            ..CreateOptions::default()
        },
    )
    .expect("create")
}

const PLAIN: MergeOptions = MergeOptions {
    allow_protected: false,
    cleanup: false,
};

#[test]
fn fast_forward_moves_the_base_branch_and_updates_the_checkout() {
    let repo = TestRepo::new("work");
    let mut session = create(&repo, "ff");
    let tip = commit_file(
        &session.worktree_path,
        "feature.txt",
        "feature\n",
        "add feature",
    );
    let report = merge_sandbox(&mut session, &PLAIN).expect("merge");
    assert_eq!(
        report.outcome,
        MergeOutcome::FastForward {
            commit: tip.to_string()
        }
    );
    assert_eq!(repo.branch_tip("work"), tip);
    assert_eq!(
        std::fs::read_to_string(repo.root.join("feature.txt")).expect("read"),
        "feature\n"
    );
    // The main checkout is clean afterwards (index updated too).
    let status = git(&repo.root, &["status", "--porcelain"]);
    assert!(
        status.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    assert!(session.is_active());
}

#[test]
fn diverged_branches_get_a_merge_commit() {
    let repo = TestRepo::new("work");
    let mut session = create(&repo, "div");
    let theirs = commit_file(&session.worktree_path, "sandbox.txt", "s\n", "sandbox work");
    let ours = commit_file(&repo.root, "main.txt", "m\n", "main work");
    let report = merge_sandbox(&mut session, &PLAIN).expect("merge");
    let MergeOutcome::MergeCommit { commit } = &report.outcome else {
        panic!("{:?}", report.outcome)
    };
    let parents = git(&repo.root, &["rev-list", "--parents", "-n", "1", "work"]);
    let line = String::from_utf8_lossy(&parents.stdout);
    assert_eq!(line.trim(), format!("{commit} {ours} {theirs}"));
    assert!(repo.root.join("sandbox.txt").is_file());
    let status = git(&repo.root, &["status", "--porcelain"]);
    assert!(
        status.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
}

#[test]
fn a_conflict_changes_nothing() {
    let repo = TestRepo::new("work");
    let mut session = create(&repo, "conf");
    commit_file(
        &session.worktree_path,
        "README.md",
        "sandbox\n",
        "sandbox edit",
    );
    let ours = commit_file(&repo.root, "README.md", "main\n", "main edit");
    let err = merge_sandbox(&mut session, &PLAIN).expect_err("conflict");
    match &err {
        Error::MergeConflict { paths, .. } => assert_eq!(paths, &vec!["README.md".to_owned()]),
        other => panic!("unexpected {other}"),
    }
    assert_eq!(repo.branch_tip("work"), ours);
    assert_eq!(
        std::fs::read_to_string(repo.root.join("README.md")).expect("read"),
        "main\n"
    );
}

#[test]
fn local_changes_the_merge_would_overwrite_stop_it_before_the_ref_moves() {
    let repo = TestRepo::new("work");
    let mut session = create(&repo, "dirty");
    commit_file(
        &session.worktree_path,
        "README.md",
        "sandbox\n",
        "sandbox edit",
    );
    let before = repo.branch_tip("work");
    std::fs::write(repo.root.join("README.md"), "local edit\n").expect("write");
    merge_sandbox(&mut session, &PLAIN).expect_err("checkout conflict");
    assert_eq!(repo.branch_tip("work"), before);
    assert_eq!(
        std::fs::read_to_string(repo.root.join("README.md")).expect("read"),
        "local edit\n"
    );
}

// contract: GIT-004
#[test]
fn merge_refuses_a_detached_repo_root() {
    let repo = TestRepo::new("work");
    let mut session = create(&repo, "det");
    commit_file(&session.worktree_path, "x.txt", "x", "x");
    let base_before = repo.branch_tip("work");
    repo.detach();
    let head_before = repo.repo().head().expect("head").target();
    for allow_protected in [false, true] {
        let options = MergeOptions {
            allow_protected,
            cleanup: true,
        };
        let err = merge_sandbox(&mut session, &options).expect_err("detached");
        assert!(matches!(err, Error::DetachedHead { .. }), "{err}");
        assert!(err.is_refusal());
    }
    let repo2 = repo.repo();
    assert!(repo2.head_detached().expect("head"));
    assert_eq!(repo2.head().expect("head").target(), head_before);
    assert_eq!(repo.branch_tip("work"), base_before);
    // Refused before any cleanup: the sandbox is intact.
    assert!(session.is_active() && session.worktree_path.is_dir());
}

// contract: GIT-005
#[test]
fn merge_refuses_when_repo_root_is_on_another_branch_and_never_checks_out() {
    let repo = TestRepo::new("work");
    let mut session = create(&repo, "other");
    commit_file(&session.worktree_path, "x.txt", "x", "x");
    git(&repo.root, &["checkout", "-q", "-b", "elsewhere"]);
    let work_before = repo.branch_tip("work");
    let err = merge_sandbox(&mut session, &PLAIN).expect_err("wrong branch");
    match &err {
        Error::NotOnBaseBranch {
            expected, actual, ..
        } => {
            assert_eq!(expected, "work");
            assert_eq!(actual, "elsewhere");
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(repo.head_name().as_deref(), Some("refs/heads/elsewhere"));
    assert_eq!(repo.branch_tip("work"), work_before);
    assert!(!repo.root.join("x.txt").exists());
}

// contract: GIT-006
#[test]
fn merge_into_a_protected_branch_needs_allow_protected() {
    for base in [
        "main",
        "master",
        "release",
        "release/2.0",
        "release-candidate",
    ] {
        let repo = TestRepo::new(base);
        let mut session = create(&repo, "prot");
        let tip = commit_file(&session.worktree_path, "x.txt", "x", "x");
        let before = repo.branch_tip(base);

        let err = merge_sandbox(&mut session, &PLAIN).expect_err(base);
        assert!(
            matches!(&err, Error::ProtectedBranch { branch } if branch == base),
            "{base}: {err}"
        );
        assert_eq!(repo.branch_tip(base), before, "{base}");

        let allowed = MergeOptions {
            allow_protected: true,
            cleanup: false,
        };
        let report = merge_sandbox(&mut session, &allowed).expect("allowed");
        assert_eq!(
            report.outcome,
            MergeOutcome::FastForward {
                commit: tip.to_string()
            },
            "{base}"
        );
        assert_eq!(repo.branch_tip(base), tip, "{base}");
    }
}

// contract: GIT-006
#[test]
fn protected_names() {
    for (name, protected) in [
        ("main", true),
        ("master", true),
        ("release", true),
        ("release/1.2", true),
        ("releases", true),
        ("Main", true),
        ("RELEASE-9", true),
        ("work", false),
        ("feature/main", false),
        ("mainline", false),
        ("pre-release", false),
        ("lionrt/sandbox/x", false),
    ] {
        assert_eq!(is_protected_branch(name), protected, "{name}");
    }
}

#[test]
fn an_unprotected_branch_merges_without_the_opt_in() {
    let repo = TestRepo::new("develop");
    let mut session = create(&repo, "dev");
    let tip = commit_file(&session.worktree_path, "x.txt", "x", "x");
    let _report = merge_sandbox_by_id(&repo.root, "dev", &PLAIN).expect("merge by id");
    assert_eq!(repo.branch_tip("develop"), tip);
    assert_eq!(
        merge_sandbox(&mut session, &PLAIN).expect("again").outcome,
        MergeOutcome::UpToDate
    );
}

// contract: GIT-002
#[test]
fn sandbox_merge_is_retry_safe_after_a_blocked_cleanup() {
    let repo = TestRepo::new("work");
    let scratch = tempfile::tempdir().expect("dir");
    let mut session = create(&repo, "retry");
    let tip = commit_file(&session.worktree_path, "x.txt", "x", "x");
    let blocker = block_branch(&repo, &session.branch, scratch.path());
    let options = MergeOptions {
        allow_protected: false,
        cleanup: true,
    };

    let err = merge_sandbox(&mut session, &options).expect_err("cleanup blocked");
    assert!(
        matches!(
            err,
            Error::CleanupIncomplete {
                step: "delete branch",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        repo.branch_tip("work"),
        tip,
        "the merge itself went through"
    );
    assert!(session.is_active());

    unblock(&repo, &blocker);
    let report = merge_sandbox(&mut session, &options).expect("retry");
    assert_eq!(report.outcome, MergeOutcome::UpToDate);
    let cleanup = report.cleanup.expect("cleanup ran");
    assert_eq!(
        (cleanup.worktree, cleanup.branch),
        (StepOutcome::AlreadyAbsent, StepOutcome::Removed)
    );
    assert!(!session.is_active());
    assert_eq!(repo.branch_tip("work"), tip);

    // Once more, with everything gone: still not a failure.
    let report = merge_sandbox(&mut session, &options).expect("third call");
    assert_eq!(report.outcome, MergeOutcome::BranchAbsent);
    let cleanup = report.cleanup.expect("cleanup ran");
    assert_eq!(
        (cleanup.worktree, cleanup.branch),
        (StepOutcome::AlreadyAbsent, StepOutcome::AlreadyAbsent)
    );
}

#[test]
fn merge_with_cleanup_refuses_a_sandbox_with_uncommitted_work() {
    let repo = TestRepo::new("work");
    let mut session = create(&repo, "dirty-sb");
    commit_file(&session.worktree_path, "x.txt", "x", "x");
    std::fs::write(
        session.worktree_path.join("not committed.txt"),
        "work in progress",
    )
    .expect("write");
    let before = repo.branch_tip("work");
    let options = MergeOptions {
        allow_protected: false,
        cleanup: true,
    };
    let err = merge_sandbox(&mut session, &options).expect_err("would discard work");
    assert!(
        matches!(err, Error::SandboxDirty { .. }) && err.is_refusal(),
        "{err}"
    );
    assert_eq!(repo.branch_tip("work"), before);
    assert!(session.worktree_path.join("not committed.txt").is_file());
    // Without cleanup the committed part merges and nothing is discarded.
    let report = merge_sandbox(&mut session, &PLAIN).expect("merge");
    assert!(matches!(report.outcome, MergeOutcome::FastForward { .. }));
    assert!(session.worktree_path.join("not committed.txt").is_file());
    // The report says what was left behind, not merged.
    assert_eq!(report.uncommitted, ["not committed.txt"]);
    assert_eq!(report.uncommitted_count, 1);
}

/// A kept sandbox with only uncommitted work merges nothing, and its report
/// says so: each path left, tracked edits and untracked files alike.
#[test]
fn a_kept_merge_reports_the_uncommitted_work_it_did_not_merge() {
    let repo = TestRepo::new("work");
    let mut session = create(&repo, "wip-sb");
    commit_file(&session.worktree_path, "tracked.txt", "one", "tracked");
    let report = merge_sandbox(&mut session, &PLAIN).expect("merge");
    assert!(report.uncommitted.is_empty(), "{report:?}");
    std::fs::write(session.worktree_path.join("tracked.txt"), "two").expect("edit");
    std::fs::write(session.worktree_path.join("new.txt"), "new").expect("write");
    let before = repo.branch_tip("work");
    let report = merge_sandbox(&mut session, &PLAIN).expect("merge");
    assert_eq!(report.outcome, MergeOutcome::UpToDate);
    assert_eq!(repo.branch_tip("work"), before);
    let mut left = report.uncommitted.clone();
    left.sort();
    assert_eq!(left, ["new.txt", "tracked.txt"]);
    assert_eq!(report.uncommitted_count, 2);
}
