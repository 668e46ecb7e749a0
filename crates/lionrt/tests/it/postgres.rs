//! `--db postgres://…`: `run`, `kill`, `outbox`, `sessions`, `state`,
//! `monitor` and `lifecycle` on PostgreSQL (with a server from
//! `LIONRT_TEST_PG`), giving what they give on a SQLite file, and the
//! password never printed.

use std::process::{Command, Output};

fn lionrt_pg(db: &str, schema: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("LIONRT_DB")
        .env("LIONRT_PG_SCHEMA", schema)
        .output()
        .expect("run lionrt")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_postgres_password_is_never_printed() {
    // Nothing listens on loopback port 1: the connection is refused.
    let url = "postgres://lionrt:hunter2secret@127.0.0.1:1/lionrt?connect_timeout=2";
    for args in [
        &["kill", "--all-stale"][..],
        &["run", "--session", "x"][..],
        &["state", "history", "session", "x"][..],
        &["state", "health"][..],
        &["state", "stats"][..],
        &["state", "prune", "--dry-run"][..],
        &["state", "init"][..],
        &["state", "checkpoint"][..],
        &["outbox", "ls"][..],
        &["outbox", "deliver"][..],
        &["sessions", "ls"][..],
        &["sessions", "messages", "x"][..],
        &["monitor"][..],
        &["lifecycle", "x"][..],
    ] {
        let out = lionrt_pg(url, "lionrt", args);
        assert!(!out.status.success(), "{args:?}");
        let all = text(&out);
        assert!(!all.contains("hunter2secret"), "{args:?}: {all}");
        assert!(all.contains("lionrt:***@127.0.0.1:1"), "{args:?}: {all}");
    }
    // Every verb that reaches for the server says it was refused...
    for args in [
        &["kill", "--all-stale"][..],
        &["state", "history", "session", "x"][..],
        &["sessions", "ls"][..],
        &["outbox", "ls"][..],
    ] {
        let out = lionrt_pg(url, "lionrt", args);
        assert!(
            text(&out).contains("no PostgreSQL server answers"),
            "{args:?}: {}",
            text(&out)
        );
    }
    // ...and a verb that only means something for a SQLite file says so
    // without connecting.
    let out = lionrt_pg(url, "lionrt", &["state", "checkpoint"]);
    assert!(
        text(&out).contains("PostgreSQL checkpoints on its own"),
        "{}",
        text(&out)
    );
}

#[test]
fn run_and_kill_record_on_postgres() {
    let Ok(url) = std::env::var("LIONRT_TEST_PG") else {
        #[allow(clippy::print_stderr, reason = "a skipped test says why")]
        {
            eprintln!(
                "skipped: LIONRT_TEST_PG is unset (start a server with `eval \"$(.ci/pg-cluster start)\"`)"
            );
        }
        return;
    };
    let schema = format!("lionrt_cli_{}", std::process::id());
    let out = lionrt_pg(&url, &schema, &["--json", "run", "--session", "pg-demo"]);
    assert!(out.status.success(), "{}", text(&out));
    let v = crate::stdout_json(&out);
    assert_eq!(v["ok"], true);
    let statuses: Vec<&str> = v["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|t| t["to_status"].as_str())
        .collect();
    assert_eq!(statuses, ["running", "completed"]);
    // The run recorded in the database, not in a file: kill finds it there
    // (already ended) and the sweep finds nothing open.
    let out = lionrt_pg(
        &url,
        &schema,
        &["--json", "kill", "--all-stale", "--dry-run"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(crate::stdout_json(&out)["orphans"], serde_json::json!([]));
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let status: String = c
        .query_one(
            &format!("SELECT status FROM {schema}.sessions WHERE id = 'pg-demo'"),
            &[],
        )
        .expect("session row")
        .get(0);
    assert_eq!(status, "completed");
    c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .expect("drop");
}

/// The test server, or `None` (and why, on stderr).
fn server() -> Option<String> {
    let url = std::env::var("LIONRT_TEST_PG").ok();
    if url.is_none() {
        #[allow(clippy::print_stderr, reason = "a skipped test says why")]
        {
            eprintln!(
                "skipped: LIONRT_TEST_PG is unset (start a server with `eval \"$(.ci/pg-cluster start)\"`)"
            );
        }
    }
    url
}

/// One store the same commands run on: a SQLite file or a PostgreSQL
/// schema of its own (dropped at the end).
struct Target {
    db: String,
    schema: String,
    pg: Option<String>,
    dir: tempfile::TempDir,
}

impl Target {
    fn sqlite() -> Target {
        let dir = tempfile::tempdir().expect("tempdir");
        Target {
            db: dir.path().join("state.db").display().to_string(),
            schema: "unused".into(),
            pg: None,
            dir,
        }
    }

    fn postgres(url: &str, tag: &str) -> Target {
        Target {
            db: url.to_owned(),
            schema: format!("lionrt_{tag}_{}", std::process::id()),
            pg: Some(url.to_owned()),
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        lionrt_pg(&self.db, &self.schema, args)
    }

    fn spawn(&self, args: &[&str]) -> std::process::Child {
        Command::new(env!("CARGO_BIN_EXE_lionrt"))
            .arg("--db")
            .arg(&self.db)
            .args(args)
            .env_remove("LIONRT_DB")
            .env("LIONRT_PG_SCHEMA", &self.schema)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn lionrt")
    }

    /// `--json ARGS`, which must succeed, as JSON.
    fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        crate::stdout_json(&out)
    }

    /// `--json ARGS`, printing one JSON object per line.
    fn json_lines(&self, args: &[&str]) -> Vec<serde_json::Value> {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(url) = &self.pg
            && let Ok(mut c) = postgres::Client::connect(url, postgres::NoTls)
        {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}

fn strs(v: &serde_json::Value, key: &str) -> Vec<String> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x[key].as_str().unwrap_or("-").to_owned())
        .collect()
}

/// The read and write verbs of `state`, `sessions`, `monitor` and
/// `lifecycle` on `t`, checked as they go; returns what they showed with
/// times and process ids left out, for comparing two stores.
fn state_and_sessions(t: &Target) -> Vec<serde_json::Value> {
    use serde_json::json;
    let mut seen = Vec::new();
    assert!(t.json(&["state", "init"])["schema_version"].as_u64() >= Some(1));
    let run = t.json(&["run", "--session", "demo-1"]);
    assert_eq!(run["ok"], true, "{run}");
    // --resume finds the recorded session by prefix, and refuses another
    // provider before anything starts.
    let out = t.run(&[
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "claude",
        "--session",
        "never",
        "--resume",
        "demo",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("session demo-1 ran on scripted"),
        "{}",
        text(&out)
    );
    for id in ["open-1", "open-2"] {
        let v = t.json(&[
            "state",
            "create",
            "session",
            id,
            "running",
            "--reason",
            "run.started.ok",
        ]);
        assert_eq!(v["result"], "applied", "{v}");
    }
    // An ambiguous prefix is refused, naming the candidates.
    let out = t.run(&[
        "state",
        "transition",
        "session",
        "open",
        "completed",
        "--reason",
        "run.completed.ok",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("matches several session ids (open-1, open-2)"),
        "{}",
        text(&out)
    );
    let v = t.json(&[
        "state",
        "transition",
        "session",
        "open-2",
        "completed",
        "--reason",
        "run.completed.ok",
        "--expect",
        "running",
    ]);
    assert_eq!(v["result"], "applied", "{v}");
    // A stale expectation is a conflict (exit 3), as on any store.
    let out = t.run(&[
        "state",
        "transition",
        "session",
        "open-2",
        "failed",
        "--reason",
        "run.failed.exit_nonzero",
        "--expect",
        "running",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let history = t.json(&["state", "history", "session", "open-2"]);
    assert_eq!(strs(&history, "to_status"), ["running", "completed"]);
    let out = t.run(&["state", "history", "session", "nope"]);
    assert!(text(&out).contains("not found"), "{}", text(&out));

    let ls = t.json(&["sessions", "ls"]);
    assert_eq!(strs(&ls, "id"), ["open-2", "open-1", "demo-1"]);
    seen.push(json!(
        ls.as_array()
            .expect("rows")
            .iter()
            .map(|r| json!([r["id"], r["status"], r["messages"], r["provider"]]))
            .collect::<Vec<_>>()
    ));
    let open = t.json(&["sessions", "ls", "--open"]);
    assert_eq!(strs(&open, "id"), ["open-1"]);
    let show = t.json(&["sessions", "show", "demo"]);
    assert_eq!(show["session"]["status"], "completed");
    assert_eq!(show["session"]["messages"], 5);
    assert_eq!(
        strs(&show["history"], "to_status"),
        ["running", "completed"]
    );
    seen.push(json!([
        show["session"]["reason_code"],
        show["notify_outcome"]
    ]));
    let messages = t.json_lines(&["sessions", "messages", "demo-1"]);
    assert_eq!(messages.len(), 5);
    assert!(
        messages
            .windows(2)
            .all(|w| w[0]["seq"].as_i64() < w[1]["seq"].as_i64())
    );
    seen.push(json!(
        messages
            .iter()
            .map(|m| json!([m["id"], m["role"], m["content"]]))
            .collect::<Vec<_>>()
    ));
    let flight = t.json(&["monitor"]);
    assert_eq!(strs(&flight["sessions"], "id"), ["open-1"]);
    let timeline = t.json(&["lifecycle", "demo-1"]);
    assert_eq!(
        timeline["entities"],
        json!([{"entity_type": "session", "id": "demo-1"}])
    );
    assert_eq!(
        strs(&timeline["transitions"], "to_status"),
        ["running", "completed"]
    );
    let health = t.json(&["state", "health", "--all"]);
    assert_eq!(health["total"], 3);
    seen.push(json!([health["counts"], health["sessions"]]));
    let stats = t.json(&["state", "stats"]);
    let tables: std::collections::BTreeMap<String, i64> = stats["stats"]["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap_or("-").to_owned(),
                p[1].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    assert_eq!(tables.get("sessions"), Some(&3));
    assert_eq!(tables.get("messages"), Some(&5));
    seen.push(json!([
        tables.get("status_transitions"),
        stats["stats"]["sessions_by_status"]
    ]));
    let doctor = t.json(&["state", "doctor", "--dry-run"]);
    seen.push(doctor);

    // Retention: the two ended sessions go with their messages; the open
    // one and every history row stay.
    let dry = t.json(&["state", "prune", "--older-than", "1w", "--dry-run"]);
    assert_eq!(dry["prune"]["sessions"], 0);
    let pruned = t.json(&["state", "prune", "--older-than", "0s"]);
    assert_eq!(
        (
            pruned["prune"]["sessions"].clone(),
            pruned["prune"]["messages"].clone()
        ),
        (json!(2), json!(5)),
        "{pruned}"
    );
    assert_eq!(strs(&t.json(&["sessions", "ls"]), "id"), ["open-1"]);
    let kept = t.json(&["state", "history", "session", "demo-1"]);
    assert_eq!(strs(&kept, "to_status"), ["running", "completed"]);
    seen
}

#[test]
fn state_sessions_monitor_and_lifecycle_give_on_postgres_what_they_give_on_sqlite() {
    let Some(url) = server() else { return };
    let on_sqlite = state_and_sessions(&Target::sqlite());
    let on_postgres = state_and_sessions(&Target::postgres(&url, "parity"));
    assert_eq!(on_postgres, on_sqlite);
}

/// The outbox verbs on `t`, checked as they go; returns the reports and
/// statuses they showed, ids left out.
fn outbox_verbs(t: &Target) -> Vec<serde_json::Value> {
    use serde_json::json;
    t.json(&["state", "init"]);
    let sink = t.dir.path().join("sink.txt");
    let append = format!("printf '%s\\n' \"$1\" >> {}", sink.display());
    let enqueue = |payload: &str, extra: &[&str], template: &[&str]| {
        let mut args = vec!["outbox", "enqueue", payload];
        args.extend_from_slice(extra);
        args.push("--");
        args.extend_from_slice(template);
        t.json(&args)
    };
    let first = enqueue(
        "p1",
        &["--dedup-key", "run:1"],
        &["sh", "-c", &append, "sh", "{payload}"],
    );
    assert_eq!(first["created"], true);
    let again = enqueue("other", &["--dedup-key", "run:1"], &["/bin/true"]);
    assert_eq!(
        (again["id"].clone(), again["created"].clone()),
        (first["id"].clone(), json!(false))
    );
    let failing = enqueue("x", &["--max-attempts", "1"], &["/bin/false"]);
    let acked = enqueue("y", &["--ack-required"], &["/bin/true"]);
    let report = t.json(&[
        "outbox",
        "deliver",
        "--concurrency",
        "2",
        "--actor",
        "system:cli-test",
    ]);
    assert_eq!(
        (
            report["delivered"].clone(),
            report["dead_lettered"].clone(),
            report["rescheduled"].clone()
        ),
        (json!(1), json!(1), json!(1)),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(&sink).expect("sink"),
        "p1\n",
        "sent once"
    );
    let dead = t.json(&["outbox", "ls", "--status", "dead_letter"]);
    assert_eq!(dead.as_array().map(Vec::len), Some(1));
    let show = t.json(&["outbox", "show", first["id"].as_str().expect("id")]);
    assert_eq!(show["dispatch"]["status"], "delivered");
    assert_eq!(show["history"][1]["actor_id"], "cli-test");
    let acked = t.json(&[
        "outbox",
        "ack",
        acked["id"].as_str().expect("id"),
        "--actor",
        "webhook:c",
    ]);
    assert_eq!(acked["status"], "acked");
    let failed = failing["id"].as_str().expect("id");
    let out = t.run(&[
        "outbox",
        "retry",
        failed,
        "--actor",
        "agent:not-an-operator",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let revived = t.json(&["outbox", "retry", failed]);
    assert_eq!(revived[0]["revived"], true);
    let dry = t.json(&["outbox", "purge", "--older-than", "0", "--dry-run"]);
    assert_eq!(dry["ids"].as_array().map(Vec::len), Some(2), "{dry}");
    let gone = t.json(&["outbox", "purge", failed]);
    assert_eq!(gone["status"], "pending");
    let left = t.json(&["outbox", "ls"]);
    assert_eq!(strs(&left, "status").len(), 2);
    let swept = t.json(&["outbox", "sweep", "--older-than", "0"]);
    assert_eq!(swept["removed"], 2, "{swept}");
    vec![
        json!([report["examined"], report["sent_ok"], report["send_failed"]]),
        json!(strs(&show["history"], "to_status")),
        json!(strs(&left, "status")),
    ]
}

#[test]
fn the_outbox_verbs_give_on_postgres_what_they_give_on_sqlite() {
    let Some(url) = server() else { return };
    let on_sqlite = outbox_verbs(&Target::sqlite());
    let on_postgres = outbox_verbs(&Target::postgres(&url, "outbox"));
    assert_eq!(on_postgres, on_sqlite);
}

#[test]
fn deliver_processes_racing_on_one_postgres_outbox_send_each_row_once() {
    let Some(url) = server() else { return };
    let t = Target::postgres(&url, "race");
    let sink = t.dir.path().join("sink.txt");
    let append = format!("printf '%s\\n' \"$1\" >> {}", sink.display());
    const ROWS: usize = 24;
    for i in 0..ROWS {
        let payload = format!("row-{i}");
        t.json(&[
            "outbox",
            "enqueue",
            &payload,
            "--",
            "sh",
            "-c",
            &append,
            "sh",
            "{payload}",
        ]);
    }
    // Four scanners, as on four hosts: each row is claimed by one of them
    // (the others skip the locked row or lose the attempt CAS).
    let scanners: Vec<_> = (0..4)
        .map(|_| t.spawn(&["--json", "outbox", "deliver", "--concurrency", "2"]))
        .collect();
    let mut delivered = 0;
    for child in scanners {
        let out = child.wait_with_output().expect("scanner");
        assert!(out.status.success(), "{}", text(&out));
        delivered += crate::stdout_json(&out)["delivered"]
            .as_u64()
            .expect("count");
    }
    assert_eq!(
        delivered, ROWS as u64,
        "every row delivered by exactly one scanner"
    );
    let mut lines: Vec<String> = std::fs::read_to_string(&sink)
        .expect("sink")
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    let mut want: Vec<String> = (0..ROWS).map(|i| format!("row-{i}")).collect();
    want.sort();
    assert_eq!(lines, want, "each payload sent exactly once");
    let rows = t.json(&["outbox", "ls", "--status", "delivered"]);
    assert_eq!(rows.as_array().map(Vec::len), Some(ROWS));
}

/// `doctor` with `--db` naming `db`, as JSON, from an empty home.
fn doctor(db: &str, schema: &str) -> serde_json::Value {
    let home = tempfile::tempdir().expect("home");
    let out = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .args(["--db", db, "--json", "doctor", "--version-timeout", "1"])
        .env_remove("LIONRT_DB")
        .env_remove("LIONAGI_HOME")
        .env("HOME", home.path())
        .env("LIONRT_PG_SCHEMA", schema)
        .output()
        .expect("doctor");
    let all = text(&out);
    assert!(!all.contains("hunter2secret"), "{all}");
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {all}"));
    v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["check"] == "database")
        .cloned()
        .unwrap_or_else(|| panic!("no database check: {v}"))
}

#[test]
fn doctor_probes_a_postgres_database() {
    let refused = doctor(
        "postgres://lionrt:hunter2secret@127.0.0.1:1/lionrt?connect_timeout=2",
        "lionrt",
    );
    assert_eq!(refused["level"], "fail", "{refused}");
    let detail = refused["detail"].as_str().expect("detail");
    assert!(detail.contains("no PostgreSQL server answers"), "{detail}");
    assert!(detail.contains("lionrt:***@127.0.0.1:1"), "{detail}");
    let Some(url) = server() else { return };
    let t = Target::postgres(&url, "doctor");
    // A schema nobody migrated yet is named as such.
    let fresh = doctor(&url, &t.schema);
    assert_eq!(fresh["level"], "fail", "{fresh}");
    assert!(
        fresh["detail"]
            .as_str()
            .is_some_and(|d| d.contains("lionrt state init")),
        "{fresh}"
    );
    // Neither doctor nor a read verb creates (or migrates) a schema: they
    // open read-only.
    let out = t.run(&["sessions", "ls"]);
    assert!(!out.status.success(), "{}", text(&out));
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let schemas: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname = $1",
            &[&t.schema],
        )
        .expect("pg_namespace")
        .get(0);
    assert_eq!(schemas, 0, "a read created the schema");
    t.json(&["state", "init"]);
    let ready = doctor(&url, &t.schema);
    assert_eq!(ready["level"], "ok", "{ready}");
    let detail = ready["detail"].as_str().expect("detail");
    assert!(
        detail.contains("PostgreSQL ") && detail.contains("schema version"),
        "{detail}"
    );
}

#[test]
fn sessions_messages_follow_a_postgres_session_until_it_ends() {
    let Some(url) = server() else { return };
    let t = Target::postgres(&url, "follow");
    t.json(&["state", "init"]);
    t.json(&[
        "state",
        "create",
        "session",
        "live-1",
        "running",
        "--reason",
        "run.started.ok",
    ]);
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let insert = format!(
        "INSERT INTO {}.messages (id, session_id, role, content, created_at)
         VALUES ($1, 'live-1', 'assistant', $2, $3)",
        t.schema
    );
    let add = |c: &mut postgres::Client, n: i64| {
        c.execute(
            &insert,
            &[&format!("m{n}"), &format!("\"line {n}\""), &(1_000 - n)],
        )
        .expect("insert");
    };
    add(&mut c, 1);
    let follower = t.spawn(&[
        "--json",
        "sessions",
        "messages",
        "live",
        "--follow",
        "--interval",
        "20",
    ]);
    // Written while it follows, with created_at going backwards: the
    // cursor is the write order.
    add(&mut c, 2);
    add(&mut c, 3);
    t.json(&[
        "state",
        "transition",
        "session",
        "live-1",
        "completed",
        "--reason",
        "run.completed.ok",
    ]);
    // The session is terminal: the follower prints what is left and ends
    // (a hung follower is killed at the deadline and fails the test).
    let pid = follower.id();
    let waiter = std::thread::spawn(move || follower.wait_with_output());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !waiter.is_finished() {
        if std::time::Instant::now() > deadline {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("the follower did not end after the session did");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = waiter.join().expect("waiter").expect("follower");
    assert!(out.status.success(), "{}", text(&out));
    let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("json")["id"]
                .as_str()
                .unwrap_or("-")
                .to_owned()
        })
        .collect();
    assert_eq!(ids, ["m1", "m2", "m3"]);
}

/// `state import --from-lionagi` of the lionagi fixture into `t`: the
/// report, then what the imported sessions read back as.
fn imported(t: &Target) -> Vec<serde_json::Value> {
    let src = t.dir.path().join("lionagi.db");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/lionagi-import/state.db"),
        &src,
    )
    .expect("copy fixture");
    let src = src.to_str().expect("utf8").to_owned();
    let dry = t.json(&["state", "import", "--from-lionagi", &src, "--dry-run"]);
    assert_eq!(dry["sessions_imported"], 4, "{dry}");
    let report = t.json(&["state", "import", "--from-lionagi", &src]);
    assert_eq!(
        (
            report["sessions_imported"].clone(),
            report["messages_imported"].clone(),
            report["transitions_imported"].clone()
        ),
        (
            serde_json::json!(4),
            serde_json::json!(8),
            serde_json::json!(8)
        ),
        "{report}"
    );
    let again = t.json(&["state", "import", "--from-lionagi", &src]);
    assert_eq!(again["sessions_imported"], 0, "{again}");
    let mut seen = vec![report, again];
    let ls = t.json(&["sessions", "ls"]);
    for id in strs(&ls, "id") {
        let show = t.json(&["sessions", "show", &id]);
        let messages = t.json_lines(&["sessions", "messages", &id]);
        seen.push(serde_json::json!({
            "session": show["session"],
            "history": show["history"].as_array().expect("history").iter()
                .map(|h| serde_json::json!([h["from_status"], h["to_status"], h["reason_code"],
                    h["actor_type"], h["actor_id"], h["created_at"]]))
                .collect::<Vec<_>>(),
            "messages": messages.iter()
                .map(|m| serde_json::json!([m["id"], m["role"], m["content"], m["created_at"]]))
                .collect::<Vec<_>>(),
        }));
    }
    // li's own store (written by the `li` command): its invocation, agent
    // schedule and ended schedule run come too, each read back the same.
    let li = t.dir.path().join("li-state.db");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/lionagi-import/li-state.db"),
        &li,
    )
    .expect("copy fixture");
    let li = li.to_str().expect("utf8").to_owned();
    let mut report = t.json(&["state", "import", "--from-lionagi", &li]);
    assert_eq!(
        (
            report["invocations_imported"].clone(),
            report["schedules_imported"].clone(),
            report["schedule_runs_imported"].clone()
        ),
        (
            serde_json::json!(1),
            serde_json::json!(1),
            serde_json::json!(1)
        ),
        "{report}"
    );
    report["schedule_ls"] = t.json(&["schedule", "ls"]);
    report["schedule_runs"] = t.json(&["schedule", "runs"]);
    report["run_history"] = t
        .json(&["state", "history", "schedule_run", "run-1"])
        .as_array()
        .expect("history")
        .iter()
        .map(|h| {
            serde_json::json!([
                h["from_status"],
                h["to_status"],
                h["reason_code"],
                h["created_at"]
            ])
        })
        .collect();
    seen.push(report);
    seen
}

#[test]
fn a_lionagi_import_lands_in_postgres_as_in_sqlite() {
    let Some(url) = server() else { return };
    let on_sqlite = imported(&Target::sqlite());
    let on_postgres = imported(&Target::postgres(&url, "import"));
    assert_eq!(
        on_postgres.len(),
        7,
        "two reports, four sessions and li's store"
    );
    assert_eq!(on_postgres, on_sqlite);
}

#[test]
fn a_durable_terminal_notify_goes_through_the_postgres_outbox() {
    let Some(url) = server() else { return };
    let t = Target::postgres(&url, "notify");
    let sink = t.dir.path().join("envelopes.jsonl");
    let handler = format!("sh -c 'printf \"%s\\n\" \"$1\" >> {}' sh", sink.display());
    let out = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .args(["--db", &url, "run", "--session", "n1", "--workspace"])
        .arg(t.dir.path())
        .args(["--notify-durable", "--notify-on-terminal", &handler])
        .env_remove("LIONRT_DB")
        .env("LIONRT_PG_SCHEMA", &t.schema)
        .env("LIONAGI_SETTINGS_FILE", t.dir.path().join("none.yaml"))
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !text(&out).contains("delivering directly"),
        "{}",
        text(&out)
    );
    // The envelope went through the schema's outbox: one row, delivered by
    // the run's own end-of-run scan, and the run's outcome names it.
    let sent = std::fs::read_to_string(&sink).expect("sink");
    let envelope: serde_json::Value = serde_json::from_str(sent.trim()).expect("one envelope line");
    assert_eq!(envelope["entity"]["id"], "n1", "{envelope}");
    assert_eq!(envelope["terminal_status"], "completed", "{envelope}");
    let rows = t.json(&["outbox", "ls"]);
    assert_eq!(strs(&rows, "status"), ["delivered"], "{rows}");
    let show = t.json(&["sessions", "show", "n1"]);
    assert_eq!(show["notify_outcome"]["ok"], true, "{show}");
    assert_eq!(
        show["notify_outcome"]["dispatch"]["id"], rows[0]["id"],
        "{show}"
    );
}

#[test]
fn a_postgres_watch_scans_as_soon_as_a_row_is_enqueued() {
    use std::io::BufRead;
    let Some(url) = server() else { return };
    let t = Target::postgres(&url, "watch");
    t.json(&["state", "init"]);
    // An hour between scans: only the NOTIFY of the enqueue can bring the
    // second scan within the test's deadline.
    let mut child = t.spawn(&["--json", "outbox", "deliver", "--watch", "3600"]);
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the first scan's report");
    let first: serde_json::Value = serde_json::from_str(&first).expect("json");
    assert_eq!(first["examined"], 0, "{first}");
    let sink = t.dir.path().join("sink.txt");
    let append = format!("printf '%s\\n' \"$1\" >> {}", sink.display());
    t.json(&[
        "outbox",
        "enqueue",
        "woken",
        "--",
        "sh",
        "-c",
        &append,
        "sh",
        "{payload}",
    ]);
    let second = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("a scan woken by the enqueue, long before the hour");
    let second: serde_json::Value = serde_json::from_str(&second).expect("json");
    assert_eq!(second["delivered"], 1, "{second}");
    assert_eq!(std::fs::read_to_string(&sink).expect("sink"), "woken\n");
    let pid = child.id().to_string();
    let kill = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(kill.success());
    let status = child.wait().expect("wait");
    assert!(
        status.success(),
        "SIGINT ends the watch cleanly: {status:?}"
    );
    reader.join().expect("reader");
}

#[test]
fn a_password_never_reaches_output_or_trace_logs_of_a_working_server() {
    let Some(url) = server() else { return };
    // The test server trusts its unix socket, so it ignores the password;
    // lionrt still holds it in its connection string, and must not show it.
    let secret = "hunter2secret";
    let with_password = if url.contains("://") {
        url.replacen("://", &format!("://:{secret}@"), 1).replacen(
            &format!(":{secret}@"),
            &format!("postgres:{secret}@"),
            1,
        )
    } else {
        format!("{url} password={secret}")
    };
    let t = Target::postgres(&url, "trace");
    for args in [
        &["state", "init"][..],
        &["run", "--session", "traced"][..],
        &["sessions", "ls"][..],
        &["sessions", "show", "traced"][..],
        &["state", "health"][..],
        &["state", "stats"][..],
        &["outbox", "ls"][..],
        &["monitor"][..],
        &["lifecycle", "traced"][..],
        &["doctor", "--version-timeout", "1"][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_lionrt"))
            .args(["--db", &with_password])
            .args(args)
            .env_remove("LIONRT_DB")
            .env("LIONRT_PG_SCHEMA", &t.schema)
            .env("RUST_LOG", "trace")
            .env("HOME", t.dir.path())
            .output()
            .expect("lionrt");
        let all = text(&out);
        assert!(!all.contains(secret), "{args:?}: {all}");
        if args[0] != "doctor" {
            assert!(out.status.success(), "{args:?}: {all}");
        }
    }
}
