//! `lionrt flow`, `fanout` and `play` with real scripted legs: a diamond
//! whose middle ops overlap (proved from the recorded timestamps), the same
//! serialised by --max-concurrent 1, a failed op blocking its dependents, a
//! fan-out whose synthesis receives every worker's result, a playbook's
//! args and defaults rendered into the prompt, and a cycle refused before
//! anything is written; the diamond again on PostgreSQL.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::stdout_json;

/// A leg that takes a while: the scripted agent sleeps, then ends.
const SLOW: &str =
    r#"[{"type": "tool_call", "id": "t", "name": "sleep", "arguments": {"ms": 700}}]"#;

const DIAMOND: &str = "ops:
  - {id: a, agent: {prompt: Plan the change., script: slow.json}}
  - {id: b, agent: {prompt: Write the parser., script: slow.json}, depends_on: [a]}
  - {id: c, agent: {prompt: Write the tests., script: slow.json}, depends_on: [a]}
  - {id: d, agent: {prompt: Merge the two., script: slow.json}, depends_on: [b, c]}
";

fn lionrt_in(dir: &Path, db: &str, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lionrt"));
    cmd.current_dir(dir)
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("LIONRT_DB")
        .env_remove("LIONAGI_HOME");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run lionrt")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn write(dir: &Path, name: &str, content: &str) {
    std::fs::write(dir.join(name), content).expect("write fixture");
}

/// The op row of a flow report.
fn op<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["ops"]
        .as_array()
        .and_then(|ops| ops.iter().find(|o| o["id"] == id))
        .unwrap_or_else(|| panic!("no op {id} in {v}"))
}

/// The recorded start and end of an op's session (microseconds).
fn span(v: &Value, id: &str) -> (i64, i64) {
    let o = op(v, id);
    let at = |k: &str| o[k].as_i64().unwrap_or_else(|| panic!("{k} of {id}: {o}"));
    (at("started_at"), at("ended_at"))
}

fn statuses(history: &Value) -> Vec<String> {
    history
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|t| t["to_status"].as_str().map(str::to_owned))
        .collect()
}

