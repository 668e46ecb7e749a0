//! `lionrt schedule` and `lionrt daemon` with real processes: the verbs, an
//! atomic apply, a trigger through the runner, SIGTERM as graceful
//! shutdown, a SIGKILLed daemon whose restart leaves no orphan, and a
//! daemon start that ends only the runs of dead daemons and of this host's
//! dead triggers (another host's trigger keeps its run).

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
    // A dry run shows the plan and writes nothing; without --prune the
    // unlisted schedule is kept.
    let before = std::fs::read(&db).expect("db");
    let r = stdout_json(&lionrt(
        &db,
        &["--json", "schedule", "apply", set_arg, "--dry-run"],
    ));
    assert_eq!(r["dry_run"], true);
    assert_eq!(r["updated"], serde_json::json!(["a"]));
    assert_eq!(r["deleted"], serde_json::json!([]));
    let r = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "schedule",
            "apply",
            set_arg,
            "--dry-run",
            "--prune",
        ],
    ));
    assert_eq!(r["deleted"], serde_json::json!(["b"]));
    let ls = stdout_json(&lionrt(&db, &["--json", "schedule", "ls"]));
    assert_eq!(ls[0]["spec"]["trigger"]["interval"]["seconds"], 60);
    assert_eq!(ls.as_array().map(Vec::len), Some(2));
    assert_eq!(
        std::fs::read(&db).expect("db"),
        before,
        "a dry run writes nothing"
    );

    let r = stdout_json(&lionrt(&db, &["--json", "schedule", "apply", set_arg]));
    assert_eq!(r["updated"], serde_json::json!(["a"]));
    assert_eq!(r["deleted"], serde_json::json!([]));
    assert_eq!(r["unchanged"], serde_json::json!(["b"]));
    let r = stdout_json(&lionrt(
        &db,
        &["--json", "schedule", "apply", set_arg, "--prune"],
    ));
    assert_eq!(r["deleted"], serde_json::json!(["b"]));
    let ls = stdout_json(&lionrt(&db, &["--json", "schedule", "ls"]));
    assert_eq!(ls.as_array().map(Vec::len), Some(1));
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

/// `lionrt --db <url>` with the tables in `schema`.
fn lionrt_pg(url: &str, schema: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(url)
        .args(args)
        .env_remove("LIONRT_DB")
        .env("LIONRT_PG_SCHEMA", schema)
        .output()
        .expect("run lionrt")
}

fn pg_daemon(url: &str, schema: &str, stderr: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(url)
        .args(["daemon", "--interval", "0.1"])
        .env_remove("LIONRT_DB")
        .env("LIONRT_PG_SCHEMA", schema)
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start lionrt daemon")
}

/// The server (`LIONRT_TEST_PG`) and a schema of this test's own, dropped
/// at the end; `None` (after saying why) without a server.
struct PgSchema {
    url: String,
    name: String,
}

impl PgSchema {
    fn new(tag: &str) -> Option<Self> {
        let Ok(url) = std::env::var("LIONRT_TEST_PG") else {
            #[allow(clippy::print_stderr, reason = "a skipped test says why")]
            {
                eprintln!(
                    "skipped: LIONRT_TEST_PG is unset (start a server with `eval \"$(.ci/pg-cluster start)\"`)"
                );
            }
            return None;
        };
        let name = format!("lionrt_sched_{tag}_{}", std::process::id());
        Some(Self { url, name })
    }

    fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).expect("connect")
    }

    fn count(&self, sql: &str) -> i64 {
        self.client()
            .query_one(&sql.replace("{s}", &self.name), &[])
            .expect("count")
            .get(0)
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        lionrt_pg(&self.url, &self.name, args)
    }

    /// `lionrt schedule create NAME --every SECS --prompt PROMPT
    /// --workspace WS` and `extra`, which must succeed.
    fn create_every(&self, name: &str, every: &str, prompt: &str, ws: &Path, extra: &[&str]) {
        let mut args = vec![
            "schedule",
            "create",
            name,
            "--every",
            every,
            "--prompt",
            prompt,
            "--workspace",
            ws.to_str().expect("utf-8"),
        ];
        args.extend_from_slice(extra);
        let out = self.run(&args);
        assert!(out.status.success(), "{out:?}");
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}

