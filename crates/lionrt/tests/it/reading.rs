//! Reading state back end to end on real state.db files: `sessions
//! ls/show/messages`, `monitor`, `lifecycle`, `state
//! stats/checkpoint/vacuum/prune` and the `state health` summary.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use state_sqlite::{Engine, EngineConfig, Store};

use crate::{lionrt, stdout_json};

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Two completed scripted runs (`abc-1`, `abc-2`) and one open session
/// (`open-1`, running, no messages).
fn seeded(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("state.db");
    for id in ["abc-1", "abc-2"] {
        ok(&lionrt(
            &db,
            &[
                "run",
                "--session",
                id,
                "--workspace",
                dir.to_str().expect("utf-8"),
            ],
        ));
    }
    ok(&lionrt(
        &db,
        &[
            "state",
            "create",
            "session",
            "open-1",
            "running",
            "--reason",
            "run.started.ok",
        ],
    ));
    db
}

#[test]
fn sessions_ls_filters_by_status_age_and_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = seeded(dir.path());
    let all = stdout_json(&lionrt(&db, &["--json", "sessions", "ls"]));
    let ids: Vec<&str> = all
        .as_array()
        .expect("array")
        .iter()
        .map(|s| s["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["open-1", "abc-2", "abc-1"], "newest first");
    assert_eq!(all[1]["messages"], 5);
    assert_eq!(all[1]["provider"], "scripted");

    let running = stdout_json(&lionrt(
        &db,
        &["--json", "sessions", "ls", "--status", "running"],
    ));
    assert_eq!(running.as_array().map(Vec::len), Some(1));
    assert_eq!(running[0]["id"], "open-1");
    let open = stdout_json(&lionrt(&db, &["--json", "sessions", "ls", "--open"]));
    assert_eq!(open.as_array().map(Vec::len), Some(1));
    let limited = stdout_json(&lionrt(&db, &["--json", "sessions", "ls", "--limit", "2"]));
    assert_eq!(limited.as_array().map(Vec::len), Some(2));

    // Backdate abc-1 by three hours: --since 2h leaves it out.
    let engine = Engine::open(&db, EngineConfig::default()).expect("open");
    engine
        .conn()
        .expect("conn")
        .execute(
            "UPDATE sessions SET created_at = created_at - 10800000000 WHERE id = 'abc-1'",
            [],
        )
        .expect("backdate");
    let recent = stdout_json(&lionrt(&db, &["--json", "sessions", "ls", "--since", "2h"]));
    assert_eq!(recent.as_array().map(Vec::len), Some(2), "{recent}");
    assert!(
        recent
            .as_array()
            .expect("array")
            .iter()
            .all(|s| s["id"] != "abc-1")
    );

    let table = ok(&lionrt(&db, &["sessions", "ls"]));
    assert!(table.starts_with("ID "), "{table}");
    assert!(!table.contains('\x1b'), "no colour into a pipe: {table}");

    let bad = lionrt(&db, &["sessions", "ls", "--status", "sleeping"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("not a session status"), "{bad:?}");
    let bad = lionrt(&db, &["sessions", "ls", "--since", "2 fortnights"]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
}

#[test]
fn prefixes_resolve_and_an_ambiguous_one_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = seeded(dir.path());
    let show = stdout_json(&lionrt(&db, &["--json", "sessions", "show", "abc-1"]));
    assert_eq!(show["session"]["id"], "abc-1");
    assert_eq!(show["session"]["status"], "completed");
    assert_eq!(show["session"]["messages"], 5);
    let statuses: Vec<&str> = show["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|t| t["to_status"].as_str().expect("to"))
        .collect();
    assert_eq!(statuses, ["running", "completed"]);

    let unique = stdout_json(&lionrt(&db, &["--json", "sessions", "show", "ope"]));
    assert_eq!(unique["session"]["id"], "open-1");

    for args in [
        &["sessions", "show", "abc"][..],
        &["sessions", "messages", "abc"],
        &["state", "history", "session", "abc"],
    ] {
        let out = lionrt(&db, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let err = stderr(&out);
        assert!(
            err.contains("matches several session ids")
                && err.contains("abc-1")
                && err.contains("abc-2"),
            "{args:?}: {err}"
        );
    }
    let out = lionrt(&db, &["sessions", "show", "zzz"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no session id starts with \"zzz\""),
        "{out:?}"
    );

    // The transition verb accepts a unique prefix too.
    ok(&lionrt(
        &db,
        &[
            "state",
            "transition",
            "session",
            "open",
            "failed",
            "--reason",
            "run.failed.exception",
        ],
    ));
    let row = stdout_json(&lionrt(&db, &["--json", "sessions", "show", "open-1"]));
    assert_eq!(row["session"]["status"], "failed");
}

#[test]
fn messages_print_in_order_and_follow_until_the_session_ends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = seeded(dir.path());
    let text = ok(&lionrt(&db, &["sessions", "messages", "abc-2"]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].contains("resume id scripted-"), "{text}");
    assert!(
        lines[1].contains("assistant") && lines[1].contains("Reading the task."),
        "{text}"
    );
    assert!(lines[4].contains("done: Reading the task."), "{text}");
    let json = ok(&lionrt(&db, &["--json", "sessions", "messages", "abc-2"]));
    let seqs: Vec<i64> = json
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("json")["seq"]
                .as_i64()
                .expect("seq")
        })
        .collect();
    assert_eq!(seqs.len(), 5);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");

    // --follow on the open session: prints what arrives, ends with it.
    let mut child = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .args(["--db"])
        .arg(&db)
        .args([
            "--json",
            "sessions",
            "messages",
            "open-1",
            "--follow",
            "--interval",
            "20",
        ])
        .env_remove("LIONRT_DB")
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn follower");
    let store = Store::new(Engine::open(&db, EngineConfig::default()).expect("open"));
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    for n in 1..=3 {
        let content = serde_json::json!({"type": "text", "text": format!("part {n}")}).to_string();
        store
            .record_message(
                "open-1",
                &format!("open-1:{n}"),
                "assistant",
                &content,
                state_sqlite::now_micros(),
            )
            .expect("record");
        let mut line = String::new();
        reader.read_line(&mut line).expect("read");
        let v: serde_json::Value = serde_json::from_str(&line).expect("json line");
        assert_eq!(
            v["content"]["text"],
            format!("part {n}"),
            "streamed as written"
        );
    }
    ok(&lionrt(
        &db,
        &[
            "state",
            "transition",
            "session",
            "open-1",
            "completed",
            "--reason",
            "run.completed.ok",
        ],
    ));
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the follower did not end with the session"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).expect("rest");
    assert_eq!(rest, "", "nothing printed twice");
}

#[test]
fn monitor_shows_only_what_is_in_flight() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = seeded(dir.path());
    ok(&lionrt(
        &db,
        &[
            "state",
            "create",
            "invocation",
            "inv-9",
            "running",
            "--reason",
            "run.started.ok",
        ],
    ));
    let v = stdout_json(&lionrt(&db, &["--json", "monitor"]));
    let sessions: Vec<&str> = v["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["id"].as_str().expect("id"))
        .collect();
    assert_eq!(sessions, ["open-1"]);
    assert_eq!(v["others"][0]["entity_type"], "invocation");
    assert_eq!(v["others"][0]["id"], "inv-9");
    let text = ok(&lionrt(&db, &["monitor"]));
    assert!(text.contains("open-1") && !text.contains("abc-1"), "{text}");
    assert!(text.contains("1 session(s), 1 other"), "{text}");
    // --watch redraws: two refreshes, two NDJSON frames.
    let watched = ok(&lionrt(
        &db,
        &[
            "--json",
            "monitor",
            "--watch",
            "--interval",
            "0.1",
            "--count",
            "2",
        ],
    ));
    assert_eq!(watched.lines().count(), 2, "{watched}");
}

#[test]
fn lifecycle_joins_an_invocation_and_its_sessions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = seeded(dir.path());
    ok(&lionrt(
        &db,
        &[
            "state",
            "create",
            "invocation",
            "inv-77",
            "running",
            "--reason",
            "run.started.ok",
        ],
    ));
    let engine = Engine::open(&db, EngineConfig::default()).expect("open");
    engine
        .conn()
        .expect("conn")
        .execute(
            "UPDATE sessions SET invocation_id = 'inv-77' WHERE id = 'abc-2'",
            [],
        )
        .expect("link");
    let v = stdout_json(&lionrt(&db, &["--json", "lifecycle", "inv-7"]));
    let entities: Vec<String> = v["entities"]
        .as_array()
        .expect("entities")
        .iter()
        .map(|e| {
            format!(
                "{}:{}",
                e["entity_type"].as_str().expect("t"),
                e["id"].as_str().expect("id")
            )
        })
        .collect();
    assert_eq!(entities, ["invocation:inv-77", "session:abc-2"]);
    let transitions = v["transitions"].as_array().expect("transitions");
    assert_eq!(transitions.len(), 3, "{v}");
    assert!(
        transitions
            .windows(2)
            .all(|w| w[0]["created_at"].as_i64() <= w[1]["created_at"].as_i64()),
        "one timeline"
    );
    let out = lionrt(&db, &["lifecycle", "nothing-here"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("nothing in"), "{out:?}");
}

#[test]
fn stats_checkpoint_vacuum_and_prune() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = seeded(dir.path());
    let stats = stdout_json(&lionrt(&db, &["--json", "state", "stats"]));
    let table = |v: &serde_json::Value, name: &str| {
        v["stats"]["tables"]
            .as_array()
            .expect("tables")
            .iter()
            .find(|t| t[0] == name)
            .map(|t| t[1].as_i64().expect("n"))
    };
    assert_eq!(table(&stats, "sessions"), Some(3));
    assert_eq!(table(&stats, "messages"), Some(10));
    assert_eq!(stats["stats"]["journal_mode"], "wal");

    let cp = stdout_json(&lionrt(&db, &["--json", "state", "checkpoint"]));
    assert_eq!(cp["checkpoint"]["busy"], false, "{cp}");
    let wal = std::fs::metadata(dir.path().join("state.db-wal"))
        .map(|m| m.len())
        .unwrap_or(0);
    assert_eq!(wal, 0, "the WAL is truncated");

    // A dry run counts and deletes nothing.
    let dry = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "state",
            "prune",
            "--older-than",
            "0s",
            "--dry-run",
        ],
    ));
    assert_eq!(dry["prune"]["sessions"], 2);
    assert_eq!(dry["prune"]["messages"], 10);
    let after = stdout_json(&lionrt(&db, &["--json", "state", "stats"]));
    assert_eq!(table(&after, "sessions"), Some(3));
    // Nothing ended more than a day ago.
    let none = stdout_json(&lionrt(
        &db,
        &["--json", "state", "prune", "--older-than", "1d"],
    ));
    assert_eq!(none["prune"]["sessions"], 0);

    let done = stdout_json(&lionrt(
        &db,
        &["--json", "state", "prune", "--older-than", "0s"],
    ));
    assert_eq!(done["prune"]["sessions"], 2);
    let after = stdout_json(&lionrt(&db, &["--json", "state", "stats"]));
    assert_eq!(table(&after, "sessions"), Some(1), "the open session stays");
    assert_eq!(table(&after, "messages"), Some(0));
    assert_eq!(
        table(&after, "status_transitions"),
        table(&stats, "status_transitions"),
        "history kept"
    );
    assert_eq!(
        table(&after, "admin_events"),
        Some(3),
        "every prune is audited, dry runs too"
    );
    // The history of a pruned session is still readable.
    let history = stdout_json(&lionrt(
        &db,
        &["--json", "state", "history", "session", "abc-1"],
    ));
    assert_eq!(history.as_array().map(Vec::len), Some(2));

    let vac = stdout_json(&lionrt(&db, &["--json", "state", "vacuum"]));
    assert!(
        vac["pages_after"].as_i64() <= vac["pages_before"].as_i64(),
        "{vac}"
    );
    let after = stdout_json(&lionrt(&db, &["--json", "state", "stats"]));
    assert_eq!(after["stats"]["freelist_count"], 0);
}

