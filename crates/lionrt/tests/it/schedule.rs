//! `lionrt schedule` and `lionrt daemon` with real processes: the verbs, an
//! atomic apply, a trigger through the runner, SIGTERM as graceful
//! shutdown, and a SIGKILLed daemon whose restart leaves no orphan.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{lionrt, stdout_json};

const SLOW: &str =
    r#"[{"type": "tool_call", "id": "t", "name": "sleep", "arguments": {"ms": 30000}}]"#;

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

fn daemon(db: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(db)
        .args(["daemon", "--interval", "0.1"])
        .env_remove("LIONRT_DB")
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start lionrt daemon")
}

fn conn(db: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(db).expect("open")
}

fn count(db: &Path, sql: &str) -> i64 {
    conn(db).query_row(sql, [], |r| r.get(0)).expect("count")
}

/// The leg pid of the first running session, once there is one.
fn running_leg(db: &Path) -> Option<(i64, i64)> {
    conn(db)
        .query_row(
            "SELECT leg_pid, leg_pgid FROM sessions WHERE status = 'running' AND leg_pid IS NOT NULL LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ok()
}

fn group_alive(pgid: i64) -> bool {
    procfs::process::all_processes()
        .map(|all| {
            all.flatten()
                .filter_map(|p| p.stat().ok())
                .any(|s| i64::from(s.pgrp) == pgid && !matches!(s.state, 'Z' | 'X' | 'x'))
        })
        .unwrap_or(true)
}

fn slow_schedule(dir: &Path, db: &Path, name: &str) {
    let script = dir.join("slow.json");
    std::fs::write(&script, SLOW).expect("script");
    let out = lionrt(
        db,
        &[
            "schedule",
            "create",
            name,
            "--every",
            "1",
            "--prompt",
            "slow",
            "--workspace",
            dir.to_str().expect("utf-8"),
            "--script",
            script.to_str().expect("utf-8"),
        ],
    );
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn the_verbs_define_list_show_toggle_trigger_and_delete() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let ws = dir.path().to_str().expect("utf-8");
    let out = lionrt(
        &db,
        &[
            "--json",
            "schedule",
            "create",
            "nightly",
            "--cron",
            "0 3 * * *",
            "--tz",
            "+02:00",
            "--prompt",
            "p",
            "--workspace",
            ws,
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout_json(&out)["status"], "enabled");
    let bad = lionrt(
        &db,
        &[
            "schedule",
            "create",
            "x",
            "--cron",
            "61 * * * *",
            "--prompt",
            "p",
        ],
    );
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("cron expression"),
        "{bad:?}"
    );

    let ls = stdout_json(&lionrt(&db, &["--json", "schedule", "ls"]));
    assert_eq!(ls.as_array().map(Vec::len), Some(1));
    let off = stdout_json(&lionrt(&db, &["--json", "schedule", "disable", "nightly"]));
    assert_eq!(off["status"], "disabled");
    let on = stdout_json(&lionrt(&db, &["--json", "schedule", "enable", "nightly"]));
    assert_eq!(on["status"], "enabled");

    // trigger: fires now through the runner and waits for the run.
    let trig = lionrt(&db, &["--json", "schedule", "trigger", "nightly"]);
    assert!(trig.status.success(), "{trig:?}");
    let runs = stdout_json(&trig);
    assert_eq!(runs[0]["status"], "completed", "{runs}");
    assert_eq!(runs[0]["reason"], "run.completed.ok", "{runs}");
    let session = runs[0]["session_id"].as_str().expect("session").to_owned();
    let status: String = conn(&db)
        .query_row(
            "SELECT status FROM sessions WHERE id = ?1",
            [&session],
            |r| r.get(0),
        )
        .expect("session");
    assert_eq!(status, "completed");
    let listed = stdout_json(&lionrt(&db, &["--json", "schedule", "runs", "nightly"]));
    assert_eq!(listed.as_array().map(Vec::len), Some(1));

    assert!(
        lionrt(&db, &["schedule", "delete", "nightly"])
            .status
            .success()
    );
    assert!(
        !lionrt(&db, &["schedule", "show", "nightly"])
            .status
            .success()
    );
}

#[test]
fn validate_checks_and_apply_reconciles_a_set() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let set = dir.path().join("set.json");
    let write = |body: &str| std::fs::write(&set, body).expect("set");
    write(
        r#"{"schedules": [
            {"name": "a", "trigger": {"interval": {"seconds": 60}}, "run": {"prompt": "p", "workspace": "/tmp"}},
            {"name": "b", "trigger": {"cron": {"expr": "*/5 * * * *"}}, "run": {"prompt": "p", "workspace": "/tmp"}}
        ]}"#,
    );
    let set_arg = set.to_str().expect("utf-8");
    assert!(
        lionrt(&db, &["schedule", "validate", set_arg])
            .status
            .success()
    );
    assert!(!db.exists(), "validate touches no database");
    let r = stdout_json(&lionrt(&db, &["--json", "schedule", "apply", set_arg]));
    assert_eq!(r["created"], serde_json::json!(["a", "b"]));

    // One bad entry: nothing of the set is applied.
    write(
        r#"[{"name": "a", "trigger": {"interval": {"seconds": 30}}, "run": {"prompt": "p", "workspace": "/tmp"}},
            {"name": "c", "trigger": {"cron": {"expr": "* * *"}}, "run": {"prompt": "p", "workspace": "/tmp"}}]"#,
    );
    assert!(
        !lionrt(&db, &["schedule", "validate", set_arg])
            .status
            .success()
    );
    assert!(
        !lionrt(&db, &["schedule", "apply", set_arg])
            .status
            .success()
    );
    let ls = stdout_json(&lionrt(&db, &["--json", "schedule", "ls"]));
    assert_eq!(ls[0]["spec"]["trigger"]["interval"]["seconds"], 60);
    assert_eq!(ls.as_array().map(Vec::len), Some(2));

    write(
        r#"[{"name": "a", "trigger": {"interval": {"seconds": 30}}, "run": {"prompt": "p", "workspace": "/tmp"}}]"#,
    );
    let r = stdout_json(&lionrt(&db, &["--json", "schedule", "apply", set_arg]));
    assert_eq!(r["updated"], serde_json::json!(["a"]));
    assert_eq!(r["deleted"], serde_json::json!(["b"]));
}