#[test]
fn the_schedule_verbs_work_on_postgres() {
    let Some(pg) = PgSchema::new("verbs") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().to_str().expect("utf-8");
    let out = pg.run(&[
        "--json",
        "schedule",
        "create",
        "nightly",
        "--cron",
        "0 3 * * *",
        "--tz",
        "Europe/Berlin",
        "--prompt",
        "p",
        "--workspace",
        ws,
    ]);
    assert!(out.status.success(), "{out:?}");
    let created = stdout_json(&out);
    assert_eq!(created["status"], "enabled");
    assert_eq!(created["spec"]["trigger"]["cron"]["tz"], "Europe/Berlin");
    let bad = pg.run(&[
        "schedule",
        "create",
        "x",
        "--cron",
        "0 3 * * *",
        "--tz",
        "Nowhere/Atlantis",
        "--prompt",
        "p",
    ]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("time zone"),
        "{bad:?}"
    );

    let ls = stdout_json(&pg.run(&["--json", "schedule", "ls"]));
    assert_eq!(ls.as_array().map(Vec::len), Some(1));
    let show = stdout_json(&pg.run(&["--json", "schedule", "show", "nightly"]));
    assert_eq!(show["spec"]["name"], "nightly");
    let off = stdout_json(&pg.run(&["--json", "schedule", "disable", "nightly"]));
    assert_eq!(off["status"], "disabled");
    let on = stdout_json(&pg.run(&["--json", "schedule", "enable", "nightly"]));
    assert_eq!(on["status"], "enabled");

    // trigger: fires now through the runner, recording in PostgreSQL.
    let trig = pg.run(&["--json", "schedule", "trigger", "nightly"]);
    assert!(trig.status.success(), "{trig:?}");
    let runs = stdout_json(&trig);
    assert_eq!(runs[0]["status"], "completed", "{runs}");
    let session = runs[0]["session_id"].as_str().expect("session").to_owned();
    assert_eq!(
        pg.count(&format!(
            "SELECT count(*) FROM {{s}}.sessions WHERE id = '{session}' AND status = 'completed'"
        )),
        1
    );
    let listed = stdout_json(&pg.run(&["--json", "schedule", "runs", "nightly"]));
    assert_eq!(listed.as_array().map(Vec::len), Some(1));

    // validate and apply: one transaction on the server.
    let set = dir.path().join("set.json");
    std::fs::write(
        &set,
        format!(
            r#"[{{"name": "nightly", "trigger": {{"cron": {{"expr": "0 4 * * *", "tz": "Europe/Berlin"}}}}, "run": {{"prompt": "p", "workspace": "{ws}"}}}},
                {{"name": "poll", "trigger": {{"interval": {{"seconds": 60}}}}, "run": {{"prompt": "p", "workspace": "{ws}"}}}}]"#
        ),
    )
    .expect("set");
    let set_arg = set.to_str().expect("utf-8");
    assert!(pg.run(&["schedule", "validate", set_arg]).status.success());
    let r = stdout_json(&pg.run(&["--json", "schedule", "apply", set_arg]));
    assert_eq!(r["created"], serde_json::json!(["poll"]));
    assert_eq!(r["updated"], serde_json::json!(["nightly"]));

    assert!(pg.run(&["schedule", "delete", "nightly"]).status.success());
    assert!(!pg.run(&["schedule", "show", "nightly"]).status.success());
    assert_eq!(
        pg.count("SELECT count(*) FROM {s}.schedules WHERE status != 'deleted'"),
        1
    );
}

#[test]
fn a_daemon_on_postgres_fires_runs_and_a_second_daemon_is_refused_by_the_advisory_lock() {
    let Some(pg) = PgSchema::new("daemon") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    pg.create_every("tick", "1", "p", dir.path(), &[]);
    let mut first = pg_daemon(&pg.url, &pg.name, Stdio::null());
    let completed = "SELECT count(*) FROM {s}.schedule_runs WHERE status = 'completed'";
    assert!(
        wait_until(Duration::from_secs(60), || pg.count(completed) >= 1),
        "the daemon fired a run that completed"
    );
    // A second daemon on the same schema (another host, in effect) finds
    // the advisory lock held and exits without ticking.
    let second = pg_daemon(&pg.url, &pg.name, Stdio::piped())
        .wait_with_output()
        .expect("second daemon");
    assert!(!second.status.success());
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("advisory lock"), "{err}");
    assert!(
        first.try_wait().expect("poll").is_none(),
        "the first still ticks"
    );

    rustix::process::kill_process(
        rustix::process::Pid::from_child(&first),
        rustix::process::Signal::TERM,
    )
    .expect("SIGTERM");
    let status = first.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    assert_eq!(
        pg.count("SELECT count(*) FROM {s}.schedule_runs WHERE status = 'running'"),
        0,
        "no run left running after a graceful stop"
    );
    // Released with its connection: a new daemon may tick.
    let mut again = pg_daemon(&pg.url, &pg.name, Stdio::null());
    let before = pg.count(completed);
    assert!(
        wait_until(Duration::from_secs(60), || pg.count(completed) > before),
        "the next daemon ticks"
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&again),
        rustix::process::Signal::TERM,
    )
    .expect("SIGTERM");
    assert!(again.wait().expect("wait").success());
}

#[test]
fn schedule_and_daemon_never_print_a_postgres_password() {
    // Nothing listens on loopback port 1: the connection is refused.
    let url = "postgres://lionrt:hunter2secret@127.0.0.1:1/lionrt?connect_timeout=2";
    for args in [
        &["schedule", "ls"][..],
        &["schedule", "trigger", "x"][..],
        &["daemon", "--ticks", "1"][..],
    ] {
        let out = lionrt_pg(url, "lionrt", args);
        assert!(!out.status.success(), "{args:?}");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!all.contains("hunter2secret"), "{args:?}: {all}");
        assert!(all.contains("lionrt:***@127.0.0.1:1"), "{args:?}: {all}");
    }
}

