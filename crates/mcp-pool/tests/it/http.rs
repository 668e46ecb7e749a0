//! Servers reached over streamable HTTP: the benign fixture server in its
//! `--http` mode (rmcp's own HTTP server side) on a loopback port.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

use mcp_pool::{DenialReason, Error, McpPool, PoolConfig, SecurityConfig};
use mcp_test_servers::BENIGN;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::{fixture, tag};

/// A fixture server serving HTTP; killed when dropped.
pub(crate) struct HttpServer {
    child: Child,
    pub(crate) url: String,
    /// The tag among its arguments (see [`crate::live_with_tag`]).
    pub(crate) tag: String,
}

impl HttpServer {
    /// Kills the server and reaps it.
    pub(crate) async fn stop(mut self) {
        self.child
            .kill()
            .await
            .expect("kill the http fixture server");
    }
}

/// Starts the benign fixture server in `mode` over HTTP and reads the URL
/// it prints once it listens.
async fn http_server(mode: &str) -> HttpServer {
    http_server_with(mode, &[]).await
}

/// [`http_server`] with further arguments (`--tls-cert` and `--tls-key`);
/// the URL it prints is `http://127.0.0.1:PORT/mcp`, or `https://` with
/// TLS.
pub(crate) async fn http_server_with(mode: &str, extra: &[&str]) -> HttpServer {
    let tag = tag();
    let mut child = Command::new(fixture(BENIGN))
        .args([mode, "--http", &tag])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the http fixture server");
    let url = read_url(&mut child).await;
    assert!(
        url.starts_with("http://127.0.0.1:") || url.starts_with("https://127.0.0.1:"),
        "the fixture did not print its url: {url:?}"
    );
    HttpServer { child, url, tag }
}

/// The first line a fixture server prints on stdout, its URL, trimmed.
/// Generous: the line comes once the socket listens, which a loaded
/// machine may take a while to get to.
pub(crate) async fn read_url(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    tokio::time::timeout(
        Duration::from_secs(60),
        BufReader::new(stdout).read_line(&mut line),
    )
    .await
    .expect("the server printed its url in time")
    .expect("read the url");
    line.trim().to_owned()
}

/// A pool reaching URLs, plain http to loopback included, with generous
/// limits (these tests check outcomes, not speed).
pub(crate) fn http_config() -> PoolConfig {
    let mut security = SecurityConfig::trusted();
    security.allow_loopback_http = true;
    let mut config = PoolConfig::with_security(security);
    config.init_timeout = Duration::from_secs(60);
    config.request_timeout = Duration::from_secs(60);
    config
}

// contract: ADM-002
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_and_admitted_over_http_and_executor_tools_refused() {
    let server = http_server("executor").await;
    let pool = McpPool::new(http_config());
    pool.add_server(
        "web",
        json!({"url": server.url, "headers": {"X-Test": "1"}}),
    );
    let listing = pool.list_tools("web").await.expect("list over http");
    let admitted: Vec<&str> = listing.admitted.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(admitted, ["add", "echo", "search_code"]);
    let denied: Vec<&str> = listing.denied.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(denied, ["bash", "run_script"]);
    assert!(
        listing
            .denied
            .iter()
            .all(|d| matches!(d.reason, DenialReason::Admission(_)))
    );
    // Not a process of ours: an HTTP connection has no pid.
    assert_eq!(pool.server_pid("web").await, None);
    // The transport allowed the server; its refused tool still cannot be
    // called, and nothing reaches the server for it.
    let e = pool
        .call_tool("web", "bash", json!({"command": "ls"}))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::ToolNotAdmitted { .. }), "{e}");
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admitted_tool_is_called_over_http_with_validated_arguments() {
    let server = http_server("benign").await;
    let pool = McpPool::new(http_config());
    pool.add_server("web", json!({"url": server.url}));
    calls_are_made_and_validated(&pool, "web", "over http").await;
    pool.shutdown().await;
}

