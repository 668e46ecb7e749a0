//! Create, list and retry-safe cleanup.

use sandbox_git::{
    CreateOptions, Error, StepOutcome, cleanup_sandbox, cleanup_sandbox_by_id, create_sandbox,
    find_sandbox, list_sandboxes,
};

use crate::support::{TestRepo, block_branch, commit_file, git, unblock};

fn with_id(id: &str) -> CreateOptions {
    CreateOptions {
        id: Some(id.to_owned()),
        ..CreateOptions::default()
    }
}

#[test]
fn create_records_current_branch_and_makes_branch_and_worktree() {
    let repo = TestRepo::new("work");
    let session = create_sandbox(&repo.root, &with_id("s1")).expect("create");
    assert_eq!(session.base_branch, "work");
    assert_eq!(session.branch, "lionrt/sandbox/s1");
    assert_eq!(session.base_commit, repo.branch_tip("work").to_string());
    assert!(session.is_active());
    assert!(session.worktree_path.join("README.md").is_file());
    assert_eq!(
        repo.branch_tip("lionrt/sandbox/s1"),
        repo.branch_tip("work")
    );

    // The git CLI sees the worktree on the sandbox branch.
    let list = git(&repo.root, &["worktree", "list", "--porcelain"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(
        text.contains(&format!("worktree {}", session.worktree_path.display())),
        "{text}"
    );
    assert!(
        text.contains("branch refs/heads/lionrt/sandbox/s1"),
        "{text}"
    );
    // The worktree does not show as untracked files of the main checkout.
    let status = git(&repo.root, &["status", "--porcelain"]);
    assert!(
        status.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );

    let listed = list_sandboxes(&repo.root).expect("list");
    assert_eq!(listed, vec![session.clone()]);
    assert_eq!(
        find_sandbox(&repo.root, "lionrt/sandbox/s1").expect("find"),
        session
    );
}

#[test]
fn generated_ids_are_distinct() {
    let repo = TestRepo::new("work");
    let a = create_sandbox(&repo.root, &CreateOptions::default()).expect("create a");
    let b = create_sandbox(&repo.root, &CreateOptions::default()).expect("create b");
    assert_ne!(a.id, b.id);
    assert_eq!(list_sandboxes(&repo.root).expect("list").len(), 2);
}

#[test]
fn create_in_a_custom_directory() {
    let repo = TestRepo::new("work");
    let dir = tempfile::tempdir().expect("dir");
    let options = CreateOptions {
        id: Some("custom".into()),
        worktrees_dir: Some(dir.path().to_owned()),
    };
    let mut session = create_sandbox(&repo.root, &options).expect("create");
    assert_eq!(
        session.worktree_path,
        std::fs::canonicalize(dir.path())
            .expect("canon")
            .join("custom")
    );
    let _report = cleanup_sandbox(&mut session).expect("cleanup");
    assert!(!session.worktree_path.exists());
}

// contract: GIT-007
#[test]
fn create_refuses_a_detached_head_and_records_nothing() {
    let repo = TestRepo::new("work");
    repo.detach();
    let err = create_sandbox(&repo.root, &with_id("d1")).expect_err("detached must be refused");
    assert!(matches!(err, Error::DetachedHead { .. }), "{err}");
    assert!(err.is_refusal());
    // No branch, worktree or metadata is left behind, so nothing can
    // carry `HEAD` as its merge target.
    assert!(list_sandboxes(&repo.root).expect("list").is_empty());
    let branches = git(&repo.root, &["branch", "--list", "lionrt/*"]);
    assert!(branches.stdout.is_empty());
}

#[test]
fn create_refuses_an_unborn_head() {
    let dir = tempfile::tempdir().expect("dir");
    git2::Repository::init(dir.path()).expect("init");
    let err = create_sandbox(dir.path(), &with_id("u1")).expect_err("unborn");
    assert!(matches!(err, Error::UnbornHead { .. }), "{err}");
}

#[test]
fn hostile_ids_are_refused() {
    let repo = TestRepo::new("work");
    for id in [
        "",
        "../escape",
        "a/b",
        ".hidden",
        "-flag",
        "x.lock",
        "a..b",
        "new\nline",
        &"x".repeat(65),
    ] {
        let err = create_sandbox(&repo.root, &with_id(id)).expect_err(id);
        assert!(matches!(err, Error::InvalidId { .. }), "{id:?}: {err}");
    }
    assert!(list_sandboxes(&repo.root).expect("list").is_empty());
}

#[test]
fn an_existing_branch_is_not_reused() {
    let repo = TestRepo::new("work");
    create_sandbox(&repo.root, &with_id("dup")).expect("first");
    let err = create_sandbox(&repo.root, &with_id("dup")).expect_err("second");
    assert!(matches!(err, Error::BranchExists { .. }), "{err}");
}

// contract: GIT-001, GIT-003
#[test]
fn cleanup_removes_both_and_a_retry_counts_absent_as_cleaned() {
    let repo = TestRepo::new("work");
    let mut session = create_sandbox(&repo.root, &with_id("c1")).expect("create");
    std::fs::write(session.worktree_path.join("scratch.txt"), "uncommitted").expect("write");

    let report = cleanup_sandbox(&mut session).expect("cleanup");
    assert_eq!(
        (report.worktree, report.branch),
        (StepOutcome::Removed, StepOutcome::Removed)
    );
    assert!(!session.is_active());
    assert!(!session.worktree_path.exists());
    assert!(list_sandboxes(&repo.root).expect("list").is_empty());

    let again = cleanup_sandbox(&mut session).expect("retry must not fail");
    assert_eq!(
        (again.worktree, again.branch),
        (StepOutcome::AlreadyAbsent, StepOutcome::AlreadyAbsent)
    );
    assert!(!session.is_active());
    assert!(!session.refresh_active().expect("refresh"));
    // By id, after everything is gone, too.
    let by_id = cleanup_sandbox_by_id(&repo.root, "c1").expect("by id");
    assert_eq!(by_id.branch, StepOutcome::AlreadyAbsent);
}

// contract: GIT-001, GIT-003
#[test]
fn partial_cleanup_keeps_the_session_active_and_a_retry_completes_it() {
    let repo = TestRepo::new("work");
    let scratch = tempfile::tempdir().expect("dir");
    let mut session = create_sandbox(&repo.root, &with_id("p1")).expect("create");
    let blocker = block_branch(&repo, &session.branch, scratch.path());

    let err = cleanup_sandbox(&mut session).expect_err("branch deletion must be blocked");
    match &err {
        Error::CleanupIncomplete { step, target, .. } => {
            assert_eq!(*step, "delete branch");
            assert_eq!(target, "lionrt/sandbox/p1");
        }
        other => panic!("unexpected {other}"),
    }
    // The worktree step succeeded, the branch is still there: still active.
    assert!(!session.worktree_path.exists());
    assert!(session.is_active());
    assert!(session.refresh_active().expect("refresh"));
    let listed = list_sandboxes(&repo.root).expect("list");
    assert_eq!(listed.len(), 1);
    assert!(listed[0].is_active());
    assert_eq!(listed[0].base_branch, "work");

    // A retry while still blocked fails the same way, not on the worktree.
    let err = cleanup_sandbox(&mut session).expect_err("still blocked");
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
    assert!(session.is_active());

    unblock(&repo, &blocker);
    let report = cleanup_sandbox(&mut session).expect("retry completes");
    assert_eq!(report.worktree, StepOutcome::AlreadyAbsent);
    assert_eq!(report.branch, StepOutcome::Removed);
    assert!(!session.is_active());
    assert!(list_sandboxes(&repo.root).expect("list").is_empty());
}

// contract: GIT-001
#[test]
fn cleanup_after_the_worktree_directory_was_deleted_by_hand() {
    let repo = TestRepo::new("work");
    let mut session = create_sandbox(&repo.root, &with_id("gone")).expect("create");
    commit_file(&session.worktree_path, "a.txt", "a", "work");
    std::fs::remove_dir_all(&session.worktree_path).expect("rm");
    let report = cleanup_sandbox(&mut session).expect("cleanup");
    assert_eq!(report.branch, StepOutcome::Removed);
    assert!(!session.is_active());
    let list = git(&repo.root, &["worktree", "list", "--porcelain"]);
    assert!(!String::from_utf8_lossy(&list.stdout).contains("gone"));
}

#[test]
fn cleanup_of_a_forged_session_never_deletes_the_forged_path() {
    let repo = TestRepo::new("work");
    let victim = tempfile::tempdir().expect("dir");
    std::fs::write(victim.path().join("precious.txt"), "keep").expect("write");
    let session = create_sandbox(&repo.root, &with_id("real")).expect("create");
    let mut json = serde_json::to_value(&session).expect("json");
    json["id"] = "forged".into();
    json["branch"] = "lionrt/sandbox/forged".into();
    json["worktree_path"] = victim.path().to_str().expect("utf-8").into();
    let mut forged: sandbox_git::SandboxSession = serde_json::from_value(json).expect("parse");
    let _report = cleanup_sandbox(&mut forged).expect("nothing registered under that name");
    assert!(victim.path().join("precious.txt").is_file());
    assert!(session.worktree_path.is_dir());
}

#[test]
fn session_summary_round_trips_through_json() {
    let repo = TestRepo::new("work");
    let session = create_sandbox(&repo.root, &with_id("json")).expect("create");
    let text = serde_json::to_string(&session).expect("to json");
    for key in [
        "\"id\"",
        "\"branch\"",
        "\"base_branch\"",
        "\"worktree_path\"",
        "\"active\"",
    ] {
        assert!(text.contains(key), "{text}");
    }
    let back: sandbox_git::SandboxSession = serde_json::from_str(&text).expect("from json");
    assert_eq!(back, session);
}

// contract: GIT-001, GIT-003
#[test]
fn a_locked_worktree_fails_the_first_step_and_a_retry_after_unlock_completes() {
    let repo = TestRepo::new("work");
    let mut session = create_sandbox(&repo.root, &with_id("locked")).expect("create");
    let path = session.worktree_path.to_str().expect("utf-8").to_owned();
    git(&repo.root, &["worktree", "lock", &path]);

    let err = cleanup_sandbox(&mut session).expect_err("locked worktree");
    assert!(
        matches!(
            err,
            Error::CleanupIncomplete {
                step: "remove worktree",
                ..
            }
        ),
        "{err}"
    );
    assert!(session.is_active());
    assert!(session.worktree_path.is_dir(), "nothing removed");
    assert_eq!(
        repo.branch_tip("lionrt/sandbox/locked"),
        repo.branch_tip("work"),
        "branch kept"
    );

    git(&repo.root, &["worktree", "unlock", &path]);
    let report = cleanup_sandbox(&mut session).expect("retry");
    assert_eq!(
        (report.worktree, report.branch),
        (StepOutcome::Removed, StepOutcome::Removed)
    );
    assert!(!session.is_active());
}

#[test]
fn an_id_whose_worktree_is_still_registered_is_not_reused() {
    let repo = TestRepo::new("work");
    let session = create_sandbox(&repo.root, &with_id("orphan")).expect("create");
    // The branch disappears behind the sandbox's back (plumbing ignores
    // the checkout), leaving only the worktree.
    git(
        &repo.root,
        &["update-ref", "-d", "refs/heads/lionrt/sandbox/orphan"],
    );
    let err = create_sandbox(&repo.root, &with_id("orphan")).expect_err("worktree in use");
    assert!(matches!(err, Error::SandboxExists { .. }), "{err}");
    assert!(
        session.worktree_path.is_dir(),
        "the old worktree is untouched"
    );
    // It is still listed, and cleanup removes it.
    let mut listed = find_sandbox(&repo.root, "orphan").expect("listed");
    assert!(listed.is_active());
    let report = cleanup_sandbox(&mut listed).expect("cleanup");
    assert_eq!(
        (report.worktree, report.branch),
        (StepOutcome::Removed, StepOutcome::AlreadyAbsent)
    );
}

#[test]
fn unknown_ids_are_not_found_for_merge_and_already_clean_for_cleanup() {
    let repo = TestRepo::new("work");
    let err = find_sandbox(&repo.root, "missing").expect_err("not found");
    assert!(matches!(err, Error::SandboxNotFound { .. }), "{err}");
    let options = sandbox_git::MergeOptions::default();
    let err =
        sandbox_git::merge_sandbox_by_id(&repo.root, "missing", &options).expect_err("not found");
    assert!(matches!(err, Error::SandboxNotFound { .. }), "{err}");
    let report = cleanup_sandbox_by_id(&repo.root, "missing").expect("nothing to do");
    assert_eq!(report.worktree, StepOutcome::AlreadyAbsent);
    let err = cleanup_sandbox_by_id(&repo.root, "../../etc").expect_err("hostile id");
    assert!(matches!(err, Error::InvalidId { .. }), "{err}");
}

#[test]
fn parallel_creates_all_succeed_and_leave_the_config_untouched() {
    let repo = TestRepo::new("work");
    let config_before = std::fs::read(repo.root.join(".git/config")).expect("config");
    let handles: Vec<_> = (0..6)
        .map(|i| {
            let root = repo.root.clone();
            std::thread::spawn(move || create_sandbox(&root, &with_id(&format!("par{i}"))))
        })
        .collect();
    let mut sessions: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("thread").expect("create"))
        .collect();
    assert_eq!(list_sandboxes(&repo.root).expect("list").len(), 6);
    for session in &mut sessions {
        let _report = cleanup_sandbox(session).expect("cleanup");
    }
    assert!(list_sandboxes(&repo.root).expect("list").is_empty());
    let config_after = std::fs::read(repo.root.join(".git/config")).expect("config");
    assert_eq!(
        String::from_utf8_lossy(&config_after),
        String::from_utf8_lossy(&config_before)
    );
}

/// A directory that is not inside a repository is named
/// as such, not with libgit2's class and code, and nothing is written there.
#[test]
fn create_on_a_directory_that_is_no_repository_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nested = dir.path().join("nested");
    std::fs::create_dir(&nested).expect("mkdir");
    for path in [dir.path().to_owned(), nested.clone()] {
        let err = create_sandbox(&path, &with_id("n1")).expect_err("no repository");
        assert!(matches!(err, Error::NotARepository { .. }), "{err:?}");
        let message = err.to_string();
        assert!(std::error::Error::source(&err).is_none(), "{err:?}");
        assert!(message.contains("is not a git repository"), "{message}");
        assert!(!message.contains("class="), "{message}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).expect("read").count(), 1);
    assert_eq!(std::fs::read_dir(&nested).expect("read").count(), 0);
}
