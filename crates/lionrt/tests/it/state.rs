//! `lionrt state ...` end to end.

use crate::{lionrt, stdout_json};

#[test]
fn init_create_transition_history_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let out = lionrt(&db, &["state", "init"]);
    assert!(out.status.success(), "{out:?}");
    assert!(db.exists());
    let out = lionrt(
        &db,
        &[
            "state",
            "create",
            "session",
            "s1",
            "running",
            "--reason",
            "run.started.ok",
            "--actor",
            "executor:leg",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let out = lionrt(
        &db,
        &[
            "--json",
            "state",
            "transition",
            "session",
            "s1",
            "completed",
            "--reason",
            "run.completed.ok",
            "--expect",
            "running",
            "--set",
            "num_turns=3",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(v["result"], "applied");
    assert_eq!(v["previous_status"], "running");
    let out = lionrt(&db, &["--json", "state", "history", "session", "s1"]);
    let v = stdout_json(&out);
    let moves: Vec<(String, String)> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|t| {
            (
                t["from_status"].as_str().unwrap_or("-").to_owned(),
                t["to_status"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        moves,
        [
            ("-".to_owned(), "running".to_owned()),
            ("running".to_owned(), "completed".to_owned())
        ]
    );
    let human = lionrt(&db, &["state", "history", "session", "s1"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("run.completed.ok") && text.contains("executor:leg"),
        "{text}"
    );
}

#[test]
fn conflict_and_rejection_have_their_own_exit_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    assert!(lionrt(&db, &["state", "init"]).status.success());
    assert!(
        lionrt(
            &db,
            &[
                "state",
                "create",
                "session",
                "s1",
                "running",
                "--reason",
                "run.started.ok"
            ]
        )
        .status
        .success()
    );
    let out = lionrt(
        &db,
        &[
            "state",
            "transition",
            "session",
            "s1",
            "failed",
            "--reason",
            "run.failed.exception",
            "--expect",
            "completed",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(
        lionrt(
            &db,
            &[
                "state",
                "transition",
                "session",
                "s1",
                "completed",
                "--reason",
                "run.completed.ok"
            ]
        )
        .status
        .success()
    );
    let out = lionrt(
        &db,
        &[
            "state",
            "transition",
            "session",
            "s1",
            "running",
            "--reason",
            "session.reopened.by_resume",
        ],
    );
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let out = lionrt(
        &db,
        &[
            "state",
            "transition",
            "session",
            "s1",
            "running",
            "--reason",
            "session.reopened.by_resume",
            "--override-by",
            "operator:alice",
            "--justification",
            "resume after fix",
        ],
    );
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn bad_input_is_a_clear_error_with_exit_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let out = lionrt(&db, &["state", "history", "session", "s1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("state init"),
        "{out:?}"
    );
    assert!(!db.exists(), "reading must not create the database");
    assert!(lionrt(&db, &["state", "init"]).status.success());
    for (args, needle) in [
        (
            vec![
                "state",
                "create",
                "session",
                "x",
                "exploded",
                "--reason",
                "run.started.ok",
            ],
            "unknown status",
        ),
        (
            vec![
                "state",
                "create",
                "session",
                "x",
                "running",
                "--reason",
                "run.started.maybe",
            ],
            "unknown reason code",
        ),
        (
            vec![
                "state",
                "create",
                "session",
                "x",
                "running",
                "--reason",
                "run.started.ok",
                "--actor",
                "alien:x",
            ],
            "unknown actor type",
        ),
        (
            vec![
                "state",
                "create",
                "session",
                "x",
                "running",
                "--reason",
                "run.started.ok",
                "--set",
                "status=1",
            ],
            "not a patch field",
        ),
    ] {
        let out = lionrt(&db, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let text = dir.path().join("text.db");
    std::fs::write(
        &text,
        "definitely not sqlite, just a long enough line of text",
    )
    .expect("write");
    let out = lionrt(&text, &["state", "health"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a SQLite database"),
        "{out:?}"
    );
}

#[test]
fn health_reports_the_database_and_sessions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    assert!(lionrt(&db, &["state", "init"]).status.success());
    assert!(
        lionrt(
            &db,
            &[
                "state",
                "create",
                "session",
                "quiet",
                "running",
                "--reason",
                "run.started.ok"
            ]
        )
        .status
        .success()
    );
    let out = lionrt(&db, &["--json", "state", "health"]);
    assert!(out.status.success(), "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(v["integrity"], "ok");
    assert_eq!(v["journal_mode"], "wal");
    let latest = state_sqlite::MIGRATIONS.iter().map(|m| m.version).max();
    assert_eq!(v["schema_version"].as_u64(), latest.map(u64::from));
    assert_eq!(
        v["sessions"][0]["health"], "orphan",
        "no messages, no artifacts, unknown liveness"
    );
}
