//! `lionrt state import --from-lionagi`: a state.db written by the original
//! lionagi 0.36.0 (`fixtures/lionagi-import`, made by `cargo xtask fixtures
//! lionagi` through lionagi's own StateDB) comes over with its sessions,
//! messages and status history, and what is left behind is reported.

use std::path::{Path, PathBuf};

use state_sqlite::{Engine, EngineConfig};

use crate::{lionrt, stdout_json};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/lionagi-import/state.db")
}

/// A private copy of the fixture (the import must not need write access,
/// but the test never risks the committed file).
fn source(dir: &Path) -> PathBuf {
    let to = dir.join("lionagi.db");
    std::fs::copy(fixture(), &to).expect("copy fixture");
    to
}

fn rows(db: &Path, sql: &str) -> Vec<Vec<String>> {
    let engine = Engine::open(db, EngineConfig::default()).expect("open");
    let conn = engine.conn().expect("conn");
    let mut stmt = conn.prepare(sql).expect("prepare");
    let n = stmt.column_count();
    stmt.query_map([], |r| {
        (0..n)
            .map(|i| {
                r.get::<_, Option<String>>(i)
                    .or_else(|_| r.get::<_, Option<i64>>(i).map(|v| v.map(|v| v.to_string())))
                    .or_else(|_| r.get::<_, Option<f64>>(i).map(|v| v.map(|v| v.to_string())))
                    .map(Option::unwrap_or_default)
            })
            .collect::<Result<Vec<_>, _>>()
    })
    .expect("query")
    .collect::<Result<_, _>>()
    .expect("rows")
}

#[test]
fn a_lionagi_state_db_comes_over_and_the_rest_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = source(dir.path());
    let before = std::fs::read(&src).expect("read");
    let db = dir.path().join("state.db");
    let src_arg = src.to_str().expect("utf8");
    let out = lionrt(
        &db,
        &["--json", "state", "import", "--from-lionagi", src_arg],
    );
    assert!(out.status.success(), "{out:?}");
    let r = stdout_json(&out);
    assert_eq!(r["sessions_imported"], 4, "{r}");
    assert_eq!(r["messages_imported"], 8, "{r}");
    // Seven of the sessions, one of the invocation.
    assert_eq!(r["transitions_imported"], 8, "{r}");
    assert_eq!(r["invocations_imported"], 1, "{r}");
    // What the fixture holds that does not come over, each reported.
    assert_eq!(r["messages_missing"], 1, "{r}");
    assert_eq!(r["messages_not_in_a_session"], 1, "{r}");
    assert_eq!(r["transitions_skipped"], serde_json::json!({}), "{r}");
    assert_eq!(r["tables_not_imported"]["projects"], 1, "{r}");
    assert_eq!(r["sessions_skipped"], serde_json::json!({}));
    // The source is read from a copy: not a byte of it changes.
    assert_eq!(std::fs::read(&src).expect("read"), before);

    let sessions = rows(
        &db,
        "SELECT id, status, provider, model, input_tokens, output_tokens, created_at, ended_at
         FROM sessions ORDER BY created_at",
    );
    assert_eq!(
        sessions,
        [
            [
                "sess-completed",
                "completed",
                "claude_code",
                "claude-sonnet-4-5",
                "1200",
                "340",
                "1764000000000000",
                "1764000060000000"
            ],
            [
                "sess-failed",
                "failed",
                "codex",
                "gpt-5.1-codex",
                "",
                "",
                "1764000100000000",
                "1764000130000000"
            ],
            [
                "sess-running",
                "running",
                "claude_code",
                "claude-opus-4-1",
                "",
                "",
                "1764000200000000",
                ""
            ],
            [
                "sess-imported",
                "completed",
                "claude_code",
                "claude-sonnet-4-5",
                "",
                "",
                "1764000300000000",
                "1764000320000000"
            ],
        ]
    );
    let meta = rows(
        &db,
        "SELECT node_metadata FROM sessions WHERE id = 'sess-imported'",
    );
    let meta: serde_json::Value = serde_json::from_str(&meta[0][0]).expect("json");
    assert_eq!(meta["imported_from"], "lionagi");
    assert_eq!(
        meta["cc_session_id"],
        "c60b3d48-af9c-408c-8c6a-047c3324b20b"
    );
    assert_eq!(meta["source_kind"], "imported_fs");
    // Messages in their progression's order, content as stored.
    let messages = rows(
        &db,
        "SELECT role, content FROM messages WHERE session_id = 'sess-completed' ORDER BY created_at",
    );
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0][0], "user");
    assert!(
        messages[2][1].contains("Done: README updated."),
        "{messages:?}"
    );
    // Status history, through lionrt's own reader.
    let history = stdout_json(&lionrt(
        &db,
        &["--json", "state", "history", "session", "sess-failed"],
    ));
    let to: Vec<&str> = history
        .as_array()
        .or_else(|| history["history"].as_array())
        .expect("history array")
        .iter()
        .filter_map(|t| t["to_status"].as_str())
        .collect();
    assert_eq!(to, ["running", "failed"], "{history}");

    // A second import brings nothing twice and says why.
    let again = stdout_json(&lionrt(
        &db,
        &["--json", "state", "import", "--from-lionagi", src_arg],
    ));
    assert_eq!(again["sessions_imported"], 0);
    assert_eq!(
        again["sessions_skipped"]["sess-completed"],
        "already in the target"
    );
    assert_eq!(rows(&db, "SELECT count(*) FROM messages")[0][0], "8");
}

