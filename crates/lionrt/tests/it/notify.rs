//! `lionrt run`'s terminal notification: the configured
//! `notify.on_terminal` handler gets the run's envelope after the terminal
//! transition commits, directly or through the durable outbox, and a bad
//! setting never fails the run.

use std::path::Path;
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

#[test]
fn a_failed_durable_send_stays_queued_and_outbox_deliver_retries_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let sink = dir.path().join("delivered.jsonl");
    let flag = dir.path().join("receiver-up");
    // The receiver is down (no flag file) for the run's own scan.
    let handler = format!(
        "sh -c 'test -e {} && printf \"%s\\n\" \"$1\" >> {}' sh",
        flag.display(),
        sink.display()
    );
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