#[test]
fn a_sigkilled_daemon_on_postgres_restarts_with_no_orphan_and_no_running_session() {
    let Some(pg) = PgSchema::new("sigkill") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("slow.json");
    std::fs::write(&script, SLOW).expect("script");
    pg.create_every(
        "slow",
        "1",
        "slow",
        dir.path(),
        &["--script", script.to_str().expect("utf-8")],
    );
    let leg = || -> Option<i64> {
        pg.client()
            .query_opt(
                &format!(
                    "SELECT leg_pgid FROM {}.sessions WHERE status = 'running' AND leg_pid IS NOT NULL LIMIT 1",
                    pg.name
                ),
                &[],
            )
            .ok()
            .flatten()
            .and_then(|r| r.get(0))
    };
    let mut d = pg_daemon(&pg.url, &pg.name, Stdio::null());
    assert!(
        wait_until(Duration::from_secs(60), || leg().is_some()),
        "the daemon fired the schedule"
    );
    let pgid = leg().expect("leg");
    d.kill().expect("SIGKILL the daemon");
    let _ = d.wait();
    assert!(
        wait_until(Duration::from_secs(30), || !group_alive(pgid)),
        "no orphaned leg"
    );
    let running = "SELECT count(*) FROM {s}.sessions WHERE status = 'running'";
    assert!(pg.count(running) >= 1);

    // A session that `lionrt run` keeps running on another host (another
    // boot): the restarted daemon must leave it alone.
    pg.client()
        .batch_execute(&format!(
            "INSERT INTO {}.sessions (id, status, created_at, updated_at, owner_pid, owner_start_time, owner_boot_id)
             VALUES ('run-on-host-b', 'running', 1, 1, 1, 1, 'boot-of-another-host')",
            pg.name
        ))
        .expect("a session of another host");
    // One that names its host (another one), in this very boot: never this
    // daemon's to judge, though its owner pid names nobody here.
    pg.client()
        .batch_execute(&format!(
            "INSERT INTO {}.sessions (id, status, created_at, updated_at, owner_pid, owner_start_time, owner_boot_id, owner_host_id)
             VALUES ('run-on-host-c', 'running', 1, 1, 1, 1, '{}', 'machine-c:host-c')",
            pg.name,
            runner::boot_id().expect("boot id")
        ))
        .expect("a session of another named host");
    // The dead daemon ran on another host as far as the store knows (a
    // failover): this daemon takes the tick lock, so the sessions of its
    // still-running schedule runs are vouched for as gone and ended, with
    // no signal.
    let moved = pg
        .client()
        .execute(
            &format!(
                "UPDATE {}.sessions SET owner_host_id = 'machine-b:host-b' WHERE status = 'running' AND id NOT LIKE 'run-on-host-%'",
                pg.name
            ),
            &[],
        )
        .expect("move the dead daemon's sessions to host b");
    assert!(moved >= 1);

    // The server released the dead daemon's advisory lock with its
    // connection: the restart takes it, sweeps the session and ends the run.
    assert!(pg.run(&["schedule", "disable", "slow"]).status.success());
    let restart = pg.run(&["--json", "daemon", "--ticks", "1"]);
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
        pg.count(
            "SELECT count(*) FROM {s}.sessions WHERE status = 'running' AND id NOT LIKE 'run-on-host-%'"
        ),
        0
    );
    assert_eq!(
        pg.count(
            "SELECT count(*) FROM {s}.sessions WHERE status = 'running' AND id LIKE 'run-on-host-%'"
        ),
        2,
        "another host's session is not the daemon's to sweep"
    );
    assert_eq!(
        pg.count("SELECT count(*) FROM {s}.schedule_runs WHERE status = 'running'"),
        0
    );
    assert!(pg.count("SELECT count(*) FROM {s}.schedule_runs WHERE status = 'failed'") >= 1);
}

#[test]
fn the_daemon_on_postgres_drives_a_mirror_pass_on_its_tick() {
    let Some(pg) = PgSchema::new("mirror") else {
        return;
    };
    let home = tempfile::tempdir().expect("home");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/transcript-mirror");
    std::fs::create_dir_all(home.path().join(".claude")).expect("dir");
    std::fs::create_dir_all(home.path().join(".codex")).expect("dir");
    std::os::unix::fs::symlink(
        fixtures.join("claude"),
        home.path().join(".claude/projects"),
    )
    .expect("link");
    std::os::unix::fs::symlink(fixtures.join("codex"), home.path().join(".codex/sessions"))
        .expect("link");
    let out = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(&pg.url)
        .args(["daemon", "--mirror", "--ticks", "1"])
        .env_remove("LIONRT_DB")
        .env("LIONRT_PG_SCHEMA", &pg.name)
        .env("HOME", home.path())
        .output()
        .expect("run lionrt daemon");
    assert!(out.status.success(), "{out:?}");
    // The pass ran on the hook's thread and the daemon waited for it before
    // exiting: the fixtures' messages are in PostgreSQL.
    assert_eq!(pg.count("SELECT count(*) FROM {s}.messages"), 19, "{out:?}");
    assert_eq!(
        pg.count("SELECT count(*) FROM {s}.sessions WHERE kind = 'mirrored'"),
        3
    );
}

#[test]
fn the_daemon_on_postgres_drives_the_outbox_due_scan() {
    let Some(pg) = PgSchema::new("outbox") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("delivered");
    let target_arg = target.to_str().expect("utf-8");
    let q = pg.run(&[
        "outbox",
        "enqueue",
        target_arg,
        "--",
        "/usr/bin/touch",
        "{payload}",
    ]);
    assert!(q.status.success(), "{q:?}");
    // Without --outbox the tick leaves the row alone.
    assert!(pg.run(&["daemon", "--ticks", "1"]).status.success());
    assert!(!target.exists());
    let d = pg.run(&["daemon", "--outbox", "--ticks", "1"]);
    assert!(d.status.success(), "{d:?}");
    assert!(target.exists(), "the tick's scan ran the row's template");
    assert_eq!(
        pg.count("SELECT count(*) FROM {s}.dispatch_outbox WHERE status = 'pending'"),
        0
    );
}

/// A disabled hourly schedule `remote` on a PostgreSQL schema, with its
/// store, for runs claimed and sessions recorded as other processes (and
/// hosts) would.
struct Remote {
    store: state_postgres::PgStore,
    schedules: scheduler::PgSchedules,
    schedule_id: String,
}

