//! `lionrt run`: the main job end to end with the scripted provider.

use crate::{lionrt, stdout_json};

#[test]
fn the_main_job_records_a_supervised_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let out = lionrt(&db, &["--json", "run", "--session", "demo"]);
    assert!(out.status.success(), "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(v["messages"], 6);
    assert_eq!(v["bad_lines"], 0);
    let to: Vec<&str> = v["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|t| t["to_status"].as_str())
        .collect();
    assert_eq!(to, ["running", "completed"]);
    let conn = rusqlite_free_check(&db);
    assert!(conn.contains("demo"), "{conn}");
}

fn rusqlite_free_check(db: &std::path::Path) -> String {
    let out = lionrt(db, &["--json", "state", "health"]);
    assert!(out.status.success());
    let v = stdout_json(&out);
    assert_eq!(v["sessions"][0]["health"], "done");
    v["sessions"][0]["id"].to_string()
}

#[test]
fn a_bad_script_line_is_counted_not_fatal_and_a_failing_leg_fails_the_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let script = dir.path().join("script.jsonl");
    std::fs::write(
        &script,
        "{\"type\":\"assistant\",\"text\":\"hi\"}\nnot json at all\n",
    )
    .expect("script");
    let out = lionrt(
        &db,
        &[
            "--json",
            "run",
            "--session",
            "s",
            "--script",
            script.to_str().expect("utf8"),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(
        (v["messages"].as_u64(), v["bad_lines"].as_u64()),
        (Some(1), Some(1))
    );
    let missing = dir.path().join("absent.jsonl");
    let out = lionrt(
        &db,
        &[
            "--json",
            "run",
            "--session",
            "f",
            "--script",
            missing.to_str().expect("utf8"),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v = stdout_json(&out);
    let to: Vec<&str> = v["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|t| t["to_status"].as_str())
        .collect();
    assert_eq!(to, ["running", "failed"]);
}
