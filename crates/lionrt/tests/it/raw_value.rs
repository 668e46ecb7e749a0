//! serde_json's `raw_value` feature stays off in the `lionrt` build.
//!
//! With it on (cargo unifies features, so one crate turning it on turns it
//! on for every `serde_json::Value` parse in the binary), an object whose
//! first key is `$serde_json::private::RawValue` reads as the JSON text in
//! that key's string. rmcp's streamable HTTP client parses an MCP server's
//! responses into `Value`s itself, so a server could then show the gate a
//! closed schema while the agent CLI, which reads the bytes as written,
//! sees an open one. This test binary links the serde_json the `lionrt`
//! binary links (same package, same features), so the guard below fails
//! the build's tests if any crate brings the feature back; the end-to-end
//! tests run the binary itself against a server that sends such a schema
//! over HTTP.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use mcp_test_servers::{HOSTILE, locate};
use serde_json::{Value, json};

use crate::mcp::write_config;
use crate::{lionrt, read_url};

const TOKEN: &str = "$serde_json::private::RawValue";

#[test]
fn raw_value_is_off_so_the_token_key_is_an_ordinary_key() {
    let parsed: Value =
        serde_json::from_str(r#"{"$serde_json::private::RawValue":"{\"a\":1}"}"#).expect("json");
    let Value::Object(map) = &parsed else {
        panic!("not an object: {parsed}");
    };
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [TOKEN],
        "serde_json's raw_value feature is on in the lionrt build (it read {parsed}): \
         find the crate that enables it with `cargo tree -p lionrt -e features -i serde_json` \
         (under `cargo test --workspace`, dev-dependencies count too: \
         `cargo tree --workspace -e features -i serde_json`)"
    );
    assert_eq!(parsed[TOKEN], "{\"a\":1}");
}

/// `mcp-hostile-server MODE --http [--sse]` on loopback; killed on drop.
struct Hostile {
    child: Child,
    url: String,
}

impl Hostile {
    fn start(mode: &str, sse: bool) -> Self {
        let mut command = hostile();
        command.args([mode, "--http"]);
        if sse {
            command.arg("--sse");
        }
        Self::spawn(&mut command, "http://127.0.0.1:")
    }

    /// Spawns the server and reads the URL it prints once it listens.
    fn spawn(command: &mut Command, scheme_and_host: &str) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the hostile server");
        let url = read_url(&mut child);
        assert!(url.starts_with(scheme_and_host), "{url:?}");
        Self { child, url }
    }
}

/// The hostile fixture server's command, arguments still to add.
fn hostile() -> Command {
    Command::new(locate(HOSTILE).unwrap_or_else(|e| panic!("fixture {HOSTILE}: {e}")))
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `lionrt mcp audit` and `lionrt mcp call` against the quirk servers (the
/// token as written and with its `$` escaped) and the lookalike, all over
/// streamable HTTP.
fn exec_is_refused_over_http(sse: bool) {
    let quirk = Hostile::start("raw-value-quirk", sse);
    let escaped = Hostile::start("raw-value-quirk-escaped", sse);
    let lookalike = Hostile::start("raw-value-lookalike", sse);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let config = write_config(
        dir.path(),
        json!({
            "quirk": {"url": quirk.url},
            "escaped": {"url": escaped.url},
            "lookalike": {"url": lookalike.url},
        }),
    );
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
            "--init-timeout",
            "60",
        ],
    );
    assert_eq!(audited.status.code(), Some(1), "{}", text(&audited));
    let mut verdicts: Vec<(String, String, String, String)> =
        String::from_utf8_lossy(&audited.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("jsonl"))
            .filter(|l| l.get("tool").is_some())
            .map(|l| {
                let s = |k: &str| l[k].as_str().unwrap_or("-").to_owned();
                (s("server"), s("tool"), s("verdict"), s("reason"))
            })
            .collect();
    verdicts.sort();
    assert_eq!(
        verdicts,
        [
            (
                "escaped".into(),
                "exec".into(),
                "deny".into(),
                "unbounded-command-input".into()
            ),
            (
                "lookalike".into(),
                "lookalike".into(),
                "admit".into(),
                "-".into()
            ),
            (
                "quirk".into(),
                "exec".into(),
                "deny".into(),
                "unbounded-command-input".into()
            ),
        ],
        "{}",
        text(&audited)
    );
    // The refused tool is not called: the server, which answers every call
    // with a success, is never reached.
    for server in ["quirk", "escaped"] {
        let called = lionrt(
            &db,
            &[
                "mcp",
                "call",
                server,
                "exec",
                "--args",
                r#"{"command": "ls"}"#,
                "--config",
                &config,
                "--allow-loopback-http",
                "--init-timeout",
                "60",
            ],
        );
        assert_eq!(called.status.code(), Some(1), "{}", text(&called));
        assert!(
            !text(&called).contains("the hostile server ran the call"),
            "{}",
            text(&called)
        );
    }
    // The lookalike is admitted and called.
    let called = lionrt(
        &db,
        &[
            "mcp",
            "call",
            "lookalike",
            "lookalike",
            "--args",
            r#"{"note": "hi"}"#,
            "--config",
            &config,
            "--allow-loopback-http",
            "--init-timeout",
            "60",
        ],
    );
    assert_eq!(called.status.code(), Some(0), "{}", text(&called));
    assert!(
        text(&called).contains("the hostile server ran the call"),
        "{}",
        text(&called)
    );
}