impl Remote {
    fn new(pg: &PgSchema, workspace: &Path) -> Self {
        use lifecycle_core::{Actor, ActorType};
        pg.create_every("remote", "3600", "p", workspace, &["--disabled"]);
        let engine = state_postgres::PgEngine::open(
            &state_postgres::PgConfig::new(state_postgres::DbUrl::new(pg.url.clone()))
                .with_schema(pg.name.clone()),
        )
        .expect("open the schema");
        let store = state_postgres::PgStore::new(engine);
        let schedules =
            scheduler::PgSchedules::new(store.clone(), Actor::new(ActorType::Operator, "test"));
        let schedule_id = scheduler::ScheduleStore::get(&schedules, "remote")
            .expect("read")
            .expect("stored")
            .id;
        Self {
            store,
            schedules,
            schedule_id,
        }
    }

    /// Run `id` (its session `id` too), due at `at`, claimed by `claimed_by`.
    fn claim(&self, id: &str, at: i64, claimed_by: Option<String>) {
        use lifecycle_core::{Actor, ActorType};
        let start = scheduler::RunStart {
            run_id: id.to_owned(),
            schedule_id: self.schedule_id.clone(),
            max_concurrent: 100,
            due_at: at,
            fired_at: at,
            session_id: id.to_owned(),
            claimed_by,
        };
        let claim = scheduler::ScheduleStore::claim_run(
            &self.schedules,
            &start,
            &Actor::new(ActorType::Scheduler, "test"),
        )
        .expect("claim");
        assert_eq!(claim, scheduler::Claim::Started, "{id}");
    }

    /// Session `id` recorded `running`, owned by `owner`.
    fn start_session(&self, id: &str, owner: &lifecycle_core::OwnerRecord) {
        use lifecycle_core::{Actor, ActorType, SessionStart};
        let s = SessionStart {
            owner: Some(owner.clone()),
            ..SessionStart::new(id, "run.started.ok")
        };
        self.store
            .persist_session_start(&s, &Actor::new(ActorType::Executor, "test"))
            .expect("session");
    }
}

/// A claim as a scheduler stores it on a run's `leased_by`: its role
/// (`daemon` or `trigger`) and its process as a session owner.
fn claim_text(role: &str, owner: &lifecycle_core::OwnerRecord) -> String {
    serde_json::json!({"role": role, "owner": owner}).to_string()
}

/// A pid that names no process now, on `host` in this boot.
fn gone_owner(host: &str) -> lifecycle_core::OwnerRecord {
    let mut child = Command::new("true").spawn().expect("spawn");
    let pid = child.id();
    child.wait().expect("reap");
    lifecycle_core::OwnerRecord {
        pid: i64::from(pid),
        start_time: Some(12_345),
        boot_id: runner::boot_id(),
        host_id: Some(host.to_owned()),
    }
}

/// A live `sleep` in a group of its own: the leg a session of another host
/// names (its pid and start time are real here, so a signal sent on the
/// record's word would reach it).
struct LiveLeg(Child);

impl LiveLeg {
    fn spawn() -> (Self, lifecycle_core::LegRecord) {
        let child = Command::new("sleep")
            .arg("300")
            .process_group(0)
            .spawn()
            .expect("spawn a leg");
        let pid = i64::from(child.id());
        let create_time = i32::try_from(child.id())
            .ok()
            .and_then(|p| procfs::process::Process::new(p).ok())
            .and_then(|p| p.stat().ok())
            .and_then(|s| i64::try_from(s.starttime).ok());
        assert!(create_time.is_some(), "the leg's start time is readable");
        (
            Self(child),
            lifecycle_core::LegRecord {
                pid,
                pgid: pid,
                create_time,
            },
        )
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().expect("poll the leg").is_none()
    }
}

