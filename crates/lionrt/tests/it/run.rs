//! `lionrt run`: the main job end to end with the scripted provider.

use crate::{lionrt, stdout_json};

fn to_statuses(v: &serde_json::Value) -> Vec<String> {
    v["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|t| t["to_status"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn the_main_job_records_a_supervised_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let out = lionrt(&db, &["--json", "run", "--session", "demo"]);
    assert!(out.status.success(), "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(v["ok"], true);
    assert_eq!(v["errors"], 0);
    // session id, three text chunks and the final result at least.
    assert!(v["messages"].as_u64().is_some_and(|n| n >= 4), "{v}");
    assert_eq!(to_statuses(&v), ["running", "completed"]);
    let health = stdout_json(&lionrt(&db, &["--json", "state", "health", "--all"]));
    assert_eq!(health["sessions"][0]["id"], "demo");
    assert_eq!(health["sessions"][0]["health"], "done");
}

#[test]
fn a_scripted_error_fails_the_session_with_the_providers_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"[{"type": "error", "message": "quota exhausted", "status": 429}]"#,
    )
    .expect("script");
    let out = lionrt(
        &db,
        &[
            "--json",
            "run",
            "--session",
            "e",
            "--script",
            script.to_str().expect("utf8"),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(to_statuses(&v), ["running", "failed"]);
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("quota exhausted")),
        "{v}"
    );
}

#[test]
fn a_malformed_script_is_refused_naming_the_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"[{"type": "text", "text": "ok"}, {"type": "tool_call"}]"#,
    )
    .expect("script");
    let out = lionrt(
        &db,
        &[
            "run",
            "--session",
            "m",
            "--script",
            script.to_str().expect("utf8"),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("entry 1") && err.contains("name"), "{err}");
}

#[test]
fn a_provider_whose_cli_is_missing_fails_the_session_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .args(["--json", "--db"])
        .arg(&db)
        .args([
            "run",
            "--prompt",
            "Update the README with a short usage note.",
            "--provider",
            "claude",
            "--session",
            "c",
        ])
        .env("PATH", dir.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(to_statuses(&v), ["running", "failed"]);
    assert!(
        v["error"].as_str().is_some_and(|e| e.contains("claude")),
        "{v}"
    );
}