#[test]
fn health_summarizes_and_lists_only_what_needs_attention() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = seeded(dir.path());
    let text = ok(&lionrt(&db, &["state", "health"]));
    assert!(text.contains("sessions   3 (2 done, 1 orphan)"), "{text}");
    assert!(text.contains("open-1") && !text.contains("abc-1"), "{text}");
    assert!(text.contains("2 healthy session(s) not listed"), "{text}");
    let all = ok(&lionrt(&db, &["state", "health", "--all"]));
    assert!(
        all.contains("abc-1") && all.contains("abc-2") && all.contains("open-1"),
        "{all}"
    );
    let v = stdout_json(&lionrt(&db, &["--json", "state", "health"]));
    assert_eq!(v["total"], 3);
    assert_eq!(v["counts"]["done"], 2);
    assert_eq!(v["counts"]["orphan"], 1);
    assert_eq!(v["sessions"].as_array().map(Vec::len), Some(1));
    let v = stdout_json(&lionrt(&db, &["--json", "state", "health", "--all"]));
    assert_eq!(v["sessions"].as_array().map(Vec::len), Some(3));
}

#[test]
fn entity_types_are_a_closed_set() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = seeded(dir.path());
    // A usage error (exit 2) naming the choices, on every verb that takes one.
    for args in [
        &["state", "history", "widget", "x"][..],
        &[
            "state",
            "create",
            "spaceship",
            "x",
            "running",
            "--reason",
            "run.started.ok",
        ],
        &[
            "state",
            "transition",
            "widget",
            "x",
            "failed",
            "--reason",
            "run.failed.exception",
        ],
    ] {
        let out = lionrt(&db, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains("invalid value"), "{out:?}");
        assert!(
            stderr(&out).contains("schedule_run"),
            "the choices are named: {out:?}"
        );
    }
    // The dashed alias is accepted.
    ok(&lionrt(
        &db,
        &[
            "state",
            "create",
            "schedule-run",
            "r1",
            "queued",
            "--reason",
            "schedule.queued.created",
        ],
    ));
}