impl Drop for LiveLeg {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Two hosts on one PostgreSQL store: runs claimed by triggers and daemons
/// of this host (A) and of another (B), then `lionrt daemon` starts on A.
/// It vouches for the sessions of daemon-claimed runs only (it holds the
/// tick lock, so their daemon is gone, on whatever host): a trigger's run
/// on host B with a live session is left running, its leg unsignalled,
/// while this host's dead daemon's and dead trigger's runs end, and host
/// B's dead daemon's run ends with no signal sent.
#[test]
fn a_daemon_starting_on_postgres_leaves_another_hosts_trigger_run_running() {
    use lifecycle_core::leg_columns;
    use scheduler::ScheduleStore;

    let Some(pg) = PgSchema::new("claims") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let remote = Remote::new(&pg, dir.path());
    let (store, schedules) = (&remote.store, &remote.schedules);

    let host_a = runner::host_id().expect("this host has an identity");
    let host_b = "machine-b:host-b";
    let alive_here = runner::current_owner(&cli_supervisor::ProcTable);
    assert!(alive_here.start_time.is_some());
    let (mut leg, leg_record) = LiveLeg::spawn();
    // (run and session id, claimer role, claimer, whether its session is
    // recorded (owned by the claimer), whether a live leg is recorded)
    let cases = [
        ("trigger-b", Some("trigger"), gone_owner(host_b), true, true),
        (
            "trigger-b-unrecorded",
            Some("trigger"),
            gone_owner(host_b),
            false,
            false,
        ),
        ("unclaimed-b", None, gone_owner(host_b), true, false),
        (
            "daemon-a-gone",
            Some("daemon"),
            gone_owner(&host_a),
            true,
            false,
        ),
        ("daemon-b", Some("daemon"), gone_owner(host_b), true, true),
        (
            "trigger-a-gone",
            Some("trigger"),
            gone_owner(&host_a),
            true,
            false,
        ),
        ("trigger-a-alive", Some("trigger"), alive_here, true, false),
    ];
    for (at, (id, role, owner, recorded, with_leg)) in (1_i64..).zip(&cases) {
        remote.claim(id, at, role.map(|r| claim_text(r, owner)));
        if *recorded {
            remote.start_session(id, owner);
            if *with_leg {
                assert!(
                    store
                        .update_session(id, &leg_columns(&leg_record))
                        .expect("leg")
                );
            }
        }
    }

    let started = pg.run(&["--json", "daemon", "--ticks", "1"]);
    assert!(started.status.success(), "{started:?}");
    let report: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&started.stdout)
            .lines()
            .next()
            .unwrap_or_default(),
    )
    .expect("json");

    let runs = schedules.runs(Some("remote"), 100).expect("runs");
    let run = |id: &str| {
        let r = runs.iter().find(|r| r.id == id).expect("the run");
        (r.status.clone(), r.reason.clone())
    };
    let session = |id: &str| {
        let s = store.session(id).expect("read").expect("the session");
        (s.status, s.reason_code)
    };
    let ended = ("failed".to_owned(), Some("run.failed.exception".to_owned()));
    let orphaned = ("failed".to_owned(), Some(runner::ORPHAN_REASON.to_owned()));
    // Another host's trigger still runs: neither its session nor its run
    // is this daemon's to end, and its leg got no signal.
    assert_eq!(run("trigger-b").0, "running", "{report}");
    assert_eq!(session("trigger-b").0, "running", "{report}");
    assert_eq!(run("trigger-b-unrecorded").0, "running", "{report}");
    // A run with no claim (from before claims were recorded) on another
    // host may be a live trigger's too: left to that host.
    assert_eq!(run("unclaimed-b").0, "running", "{report}");
    assert_eq!(session("unclaimed-b").0, "running", "{report}");
    // This host's live trigger is judged by its process: left running.
    assert_eq!(run("trigger-a-alive").0, "running", "{report}");
    assert_eq!(session("trigger-a-alive").0, "running", "{report}");
    // Dead daemons (here and on host B) and this host's dead trigger: their
    // sessions end as orphaned and their runs as their sessions did.
    for id in ["daemon-a-gone", "daemon-b", "trigger-a-gone"] {
        assert_eq!(session(id), orphaned, "{id}: {report}");
        assert_eq!(run(id), ended, "{id}: {report}");
    }
    assert!(leg.alive(), "another host's leg was signalled");
    let mut swept: Vec<&str> = report["started"]["preamble"]["stale_runs_ended"]
        .as_array()
        .expect("stale runs")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    swept.sort_unstable();
    assert_eq!(
        swept,
        ["daemon-a-gone", "daemon-b", "trigger-a-gone"],
        "{report}"
    );
    // The store is closed before the schema is dropped.
    drop(remote);
}

fn trigger_process(db: &Path, name: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(db)
        .args(["schedule", "trigger", name])
        .env_remove("LIONRT_DB")
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start lionrt schedule trigger")
}

/// The running sessions that have recorded their leg.
fn sessions_with_legs(db: &Path) -> Vec<String> {
    let c = conn(db);
    let mut stmt = c
        .prepare("SELECT id FROM sessions WHERE status = 'running' AND leg_pid IS NOT NULL")
        .expect("prepare");
    stmt.query_map([], |r| r.get(0))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}

/// A disabled hourly schedule `manual` (fired by hand) whose leg sleeps,
/// at most `max_concurrent` runs at once.
fn manual_schedule(dir: &Path, db: &Path, max_concurrent: u32) {
    let script = dir.join("slow.json");
    std::fs::write(&script, SLOW).expect("script");
    let cap = max_concurrent.to_string();
    let out = lionrt(
        db,
        &[
            "schedule",
            "create",
            "manual",
            "--every",
            "3600",
            "--prompt",
            "slow",
            "--workspace",
            dir.to_str().expect("utf-8"),
            "--script",
            script.to_str().expect("utf-8"),
            "--max-concurrent",
            &cap,
            "--disabled",
        ],
    );
    assert!(out.status.success(), "{out:?}");
}

/// A running `lionrt daemon`, killed with its group if a test fails
/// before [`Daemon::stop`].
struct Daemon(Option<Child>);

impl Daemon {
    /// `lionrt daemon --interval 0.1 --recheck RECHECK` on `db` (a
    /// PostgreSQL one in `schema`), returned once it has started: its
    /// first line is printed after its orphan sweep and preamble.
    fn start(db: &std::ffi::OsStr, schema: Option<&str>, recheck: &str) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lionrt"));
        command
            .arg("--db")
            .arg(db)
            .args(["daemon", "--interval", "0.1", "--recheck", recheck])
            .env_remove("LIONRT_DB")
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(schema) = schema {
            command.env("LIONRT_PG_SCHEMA", schema);
        }
        let mut child = command.spawn().expect("start lionrt daemon");
        let stdout = child.stdout.take().expect("the daemon's stdout");
        let daemon = Self(Some(child));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = std::io::BufReader::new(stdout);
            let mut first = String::new();
            let _ = std::io::BufRead::read_line(&mut stdout, &mut first);
            let _ = tx.send(first);
            let _ = std::io::copy(&mut stdout, &mut std::io::sink());
        });
        let started = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the daemon's first line");
        assert!(started.contains("ticking every"), "{started}");
        daemon
    }

    /// SIGTERM; the daemon must then exit 0.
    fn stop(mut self) {
        let mut child = self.0.take().expect("running");
        rustix::process::kill_process(
            rustix::process::Pid::from_child(&child),
            rustix::process::Signal::TERM,
        )
        .expect("SIGTERM the daemon");
        let exit = child.wait().expect("wait for the daemon");
        assert!(exit.success(), "{exit:?}");
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            if let Some(group) = rustix::process::Pid::from_raw(child.id().cast_signed()) {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
            let _ = child.wait();
        }
    }
}

