//! `lionrt mcp ls|audit|call` end to end against the fixture MCP servers.

use std::path::Path;
use std::process::Output;

use mcp_test_servers::{BENIGN, HOSTILE, locate};
use serde_json::{Value, json};

use crate::lionrt;

fn fixture(name: &str) -> String {
    locate(name)
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
        .to_string_lossy()
        .into_owned()
}

/// Writes an `.mcp.json` with these `mcpServers` into `dir`; its path.
pub(crate) fn write_config(dir: &Path, servers: Value) -> String {
    let path = dir.join("mcp.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).expect("write config");
    path.to_string_lossy().into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn audit_exits_0_when_every_tool_is_admitted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        json!({"benign": {"command": fixture(BENIGN), "args": ["benign"]}}),
    );
    let out = lionrt(
        &dir.path().join("state.db"),
        &["mcp", "audit", "--config", &config],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = stdout(&out);
    assert!(table.starts_with("SERVER"), "{table}");
    assert_eq!(table.matches("admitted").count(), 3, "{table}");
}

#[test]
fn audit_exits_1_and_names_each_denied_tool_with_its_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        json!({
            "benign": {"command": fixture(BENIGN), "args": ["benign"]},
            "exec": {"command": fixture(BENIGN), "args": ["executor"]}
        }),
    );
    let out = lionrt(
        &dir.path().join("state.db"),
        &["mcp", "audit", "--config", &config, "--format", "jsonl"],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("jsonl"))
        .collect();
    let denied: Vec<(String, String)> = lines
        .iter()
        .filter(|l| l["verdict"] == "deny")
        .map(|l| {
            (
                l["tool"].as_str().unwrap_or_default().to_owned(),
                l["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        denied,
        [
            ("bash".to_owned(), "unbounded-command-input".to_owned()),
            (
                "run_script".to_owned(),
                "unbounded-script-payload".to_owned()
            )
        ]
    );
    assert_eq!(lines.iter().filter(|l| l["verdict"] == "admit").count(), 6);
}

#[test]
fn audit_exits_2_when_a_server_cannot_be_audited_and_reports_it_in_sarif() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        json!({
            "exec": {"command": fixture(BENIGN), "args": ["executor"]},
            "broken": {"command": fixture(HOSTILE), "args": ["invalid-jsonrpc"]}
        }),
    );
    let out = lionrt(
        &dir.path().join("state.db"),
        &["mcp", "audit", "--config", &config, "--format", "sarif"],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sarif: Value = serde_json::from_str(stdout(&out).trim()).expect("sarif json");
    assert_eq!(sarif["version"], "2.1.0");
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    let rules: Vec<&str> = results
        .iter()
        .filter_map(|r| r["ruleId"].as_str())
        .collect();
    assert!(rules.contains(&"server-not-audited"), "{rules:?}");
    assert!(rules.contains(&"unbounded-command-input"), "{rules:?}");
    let broken = results
        .iter()
        .find(|r| r["ruleId"] == "server-not-audited")
        .expect("broken");
    assert!(
        broken["message"]["text"]
            .as_str()
            .is_some_and(|m| m.contains("not a JSON-RPC message"))
    );
}

#[test]
fn audit_of_a_missing_config_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope.json");
    let out = lionrt(
        &dir.path().join("state.db"),
        &["mcp", "audit", "--config", &missing.to_string_lossy()],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error:"));
}

#[test]
fn ls_json_lists_admitted_and_denied_tools_per_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        json!({"exec": {"command": fixture(BENIGN), "args": ["executor"]}}),
    );
    let out = lionrt(
        &dir.path().join("state.db"),
        &["--json", "mcp", "ls", "--config", &config],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = crate::stdout_json(&out);
    assert_eq!(rows[0]["server"], "exec");
    assert_eq!(rows[0]["admitted"].as_array().map(Vec::len), Some(3));
    assert_eq!(rows[0]["denied"][0]["name"], "bash");
    assert_eq!(rows[0]["denied"][0]["reason"], "unbounded-command-input");
}