fn diamond(dir: &Path, db: &str, id: &str, cap: &str) -> Value {
    write(dir, "slow.json", SLOW);
    write(dir, "diamond.plan.yaml", DIAMOND);
    let out = lionrt_in(
        dir,
        db,
        &[
            "--json",
            "flow",
            "--plan",
            "diamond.plan.yaml",
            "--id",
            id,
            "--max-concurrent",
            cap,
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    stdout_json(&out)
}

/// What the diamond proves on any store: d starts after b and c ended,
/// b and c after a, every op completed under one invocation.
fn check_diamond(v: &Value, id: &str) {
    assert_eq!(v["invocation"], id);
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(v["reason"], "run.completed.ok");
    assert_eq!(statuses(&v["history"]), ["running", "completed"]);
    for o in ["a", "b", "c", "d"] {
        assert_eq!(op(v, o)["status"], "completed", "{v}");
        assert_eq!(op(v, o)["session"], format!("{id}-{o}"));
    }
    let (a, b, c, d) = (span(v, "a"), span(v, "b"), span(v, "c"), span(v, "d"));
    assert!(
        a.1 <= b.0 && a.1 <= c.0,
        "b or c started before a ended: {v}"
    );
    assert!(
        b.1 <= d.0 && c.1 <= d.0,
        "d started before b and c ended: {v}"
    );
}

#[test]
fn a_diamonds_middle_ops_overlap_and_the_last_gets_both_results() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let v = diamond(dir.path(), db.to_str().expect("utf8"), "dia", "4");
    check_diamond(&v, "dia");
    let (b, c) = (span(&v, "b"), span(&v, "c"));
    assert!(
        b.0 < c.1 && c.0 < b.1,
        "b {b:?} and c {c:?} did not overlap"
    );
    // Every session is recorded under the invocation; d was told b's and
    // c's results and where its own files go.
    let conn = rusqlite::Connection::open(&db).expect("open");
    let under: i64 = conn
        .query_row(
            "SELECT count(*) FROM sessions WHERE invocation_id = 'dia'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(under, 4);
    let prompt: String = conn
        .query_row(
            "SELECT content FROM messages WHERE session_id = 'dia-d' AND role = 'flow_prompt'",
            [],
            |r| r.get(0),
        )
        .expect("d's prompt");
    let prompt: Value = serde_json::from_str(&prompt).expect("json");
    let prompt = prompt["prompt"].as_str().expect("prompt");
    assert!(prompt.starts_with("Merge the two."), "{prompt}");
    assert!(
        prompt.contains("### b (completed)") && prompt.contains("### c (completed)"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("### a ("),
        "only direct dependencies: {prompt}"
    );
    let artifacts = dir.path().join(".lionrt/flows/dia");
    assert!(
        prompt.contains(&artifacts.join("d").display().to_string()),
        "{prompt}"
    );
    for o in ["a", "b", "c", "d"] {
        assert!(
            artifacts.join(o).is_dir(),
            "no artifact subdirectory for {o}"
        );
    }
    // `lionrt lifecycle ID` shows the invocation and its four sessions.
    let out = lionrt_in(
        dir.path(),
        db.to_str().expect("utf8"),
        &["--json", "lifecycle", "dia"],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    let t = stdout_json(&out);
    assert_eq!(t["entities"].as_array().map(Vec::len), Some(5), "{t}");
}

#[test]
fn max_concurrent_one_serialises_the_middle_ops() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let v = diamond(dir.path(), db.to_str().expect("utf8"), "one", "1");
    check_diamond(&v, "one");
    let mut spans: Vec<(i64, i64)> = ["a", "b", "c", "d"].iter().map(|o| span(&v, o)).collect();
    spans.sort_unstable();
    for pair in spans.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "two legs at once: {spans:?}");
    }
}

#[test]
fn a_failed_op_blocks_its_dependents_and_fails_the_invocation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    write(
        dir.path(),
        "ok.json",
        r#"[{"type": "text", "text": "fine"}]"#,
    );
    write(
        dir.path(),
        "fail.json",
        r#"[{"type": "error", "message": "quota exhausted", "status": 429}]"#,
    );
    write(
        dir.path(),
        "p.plan.json",
        r#"{"ops": [
            {"id": "a", "agent": {"prompt": "a", "script": "ok.json"}},
            {"id": "b", "agent": {"prompt": "b", "script": "fail.json"}, "depends_on": ["a"]},
            {"id": "c", "agent": {"prompt": "c", "script": "ok.json"}, "depends_on": ["b"]},
            {"id": "e", "agent": {"prompt": "e", "script": "ok.json"}, "depends_on": ["c"]},
            {"id": "d", "agent": {"prompt": "d", "script": "ok.json"}, "depends_on": ["a"]}
        ]}"#,
    );
    let out = lionrt_in(
        dir.path(),
        db.to_str().expect("utf8"),
        &["--json", "flow", "--plan", "p.plan.json", "--id", "f"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v = stdout_json(&out);
    let b_reason = op(&v, "b")["reason"].as_str().expect("reason").to_owned();
    assert_eq!(op(&v, "b")["status"], "failed");
    assert!(b_reason.starts_with("run.failed."), "{b_reason}");
    // The invocation ends failed with the failed op's reason.
    assert_eq!(v["status"], "failed");
    assert_eq!(v["reason"], b_reason);
    assert_eq!(op(&v, "a")["status"], "completed");
    assert_eq!(
        op(&v, "d")["status"],
        "completed",
        "an independent op still runs"
    );
    for blocked in ["c", "e"] {
        let o = op(&v, blocked);
        assert_eq!(o["status"], "blocked", "{v}");
        assert_eq!(o["reason"], "play.blocked.dep_failed");
        assert_eq!(o["play"], format!("f/{blocked}"));
        assert!(
            o["summary"].as_str().is_some_and(|s| s.contains('b')),
            "{o}"
        );
    }
    // A blocked op never started: no session, and its play row went
    // pending -> blocked.
    let conn = rusqlite::Connection::open(&db).expect("open");
    let sessions: Vec<String> = conn
        .prepare("SELECT id FROM sessions ORDER BY id")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(sessions, ["f-a", "f-b", "f-d"]);
    let history: Vec<(String, String)> = conn
        .prepare(
            "SELECT to_status, reason_code FROM status_transitions
             WHERE entity_type = 'play' AND entity_id = 'f/c' ORDER BY id",
        )
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(
        history,
        [
            (
                "pending".to_owned(),
                "play.pending.waiting_on_deps".to_owned()
            ),
            ("blocked".to_owned(), "play.blocked.dep_failed".to_owned())
        ]
    );
}

#[test]
fn a_missing_artifact_fails_the_op_and_a_written_one_passes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    // The scripted agent writes into its artifact subdirectory (relative
    // to the workspace, its working directory).
    write(
        dir.path(),
        "writes.json",
        r#"[{"type": "tool_call", "id": "w", "name": "write_file",
             "arguments": {"path": "arts/w/report.md", "content": "done"}}]"#,
    );
    write(
        dir.path(),
        "ok.json",
        r#"[{"type": "text", "text": "no files"}]"#,
    );
    write(
        dir.path(),
        "p.plan.yaml",
        "ops:
  - {id: w, agent: {prompt: write it, script: writes.json}, artifacts: [report.md]}
  - {id: n, agent: {prompt: write it, script: ok.json}, artifacts: [report.md]}
",
    );
    let out = lionrt_in(
        dir.path(),
        db.to_str().expect("utf8"),
        &[
            "--json",
            "flow",
            "--plan",
            "p.plan.yaml",
            "--id",
            "art",
            "--artifacts",
            "arts",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v = stdout_json(&out);
    assert_eq!(op(&v, "w")["missing_artifacts"], serde_json::json!([]));
    assert_eq!(
        op(&v, "n")["missing_artifacts"],
        serde_json::json!(["report.md"])
    );
    assert_eq!(v["status"], "failed");
    assert_eq!(v["reason"], "run.failed.missing_artifact");
}

#[test]
fn a_fanout_synthesis_receives_every_workers_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    // Each worker answers by the artifact directory its prompt names.
    write(
        dir.path(),
        "worker.json",
        r#"{"mode": "when_only", "responses": [
            {"type": "text", "text": "W1-RESULT", "when": {"prompt_contains": "worker-1."}},
            {"type": "text", "text": "W2-RESULT", "when": {"prompt_contains": "worker-2."}},
            {"type": "text", "text": "W3-RESULT", "when": {"prompt_contains": "worker-3."}}
        ]}"#,
    );
    // The synthesis answers only a prompt holding all three results.
    write(
        dir.path(),
        "synth.json",
        r#"{"mode": "when_only", "responses": [
            {"type": "text", "text": "SYNTH-OK",
             "when": {"prompt_regex": "(?s)W1-RESULT.*W2-RESULT.*W3-RESULT"}}
        ]}"#,
    );
    let out = lionrt_in(
        dir.path(),
        db.to_str().expect("utf8"),
        &[
            "--json",
            "o",
            "fanout",
            "3",
            "--prompt",
            "review the parser",
            "--synthesis",
            "--script",
            "worker.json",
            "--synthesis-script",
            "synth.json",
            "--id",
            "fan",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v = stdout_json(&out);
    assert_eq!(v["status"], "completed", "{v}");
    for (i, want) in [(1, "W1-RESULT"), (2, "W2-RESULT"), (3, "W3-RESULT")] {
        assert_eq!(op(&v, &format!("worker-{i}"))["text"], want, "{v}");
    }
    let s = op(&v, "synthesis");
    assert_eq!(s["text"], "SYNTH-OK", "{v}");
    let (synth_start, _) = span(&v, "synthesis");
    for i in 1..=3 {
        assert!(span(&v, &format!("worker-{i}")).1 <= synth_start);
    }
}

const REVIEW: &str = "name: review
description: Review one module.
argument-hint: '[--scope MODULE] [--poll]'
model: scripted
args:
  depth:
    type: int
    default: 2
    help: how deep to look
prompt: 'Review {scope} to depth {depth} (poll={poll}). Focus: {input}.'
";

#[test]
fn a_playbooks_args_and_defaults_are_rendered_into_the_prompt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("lionagi");
    std::fs::create_dir_all(home.join("playbooks")).expect("mkdir");
    std::fs::write(home.join("playbooks/review.playbook.yaml"), REVIEW).expect("playbook");
    std::fs::write(
        home.join("playbooks/typo.playbook.yaml"),
        "prompt: hi\nmodle: claude/opus\n",
    )
    .expect("playbook");
    let db = dir.path().join("state.db");
    let db = db.to_str().expect("utf8");
    let env = [("LIONAGI_HOME", home.as_path())];
    write(
        dir.path(),
        "s.json",
        r#"{"mode": "when_only", "responses": [{"type": "text", "text": "REVIEWED",
            "when": {"prompt_contains": "Review core to depth 2 (poll=true). Focus: the parser."}}]}"#,
    );
    let out = lionrt_in(
        dir.path(),
        db,
        &[
            "--json",
            "play",
            "--script",
            "s.json",
            "--id",
            "pb",
            "review",
            "the parser",
            "--scope",
            "core",
            "--poll",
        ],
        &env,
    );
    assert!(out.status.success(), "{}", text(&out));
    let v = stdout_json(&out);
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(op(&v, "play")["text"], "REVIEWED");
    // A missing argument the prompt needs, and an unknown one, are refused
    // before anything starts.
    let out = lionrt_in(
        dir.path(),
        db,
        &["play", "--script", "s.json", "review"],
        &env,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("--scope was not given"),
        "{}",
        text(&out)
    );
    let out = lionrt_in(dir.path(), db, &["play", "review", "--nope", "x"], &env);
    assert!(
        text(&out).contains("--depth, --poll, --scope"),
        "{}",
        text(&out)
    );
    // A playbook with a field li does not accept is refused with the list.
    let out = lionrt_in(dir.path(), db, &["play", "typo"], &env);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("\"modle\"") && text(&out).contains("with_synthesis"),
        "{}",
        text(&out)
    );
    // `play list` shows both; `play help NAME` the arguments.
    let out = lionrt_in(dir.path(), db, &["--json", "play", "list"], &env);
    let list = stdout_json(&out);
    let names: Vec<&str> = list["playbooks"]
        .as_array()
        .expect("playbooks")
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert_eq!(names, ["review", "typo"]);
    let out = lionrt_in(dir.path(), db, &["play", "help", "review"], &env);
    assert!(
        text(&out).contains("--depth  how deep to look (default: 2)"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_plan_with_a_cycle_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    write(
        dir.path(),
        "ok.json",
        r#"[{"type": "text", "text": "fine"}]"#,
    );
    write(
        dir.path(),
        "cycle.plan.yaml",
        "ops:
  - {id: a, agent: {prompt: a, script: ok.json}}
  - {id: b, agent: {prompt: b, script: ok.json}, depends_on: [a, d]}
  - {id: c, agent: {prompt: c, script: ok.json}, depends_on: [b]}
  - {id: d, agent: {prompt: d, script: ok.json}, depends_on: [c]}
",
    );
    let out = lionrt_in(
        dir.path(),
        db.to_str().expect("utf8"),
        &["flow", "--plan", "cycle.plan.yaml"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("play.blocked.invalid_deps") && err.contains("cycle: b -> d -> c -> b"),
        "{err}"
    );
    // Nothing was written: no store at all, no artifact directory.
    assert!(!db.exists(), "the store was created");
    assert!(!dir.path().join(".lionrt").exists());
    // Too many ops and an unknown dependency, likewise; and a store that
    // exists gains no row.
    let out = lionrt_in(
        dir.path(),
        db.to_str().expect("utf8"),
        &["state", "init"],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    write(
        dir.path(),
        "wide.plan.yaml",
        "ops:
  - {id: a, agent: {prompt: a, script: ok.json}}
  - {id: b, agent: {prompt: b, script: ok.json}, depends_on: [zz]}
",
    );
    for (args, want) in [
        (
            vec!["flow", "--plan", "wide.plan.yaml", "--max-ops", "1"],
            "more than --max-ops 1",
        ),
        (
            vec!["flow", "--plan", "wide.plan.yaml"],
            "\"zz\", which is not an op",
        ),
    ] {
        let out = lionrt_in(dir.path(), db.to_str().expect("utf8"), &args, &[]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(text(&out).contains(want), "{}", text(&out));
        assert!(text(&out).contains("play.blocked.invalid_deps"));
    }
    let conn = rusqlite::Connection::open(&db).expect("open");
    let rows: i64 = conn
        .query_row(
            "SELECT (SELECT count(*) FROM sessions) + (SELECT count(*) FROM invocations)
                  + (SELECT count(*) FROM status_transitions)",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(rows, 0);
}

#[test]
fn a_diamond_runs_on_postgres() {
    let Ok(url) = std::env::var("LIONRT_TEST_PG") else {
        #[allow(clippy::print_stderr, reason = "a skipped test says why")]
        {
            eprintln!(
                "skipped: LIONRT_TEST_PG is unset (start a server with `eval \"$(.ci/pg-cluster start)\"`)"
            );
        }
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = format!("lionrt_flow_{}", std::process::id());
    write(dir.path(), "slow.json", SLOW);
    write(dir.path(), "diamond.plan.yaml", DIAMOND);
    let out = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .current_dir(dir.path())
        .args([
            "--db",
            &url,
            "--json",
            "flow",
            "--plan",
            "diamond.plan.yaml",
            "--id",
            "pgd",
        ])
        .env_remove("LIONRT_DB")
        .env("LIONRT_PG_SCHEMA", &schema)
        .output()
        .expect("run lionrt");
    assert!(out.status.success(), "{}", text(&out));
    let v = stdout_json(&out);
    check_diamond(&v, "pgd");
    let (b, c) = (span(&v, "b"), span(&v, "c"));
    assert!(
        b.0 < c.1 && c.0 < b.1,
        "b {b:?} and c {c:?} did not overlap"
    );
    // The invocation and its sessions are in the server's store.
    let out = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .args(["--db", &url, "--json", "lifecycle", "pgd"])
        .env_remove("LIONRT_DB")
        .env("LIONRT_PG_SCHEMA", &schema)
        .output()
        .expect("run lionrt");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        stdout_json(&out)["entities"].as_array().map(Vec::len),
        Some(5)
    );
    if let Ok(mut client) = postgres::Client::connect(&url, postgres::NoTls) {
        let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
    }
}

/// Waits (at most 60 s) until `done` holds on the store.
fn wait_for(db: &Path, what: &str, done: impl Fn(&rusqlite::Connection) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if db.exists()
            && let Ok(conn) = rusqlite::Connection::open(db)
            && done(&conn)
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn status_of(conn: &rusqlite::Connection, session: &str) -> Option<(String, Option<String>)> {
    conn.query_row(
        "SELECT status, status_reason_code FROM sessions WHERE id = ?1",
        [session],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .ok()
}

/// A flow `k` (a quick, b a minute long, c after both) whose conductor is
/// SIGKILLed once a completed and b is running.
fn killed_flow(dir: &Path, db: &Path) {
    write(dir, "a.json", r#"[{"type": "text", "text": "A-DONE"}]"#);
    write(
        dir,
        "b.json",
        r#"[{"type": "tool_call", "id": "t", "name": "sleep", "arguments": {"ms": 60000}}]"#,
    );
    // c answers only when told both a's and b's results.
    write(
        dir,
        "c.json",
        r#"{"mode": "when_only", "responses": [{"type": "text", "text": "C-DONE",
            "when": {"prompt_regex": "(?s)A-DONE.*B-DONE"}}]}"#,
    );
    write(
        dir,
        "k.plan.yaml",
        "ops:
  - {id: a, agent: {prompt: a, script: a.json}}
  - {id: b, agent: {prompt: b, script: b.json}}
  - {id: c, agent: {prompt: c, script: c.json}, depends_on: [a, b]}
",
    );
    let mut conductor = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .current_dir(dir)
        .arg("--db")
        .arg(db)
        .args(["flow", "--plan", "k.plan.yaml", "--id", "k"])
        .env_remove("LIONRT_DB")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn the conductor");
    wait_for(db, "a completed and b running", |c| {
        status_of(c, "k-a").is_some_and(|s| s.0 == "completed")
            && status_of(c, "k-b").is_some_and(|s| s.0 == "running")
    });
    assert!(!procs_in(dir).is_empty(), "the probe sees the conductor");
    conductor.kill().expect("SIGKILL");
    conductor.wait().expect("reap");
}

#[test]
fn a_sigkilled_conductor_is_resumed_without_running_a_finished_op_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    killed_flow(dir.path(), &db);
    // b's leg would now answer at once: only a re-run can tell.
    write(
        dir.path(),
        "b.json",
        r#"[{"type": "text", "text": "B-DONE"}]"#,
    );
    let out = lionrt_in(
        dir.path(),
        db.to_str().expect("utf8"),
        &["--json", "flow", "resume", "k", "--retry-failed"],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v = stdout_json(&out);
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(op(&v, "a")["session"], "k-a");
    assert_eq!(op(&v, "b")["session"], "k-b.2");
    assert_eq!(op(&v, "c")["text"], "C-DONE", "{v}");
    assert_eq!(statuses(&v["history"]), ["running", "completed"]);
    let conn = rusqlite::Connection::open(&db).expect("open");
    // a ran once: its history is one start and one end.
    let a_rows: i64 = conn
        .query_row(
            "SELECT count(*) FROM status_transitions WHERE entity_id = 'k-a'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(a_rows, 2);
    // b's first leg died with its conductor: swept, then run again.
    assert_eq!(
        status_of(&conn, "k-b"),
        Some(("failed".into(), Some("session.orphaned.no_process".into())))
    );
    let under: Vec<String> = conn
        .prepare("SELECT id FROM sessions WHERE invocation_id = 'k' ORDER BY id")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(under, ["k-a", "k-b", "k-b.2", "k-c"]);
    // Nothing is left running in the workspace (b's first leg died with
    // its conductor: the orphan guard ended its group).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left = procs_in(dir.path());
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "left running: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // An ended flow is not resumed again.
    let out = lionrt_in(
        dir.path(),
        db.to_str().expect("utf8"),
        &["flow", "resume", "k"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("already ended completed"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_resume_without_retry_leaves_a_dead_leg_failed_and_blocks_its_dependent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    killed_flow(dir.path(), &db);
    let out = lionrt_in(
        dir.path(),
        db.to_str().expect("utf8"),
        &["--json", "flow", "resume", "k"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v = stdout_json(&out);
    assert_eq!(op(&v, "a")["status"], "completed");
    assert_eq!(op(&v, "b")["status"], "failed");
    assert_eq!(op(&v, "b")["reason"], "session.orphaned.no_process");
    assert_eq!(op(&v, "c")["status"], "blocked");
    assert_eq!(op(&v, "c")["reason"], "play.blocked.dep_failed");
    // A swept leg's session reason is no run reason: the invocation says
    // the run failed by exception.
    assert_eq!(v["status"], "failed");
    assert_eq!(v["reason"], "run.failed.exception");
    let conn = rusqlite::Connection::open(&db).expect("open");
    let sessions: i64 = conn
        .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
        .expect("count");
    assert_eq!(sessions, 2, "nothing ran again");
}

/// The pids of processes whose working directory is `dir`.
fn procs_in(dir: &Path) -> Vec<u32> {
    let Ok(dir) = dir.canonicalize() else {
        return Vec::new();
    };
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == dir))
        .collect()
}

/// SIGKILL of the conductor at random points of a diamond, each followed
/// by `flow resume --retry-failed` until the flow ends: every op completes
/// exactly once (one completed session each, earlier attempts swept), no
/// session is left open, nothing is left running; a kill before the
/// invocation row existed left no session at all.
#[test]
fn sigkills_at_random_points_then_resume_complete_every_op_exactly_once() {
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(7, |d| d.as_nanos() as u64)
        | 1;
    #[allow(clippy::print_stderr, reason = "the seed of a failing run")]
    {
        eprintln!("seed {seed}");
    }
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let quick = r#"[{"type": "tool_call", "id": "t", "name": "sleep", "arguments": {"ms": 150}}]"#;
    // Rounds killed before the flow started, resumed, and already ended.
    let mut seen = [0u32; 3];
    for round in 0..12 {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("state.db");
        write(dir.path(), "slow.json", quick);
        write(dir.path(), "diamond.plan.yaml", DIAMOND);
        let mut conductor = Command::new(env!("CARGO_BIN_EXE_lionrt"))
            .current_dir(dir.path())
            .arg("--db")
            .arg(&db)
            .args(["flow", "--plan", "diamond.plan.yaml", "--id", "r"])
            .env_remove("LIONRT_DB")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn the conductor");
        let delay = next() % 900;
        std::thread::sleep(std::time::Duration::from_millis(delay));
        let _ = conductor.kill();
        conductor.wait().expect("reap");
        let mut resumes = 0;
        loop {
            let out = lionrt_in(
                dir.path(),
                db.to_str().expect("utf8"),
                &["--json", "flow", "resume", "r", "--retry-failed"],
                &[],
            );
            let all = text(&out);
            if all.contains("no invocation r")
                || all.contains("does not exist")
                || all.contains("reading the record of flow r")
            {
                // Killed before the invocation row (or the flow's record,
                // written before it): nothing ran.
                if db.exists() {
                    let conn = rusqlite::Connection::open(&db).expect("open");
                    let n: i64 = conn
                        .query_row(
                            "SELECT (SELECT count(*) FROM sessions)
                                  + (SELECT count(*) FROM invocations)",
                            [],
                            |r| r.get(0),
                        )
                        // Killed before the schema was made: no rows.
                        .or_else(|e| {
                            if e.to_string().contains("no such table") {
                                Ok(0)
                            } else {
                                Err(e)
                            }
                        })
                        .expect("count");
                    assert_eq!(n, 0, "round {round}: rows without a resumable flow");
                }
                seen[0] += 1;
                break;
            }
            if all.contains("already ended completed") || out.status.success() {
                seen[if out.status.success() { 1 } else { 2 }] += 1;
                let conn = rusqlite::Connection::open(&db).expect("open");
                for o in ["a", "b", "c", "d"] {
                    let completed: i64 = conn
                        .query_row(
                            "SELECT count(*) FROM sessions WHERE invocation_id = 'r'
                             AND (id = ?1 OR id LIKE ?1 || '.%') AND status = 'completed'",
                            [format!("r-{o}")],
                            |r| r.get(0),
                        )
                        .expect("count");
                    assert_eq!(completed, 1, "round {round} (kill at {delay} ms): op {o}");
                }
                let open: i64 = conn
                    .query_row(
                        "SELECT count(*) FROM sessions WHERE status = 'running'",
                        [],
                        |r| r.get(0),
                    )
                    .expect("count");
                assert_eq!(open, 0, "round {round}: a session left running");
                let inv: String = conn
                    .query_row("SELECT status FROM invocations WHERE id = 'r'", [], |r| {
                        r.get(0)
                    })
                    .expect("invocation");
                assert_eq!(inv, "completed");
                break;
            }
            resumes += 1;
            assert!(resumes < 3, "round {round}: resume keeps failing: {all}");
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !procs_in(dir.path()).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: left running"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    #[allow(clippy::print_stderr, reason = "what the rounds hit")]
    {
        eprintln!("killed before the start / resumed / already ended: {seen:?}");
    }
    // The kills land while legs run (a 0-900 ms kill in a ~1 s flow):
    // at least one round is a real resume.
    assert!(seen[1] > 0, "no round resumed a flow: {seen:?}");
}