#[test]
fn monitor_watch_redraws_on_a_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        // util-linux `script` provides the pty; without it there is no
        // terminal to redraw.
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let db = seeded(dir.path());
    let line = format!(
        "{} --db {} monitor --watch --interval 0.1 --count 2",
        env!("CARGO_BIN_EXE_lionrt"),
        db.display()
    );
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_remove("LIONRT_DB")
        .stdin(Stdio::null())
        .output()
        .expect("script");
    assert!(out.status.success(), "{out:?}");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        shown.matches("\x1b[H\x1b[2J").count(),
        2,
        "two frames: {shown:?}"
    );
    assert_eq!(shown.matches("open-1").count(), 2, "{shown:?}");
}

// contract: SQL-002
#[test]
fn the_reading_verbs_change_no_byte_of_the_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = seeded(dir.path());
    // Fold the WAL into the file first, so the file is the whole store.
    ok(&lionrt(&db, &["state", "checkpoint"]));
    let before = std::fs::read(&db).expect("read");
    for args in [
        &["sessions", "ls"][..],
        &["sessions", "show", "abc-1"],
        &["sessions", "messages", "abc-2"],
        &["monitor"],
        &["lifecycle", "abc"],
        &["state", "stats"],
        &["state", "health", "--all"],
    ] {
        let out = lionrt(&db, args);
        assert!(out.status.code().is_some(), "{args:?}: {out:?}");
    }
    assert!(
        std::fs::read(&db).expect("read") == before,
        "a reading verb wrote to the file"
    );
    // Nor to its write-ahead log (where a write would land first).
    let wal = std::fs::metadata(dir.path().join("state.db-wal")).map_or(0, |m| m.len());
    assert_eq!(wal, 0, "a reading verb wrote to the WAL");
    // A prune dry run writes its audit row: the comparison can fail.
    ok(&lionrt(&db, &["state", "prune", "--dry-run"]));
    ok(&lionrt(&db, &["state", "checkpoint"]));
    assert!(
        std::fs::read(&db).expect("read") != before,
        "the comparison sees writes"
    );
}

#[test]
fn a_server_url_is_refused_without_being_printed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = Path::new("postgres://lionrt:hunter2@127.0.0.1:1/x");
    for args in [
        &["sessions", "ls"][..],
        &["sessions", "show", "a"],
        &["monitor"],
        &["lifecycle", "a"],
    ] {
        let out = lionrt(url, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let err = stderr(&out);
        assert!(err.contains("PostgreSQL server"), "{args:?}: {err}");
        assert!(!err.contains("hunter2"), "{args:?}: {err}");
    }
    assert!(std::fs::read_dir(dir.path()).expect("dir").next().is_none());
}