#[test]
fn a_dry_run_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = source(dir.path());
    let db = dir.path().join("state.db");
    let out = lionrt(
        &db,
        &[
            "--json",
            "state",
            "import",
            "--dry-run",
            "--from-lionagi",
            src.to_str().expect("utf8"),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout_json(&out)["sessions_imported"], 4);
    // Nothing anywhere: not even the target file.
    assert!(!db.exists(), "a dry run created {}", db.display());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("lionagi.db")]);

    // Into an existing store: what is there already is told apart, and
    // not a byte of the store changes.
    let src_arg = src.to_str().expect("utf8");
    assert!(
        lionrt(&db, &["state", "import", "--from-lionagi", src_arg])
            .status
            .success()
    );
    let other = dir.path().join("other.db");
    assert!(lionrt(&other, &["state", "init"]).status.success());
    let before = std::fs::read(&db).expect("read");
    let out = lionrt(
        &db,
        &[
            "--json",
            "state",
            "import",
            "--dry-run",
            "--from-lionagi",
            src_arg,
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let r = stdout_json(&out);
    assert_eq!(r["sessions_imported"], 0, "{r}");
    assert_eq!(
        r["sessions_skipped"]["sess-failed"],
        "already in the target"
    );
    assert_eq!(std::fs::read(&db).expect("read"), before);
    let r = stdout_json(&lionrt(
        &other,
        &[
            "--json",
            "state",
            "import",
            "--dry-run",
            "--from-lionagi",
            src_arg,
        ],
    ));
    assert_eq!(
        (
            r["sessions_imported"].clone(),
            r["messages_imported"].clone()
        ),
        (4.into(), 8.into()),
        "{r}"
    );
    assert_eq!(rows(&other, "SELECT count(*) FROM sessions")[0][0], "0");
}

#[test]
fn a_file_that_is_not_a_lionagi_state_db_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    // A lionrt store is not a lionagi one.
    let other = dir.path().join("lionrt.db");
    assert!(lionrt(&other, &["state", "init"]).status.success());
    let out = lionrt(
        &db,
        &[
            "state",
            "import",
            "--from-lionagi",
            other.to_str().expect("utf8"),
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("lionrt's store") && err.contains("not lionagi's store"),
        "{err}"
    );
    // Nor is a missing file or a text file.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "hello").expect("write");
    for bad in [dir.path().join("missing.db"), text] {
        let out = lionrt(
            &db,
            &[
                "state",
                "import",
                "--from-lionagi",
                bad.to_str().expect("utf8"),
            ],
        );
        assert!(!out.status.success(), "{bad:?}");
    }
}