#[test]
fn sigterm_cancels_the_running_leg_and_records_its_session_cancelled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    slow_schedule(dir.path(), &db, "slow");
    let mut d = daemon(&db);
    assert!(
        wait_until(Duration::from_secs(20), || running_leg(&db).is_some()),
        "the daemon fired the schedule"
    );
    let (_, pgid) = running_leg(&db).expect("leg");
    // A second daemon on the same database is refused.
    let second = lionrt(&db, &["daemon", "--ticks", "1"]);
    assert!(!second.status.success());
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("another scheduler"),
        "{second:?}"
    );

    rustix::process::kill_process(
        rustix::process::Pid::from_child(&d),
        rustix::process::Signal::TERM,
    )
    .expect("SIGTERM");
    let status = d.wait().expect("wait");
    assert!(status.success(), "graceful exit: {status:?}");
    assert!(!group_alive(pgid), "the leg's group ended");
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM sessions WHERE status = 'running'"
        ),
        0
    );
    assert!(
        count(
            &db,
            "SELECT count(*) FROM sessions WHERE status = 'cancelled'"
        ) >= 1
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM schedule_runs WHERE status = 'running'"
        ),
        0
    );
    assert!(
        count(
            &db,
            "SELECT count(*) FROM schedule_runs WHERE status = 'cancelled'"
        ) >= 1
    );
}

#[test]
fn a_sigkilled_daemon_restarts_with_no_orphan_and_no_running_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    slow_schedule(dir.path(), &db, "slow");
    let mut d = daemon(&db);
    assert!(
        wait_until(Duration::from_secs(20), || running_leg(&db).is_some()),
        "the daemon fired the schedule"
    );
    let (_, pgid) = running_leg(&db).expect("leg");
    d.kill().expect("SIGKILL the daemon");
    let _ = d.wait();
    // The leg's group dies with its supervisor (parent-death signal and the
    // orphan guard's sentinel).
    assert!(
        wait_until(Duration::from_secs(3), || !group_alive(pgid)),
        "no orphaned leg"
    );
    assert!(
        count(
            &db,
            "SELECT count(*) FROM sessions WHERE status = 'running'"
        ) >= 1
    );

    // The schedule is disabled so the restarted daemon fires nothing new;
    // its start sweeps the dead daemon's session and ends its run.
    assert!(
        lionrt(&db, &["schedule", "disable", "slow"])
            .status
            .success()
    );
    let restart = lionrt(&db, &["--json", "daemon", "--ticks", "1"]);
    assert!(restart.status.success(), "{restart:?}");
    let started: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&restart.stdout)
            .lines()
            .next()
            .unwrap_or_default(),
    )
    .expect("json");
    assert!(
        started["started"]["orphans_swept"].as_u64() >= Some(1),
        "{started}"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM sessions WHERE status = 'running'"
        ),
        0
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM schedule_runs WHERE status = 'running'"
        ),
        0
    );
    assert!(
        count(
            &db,
            "SELECT count(*) FROM schedule_runs WHERE status = 'failed'"
        ) >= 1
    );
}

#[test]
fn the_daemon_tick_drives_the_outbox_due_scan() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let target = dir.path().join("delivered");
    let target_arg = target.to_str().expect("utf-8");
    assert!(lionrt(&db, &["state", "init"]).status.success());
    let q = lionrt(
        &db,
        &[
            "outbox",
            "enqueue",
            target_arg,
            "--",
            "/usr/bin/touch",
            "{payload}",
        ],
    );
    assert!(q.status.success(), "{q:?}");
    // Without --outbox the tick leaves the row alone.
    assert!(lionrt(&db, &["daemon", "--ticks", "1"]).status.success());
    assert!(!target.exists());
    let d = lionrt(&db, &["daemon", "--outbox", "--ticks", "1"]);
    assert!(d.status.success(), "{d:?}");
    assert!(target.exists(), "the tick's scan ran the row's template");
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM dispatch_outbox WHERE status = 'pending'"
        ),
        0
    );
}