fn git_repo(dir: &std::path::Path) {
    for args in [
        vec!["init", "-q", "-b", "work"],
        vec!["commit", "-q", "--allow-empty", "-m", "init"],
    ] {
        let out = std::process::Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.name=T", "-c", "user.email=t@example.invalid"])
            .args(&args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git");
        assert!(out.status.success(), "{out:?}");
    }
}

#[test]
fn a_sandboxed_run_without_changes_is_completed_empty_and_cleaned_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).expect("mkdir");
    git_repo(&repo);
    let db = dir.path().join("state.db");
    let out = lionrt(
        &db,
        &[
            "--json",
            "run",
            "--session",
            "e",
            "--sandbox",
            "--workspace",
            repo.to_str().expect("utf8"),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(to_statuses(&v), ["running", "completed_empty"]);
    assert_eq!(v["evidence"]["checked"], true);
    assert_eq!(v["sandbox"]["kept"], false);
    let listed = crate::lionrt(
        &db,
        &[
            "--json",
            "sandbox",
            "ls",
            "--repo",
            repo.to_str().expect("utf8"),
        ],
    );
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("json");
    assert_eq!(listed.as_array().map(Vec::len), Some(0));
}

#[test]
fn a_sandboxed_run_that_writes_a_file_completes_and_keeps_its_sandbox() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).expect("mkdir");
    git_repo(&repo);
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"[{"type": "tool_call", "name": "write_file", "arguments": {"path": "notes/done.txt", "content": "done\n"}}]"#,
    )
    .expect("script");
    let db = dir.path().join("state.db");
    let out = lionrt(
        &db,
        &[
            "--json",
            "run",
            "--session",
            "w",
            "--sandbox",
            "--workspace",
            repo.to_str().expect("utf8"),
            "--script",
            script.to_str().expect("utf8"),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(to_statuses(&v), ["running", "completed"]);
    assert_eq!(v["evidence"]["uncommitted_changes"], true);
    assert_eq!(v["sandbox"]["kept"], true);
    let worktree = v["sandbox"]["worktree"].as_str().expect("worktree");
    assert_eq!(
        std::fs::read_to_string(std::path::Path::new(worktree).join("notes/done.txt"))
            .expect("file"),
        "done\n"
    );
    assert!(
        !repo.join("notes").exists(),
        "the agent wrote only in its sandbox"
    );
}

#[test]
fn the_scripted_agent_cannot_write_outside_its_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"[{"type": "tool_call", "name": "write_file", "arguments": {"path": "../escaped.txt", "content": "x"}}]"#)
        .expect("script");
    let db = dir.path().join("state.db");
    let out = lionrt(
        &db,
        &[
            "--json",
            "run",
            "--session",
            "x",
            "--workspace",
            work.to_str().expect("utf8"),
            "--script",
            script.to_str().expect("utf8"),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(!dir.path().join("escaped.txt").exists());
    assert_eq!(to_statuses(&stdout_json(&out)), ["running", "failed"]);
}

/// li's habits on `run`: a positional prompt, and `-m PROVIDER/MODEL`
/// naming the provider and the model.
#[test]
fn a_positional_prompt_and_a_provider_model_spec_are_taken_as_li_takes_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let ws = dir.path().to_str().expect("utf-8");
    let out = crate::lionrt(
        &db,
        &[
            "--json",
            "run",
            "-m",
            "scripted/demo-model",
            "--session",
            "li-1",
            "--workspace",
            ws,
            "fix the flaky test",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let shown = crate::stdout_json(&crate::lionrt(&db, &["--json", "sessions", "show", "li-1"]));
    let text = shown.to_string();
    assert!(
        text.contains("demo-model"),
        "the spec's model is recorded: {text}"
    );
    assert!(text.contains("scripted"), "{text}");
    // A real provider takes the positional prompt as its prompt: it is not
    // refused for want of --prompt (it fails later, with no claude on PATH).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(&db)
        .args([
            "run",
            "-m",
            "claude/opus",
            "--workspace",
            ws,
            "fix the flaky test",
        ])
        .env("PATH", "/nonexistent")
        .env_remove("LIONRT_DB")
        .output()
        .expect("run lionrt");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("needs --prompt"), "{stderr}");
    // Two providers named at once are refused before anything starts.
    let out = crate::lionrt(
        &db,
        &[
            "run",
            "--provider",
            "codex",
            "-m",
            "claude/opus",
            "--workspace",
            ws,
            "x",
        ],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("another provider"),
        "{out:?}"
    );
    // --prompt and a positional prompt together are refused.
    let out = crate::lionrt(&db, &["run", "--prompt", "a", "b", "--workspace", ws]);
    assert!(!out.status.success(), "{out:?}");
}

/// `lionrt run --timeout` (li's flag): a leg still running at its deadline
/// is ended and the run ends `timed_out` with `run.timed_out.deadline`; a
/// bad value is refused before any session exists.
#[test]
fn a_run_past_its_timeout_ends_timed_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let script = dir.path().join("slow.json");
    std::fs::write(
        &script,
        r#"[{"type": "tool_call", "id": "t", "name": "sleep", "arguments": {"ms": 60000}}]"#,
    )
    .expect("script");
    let started = std::time::Instant::now();
    let out = lionrt(
        &db,
        &[
            "--json",
            "run",
            "--script",
            script.to_str().expect("utf-8"),
            "--session",
            "late",
            "--timeout",
            "1.5",
        ],
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(50),
        "the leg was not left to sleep its minute"
    );
    let report = crate::stdout_json(&out);
    assert_eq!(report["status"], "timed_out", "{report}");
    let show = crate::stdout_json(&lionrt(&db, &["--json", "sessions", "show", "late"]));
    assert_eq!(
        (&show["session"]["status"], &show["session"]["reason_code"]),
        (&"timed_out".into(), &"run.timed_out.deadline".into()),
        "{show}"
    );
    for bad in ["0", "-1", "nan", "1e30"] {
        let flag = format!("--timeout={bad}");
        let out = lionrt(&db, &["run", "--session", "never", &flag]);
        assert!(!out.status.success(), "--timeout {bad}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--timeout"),
            "{out:?}"
        );
    }
    let never = lionrt(&db, &["--json", "sessions", "show", "never"]);
    assert!(!never.status.success(), "no session for a refused run");
}
