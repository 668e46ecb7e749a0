//! `lionrt outbox ...` end to end.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{lionrt, stdout_json};

fn ok(out: &std::process::Output) {
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn enqueue_deliver_show_ack_retry_purge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    ok(&lionrt(&db, &["state", "init"]));
    let marker = dir.path().join("pwned");
    let payload = format!(
        "done; touch {} $(touch {})",
        marker.display(),
        marker.display()
    );
    let out = lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "enqueue",
            &payload,
            "--dedup-key",
            "run:1",
            "--",
            "/bin/echo",
            "{payload}",
        ],
    );
    ok(&out);
    let first = stdout_json(&out);
    assert_eq!(first["created"], true);
    let again = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "enqueue",
            "other",
            "--dedup-key",
            "run:1",
        ],
    ));
    assert_eq!(
        (again["id"].clone(), again["created"].clone()),
        (first["id"].clone(), false.into())
    );
    let failing = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "enqueue",
            "x",
            "--max-attempts",
            "1",
            "--",
            "/bin/false",
        ],
    ));
    let acked = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "enqueue",
            "y",
            "--ack-required",
            "--",
            "/bin/true",
        ],
    ));
    let report = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "deliver",
            "--concurrency",
            "2",
            "--actor",
            "system:cli-test",
        ],
    ));
    assert_eq!(report["delivered"], 1, "{report}");
    assert_eq!(report["dead_lettered"], 1, "{report}");
    assert_eq!(report["rescheduled"], 1, "{report}");
    assert!(!marker.exists(), "the payload reached no shell");
    let ls = stdout_json(&lionrt(
        &db,
        &["--json", "outbox", "ls", "--status", "dead_letter"],
    ));
    assert_eq!(ls.as_array().map(Vec::len), Some(1));
    let show = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "show",
            first["id"].as_str().expect("id"),
        ],
    ));
    assert_eq!(show["dispatch"]["status"], "delivered");
    assert_eq!(show["history"][1]["actor_id"], "cli-test");
    let id = acked["id"].as_str().expect("id");
    let out = stdout_json(&lionrt(
        &db,
        &["--json", "outbox", "ack", id, "--actor", "webhook:consumer"],
    ));
    assert_eq!(out["status"], "acked");
    let failed = failing["id"].as_str().expect("id");
    let out = lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "retry",
            failed,
            "--actor",
            "agent:not-an-operator",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let out = stdout_json(&lionrt(&db, &["--json", "outbox", "retry", failed]));
    assert_eq!(out[0]["revived"], true);
    let out = lionrt(&db, &["outbox", "purge"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("full-table delete"));
    let dry = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "purge",
            "--older-than",
            "0",
            "--dry-run",
        ],
    ));
    assert_eq!(dry["ids"].as_array().map(Vec::len), Some(2), "{dry}");
    // A dry run names no single row: `purge ID --dry-run` is refused rather
    // than deleting for real.
    let out = lionrt(&db, &["outbox", "purge", failed, "--dry-run"]);
    assert!(!out.status.success());
    let gone = stdout_json(&lionrt(&db, &["--json", "outbox", "purge", failed]));
    assert_eq!(gone["status"], "pending");
    let all = stdout_json(&lionrt(&db, &["--json", "outbox", "ls"]));
    assert_eq!(all.as_array().map(Vec::len), Some(2));
}

#[test]
fn deliver_watch_scans_until_sigint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    ok(&lionrt(&db, &["state", "init"]));
    ok(&lionrt(&db, &["outbox", "enqueue", "p", "--", "/bin/true"]));
    let mut child = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(&db)
        .args(["--json", "outbox", "deliver", "--watch", "0.05"])
        .env_remove("LIONRT_DB")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    // Read scan reports as they come; after three scans, interrupt.
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut reports: Vec<serde_json::Value> = Vec::new();
    while reports.len() < 3 {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("a scan report while watching");
        reports.push(serde_json::from_str(&line).expect("one JSON report per scan"));
    }
    let pid = child.id().to_string();
    let kill = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(kill.success());
    let started = Instant::now();
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    reader.join().expect("reader");
    reports.extend(
        rx.try_iter()
            .map(|l| serde_json::from_str(&l).expect("json")),
    );
    let delivered: u64 = reports
        .iter()
        .map(|r| r["delivered"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(delivered, 1, "one delivery however many scans: {reports:?}");
}