#[test]
fn call_goes_through_validation_and_the_gate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        json!({"benign": {"command": fixture(BENIGN), "args": ["benign"]}}),
    );
    let db = dir.path().join("state.db");
    let ok = lionrt(
        &db,
        &[
            "mcp",
            "call",
            "benign",
            "add",
            "--args",
            r#"{"a": 20, "b": 22}"#,
            "--config",
            &config,
        ],
    );
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let result: Value = serde_json::from_str(stdout(&ok).trim()).expect("json");
    assert_eq!(result["content"][0]["text"], "42");
    let invalid = lionrt(
        &db,
        &[
            "mcp",
            "call",
            "benign",
            "add",
            "--args",
            r#"{"a": 1}"#,
            "--config",
            &config,
        ],
    );
    assert_eq!(invalid.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&invalid.stderr).contains("invalid arguments"));
    let gated = lionrt(
        &db,
        &[
            "mcp",
            "call",
            "benign",
            "echo",
            "--args",
            r#"{"text": "rm -rf /"}"#,
            "--config",
            &config,
        ],
    );
    assert_eq!(gated.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&gated.stderr).contains("destructive"),
        "{}",
        String::from_utf8_lossy(&gated.stderr)
    );
    let refused = lionrt(&db, &["mcp", "call", "benign", "nope", "--config", &config]);
    assert_eq!(refused.status.code(), Some(1));
}

/// Issue 24: spellings a shell accepts are refused through `mcp call` to an
/// admitted tool, and copying to `/dev/null` is not.
#[test]
fn call_reads_the_command_as_the_shell_will_run_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        json!({"benign": {"command": fixture(BENIGN), "args": ["benign"]}}),
    );
    let db = dir.path().join("state.db");
    let call = |text: &str| {
        let args = json!({ "text": text }).to_string();
        lionrt(
            &db,
            &[
                "mcp", "call", "benign", "echo", "--args", &args, "--config", &config,
            ],
        )
    };
    for text in [
        "rm --rec --force /",
        "rm >/dev/null -rf /",
        "git push 2>&1 --force-w origin main",
        "cat disk.img > //dev//sda",
        "sqlite3 app.db 'DELETE FROM users'",
        "$(which rm) -rf /",
    ] {
        let out = call(text);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{text:?} was not refused: {stderr}"
        );
        assert!(stderr.contains("destructive"), "{text:?}: {stderr}");
    }
    let out = call("cp build.log /dev/null");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_str(stdout(&out).trim()).expect("json");
    assert_eq!(result["content"][0]["text"], "cp build.log /dev/null");
}