/// Calls `add` and `echo` (with `text`) on `server` through `pool`, then
/// checks that arguments failing the tool's schema are refused at `/b`.
pub(crate) async fn calls_are_made_and_validated(pool: &McpPool, server: &str, text: &str) {
    let sum = pool
        .call_tool(server, "add", json!({"a": 2, "b": 40}))
        .await
        .expect("tools/call");
    assert!(!sum.is_error);
    assert_eq!(sum.result["content"][0]["text"], "42");
    let echo = pool
        .call_tool(server, "echo", json!({"text": text}))
        .await
        .expect("a second call on the pooled connection");
    assert_eq!(echo.result["content"][0]["text"], text);
    let e = pool
        .call_tool(server, "add", json!({"a": 1, "b": "two"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArguments { path, .. } if path == "/b"),
        "{e}"
    );
}

/// Whether a connection is waiting on `listener` (one non-blocking
/// accept: the kernel queues a finished handshake even before accept).
fn connected(listener: &std::net::TcpListener) -> bool {
    listener.set_nonblocking(true).expect("nonblocking");
    listener.accept().is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_outside_the_allowed_set_is_refused_without_connecting() {
    // A listener that would see any connection attempt (the kernel
    // completes the handshake into its backlog even before accept).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let url = format!("http://127.0.0.1:{port}/mcp");

    // Not on the host allowlist.
    let mut config = http_config();
    config.security.url_allowlist = Some(BTreeSet::from(["localhost".to_owned()]));
    let pool = McpPool::new(config);
    pool.add_server("web", json!({"url": url}));
    let e = pool.list_tools("web").await.unwrap_err();
    assert!(matches!(e, Error::TransportDenied { .. }), "{e}");
    assert!(e.to_string().contains("not in the allowlist"), "{e}");

    // Plain http without the loopback allowance.
    let pool = McpPool::new(PoolConfig::with_security(SecurityConfig::trusted()));
    pool.add_server("web", json!({"url": url}));
    let e = pool.list_tools("web").await.unwrap_err();
    assert!(matches!(e, Error::TransportDenied { .. }), "{e}");
    assert!(e.to_string().contains("allow_loopback_http"), "{e}");

    // URLs off entirely (the default).
    let pool = McpPool::new(PoolConfig::default());
    pool.add_server("web", json!({"url": url}));
    let e = pool.list_tools("web").await.unwrap_err();
    assert!(e.to_string().contains("allow_urls is off"), "{e}");

    assert!(!connected(&listener), "a refused url was connected to");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_down_is_a_typed_error_not_a_hang() {
    // A port that was just free: bound, then released.
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        probe.local_addr().expect("addr").port()
    };
    let pool = McpPool::new(http_config());
    pool.add_server(
        "down",
        json!({"url": format!("http://127.0.0.1:{port}/mcp")}),
    );
    // The 60 s init timeout bounds the wait; a refused connection must be
    // reported as such, well before it.
    let e = pool.list_tools("down").await.unwrap_err();
    let Error::Unreachable {
        server,
        phase,
        detail,
    } = &e
    else {
        panic!("expected unreachable, got {e:?}");
    };
    assert_eq!((server.as_str(), *phase), ("down", "initialize"));
    assert!(!detail.is_empty());
    assert!(e.is_server_failure());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_this_build_cannot_speak_is_refused_before_connecting() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let pool = McpPool::new(http_config());
    // wss is authorized (to any host) but no WebSocket transport is built.
    pool.add_server("ws", json!({"url": format!("wss://localhost:{port}/mcp")}));
    let e = pool.list_tools("ws").await.unwrap_err();
    assert!(matches!(e, Error::TransportUnsupported { .. }), "{e}");
    assert!(e.to_string().contains("'wss' urls are not spoken"), "{e}");
    // A header the transport sets itself, and a value that cannot be
    // sent; the message never quotes the value.
    pool.add_server(
        "reserved",
        json!({"url": format!("http://127.0.0.1:{port}/mcp"), "headers": {"Mcp-Session-Id": "x"}}),
    );
    let e = pool.list_tools("reserved").await.unwrap_err();
    assert!(matches!(e, Error::ServerConfigInvalid { .. }), "{e}");
    pool.add_server(
        "badvalue",
        json!({"url": format!("http://127.0.0.1:{port}/mcp"), "headers": {"Authorization": "Bearer s3cr3t\n"}}),
    );
    let e = pool.list_tools("badvalue").await.unwrap_err();
    assert!(matches!(e, Error::ServerConfigInvalid { .. }), "{e}");
    assert!(!e.to_string().contains("s3cr3t"), "{e}");
    assert!(!connected(&listener), "a refused entry was connected to");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_change_announced_over_http_is_re_admitted() {
    // The fixture answers the first `tools/list` with a narrow `lookup`
    // and announces a change in the same breath: `lookup` now takes a
    // free-form command, which admission refuses.
    let server = http_server("list-changes").await;
    let pool = McpPool::new(http_config());
    pool.add_server("changing", json!({"url": server.url}));
    pool.list_tools("changing").await.expect("connect and list");
    // The announcement reaches the client on its own schedule (a
    // notification on the HTTP stream, handled on a task of rmcp's); poll
    // until the re-listing has refused the tool, failing at a generous
    // deadline. A call before that is still answered by the server.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let refused = loop {
        match pool
            .call_tool("changing", "lookup", json!({"record_id": "r1"}))
            .await
        {
            Err(e @ Error::ToolNotAdmitted { .. }) => break e,
            Ok(_) => {}
            Err(other) => panic!("unexpected error: {other}"),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the list change was never re-admitted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        matches!(
            &refused,
            Error::ToolNotAdmitted {
                reason: DenialReason::Admission(mcp_admission::Reason::UnboundedCommandInput),
                ..
            }
        ),
        "{refused}"
    );
    let now = pool.list_tools("changing").await.expect("relisted");
    assert!(now.admitted.is_empty());
    assert_eq!(now.denied.len(), 1);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_goes_away_mid_session_is_a_server_failure_and_reconnects() {
    let server = http_server("benign").await;
    let pool = McpPool::new(http_config());
    pool.add_server("web", json!({"url": server.url}));
    pool.list_tools("web").await.expect("list");
    drop(server);
    // The process is killed with its socket; the next call fails with a
    // typed server failure (bounded by the 60 s request timeout).
    let e = pool
        .call_tool("web", "echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    let Error::Unreachable { phase, detail, .. } = &e else {
        panic!("expected unreachable, got {e:?}");
    };
    assert_eq!(*phase, "tools/call");
    assert!(detail.contains("127.0.0.1"), "{detail}");
    assert!(e.is_server_failure());
    // The broken connection was discarded: the next use connects afresh
    // and, with nothing listening, says so.
    let e = pool.list_tools("web").await.unwrap_err();
    assert!(matches!(e, Error::Unreachable { .. }), "{e:?}");
    pool.shutdown().await;
}

/// Answers every request on `listener` with a 307 to `location`, until
/// `stop` is set; returns how many requests it answered.
fn redirector(
    listener: std::net::TcpListener,
    location: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let mut answered = 0;
        while !stop.load(Ordering::SeqCst) {
            let Ok((mut stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            stream.set_nonblocking(false).expect("blocking");
            stream
                .set_read_timeout(Some(Duration::from_secs(30)))
                .expect("timeout");
            // The request head (the body is left unread: the connection
            // closes after the answer).
            let mut head = Vec::new();
            let mut byte = [0_u8; 1];
            while !head.ends_with(b"\r\n\r\n") && matches!(stream.read(&mut byte), Ok(1)) {
                head.extend_from_slice(&byte);
            }
            let answer = format!(
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = stream.write_all(answer.as_bytes());
            answered += 1;
        }
        answered
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_off_the_servers_origin_is_not_followed() {
    // The configured server redirects to another port (another origin):
    // following it would replay the session and the entry's headers there.
    let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let elsewhere_port = elsewhere.local_addr().expect("addr").port();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let answering = redirector(
        listener,
        format!("http://127.0.0.1:{elsewhere_port}/mcp"),
        std::sync::Arc::clone(&stop),
    );
    let pool = McpPool::new(http_config());
    pool.add_server(
        "moved",
        json!({"url": format!("http://127.0.0.1:{port}/mcp"), "headers": {"Authorization": "Bearer s3cr3t"}}),
    );
    let e = pool.list_tools("moved").await.unwrap_err();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let answered = answering.join().expect("redirector");
    assert!(answered >= 1, "the server was never asked");
    assert!(e.is_server_failure(), "{e}");
    assert!(!e.to_string().contains("s3cr3t"), "{e}");
    assert!(!connected(&elsewhere), "the redirect was followed");
}