fn run_of(db: &Path, session: &str) -> (String, Option<String>) {
    conn(db)
        .query_row(
            "SELECT status, status_reason_code FROM schedule_runs WHERE session_id = ?1",
            [session],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the run")
}

/// One host, real `lionrt schedule trigger` processes: a daemon starting
/// while one trigger runs and another was SIGKILLed ends the dead
/// trigger's session (orphaned) and run, and leaves the live one's, which
/// the trigger then ends itself. Nothing stays `running`.
#[test]
fn a_daemon_start_on_sqlite_ends_a_sigkilled_triggers_run_and_spares_a_live_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    manual_schedule(dir.path(), &db, 2);
    let mut dead = trigger_process(&db, "manual");
    assert!(
        wait_until(Duration::from_secs(60), || sessions_with_legs(&db).len()
            == 1),
        "the first trigger's leg runs"
    );
    let dead_session = sessions_with_legs(&db).remove(0);
    dead.kill().expect("SIGKILL the trigger");
    dead.wait().expect("reap the trigger");
    let mut live = trigger_process(&db, "manual");
    assert!(
        wait_until(Duration::from_secs(60), || sessions_with_legs(&db).len()
            == 2),
        "the second trigger's leg runs"
    );
    let live_session = sessions_with_legs(&db)
        .into_iter()
        .find(|s| *s != dead_session)
        .expect("the live trigger's session");

    let started = lionrt(&db, &["--json", "daemon", "--ticks", "1"]);
    assert!(started.status.success(), "{started:?}");
    let (status, reason): (String, Option<String>) = conn(&db)
        .query_row(
            "SELECT status, status_reason_code FROM sessions WHERE id = ?1",
            [&dead_session],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the dead trigger's session");
    assert_eq!(
        (status.as_str(), reason.as_deref()),
        ("failed", Some(runner::ORPHAN_REASON))
    );
    assert_eq!(
        run_of(&db, &dead_session),
        ("failed".to_owned(), Some("run.failed.exception".to_owned()))
    );
    assert_eq!(run_of(&db, &live_session).0, "running");
    assert!(
        sessions_with_legs(&db).contains(&live_session),
        "the live trigger's session still runs"
    );

    // The live trigger ends its own run (SIGTERM: cancelled through its
    // supervisor), and nothing is left running.
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&live),
        rustix::process::Signal::TERM,
    )
    .expect("SIGTERM the trigger");
    let _ = live.wait().expect("wait for the trigger");
    assert_eq!(run_of(&db, &live_session).0, "cancelled");
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM schedule_runs WHERE status = 'running'"
        ),
        0
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM sessions WHERE status = 'running'"
        ),
        0
    );
}

/// A trigger SIGKILLed while a daemon ticks on its host is cleaned up by
/// the running daemon, not only at its next start: its sweep ends the
/// orphaned session (and kills the leg's group), its re-check then ends
/// the run. The daemon's own state is untouched and it stops cleanly.
#[test]
fn a_ticking_daemon_sweeps_a_trigger_sigkilled_meanwhile_and_ends_its_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    manual_schedule(dir.path(), &db, 1);
    // The daemon has started before the trigger starts, so only the
    // running daemon, not its start, can clean up.
    let daemon = Daemon::start(db.as_os_str(), None, "0.3");
    let mut dead = trigger_process(&db, "manual");
    assert!(
        wait_until(Duration::from_secs(60), || sessions_with_legs(&db).len()
            == 1),
        "the trigger's leg runs"
    );
    let session = sessions_with_legs(&db).remove(0);
    let (_, pgid) = running_leg(&db).expect("the leg's group");
    assert_eq!(run_of(&db, &session).0, "running");
    dead.kill().expect("SIGKILL the trigger");
    dead.wait().expect("reap the trigger");

    let ended = wait_until(Duration::from_secs(120), || {
        run_of(&db, &session).0 != "running"
    });
    assert!(ended, "the running daemon ends the dead trigger's run");
    assert_eq!(
        run_of(&db, &session),
        ("failed".to_owned(), Some("run.failed.exception".to_owned()))
    );
    let (status, reason): (String, Option<String>) = conn(&db)
        .query_row(
            "SELECT status, status_reason_code FROM sessions WHERE id = ?1",
            [&session],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the session");
    assert_eq!(
        (status.as_str(), reason.as_deref()),
        ("failed", Some(runner::ORPHAN_REASON))
    );
    assert!(
        wait_until(Duration::from_secs(60), || !group_alive(pgid)),
        "the orphaned leg's group is gone"
    );

    daemon.stop();
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM schedule_runs WHERE status = 'running'"
        ),
        0
    );
}

