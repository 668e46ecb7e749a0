//! `lionrt run`'s terminal notification: the configured
//! `notify.on_terminal` handler gets the run's envelope after the terminal
//! transition commits, directly or through the durable outbox, and a bad
//! setting never fails the run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::stdout_json;

/// `lionrt --db DB ARGS` with the global settings file pointed at `global`
/// (so the developer's own settings never leak in).
fn lionrt(db: &Path, global: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("LIONRT_DB")
        .env("LIONAGI_SETTINGS_FILE", global)
        .output()
        .expect("run lionrt")
}

/// Reads the envelopes appended (one JSON document per line) to `file`.
fn envelopes(file: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    serde_json::Deserializer::from_str(&text)
        .into_iter::<serde_json::Value>()
        .map(|v| v.expect("an envelope"))
        .collect()
}

fn assert_session_envelope(v: &serde_json::Value, session: &str, status: &str) {
    assert_eq!(v["schema_version"], 1, "{v}");
    assert_eq!(v["entity"]["kind"], "session", "{v}");
    assert_eq!(v["entity"]["id"], session, "{v}");
    assert_eq!(v["terminal_status"], status, "{v}");
    assert_eq!(v["previous_status"], "running", "{v}");
}

// contract: NTF-001
// contract: NTF-013
#[test]
fn a_run_hands_its_terminal_envelope_to_the_on_terminal_handler() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let sink = dir.path().join("envelopes.jsonl");
    // The project settings of the workspace configure the handler: tee
    // appends the envelope it reads on stdin.
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join(".lionagi")).expect("workspace");
    std::fs::write(
        ws.join(".lionagi").join("settings.yaml"),
        format!("notify:\n  on_terminal: \"tee -a {}\"\n", sink.display()),
    )
    .expect("settings");
    let out = lionrt(
        &db,
        &dir.path().join("none.yaml"),
        &[
            "--json",
            "run",
            "--session",
            "n1",
            "--workspace",
            ws.to_str().expect("utf8"),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout_json(&out)["status"], "completed");
    let got = envelopes(&sink);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_session_envelope(&got[0], "n1", "completed");

    // A failed run: the per-run flag overrides the project's handler.
    let other = dir.path().join("other.jsonl");
    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"[{"type": "error", "message": "boom"}]"#).expect("script");
    let per_run = format!("tee -a {}", other.display());
    let out = lionrt(
        &db,
        &dir.path().join("none.yaml"),
        &[
            "run",
            "--session",
            "n2",
            "--script",
            script.to_str().expect("utf8"),
            "--workspace",
            ws.to_str().expect("utf8"),
            "--notify-on-terminal",
            &per_run,
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let got = envelopes(&other);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_session_envelope(&got[0], "n2", "failed");
    assert_eq!(
        envelopes(&sink).len(),
        1,
        "the project handler did not fire"
    );
}

#[test]
fn a_durable_run_leaves_a_delivered_outbox_row_and_the_transports_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let sink = dir.path().join("delivered.jsonl");
    // The global settings ask for durable delivery; the transport gets the
    // envelope as its `{payload}` argument.
    let global = dir.path().join("settings.yaml");
    std::fs::write(
        &global,
        format!(
            "notify:\n  durable: true\n  on_terminal: >-\n    sh -c 'printf \"%s\\n\" \"$1\" >> {}' sh {{payload}}\n",
            sink.display()
        ),
    )
    .expect("settings");
    let out = lionrt(
        &db,
        &global,
        &[
            "run",
            "--session",
            "d1",
            "--workspace",
            dir.path().to_str().expect("utf8"),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let got = envelopes(&sink);
    assert_eq!(got.len(), 1, "{out:?} {got:?}");
    assert_session_envelope(&got[0], "d1", "completed");
    let rows = stdout_json(&lionrt(&db, &global, &["--json", "outbox", "ls"]));
    let rows = rows.as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "delivered", "{rows:?}");
    assert_eq!(rows[0]["attempt"], 1, "{rows:?}");
    let payload: serde_json::Value =
        serde_json::from_str(rows[0]["payload"].as_str().expect("payload")).expect("json");
    assert_eq!(payload, got[0]);
}

// contract: NTF-019
#[test]
fn a_broken_on_terminal_string_warns_and_the_run_completes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let out = lionrt(
        &db,
        &dir.path().join("none.yaml"),
        &[
            "--json",
            "run",
            "--session",
            "b1",
            "--workspace",
            dir.path().to_str().expect("utf8"),
            "--notify-on-terminal",
            "notify-send --token s3cr3t-v4lue 'unbalanced",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout_json(&out)["status"], "completed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: notify.on_terminal (override)"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("s3cr3t-v4lue"),
        "the argument value is not echoed: {stderr}"
    );
}

/// A notify handler whose receiver is up only while the flag file in
/// `dir` exists; each envelope it gets then is appended to the sink file.
/// Returns `(sink, flag, handler)`.
fn flagged_receiver(dir: &Path) -> (PathBuf, PathBuf, String) {
    let sink = dir.join("delivered.jsonl");
    let flag = dir.join("receiver-up");
    let handler = format!(
        "sh -c 'test -e {} && printf \"%s\\n\" \"$1\" >> {}' sh",
        flag.display(),
        sink.display()
    );
    (sink, flag, handler)
}

#[test]
fn a_failed_durable_send_stays_queued_and_outbox_deliver_retries_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    // The receiver is down (no flag file) for the run's own scan.
    let (sink, flag, handler) = flagged_receiver(dir.path());
    let none = dir.path().join("none.yaml");
    let out = lionrt(
        &db,
        &none,
        &[
            "run",
            "--session",
            "r1",
            "--workspace",
            dir.path().to_str().expect("utf8"),
            "--notify-durable",
            "--notify-on-terminal",
            &handler,
        ],
    );
    assert!(
        out.status.success(),
        "a failed send never fails the run: {out:?}"
    );
    assert!(envelopes(&sink).is_empty());
    let rows = stdout_json(&lionrt(&db, &none, &["--json", "outbox", "ls"]));
    assert_eq!(rows[0]["status"], "pending", "{rows}");
    assert_eq!(rows[0]["attempt"], 1, "{rows}");

    // The receiver comes up; after the first backoff (5 s) a scan delivers.
    std::fs::write(&flag, "").expect("flag");
    std::thread::sleep(std::time::Duration::from_millis(5_300));
    let out = lionrt(&db, &none, &["--json", "outbox", "deliver"]);
    assert!(out.status.success(), "{out:?}");
    let got = envelopes(&sink);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_session_envelope(&got[0], "r1", "completed");
    let rows = stdout_json(&lionrt(&db, &none, &["--json", "outbox", "ls"]));
    assert_eq!(rows[0]["status"], "delivered", "{rows}");
    assert_eq!(rows[0]["attempt"], 2, "{rows}");
}

/// Makes every pending row of the SQLite outbox `db` due now (the test's
/// stand-in for waiting out the backoff), optionally lowering its attempt
/// budget.
fn make_due(db: &Path, max_attempts: Option<u32>) {
    let conn = rusqlite::Connection::open(db).expect("open the database");
    conn.busy_timeout(std::time::Duration::from_secs(30))
        .expect("busy timeout");
    conn.execute(
        "UPDATE dispatch_outbox SET next_attempt_at = 0,
             max_attempts = COALESCE(?1, max_attempts) WHERE status = 'pending'",
        [max_attempts],
    )
    .expect("make due");
}

#[test]
fn a_later_scan_refreshes_the_notify_outcome_recorded_on_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let none = dir.path().join("none.yaml");
    // The receiver is down (no flag file) for the run's own scan.
    let (sink, flag, handler) = flagged_receiver(dir.path());
    let durable = ["--notify-durable", "--notify-on-terminal", handler.as_str()];
    for session in ["later-ok", "later-dead"] {
        let out = run_session(&db, &none, dir.path(), session, &durable);
        assert!(out.status.success(), "{out:?}");
        let got = recorded_outcome(&db, &none, session);
        assert_eq!(got["ok"], false, "{got}");
        assert_eq!(got["reason"], "dispatch_not_delivered", "{got}");
        assert_eq!(got["dispatch"]["status"], "pending", "{got}");
        assert_eq!(got["dispatch"]["attempt"], 1, "{got}");
    }
    let rows = stdout_json(&lionrt(&db, &none, &["--json", "outbox", "ls"]));
    let id_of = |session: &str| {
        rows.as_array()
            .expect("rows")
            .iter()
            .find(|r| {
                r["dedup_key"]
                    .as_str()
                    .is_some_and(|k| k.contains(&format!(":session:{session}:")))
            })
            .map(|r| r["id"].clone())
            .expect("the session's dispatch")
    };
    let (ok_id, dead_id) = (id_of("later-ok"), id_of("later-dead"));

    // The later-dead row gets no more attempts than it has had; the
    // receiver is still down, so the daemon's scan dead-letters it.
    make_due(&db, Some(2));
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute(
        "UPDATE dispatch_outbox SET next_attempt_at = 9000000000000000 WHERE id = ?1",
        [ok_id.as_str().expect("id")],
    )
    .expect("hold the other row back");
    drop(conn);
    let out = lionrt(&db, &none, &["daemon", "--outbox", "--ticks", "1"]);
    assert!(out.status.success(), "{out:?}");
    let got = recorded_outcome(&db, &none, "later-dead");
    assert_eq!(got["ok"], false, "{got}");
    assert_eq!(got["reason"], "dispatch_dead_lettered", "{got}");
    assert_eq!(got["dispatch"]["id"], dead_id, "{got}");
    assert_eq!(got["dispatch"]["status"], "dead_letter", "{got}");
    assert_eq!(got["dispatch"]["attempt"], 2, "{got}");

    // The receiver comes up; `lionrt outbox deliver` delivers the other
    // row and the run shows it delivered.
    std::fs::write(&flag, "").expect("flag");
    make_due(&db, None);
    let out = lionrt(&db, &none, &["--json", "outbox", "deliver"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(envelopes(&sink).len(), 1);
    let got = recorded_outcome(&db, &none, "later-ok");
    assert_eq!(got["ok"], true, "{got}");
    assert!(got["reason"].is_null(), "{got}");
    assert_eq!(got["dispatch"]["id"], ok_id, "{got}");
    assert_eq!(got["dispatch"]["status"], "delivered", "{got}");
    assert_eq!(got["dispatch"]["attempt"], 2, "{got}");
    // The dead-lettered run's outcome is left as the daemon wrote it.
    assert_eq!(
        recorded_outcome(&db, &none, "later-dead")["dispatch"]["status"],
        "dead_letter"
    );
    let text =
        String::from_utf8_lossy(&lionrt(&db, &none, &["sessions", "show", "later-ok"]).stdout)
            .into_owned();
    assert!(text.contains("notify     ok, dispatch"), "{text}");
}

/// The notify outcome `lionrt sessions show --json` reads back for `session`.
fn recorded_outcome(db: &Path, global: &Path, session: &str) -> serde_json::Value {
    let out = lionrt(db, global, &["--json", "sessions", "show", session]);
    assert!(out.status.success(), "{out:?}");
    stdout_json(&out)["notify_outcome"].clone()
}

fn run_session(db: &Path, global: &Path, ws: &Path, session: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "--session",
        session,
        "--workspace",
        ws.to_str().expect("utf8"),
    ];
    args.extend_from_slice(extra);
    lionrt(db, global, &args)
}

// contract: NTF-031
// contract: NTF-032
#[test]
fn the_runs_notify_outcome_is_recorded_on_its_session_and_read_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let none = dir.path().join("none.yaml");
    let ws = dir.path();

    // Nothing configured: nothing is written on the run.
    let out = run_session(&db, &none, ws, "o-none", &[]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        recorded_outcome(&db, &none, "o-none").is_null(),
        "nothing configured writes nothing"
    );

    // A filter that excludes the session: nothing is written either.
    let filtered = dir.path().join("filtered.yaml");
    std::fs::write(
        &filtered,
        "notify:\n  on_terminal:\n    adapter: {kind: exec, argv: [\"true\"]}\n    filter:\n      ids: [\"someone-else\"]\n",
    )
    .expect("settings");
    let out = run_session(&db, &filtered, ws, "o-filtered", &[]);
    assert!(out.status.success(), "{out:?}");
    assert!(recorded_outcome(&db, &none, "o-filtered").is_null());

    // A handler that succeeds.
    let out = run_session(&db, &none, ws, "o-ok", &["--notify-on-terminal", "true"]);
    assert!(out.status.success(), "{out:?}");
    let got = recorded_outcome(&db, &none, "o-ok");
    assert_eq!(got["ok"], true, "{got}");
    assert_eq!(got["exit_code"], 0, "{got}");

    // A handler that fails: the run still completes, the outcome says why.
    let out = run_session(
        &db,
        &none,
        ws,
        "o-fail",
        &["--notify-on-terminal", "sh -c 'exit 7' s3cr3t-arg"],
    );
    assert!(out.status.success(), "{out:?}");
    let got = recorded_outcome(&db, &none, "o-fail");
    assert_eq!(got["ok"], false, "{got}");
    assert_eq!(got["exit_code"], 7, "{got}");
    assert_eq!(got["reason"], "adapter_exited_unsuccessfully", "{got}");
    assert!(
        !got.to_string().contains("s3cr3t-arg"),
        "no argument value: {got}"
    );

    // A notifier asked for and refused: the refusal is recorded on the run.
    let out = run_session(
        &db,
        &none,
        ws,
        "o-refused",
        &["--notify-on-terminal", "notify-send a | tee b"],
    );
    assert!(out.status.success(), "{out:?}");
    let got = recorded_outcome(&db, &none, "o-refused");
    assert_eq!(got["ok"], false, "{got}");
    assert_eq!(
        got["reason"], "on_terminal_command_requires_shell_features",
        "{got}"
    );

    // The text form names it too.
    let out = lionrt(&db, &none, &["sessions", "show", "o-fail"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("notify     failed: adapter_exited_unsuccessfully (exit 7)"),
        "{text}"
    );
}

#[test]
fn the_end_of_run_scan_delivers_only_the_rows_this_run_enqueued() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let none = dir.path().join("none.yaml");
    let foreign_sink = dir.path().join("foreign.txt");
    let run_sink = dir.path().join("delivered.jsonl");
    let out = lionrt(&db, &none, &["state", "init"]);
    assert!(out.status.success(), "{out:?}");
    // Someone else's row, due now, waiting for a scan.
    let append = format!("printf '%s\\n' \"$1\" >> {}", foreign_sink.display());
    let out = lionrt(
        &db,
        &none,
        &[
            "--json",
            "outbox",
            "enqueue",
            "foreign",
            "--dedup-key",
            "other",
            "--",
            "sh",
            "-c",
            &append,
            "sh",
            "{payload}",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let foreign = stdout_json(&out)["id"]
        .as_str()
        .expect("the enqueued id")
        .to_owned();

    let handler = format!(
        "sh -c 'printf \"%s\\n\" \"$1\" >> {}' sh",
        run_sink.display()
    );
    let out = run_session(
        &db,
        &none,
        dir.path(),
        "own",
        &["--notify-durable", "--notify-on-terminal", &handler],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(envelopes(&run_sink).len(), 1, "the run's own row was sent");
    assert!(
        !foreign_sink.exists(),
        "another producer's due row is not sent by the run"
    );
    let row = stdout_json(&lionrt(&db, &none, &["--json", "outbox", "show", &foreign]));
    let row = &row["dispatch"];
    assert_eq!(row["status"], "pending", "{row}");
    assert_eq!(row["attempt"], 0, "{row}");

    // The outcome on the run names its own dispatch, delivered.
    let got = recorded_outcome(&db, &none, "own");
    assert_eq!(got["ok"], true, "{got}");
    assert_eq!(got["dispatch"]["status"], "delivered", "{got}");
    assert_ne!(got["dispatch"]["id"], foreign.as_str(), "{got}");

    // The foreign row is left to `lionrt outbox deliver`.
    let out = lionrt(&db, &none, &["--json", "outbox", "deliver"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&foreign_sink).expect("sent now"),
        "foreign\n"
    );
}

#[test]
fn the_notify_outcome_is_recorded_on_a_postgresql_session_too() {
    let Ok(url) = std::env::var("LIONRT_TEST_PG") else {
        #[allow(clippy::print_stderr, reason = "a skipped test says why")]
        {
            eprintln!("skipped: LIONRT_TEST_PG is unset");
        }
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = format!("lionrt_notify_{}", std::process::id());
    let pg = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_lionrt"))
            .arg("--db")
            .arg(&url)
            .args(args)
            .env_remove("LIONRT_DB")
            .env("LIONRT_PG_SCHEMA", &schema)
            .env("LIONAGI_SETTINGS_FILE", dir.path().join("none.yaml"))
            .env("LIONAGI_HOME", dir.path())
            .output()
            .expect("run lionrt")
    };
    let ws = dir.path().to_str().expect("utf8");
    let out = pg(&[
        "run",
        "--session",
        "pg-notify",
        "--workspace",
        ws,
        "--notify-on-terminal",
        "sh -c 'exit 3'",
    ]);
    assert!(out.status.success(), "{out:?}");
    let out = pg(&["run", "--session", "pg-quiet", "--workspace", ws]);
    assert!(out.status.success(), "{out:?}");
    let show = |session: &str| {
        let out = pg(&["--json", "sessions", "show", session]);
        assert!(out.status.success(), "{out:?}");
        stdout_json(&out)["notify_outcome"].clone()
    };
    let got = show("pg-notify");
    assert_eq!(
        (&got["ok"], &got["exit_code"], &got["reason"]),
        (
            &false.into(),
            &3.into(),
            &"adapter_exited_unsuccessfully".into()
        ),
        "{got}"
    );
    assert!(show("pg-quiet").is_null());
}

// contract: NTF-029
#[test]
fn a_failing_adapters_stderr_goes_to_an_owner_only_file_named_by_the_outcome() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let none = dir.path().join("none.yaml");
    let out = run_session(
        &db,
        &none,
        dir.path(),
        "o/../err",
        &[
            "--notify-on-terminal",
            "sh -c 'echo adapter-said-oops >&2; exit 5'",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let got = recorded_outcome(&db, &none, "o/../err");
    assert_eq!((&got["ok"], &got["exit_code"]), (&false.into(), &5.into()));
    let path = Path::new(got["stderr_path"].as_str().expect("a captured stderr"));
    assert_eq!(
        path.parent(),
        Some(dir.path().join("notify").as_path()),
        "beside the state file, whatever the session id: {got}"
    );
    let meta = std::fs::metadata(path).expect("the stderr file");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let dir_mode = std::fs::metadata(path.parent().expect("dir"))
        .expect("dir")
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o077, 0, "the directory is the owner's only");
    assert!(
        std::fs::read_to_string(path)
            .expect("read")
            .contains("adapter-said-oops")
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&path.display().to_string()),
        "the warning names the file: {stderr}"
    );
    assert!(
        !stderr.contains("adapter-said-oops") && !got.to_string().contains("adapter-said-oops"),
        "the raw stderr is not quoted: {stderr} {got}"
    );
}

/// `--notify-on-terminal 'rec.sh {status} {session_id}'`, as li users write
/// it: each whole-argument placeholder reaches the handler as its value,
/// on the direct path and through the durable outbox alike.
#[test]
fn notify_templates_fill_li_placeholders_as_whole_arguments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let none = dir.path().join("none.yaml");
    let sink = dir.path().join("args.txt");
    let handler = format!(
        "sh -c 'printf \"%s|%s|%s\\n\" \"$1\" \"$2\" \"$3\" >> {}' sh {{status}} {{session_id}} {{reason_code}}",
        sink.display()
    );
    for (session, durable) in [("tpl-direct", false), ("tpl-durable", true)] {
        let mut args = vec![
            "run",
            "--session",
            session,
            "--workspace",
            dir.path().to_str().expect("utf8"),
            "--notify-on-terminal",
            &handler,
        ];
        if durable {
            args.push("--notify-durable");
        }
        let out = lionrt(&db, &none, &args);
        assert!(out.status.success(), "{out:?}");
    }
    let text = std::fs::read_to_string(&sink).expect("the handler ran");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.contains(&"completed|tpl-direct|run.completed.ok"),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"completed|tpl-durable|run.completed.ok"),
        "{lines:?}"
    );
}
