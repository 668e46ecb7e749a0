//! Bad inputs from issue 25's list: each is refused with a message naming
//! its real cause, a non-zero exit, and nothing written.

use std::path::Path;

use crate::lionrt;

fn refused(db: &Path, args: &[&str], expected: &str) -> String {
    let out = lionrt(db, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} succeeded: {out:?}");
    assert!(
        stderr.contains(expected),
        "{args:?}: expected {expected:?} in {stderr}"
    );
    stderr
}

#[test]
fn a_missing_workspace_is_refused_before_a_session_exists() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    refused(
        &db,
        &["run", "--workspace", "/nonexistent/lionrt-ws"],
        "--workspace /nonexistent/lionrt-ws",
    );
    let file = dir.path().join("file");
    std::fs::write(&file, "x").expect("write");
    refused(
        &db,
        &["run", "--workspace", file.to_str().expect("utf-8")],
        "is not a directory",
    );
    assert!(!db.exists(), "no store was created for a refused run");
}

#[test]
fn a_grace_too_large_names_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    assert!(lionrt(&db, &["state", "init"]).status.success());
    let stderr = refused(&db, &["kill", "nothing", "--grace", "1e30"], "--grace");
    assert!(!stderr.contains("Duration"), "{stderr}");
}

#[test]
fn an_enqueue_without_a_command_is_refused_and_records_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    assert!(lionrt(&db, &["state", "init"]).status.success());
    refused(
        &db,
        &["outbox", "enqueue", "payload"],
        "give the command after `--`",
    );
    refused(
        &db,
        &[
            "outbox",
            "enqueue",
            "p",
            "--default-template",
            "--",
            "/bin/true",
        ],
        "exclude each other",
    );
    let rows = crate::stdout_json(&lionrt(&db, &["--json", "outbox", "ls"]));
    assert_eq!(rows.as_array().map(Vec::len), Some(0), "{rows}");
    // With --default-template it is taken, for `outbox deliver --template`.
    let out = lionrt(&db, &["outbox", "enqueue", "p", "--default-template"]);
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn a_schedule_file_of_the_wrong_shape_says_what_it_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let file = dir.path().join("set.json");
    std::fs::write(&file, "{\"foo\": 1}").expect("write");
    let stderr = refused(
        &db,
        &["schedule", "apply", file.to_str().expect("utf-8")],
        "without a \"schedules\" member",
    );
    assert!(!stderr.contains("untagged"), "{stderr}");
}

#[test]
fn a_sandbox_of_a_directory_that_is_no_repository_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let stderr = refused(
        &db,
        &[
            "sandbox",
            "create",
            "--repo",
            dir.path().to_str().expect("utf-8"),
        ],
        "is not a git repository",
    );
    assert!(!stderr.contains("class="), "{stderr}");
}
