//! `lionrt mirror` end to end: a catch-up pass, idempotent re-runs, and the
//! tailing loop picking up an appended line and ending on SIGTERM.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{lionrt, stdout_json};

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/transcript-mirror")
}

#[test]
fn a_catch_up_pass_mirrors_once_and_re_runs_add_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let root = fixtures().join("claude");
    let codex = fixtures().join("codex");
    let args = [
        "--json",
        "mirror",
        "--once",
        "--root",
        root.to_str().expect("utf-8 path"),
        "--codex-root",
        codex.to_str().expect("utf-8 path"),
    ];
    let first = lionrt(&db, &args);
    assert!(first.status.success(), "{first:?}");
    let report = stdout_json(&first);
    assert_eq!(report["messages_added"], 19);
    assert_eq!(report["sessions_created"], 3);
    assert_eq!(report["files_seen"], 3);
    let again = stdout_json(&lionrt(&db, &args));
    assert_eq!(again["messages_added"], 0);
    assert_eq!(again["bytes"], 0);
    // --source picks the roots: codex only sees one file.
    let codex_only = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "mirror",
            "--once",
            "--source",
            "codex",
            "--codex-root",
            codex.to_str().expect("utf-8 path"),
        ],
    ));
    assert_eq!(codex_only["files_seen"], 1);
    // --since bounds by modification time; a bad window is a clear error.
    let bad = lionrt(
        &db,
        &[
            "mirror",
            "--once",
            "--since",
            "forever",
            "--root",
            root.to_str().expect("utf-8 path"),
            "--source",
            "claude",
        ],
    );
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("invalid duration"),
        "{bad:?}"
    );
}

#[test]
fn tailing_picks_up_appended_lines_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let project = dir.path().join("claude").join("-home-dev-acme");
    std::fs::create_dir_all(&project).expect("mkdir");
    let file = project.join("5d0c6f1e-0000-4000-8000-00000000aaaa.jsonl");
    let line = |uuid: &str, text: &str| {
        format!(
            "{{\"type\":\"user\",\"uuid\":\"{uuid}\",\"sessionId\":\"5d0c6f1e-0000-4000-8000-00000000aaaa\",\"cwd\":\"/home/dev/acme\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\"}}}}\n"
        )
    };
    std::fs::write(&file, line("t1", "first")).expect("write");
    let mut child = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(&db)
        .args([
            "--json",
            "mirror",
            "--interval",
            "0.1",
            "--source",
            "claude",
            "--root",
        ])
        .arg(dir.path().join("claude"))
        .env_remove("LIONRT_DB")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lionrt mirror");
    let mut reader = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut added = 0;
    let mut appended = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    while added < 2 && Instant::now() < deadline {
        let mut text = String::new();
        if std::io::BufRead::read_line(&mut reader, &mut text).expect("read") == 0 {
            break;
        }
        let report: serde_json::Value =
            serde_json::from_str(text.trim()).expect("one JSON report per pass");
        added += report["messages_added"].as_i64().expect("count");
        if added == 1 && !appended {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&file)
                .expect("open");
            f.write_all(line("t2", "second").as_bytes())
                .expect("append");
            appended = true;
        }
    }
    assert_eq!(added, 2, "the appended line arrived in a later pass");
    let pid = i32::try_from(child.id()).expect("pid");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).expect("pid"),
        rustix::process::Signal::TERM,
    )
    .expect("SIGTERM");
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status:?}");
}

fn lionrt_env(db: &str, envs: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lionrt"));
    cmd.arg("--db").arg(db).args(args).env_remove("LIONRT_DB");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("run lionrt")
}

// contract: SQL-052
#[test]
fn mirror_on_postgres_end_to_end() {
    let Ok(url) = std::env::var("LIONRT_TEST_PG") else {
        #[allow(clippy::print_stderr, reason = "a skipped test says why")]
        {
            eprintln!(
                "mirror_on_postgres_end_to_end: skipped: LIONRT_TEST_PG is unset (start a server with `eval \"$(.ci/pg-cluster start DIR)\"`)"
            );
        }
        return;
    };
    let schema = format!("lionrt_mirror_e2e_{}", std::process::id());
    let envs = [("LIONRT_PG_SCHEMA", schema.as_str())];
    let root = fixtures().join("claude");
    let codex = fixtures().join("codex");
    let args = [
        "--json",
        "mirror",
        "--once",
        "--root",
        root.to_str().expect("utf-8 path"),
        "--codex-root",
        codex.to_str().expect("utf-8 path"),
    ];
    let first = lionrt_env(&url, &envs, &args);
    assert!(first.status.success(), "{first:?}");
    let report = stdout_json(&first);
    // The same counts as on a SQLite file (the test above).
    assert_eq!(report["messages_added"], 19);
    assert_eq!(report["sessions_created"], 3);
    assert_eq!(report["files_seen"], 3);
    let again = stdout_json(&lionrt_env(&url, &envs, &args));
    assert_eq!(again["messages_added"], 0);
    assert_eq!(again["bytes"], 0);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let count = |client: &mut postgres::Client, table: &str| -> i64 {
        client
            .query_one(&format!("SELECT count(*) FROM {schema}.{table}"), &[])
            .expect("count")
            .get(0)
    };
    assert_eq!(count(&mut client, "messages"), 19);
    assert_eq!(count(&mut client, "progression_items"), 19);
    assert_eq!(count(&mut client, "branches"), 3);
    let kinds: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM {schema}.sessions WHERE kind = 'mirrored'"),
            &[],
        )
        .expect("kinds")
        .get(0);
    assert_eq!(kinds, 3);
    // The mirrored sessions read back through the same --db.
    let ls = lionrt_env(&url, &envs, &["--json", "sessions", "ls"]);
    assert!(ls.status.success(), "{ls:?}");
    assert!(
        String::from_utf8_lossy(&ls.stdout).contains("3f0c2a8e-6b1d-4c47-9a51-2e7d0b9c1a01"),
        "{}",
        String::from_utf8_lossy(&ls.stdout)
    );
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .expect("drop schema");
}

#[test]
fn mirror_never_prints_a_postgres_password() {
    // Nothing listens on loopback port 1: the connection is refused.
    let url = "postgres://lionrt:hunter2secret@127.0.0.1:1/lionrt?connect_timeout=2";
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_str().expect("utf-8 path");
    for json in [false, true] {
        let mut args = vec!["mirror", "--once", "--root", root, "--codex-root", root];
        if json {
            args.insert(0, "--json");
        }
        let out = lionrt_env(url, &[], &args);
        assert!(!out.status.success());
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!all.contains("hunter2secret"), "{all}");
        assert!(all.contains("lionrt:***@127.0.0.1:1"), "{all}");
    }
}
