//! `lionrt sandbox ...` end to end on a real repository (built with the git CLI).

use std::path::Path;
use std::process::Command;

fn git(repo: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(repo)
        .args([
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.invalid",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

fn lionrt(repo: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .args(args)
        .arg("--repo")
        .arg(repo)
        .output()
        .expect("lionrt")
}

#[test]
fn create_ls_merge_with_the_protected_branch_guard() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path();
    git(repo, &["init", "-q"]);
    std::fs::write(repo.join("a.txt"), "a\n").expect("write");
    git(repo, &["add", "a.txt"]);
    git(repo, &["commit", "-qm", "init"]);
    let out = lionrt(repo, &["--json", "sandbox", "create", "--id", "s1"]);
    assert!(out.status.success(), "{out:?}");
    let created: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(created[0]["base_branch"], "main");
    let worktree = created[0]["worktree_path"]
        .as_str()
        .expect("path")
        .to_owned();
    std::fs::write(Path::new(&worktree).join("b.txt"), "b\n").expect("write");
    git(Path::new(&worktree), &["add", "b.txt"]);
    git(Path::new(&worktree), &["commit", "-qm", "work"]);
    let out = lionrt(repo, &["--json", "sandbox", "ls"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(listed.as_array().map(Vec::len), Some(1));
    let out = lionrt(repo, &["sandbox", "merge", "s1"]);
    assert_eq!(out.status.code(), Some(1), "main is protected: {out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("main"));
    assert!(!repo.join("b.txt").exists());
    let out = lionrt(repo, &["sandbox", "merge", "s1", "--allow-protected"]);
    assert!(out.status.success(), "{out:?}");
    assert!(repo.join("b.txt").exists());
    let out = lionrt(repo, &["--json", "sandbox", "ls"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(listed.as_array().map(Vec::len), Some(0));
    let out = lionrt(repo, &["sandbox", "cleanup", "s1"]);
    assert!(
        out.status.success(),
        "cleanup of a gone sandbox is retry-safe: {out:?}"
    );
}
