//! The coding toolkit: operator-level protected merges, and the
//! read-before-edit guard with eviction.

use sandbox_git::{
    CodingToolkit, Error, MergeOutcome, ReadGuard, SandboxRequest, SandboxResponse, ToolkitConfig,
};

use crate::support::{TestRepo, commit_file};

fn toolkit(repo: &TestRepo, allow: bool) -> CodingToolkit {
    CodingToolkit::new(ToolkitConfig {
        repo_root: repo.root.clone(),
        worktrees_dir: None,
        sandbox_allow_protected: allow,
    })
}

fn create(tk: &CodingToolkit, id: &str) -> sandbox_git::SandboxSession {
    let request = format!(r#"{{"action":"create","id":"{id}"}}"#);
    match tk.sandbox_json(&request).expect("create") {
        SandboxResponse::Created { session } => session,
        other => panic!("unexpected {other:?}"),
    }
}

// contract: GIT-017
#[test]
fn an_agent_request_cannot_self_approve_a_protected_merge() {
    let repo = TestRepo::new("main");
    let tk = toolkit(&repo, false);
    let session = create(&tk, "agent");
    commit_file(&session.worktree_path, "x.txt", "x", "x");
    let before = repo.branch_tip("main");

    for smuggled in [
        r#"{"action":"merge","id":"agent","allow_protected":true}"#,
        r#"{"action":"merge","id":"agent","sandbox_allow_protected":true}"#,
        r#"{"action":"merge","id":"agent","cleanup":true,"allow_protected":true}"#,
    ] {
        let err = tk.sandbox_json(smuggled).expect_err(smuggled);
        assert!(
            matches!(err, Error::InvalidRequest { .. }),
            "{smuggled}: {err}"
        );
    }
    let err = tk
        .sandbox_json(r#"{"action":"merge","id":"agent"}"#)
        .expect_err("protected");
    assert!(matches!(err, Error::ProtectedBranch { .. }), "{err}");
    let err = tk
        .sandbox(&SandboxRequest::Merge {
            id: "agent".into(),
            cleanup: true,
        })
        .expect_err("protected");
    assert!(matches!(err, Error::ProtectedBranch { .. }), "{err}");
    assert_eq!(repo.branch_tip("main"), before);
}

// contract: GIT-018
#[test]
fn a_toolkit_composed_with_allow_protected_merges_into_main() {
    let repo = TestRepo::new("main");
    let tk = toolkit(&repo, true);
    let session = create(&tk, "ci");
    let tip = commit_file(&session.worktree_path, "x.txt", "x", "x");
    match tk
        .sandbox_json(r#"{"action":"merge","id":"ci","cleanup":true}"#)
        .expect("merge")
    {
        SandboxResponse::Merged { report } => {
            assert_eq!(
                report.outcome,
                MergeOutcome::FastForward {
                    commit: tip.to_string()
                }
            );
            assert!(report.cleanup.is_some());
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(repo.branch_tip("main"), tip);
    match tk.sandbox_json(r#"{"action":"list"}"#).expect("list") {
        SandboxResponse::Sandboxes { sessions } => assert!(sessions.is_empty()),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn toolkit_cleanup_and_list_and_response_json() {
    let repo = TestRepo::new("work");
    let tk = toolkit(&repo, false);
    create(&tk, "t1");
    let listed = tk.sandbox(&SandboxRequest::List).expect("list");
    let json = serde_json::to_value(&listed).expect("json");
    assert_eq!(json["result"], "sandboxes");
    assert_eq!(json["sessions"][0]["id"], "t1");
    assert_eq!(json["sessions"][0]["base_branch"], "work");
    let cleaned = tk
        .sandbox_json(r#"{"action":"cleanup","id":"t1"}"#)
        .expect("cleanup");
    let json = serde_json::to_value(&cleaned).expect("json");
    assert_eq!(json["report"]["worktree"], "removed");
    assert_eq!(json["report"]["branch"], "removed");
    assert!(tk.sandbox_json(r#"{"action":"explode"}"#).is_err());
}

// contract: GIT-019
#[test]
fn an_evicted_read_no_longer_allows_an_edit() {
    let mut guard = ReadGuard::new();
    assert!(matches!(
        guard.check_edit("src/lib.rs"),
        Err(Error::EditWithoutRead { .. })
    ));

    guard.record_read("src/lib.rs", "read-1");
    guard.record_read("./src/main.rs", "read-2");
    guard.check_edit("src/lib.rs").expect("read is in context");
    guard
        .check_edit("src/main.rs")
        .expect("same file, other spelling");

    // The context tool compacts read-1 away.
    assert_eq!(
        guard.evict(["read-1"]),
        vec![std::path::PathBuf::from("src/lib.rs")]
    );
    let err = guard.check_edit("src/lib.rs").expect_err("evicted");
    assert!(
        matches!(err, Error::EditWithoutRead { .. }) && err.is_refusal(),
        "{err}"
    );
    guard.check_edit("src/main.rs").expect("unaffected");

    // Reading again restores it.
    guard.record_read("src/lib.rs", "read-3");
    guard.check_edit("src/lib.rs").expect("re-read");

    // A newer read replaces the older: evicting the stale id does nothing.
    guard.record_read("src/main.rs", "read-4");
    assert!(guard.evict(["read-2"]).is_empty());
    guard
        .check_edit("src/main.rs")
        .expect("read-4 still visible");

    // retain_visible drops everything the context no longer holds.
    let dropped = guard.retain_visible(|id| id == "read-3");
    assert_eq!(dropped, vec![std::path::PathBuf::from("src/main.rs")]);
    assert!(guard.check_edit("src/main.rs").is_err());
    assert_eq!(guard.readable_files().count(), 1);
}

#[derive(Debug, Clone)]
enum GuardOp {
    Read(u8, u8),
    Evict(u8),
    Edit(u8),
}

fn guard_op() -> impl proptest::strategy::Strategy<Value = GuardOp> {
    use proptest::prelude::*;
    prop_oneof![
        (0..4u8, 0..6u8).prop_map(|(f, r)| GuardOp::Read(f, r)),
        (0..6u8).prop_map(GuardOp::Evict),
        (0..4u8).prop_map(GuardOp::Edit),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { failure_persistence: None, ..Default::default() })]

    // contract: GIT-019
    #[test]
    fn an_edit_is_allowed_exactly_while_the_latest_read_is_not_evicted(
        ops in proptest::collection::vec(guard_op(), 0..40),
    ) {
        // Model: file -> the read id currently in context.
        let mut model = std::collections::BTreeMap::<u8, u8>::new();
        let mut guard = ReadGuard::new();
        for op in ops {
            match op {
                GuardOp::Read(file, read) => {
                    guard.record_read(format!("src/f{file}.rs"), format!("r{read}"));
                    model.insert(file, read);
                }
                GuardOp::Evict(read) => {
                    let _dropped = guard.evict([format!("r{read}").as_str()]);
                    model.retain(|_, r| *r != read);
                }
                GuardOp::Edit(file) => {
                    let allowed = guard.check_edit(format!("src/f{file}.rs")).is_ok();
                    proptest::prop_assert_eq!(allowed, model.contains_key(&file));
                }
            }
        }
    }
}