/// Two hosts on one PostgreSQL store: a trigger's run on host B whose
/// session still runs is left alone by the daemon ticking on host A, and
/// is ended by that daemon's re-check once host B's sweep has ended its
/// session; this host's live trigger's run is never touched.
#[test]
fn a_ticking_daemon_on_postgres_ends_another_hosts_trigger_run_once_its_session_ended() {
    use lifecycle_core::{Actor, ActorType, SessionEnd};
    use scheduler::ScheduleStore;

    let Some(pg) = PgSchema::new("recheck") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let remote = Remote::new(&pg, dir.path());
    let (store, schedules) = (&remote.store, &remote.schedules);
    let executor = Actor::new(ActorType::Executor, "test");
    // Host B's triggers (gone from here's point of view: another host),
    // and this host's live one (this process).
    let cases = [
        ("trigger-b", gone_owner("machine-b:host-b")),
        ("marker-b-1", gone_owner("machine-b:host-b")),
        ("marker-b-2", gone_owner("machine-b:host-b")),
        ("marker-b-3", gone_owner("machine-b:host-b")),
        (
            "trigger-a-alive",
            runner::current_owner(&cli_supervisor::ProcTable),
        ),
    ];
    for (at, (id, owner)) in (1_i64..).zip(&cases) {
        remote.claim(id, at, Some(claim_text("trigger", owner)));
        remote.start_session(id, owner);
    }
    let status = |id: &str| {
        schedules
            .runs(Some("remote"), 100)
            .expect("runs")
            .into_iter()
            .find(|r| r.id == id)
            .map(|r| (r.status, r.reason))
            .expect("the run")
    };
    // Host B's sweep ends `ids`' sessions (or this host's trigger its own).
    let end_sessions = |ids: &[&str]| {
        for id in ids {
            let end = SessionEnd::new(*id, "failed", runner::ORPHAN_REASON, 10);
            store.persist_session_end(&end, &executor).expect("end");
        }
    };
    let ended = ("failed".to_owned(), Some("run.failed.exception".to_owned()));

    let daemon = Daemon::start(std::ffi::OsStr::new(&pg.url), Some(&pg.name), "0.3");
    // A marker's run ending proves re-checks ran while the other sessions
    // still ran: their runs are left.
    end_sessions(&["marker-b-1"]);
    assert!(
        wait_until(Duration::from_secs(120), || status("marker-b-1").0
            != "running"),
        "the ticking daemon ends a run whose session ended"
    );
    assert_eq!(status("marker-b-1"), ended);
    assert_eq!(status("trigger-b").0, "running");
    assert_eq!(status("trigger-a-alive").0, "running");

    // Host B's sweep ends its trigger's session; this host's live trigger
    // ends its session but not yet its run.
    end_sessions(&["trigger-b", "trigger-a-alive", "marker-b-2"]);
    assert!(
        wait_until(Duration::from_secs(120), || {
            status("trigger-b").0 != "running" && status("marker-b-2").0 != "running"
        }),
        "the ticking daemon ends host B's runs"
    );
    assert_eq!(status("trigger-b"), ended);
    // Whole looks since then (a third marker ends) passed over the live
    // trigger's run: its own to end.
    end_sessions(&["marker-b-3"]);
    assert!(
        wait_until(Duration::from_secs(120), || status("marker-b-3").0
            != "running"),
        "the ticking daemon looks again"
    );
    assert_eq!(status("trigger-a-alive").0, "running");
    daemon.stop();
}

/// Seconds that are not a positive number a clock can hold are refused
/// with a message naming the flag, never a panic (the daemon's before
/// anything starts; the mirror's, the outbox watch's and the monitor's
/// too).
#[test]
fn the_daemon_refuses_impossible_seconds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    for (flag, value) in [
        ("--interval", "1e30"),
        ("--interval", "0"),
        ("--interval", "NaN"),
        ("--recheck", "-1"),
        ("--recheck", "inf"),
        ("--recheck", "1e300"),
    ] {
        let arg = format!("{flag}={value}");
        let out = lionrt(&db, &["daemon", &arg, "--ticks", "1"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag} {value}: {stderr}");
        assert!(
            stderr.contains(&format!("{flag} must be a positive number of seconds")),
            "{flag} {value}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{flag} {value}: {stderr}");
    }
    assert!(!db.exists(), "nothing was started");
    // The other loops' intervals alike.
    assert!(lionrt(&db, &["state", "init"]).status.success());
    for (args, flag) in [
        (&["mirror", "--interval=1e30"][..], "--interval"),
        (&["outbox", "deliver", "--watch=1e30"][..], "--watch"),
        (&["outbox", "deliver", "--watch=-0"][..], "--watch"),
        (&["monitor", "--interval=NaN"][..], "--interval"),
    ] {
        let out = lionrt(&db, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("{flag} must be a positive number of seconds")),
            "{args:?}: {stderr}"
        );
    }
}

/// The tick lock belongs to the state file, whatever path reaches it: with
/// a daemon ticking `dir/state.db`, a daemon started on a symlink to it, a
/// hard link, a symlink to its directory, a `..` spelling or a relative
/// path is refused; once the first is SIGKILLed, the next starts.
#[test]
fn a_second_daemon_reaching_the_database_by_another_path_is_refused_until_the_first_is_killed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let first = Daemon::start(db.as_os_str(), None, "60");
    std::os::unix::fs::symlink("state.db", dir.path().join("link.db")).expect("symlink");
    std::fs::create_dir(dir.path().join("sub")).expect("sub");
    std::fs::hard_link(&db, dir.path().join("sub/hard.db")).expect("hard link");
    let alias = dir.path().join("alias");
    std::os::unix::fs::symlink(dir.path(), &alias).expect("symlink to the directory");
    let refused = |out: std::process::Output, how: &str| {
        assert!(!out.status.success(), "{how}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("another scheduler"),
            "{how}: {out:?}"
        );
    };
    for path in [
        dir.path().join("link.db"),
        dir.path().join("sub/hard.db"),
        alias.join("state.db"),
        dir.path().join("sub/../state.db"),
    ] {
        refused(
            lionrt(&path, &["daemon", "--ticks", "1"]),
            &path.display().to_string(),
        );
    }
    let relative = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .args(["--db", "../link.db", "daemon", "--ticks", "1"])
        .current_dir(dir.path().join("sub"))
        .env_remove("LIONRT_DB")
        .output()
        .expect("run lionrt");
    refused(relative, "../link.db from sub/");

    // SIGKILL (the guard's drop): the dead daemon's lock is free.
    drop(first);
    let next = lionrt(&dir.path().join("link.db"), &["daemon", "--ticks", "1"]);
    assert!(next.status.success(), "{next:?}");
}

