//! `--db postgres://…`: `run` and `kill` on PostgreSQL (with a server from
//! `LIONRT_TEST_PG`), the other commands refusing it, and the password
//! never printed.

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
        &["outbox", "ls"][..],
    ] {
        let out = lionrt_pg(url, "lionrt", args);
        assert!(!out.status.success(), "{args:?}");
        let all = text(&out);
        assert!(!all.contains("hunter2secret"), "{args:?}: {all}");
        assert!(all.contains("lionrt:***@127.0.0.1:1"), "{args:?}: {all}");
    }
    let out = lionrt_pg(url, "lionrt", &["state", "history", "session", "x"]);
    assert!(text(&out).contains("does not take a PostgreSQL --db"));
    let out = lionrt_pg(url, "lionrt", &["kill", "--all-stale"]);
    assert!(
        text(&out).contains("no PostgreSQL server answers"),
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