#[test]
fn a_raw_value_keyed_schema_in_a_json_response_is_refused() {
    exec_is_refused_over_http(false);
}

#[test]
fn a_raw_value_keyed_schema_in_an_sse_response_is_refused() {
    exec_is_refused_over_http(true);
}

/// `mcp-hostile-server MODE --http --tls-self-signed DIR`: HTTPS with a CA
/// of its own, whose certificate it writes to `DIR/ca.pem`.
fn start_tls(mode: &str, dir: &Path) -> Hostile {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut command = hostile();
    command.args([mode, "--http", "--tls-self-signed"]).arg(dir);
    Hostile::spawn(&mut command, "https://127.0.0.1:")
}

/// The (server, tool, reason, action) of each `mcp.forward_refused` row.
fn forward_refusals(db: &Path) -> Vec<(String, String, String, String)> {
    let engine =
        state_sqlite::Engine::open(db, state_sqlite::EngineConfig::default()).expect("open db");
    let conn = engine.conn().expect("conn");
    let mut stmt = conn
        .prepare(
            "SELECT detail_json FROM admin_events WHERE kind = 'mcp.forward_refused' ORDER BY id",
        )
        .expect("prepare");
    stmt.query_map([], |r| r.get::<_, String>(0))
        .expect("query")
        .map(|d| {
            let d: Value = serde_json::from_str(&d.expect("row")).expect("detail json");
            let s = |k: &str| d[k].as_str().unwrap_or("-").to_owned();
            (s("server"), s("tool"), s("reason"), s("action"))
        })
        .collect()
}

/// `lionrt run` forwarding to Codex: the server whose `exec` tool is
/// refused is not forwarded, and the refusal is an `admin_events` row,
/// as for any refused tool; the lookalike is forwarded. `run` reaches URL
/// servers over https only: the fixture servers make their own CA, which
/// `SSL_CERT_FILE` names.
#[test]
fn codex_is_not_given_a_server_sending_a_raw_value_keyed_schema() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let (workspace, home, bin) = (root.join("ws"), root.join("home"), root.join("bin"));
    for d in [&workspace, &home, &bin] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let quirk = start_tls("raw-value-quirk", &root.join("tls-quirk"));
    let lookalike = start_tls("raw-value-lookalike", &root.join("tls-lookalike"));
    let mut roots = std::fs::read_to_string(root.join("tls-quirk/ca.pem")).expect("ca");
    roots.push_str(&std::fs::read_to_string(root.join("tls-lookalike/ca.pem")).expect("ca"));
    std::fs::write(root.join("roots.pem"), roots).expect("write roots");
    let config = write_config(
        root,
        json!({"quirk": {"url": quirk.url}, "lookalike": {"url": lookalike.url}}),
    );
    // A stand-in codex: records its argv and replays a recorded stream.
    let stream = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/providers/codex_exec_json_success.jsonl");
    let argv_file = bin.join("codex.argv");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\0' \"$@\" > '{}'\ncat '{}'\n",
        argv_file.display(),
        stream.display()
    );
    std::fs::write(bin.join("codex"), script).expect("write stand-in");
    std::fs::set_permissions(bin.join("codex"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let db = root.join("state.db");
    let out = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .args(["--json", "--db"])
        .arg(&db)
        .args([
            "run",
            "--prompt",
            "Update the README with a short usage note.",
            "--provider",
            "codex",
            "--session",
            "rv",
            "--workspace",
        ])
        .arg(&workspace)
        .args(["--mcp-config", &config, "--mcp-init-timeout", "60"])
        .current_dir(root)
        .env("HOME", &home)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("SSL_CERT_FILE", root.join("roots.pem"))
        .env_remove("SSL_CERT_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("LIONRT_DB")
        .output()
        .expect("run lionrt");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let argv = std::fs::read(&argv_file).expect("the stand-in ran");
    let argv: Vec<String> = argv
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    assert!(
        argv.iter().any(|a| a.starts_with("mcp_servers.lookalike.")),
        "{argv:?}"
    );
    assert!(
        !argv.iter().any(|a| a.starts_with("mcp_servers.quirk.")),
        "{argv:?}"
    );
    assert_eq!(
        forward_refusals(&db),
        [(
            "quirk".to_owned(),
            "exec".to_owned(),
            "unbounded-command-input".to_owned(),
            "server_not_forwarded".to_owned()
        )],
        "{}",
        text(&out)
    );
}