#[test]
fn audit_refuses_an_unknown_format_as_a_usage_error_listing_the_choices() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), json!({}));
    let out = lionrt(
        &dir.path().join("state.db"),
        &["mcp", "audit", "--config", &config, "--format", "xml"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    for choice in ["table", "jsonl", "sarif"] {
        assert!(err.contains(choice), "{err}");
    }
}

/// The benign fixture server serving streamable HTTP on loopback; killed
/// when dropped.
struct HttpFixture {
    child: std::process::Child,
    url: String,
}

impl HttpFixture {
    fn start(mode: &str) -> Self {
        let mut child = std::process::Command::new(fixture(BENIGN))
            .args([mode, "--http"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn the http fixture server");
        let url = crate::read_url(&mut child);
        assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
        Self { child, url }
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn audit_and_call_reach_a_loopback_http_server_only_when_allowed() {
    let server = HttpFixture::start("executor");
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let config = write_config(
        dir.path(),
        json!({"web": {"url": server.url, "headers": {"X-Client": "lionrt-test"}}}),
    );
    // Plain http is refused unless asked for: the server cannot be audited.
    let refused = lionrt(
        &db,
        &["mcp", "audit", "--config", &config, "--format", "jsonl"],
    );
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let said = format!(
        "{}{}",
        stdout(&refused),
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(said.contains("allow_loopback_http"), "{said}");
    let audited = lionrt(
        &db,
        &[
            "mcp",
            "audit",
            "--config",
            &config,
            "--format",
            "jsonl",
            "--allow-loopback-http",
        ],
    );
    assert_eq!(
        audited.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&audited.stderr)
    );
    let lines: Vec<Value> = stdout(&audited)
        .lines()
        .map(|l| serde_json::from_str(l).expect("jsonl"))
        .collect();
    let mut denied: Vec<&str> = lines
        .iter()
        .filter(|l| l["verdict"] == "deny")
        .filter_map(|l| l["tool"].as_str())
        .collect();
    denied.sort_unstable();
    assert_eq!(denied, ["bash", "run_script"], "{lines:?}");
    let called = lionrt(
        &db,
        &[
            "mcp",
            "call",
            "web",
            "add",
            "--args",
            r#"{"a": 20, "b": 22}"#,
            "--config",
            &config,
            "--allow-loopback-http",
        ],
    );
    assert_eq!(
        called.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&called.stderr)
    );
    assert!(stdout(&called).contains("42"), "{}", stdout(&called));
}

/// Polls `done` every 20 ms until it holds or `limit` has passed.
fn wait_until(limit: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    done()
}

fn unique_tag(what: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "lionrt-mcp-{what}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    )
}

#[test]
fn audit_judges_the_tools_of_a_server_that_prints_a_banner_first() {
    // `@agent-infra/mcp-server-commands` 1.2.18 prints "Commands MCP Server
    // running on stdio" on stdout before speaking JSON-RPC; the fixture
    // does the same.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        json!({"commands": {"command": fixture(HOSTILE), "args": ["banner"]}}),
    );
    let out = lionrt(
        &dir.path().join("state.db"),
        &["mcp", "audit", "--config", &config, "--format", "jsonl"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Judged: a tool was refused (1), not "could not be audited" (2).
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("jsonl"))
        .collect();
    let mut verdicts: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["tool"].as_str().unwrap_or("-"),
                l["verdict"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    verdicts.sort_unstable();
    assert_eq!(
        verdicts,
        [
            ("add", "admit"),
            ("bash", "deny"),
            ("echo", "admit"),
            ("run_script", "deny"),
            ("search_code", "admit"),
        ],
        "{stderr}"
    );
}

#[test]
fn audit_of_a_server_naming_new_cursors_forever_ends_quickly_with_the_page_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("cursor");
    let config = write_config(
        dir.path(),
        json!({"endless": {"command": fixture(HOSTILE), "args": ["endless-cursor", tag]}}),
    );
    let started = std::time::Instant::now();
    let out = lionrt(
        &dir.path().join("state.db"),
        &["mcp", "audit", "--config", &config, "--format", "jsonl"],
    );
    let took = started.elapsed();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: Value = serde_json::from_str(stdout(&out).trim()).expect("one jsonl line");
    assert_eq!(line["verdict"], "error");
    let message = line["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("listed more than 100 pages in one tools/list"),
        "{message}"
    );
    // The limit stopped it, not the 30 s request timeout (which would be
    // a different message); how long it took, for the failure report.
    assert!(took < std::time::Duration::from_secs(30), "took {took:?}");
    assert!(mcp_test_servers::live_with_tag(&tag).is_empty());
}

#[test]
fn a_sigkilled_mcp_call_leaves_neither_the_server_nor_its_grandchild() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("sigkill");
    let mark = dir.path().join("called");
    // The server is started by a shell that first puts a sleeping
    // grandchild in the background: `sh -c 'sleeper & exec server'`.
    let config = write_config(
        dir.path(),
        json!({"hang": {
            "command": "/bin/sh",
            "args": ["-c", r#""$0" sleeper "$1" & exec "$0" hang-call "$1""#, fixture(HOSTILE), tag],
            "env": {"MCP_HOSTILE_MARK": mark.to_string_lossy()},
        }}),
    );
    let mut call = std::process::Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(dir.path().join("state.db"))
        .args([
            "mcp",
            "call",
            "hang",
            "echo",
            "--args",
            r#"{"text":"hi"}"#,
            "--config",
            &config,
        ])
        .env_remove("LIONRT_DB")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start lionrt mcp call");
    let limit = std::time::Duration::from_secs(60);
    let in_flight = wait_until(limit, || mark.exists());
    let live = mcp_test_servers::live_with_tag(&tag);
    call.kill().expect("SIGKILL lionrt");
    let _ = call.wait();
    assert!(in_flight, "the call never reached the server");
    assert_eq!(live.len(), 2, "server and grandchild: {live:?}");
    let gone = wait_until(limit, || mcp_test_servers::live_with_tag(&tag).is_empty());
    let left = mcp_test_servers::live_with_tag(&tag);
    for pid in &left {
        // Only processes this test started carry its tag.
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(*pid).expect("pid"),
            rustix::process::Signal::KILL,
        );
    }
    assert!(gone, "processes outlived the SIGKILLed lionrt: {left:?}");
}
