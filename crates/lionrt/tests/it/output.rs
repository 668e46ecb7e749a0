//! Every command checks its own output: a full disk (`/dev/full`) or a
//! closed pipe ends it with a message naming the cause and a non-zero exit,
//! never exit 0 and never a panic (exit 101).

use std::path::Path;
use std::process::{Command, Stdio};

use crate::lionrt;

/// The commands a user pipes or redirects, on a store with one session.
fn commands(dir: &Path) -> Vec<Vec<String>> {
    let tools = dir.join("tools.json");
    std::fs::write(
        &tools,
        r#"[{"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "maxLength": 64}}, "additionalProperties": false}}]"#,
    )
    .expect("tools");
    let mut all: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["--version"],
        vec!["sessions", "--help"],
        vec!["completions", "bash"],
        vec!["sessions", "ls"],
        vec!["sessions", "ls", "--json"],
        vec!["sessions", "show", "out-1"],
        vec!["sessions", "messages", "out-1"],
        vec!["state", "history", "session", "out-1"],
        vec!["state", "stats"],
        vec!["state", "health"],
        vec!["lifecycle", "out-1"],
        vec!["monitor"],
        // A watch that only prints ends when its reader is gone.
        vec!["monitor", "--watch", "--interval", "0.1"],
        vec!["outbox", "ls"],
        vec!["schedule", "ls"],
        vec!["doctor"],
        vec!["kill", "--all-stale", "--dry-run"],
        vec!["run", "--session", "out-2"],
    ];
    let tools = tools.to_str().expect("utf-8").to_owned();
    let mut owned: Vec<Vec<String>> = all
        .drain(..)
        .map(|c| c.into_iter().map(str::to_owned).collect())
        .collect();
    owned.push(vec!["admission".into(), "check".into(), tools]);
    owned
}

fn seeded(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("state.db");
    let out = lionrt(
        &db,
        &[
            "run",
            "--session",
            "out-1",
            "--workspace",
            dir.to_str().expect("utf-8"),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    db
}

/// Stdout on `/dev/full`: every command fails, says so and does not panic.
#[test]
fn a_full_disk_fails_every_command_with_a_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = seeded(dir.path());
    for args in commands(dir.path()) {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let out = Command::new(env!("CARGO_BIN_EXE_lionrt"))
            .arg("--db")
            .arg(&db)
            .args(&args)
            .current_dir(dir.path())
            .env_remove("LIONRT_DB")
            .env("LIONAGI_HOME", dir.path())
            .stdout(Stdio::from(full))
            .output()
            .expect("run lionrt");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?} exited 0: {stderr}");
        assert_ne!(out.status.code(), Some(101), "{args:?} panicked: {stderr}");
        assert!(
            stderr.contains("No space left on device"),
            "{args:?} does not name the cause: {stderr}"
        );
    }
}

/// Stdout a pipe whose reader is gone (`lionrt completions bash | head -1`
/// with head already done): an error naming the pipe, not a panic.
#[test]
fn a_closed_pipe_fails_the_command_without_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = seeded(dir.path());
    for args in commands(dir.path()) {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_lionrt"))
            .arg("--db")
            .arg(&db)
            .args(&args)
            .current_dir(dir.path())
            .env_remove("LIONRT_DB")
            .env("LIONAGI_HOME", dir.path())
            .stdout(Stdio::from(writer))
            .output()
            .expect("run lionrt");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(101), "{args:?} panicked: {stderr}");
        assert_ne!(out.status.code(), Some(0), "{args:?} exited 0: {stderr}");
        assert!(
            stderr.contains("pipe"),
            "{args:?} does not name the cause: {stderr}"
        );
    }
}

/// Piped stderr carries no colour codes (the log lines of a failing
/// command included).
#[test]
fn piped_stderr_has_no_colour() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(dir.path().join("none.db"))
        .args(["sessions", "ls"])
        .env("RUST_LOG", "debug")
        .env_remove("NO_COLOR")
        .output()
        .expect("run lionrt");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.is_empty(), "nothing logged: {out:?}");
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
}