/// Enqueues a notification whose command is `argv` (`{payload}` appended).
fn enqueue_command(db: &Path, payload: &Path, argv: &[&str]) {
    let mut args = vec!["outbox", "enqueue", payload.to_str().expect("utf-8"), "--"];
    args.extend_from_slice(argv);
    args.push("{payload}");
    let out = lionrt(db, &args);
    assert!(out.status.success(), "{out:?}");
}

/// `lionrt daemon --outbox` ticking every 0.1 s, each send given
/// `timeout_secs`, in its own process group.
fn outbox_daemon(db: &Path, timeout_secs: &str) -> Daemon {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lionrt"));
    command
        .arg("--db")
        .arg(db)
        .args(["daemon", "--interval", "0.1", "--outbox"])
        .args(["--outbox-timeout-secs", timeout_secs])
        .env_remove("LIONRT_DB")
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    Daemon(Some(command.spawn().expect("start lionrt daemon")))
}

/// `lionrt daemon --outbox` with a notification whose command never ends:
/// the send times out (`--outbox-timeout-secs`), the command's process is
/// killed, the row after it is delivered, and SIGTERM then ends the daemon.
#[test]
fn a_hanging_notification_times_out_and_the_daemon_delivers_the_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let pidfile = dir.path().join("hung.pid");
    let target = dir.path().join("delivered");
    assert!(lionrt(&db, &["state", "init"]).status.success());
    enqueue_command(
        &db,
        &pidfile,
        &["/bin/sh", "-c", "echo $$ > \"$0\"; exec sleep 1000"],
    );
    enqueue_command(&db, &target, &["/usr/bin/touch"]);
    let d = outbox_daemon(&db, "1");
    assert!(
        wait_until(Duration::from_secs(60), || target.exists()),
        "the row after the hanging one is delivered"
    );
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .expect("the hung command ran")
        .trim()
        .parse()
        .expect("a pid");
    let gone = || {
        rustix::process::test_kill_process(rustix::process::Pid::from_raw(pid).expect("a pid"))
            .is_err()
    };
    assert!(
        wait_until(Duration::from_secs(60), gone),
        "the hung command was killed at its timeout"
    );
    d.stop();
}

/// SIGTERM while a notification command hangs (its deadline far off): the
/// daemon ends within its grace and takes the command's group with it.
#[test]
fn sigterm_ends_the_daemon_and_the_notification_it_is_sending() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let pidfile = dir.path().join("hung.pid");
    assert!(lionrt(&db, &["state", "init"]).status.success());
    // A grandchild in the group too: the whole group must end.
    enqueue_command(
        &db,
        &pidfile,
        &["/bin/sh", "-c", "sleep 1000 & echo $$ $! > \"$0\"; wait"],
    );
    let mut daemon = outbox_daemon(&db, "250");
    let pids = || {
        std::fs::read_to_string(&pidfile)
            .ok()
            .filter(|s| s.ends_with('\n'))
    };
    assert!(
        wait_until(Duration::from_secs(60), || pids().is_some()),
        "the notification command started"
    );
    let pids: Vec<i32> = pids()
        .expect("pids")
        .split_whitespace()
        .map(|p| p.parse().expect("a pid"))
        .collect();
    let child = daemon.0.as_mut().expect("running");
    rustix::process::kill_process(
        rustix::process::Pid::from_child(child),
        rustix::process::Signal::TERM,
    )
    .expect("SIGTERM the daemon");
    let mut exited = None;
    assert!(
        wait_until(Duration::from_secs(30), || {
            exited = child.try_wait().expect("try_wait");
            exited.is_some()
        }),
        "the daemon ends within its grace while a send hangs"
    );
    assert!(exited.expect("exit").success(), "{exited:?}");
    daemon.0 = None;
    for pid in pids {
        // Ended: gone, or a zombie its new parent has not reaped yet.
        let gone = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
                stat.rsplit_once(") ")
                    .is_some_and(|(_, rest)| rest.starts_with('Z'))
            })
        };
        assert!(
            wait_until(Duration::from_secs(30), gone),
            "process {pid} of the notification's group outlived the daemon"
        );
    }
}

/// Ctrl-C on `schedule trigger` is recorded as the SIGINT it is (and
/// SIGTERM as SIGTERM), with the signal's conventional exit code.
#[test]
fn a_signalled_trigger_records_which_signal_ended_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    manual_schedule(dir.path(), &db, 2);
    for (signal, reason, code) in [
        (rustix::process::Signal::INT, "run.cancelled.sigint", 130),
        (rustix::process::Signal::TERM, "run.cancelled.sigterm", 143),
    ] {
        let mut trigger = trigger_process(&db, "manual");
        assert!(
            wait_until(Duration::from_secs(60), || sessions_with_legs(&db).len()
                == 1),
            "the trigger's leg runs"
        );
        let session = sessions_with_legs(&db).remove(0);
        rustix::process::kill_process(rustix::process::Pid::from_child(&trigger), signal)
            .expect("signal the trigger");
        let exit = trigger.wait().expect("wait for the trigger");
        assert_eq!(exit.code(), Some(code), "{signal:?}: {exit:?}");
        let (status, recorded): (String, Option<String>) = conn(&db)
            .query_row(
                "SELECT status, status_reason_code FROM sessions WHERE id = ?1",
                [&session],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("the trigger's session");
        assert_eq!(
            (status.as_str(), recorded.as_deref()),
            ("cancelled", Some(reason))
        );
        assert_eq!(run_of(&db, &session).0, "cancelled");
    }
}
