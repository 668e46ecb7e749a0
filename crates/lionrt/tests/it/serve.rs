//! `lionrt serve`, the live web monitor, over stores filled by real
//! scripted legs (`lionrt run`, real processes): every route in-process on
//! SQLite and the same JSON shape on PostgreSQL (`LIONRT_TEST_PG`), the
//! event stream's resume with `Last-Event-ID` (no gap, no duplicate), a
//! running leg's messages reaching an open stream, the Host check, the
//! token off loopback, the CSRF refusal, the kill action's recorded actor,
//! redaction, and the pages rendered in headless Chromium.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A leg whose first message (its session id) comes at once and whose
/// tool call (a `sleep` of `ms`, carrying `late`) comes after the sleep.
fn slow_script(ms: u64, late: &str) -> String {
    format!(
        r#"[{{"type": "tool_call", "id": "t", "name": "sleep", "arguments": {{"ms": {ms}, "note": "{late}"}}}}]"#
    )
}

fn lionrt_env(db: &str, schema: Option<&str>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lionrt"));
    // Legs work in the temp dir, never in the checkout.
    cmd.arg("--db")
        .arg(db)
        .env_remove("LIONRT_DB")
        .current_dir(std::env::temp_dir());
    if let Some(s) = schema {
        cmd.env("LIONRT_PG_SCHEMA", s);
    }
    cmd
}

fn ok(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().expect("run lionrt");
    assert!(
        out.status.success(),
        "{:?}: {}{}",
        cmd,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Fills a store with real legs: two that complete, one that fails, a
/// schedule, an outbox row and an admin event (a dry-run prune).
fn fill(db: &str, schema: Option<&str>, dir: &Path) {
    let err = dir.join("err.json");
    std::fs::write(&err, r#"[{"type": "error", "message": "boom"}]"#).expect("script");
    ok(lionrt_env(db, schema).args(["state", "init"]));
    for id in ["ok-1", "ok-2"] {
        ok(lionrt_env(db, schema).args(["run", "--quiet", "--session", id]));
    }
    let out = lionrt_env(db, schema)
        .args(["run", "--quiet", "--session", "bad-1", "--script"])
        .arg(&err)
        .output()
        .expect("run");
    assert!(!out.status.success(), "the error script fails its run");
    ok(lionrt_env(db, schema).args([
        "schedule",
        "create",
        "nightly",
        "--cron",
        "0 3 * * *",
        "--prompt",
        "tidy up",
    ]));
    ok(lionrt_env(db, schema).args(["outbox", "enqueue", "hello", "--", "/bin/true"]));
    ok(lionrt_env(db, schema).args(["state", "prune", "--older-than", "30d", "--dry-run"]));
}

// ---- in-process routes ------------------------------------------------

const HOST: &str = "127.0.0.1:8765";

fn monitor(src: Arc<dyn web_monitor::Source>) -> Arc<web_monitor::Monitor> {
    let config = web_monitor::Config::new(HOST.parse().expect("addr"));
    web_monitor::Monitor::new(src, config, None).expect("monitor")
}

/// GETs `path` through the router (no socket): status and JSON.
fn call(
    rt: &tokio::runtime::Runtime,
    m: &Arc<web_monitor::Monitor>,
    req: axum::http::Request<axum::body::Body>,
) -> (u16, Value) {
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;
    let router = m.router();
    rt.block_on(async move {
        let resp = router.oneshot(req).await.expect("route");
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        let v = serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
        (status, v)
    })
}

fn get(path: &str) -> axum::http::Request<axum::body::Body> {
    axum::http::Request::get(path)
        .header("host", HOST)
        .body(axum::body::Body::empty())
        .expect("request")
}

const ROUTES: &[&str] = &[
    "/api/meta",
    "/api/sessions",
    "/api/sessions?group=done",
    "/api/sessions?group=failed",
    "/api/sessions?provider=scripted&q=OK-",
    "/api/sessions?status=failed",
    "/api/sessions?limit=1",
    "/api/sessions/ok-1",
    "/api/sessions/bad-1",
    "/api/sessions/ok-1/messages?limit=2",
    "/api/sessions/ok-1/messages?after=2&limit=100",
    "/api/schedules",
    "/api/outbox",
    "/api/admin-events",
    "/api/admin-events?kind=state.",
    "/api/costs?window=24h",
    "/api/costs?window=7d",
    "/api/sessions/nope",
    "/api/costs?window=1y",
    "/api/sessions?before=garbage",
];

/// Every route's status and body on one store.
fn route_matrix(src: Arc<dyn web_monitor::Source>) -> BTreeMap<String, (u16, Value)> {
    let m = monitor(src);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    ROUTES
        .iter()
        .map(|r| ((*r).to_owned(), call(&rt, &m, get(r))))
        .collect()
}

/// The checks every store's matrix passes.
fn check_matrix(m: &BTreeMap<String, (u16, Value)>) {
    let at = |r: &str| &m[r];
    for (route, (status, body)) in m {
        let want = match route.as_str() {
            "/api/sessions/nope" => 404,
            "/api/costs?window=1y" | "/api/sessions?before=garbage" => 400,
            _ => 200,
        };
        assert_eq!(*status, want, "{route}: {body}");
    }
    let all = &at("/api/sessions").1;
    let ids: Vec<&str> = all["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(ids, ["bad-1", "ok-2", "ok-1"], "newest first");
    assert_eq!(all["groups"]["done"], 2);
    assert_eq!(all["groups"]["failed"], 1);
    assert_eq!(all["groups"]["working"], 0);
    let failed = &at("/api/sessions?group=failed").1["items"];
    assert_eq!(failed[0]["id"], "bad-1");
    assert_eq!(failed[0]["group"], "failed");
    assert_eq!(
        at("/api/sessions?group=done").1["items"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    // The search is case-insensitive and combines with the provider.
    let found = &at("/api/sessions?provider=scripted&q=OK-").1["items"];
    assert_eq!(found.as_array().map(Vec::len), Some(2), "{found}");
    // Paging: one row and a cursor to the next.
    let page = &at("/api/sessions?limit=1").1;
    assert_eq!(page["items"].as_array().map(Vec::len), Some(1));
    assert!(page["next"].is_string(), "{page}");
    // A session: the timeline with who and why, usage kept unpriced.
    let s = &at("/api/sessions/ok-1").1;
    let steps: Vec<(&str, &str, &str)> = s["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .map(|t| {
            (
                t["to_status"].as_str().unwrap_or_default(),
                t["reason_code"].as_str().unwrap_or_default(),
                t["actor_type"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("running", "run.started.ok", "executor"),
            ("completed", "run.completed.ok", "executor")
        ]
    );
    assert_eq!(
        s["usage"]["priced"], false,
        "no cost reported is unpriced, not $0"
    );
    assert!(s["usage"]["total_cost_usd"].is_null());
    assert!(s["spawn"]["leg_pid"].is_i64(), "the spawn record: {s}");
    assert_eq!(at("/api/sessions/bad-1").1["session"]["status"], "failed");
    // Messages page on by seq.
    let first = &at("/api/sessions/ok-1/messages?limit=2").1;
    assert_eq!(first["items"].as_array().map(Vec::len), Some(2));
    assert_eq!(first["next"], first["items"][1]["seq"]);
    let rest = &at("/api/sessions/ok-1/messages?after=2&limit=100").1;
    let total = s["session"]["messages"].as_i64().expect("count");
    assert_eq!(
        rest["items"].as_array().map(Vec::len),
        Some(usize::try_from(total - 2).expect("n"))
    );
    // Schedules, outbox, audit, costs.
    assert_eq!(at("/api/schedules").1["items"][0]["name"], "nightly");
    assert_eq!(at("/api/outbox").1["items"][0]["status"], "pending");
    let audit = &at("/api/admin-events?kind=state.").1["items"];
    assert_eq!(audit[0]["kind"], "state.prune", "{audit}");
    let costs = &at("/api/costs?window=7d").1;
    assert_eq!(costs["unpriced_sessions"], 3);
    assert_eq!(costs["rows"][0]["provider"], "scripted");
    assert!(costs["rows"][0]["cost_usd"].is_null(), "{costs}");
}

/// The shape of a JSON value: scalars by type, objects by key, arrays by
/// their first element; volatile values left out.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
        Value::Array(a) => Value::Array(a.first().map(shape).into_iter().collect()),
        Value::String(_) => "string".into(),
        Value::Number(_) => "number".into(),
        Value::Bool(_) => "bool".into(),
        Value::Null => "null".into(),
    }
}

fn sqlite_source(db: &Path) -> Arc<dyn web_monitor::Source> {
    let engine = state_sqlite::ReadOnlyEngine::open(db, Duration::from_secs(5)).expect("open");
    Arc::new(web_monitor::SqliteSource::new(
        engine,
        db.display().to_string(),
    ))
}

#[test]
fn every_route_answers_from_real_legs_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    fill(&db.display().to_string(), None, dir.path());
    check_matrix(&route_matrix(sqlite_source(&db)));
}

#[test]
fn every_route_answers_the_same_on_postgres() {
    let Ok(url) = std::env::var("LIONRT_TEST_PG") else {
        #[allow(clippy::print_stderr, reason = "a skipped test says why")]
        {
            eprintln!(
                "skipped: LIONRT_TEST_PG is unset (start a server with `eval \"$(.ci/pg-cluster start)\"`)"
            );
        }
        return;
    };
    let schema = format!("lionrt_serve_{}", std::process::id());
    let dir = tempfile::tempdir().expect("tempdir");
    fill(&url, Some(&schema), dir.path());
    let config = state_postgres::PgConfig::new(state_postgres::DbUrl::new(url.clone()))
        .with_schema(schema.clone());
    let engine = state_postgres::PgEngine::open_read_only(&config).expect("read-only engine");
    let pg = route_matrix(Arc::new(web_monitor::PostgresSource::new(
        state_postgres::PgStore::new(engine),
    )));
    check_matrix(&pg);
    // The same store filled the same way on SQLite: the same JSON shape,
    // route by route (dialect and location aside).
    let db = dir.path().join("state.db");
    fill(&db.display().to_string(), None, dir.path());
    let lite = route_matrix(sqlite_source(&db));
    for (route, (status, body)) in &lite {
        let (pg_status, pg_body) = &pg[route];
        assert_eq!(status, pg_status, "{route}");
        assert_eq!(shape(body), shape(pg_body), "{route}: {body} vs {pg_body}");
    }
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .expect("drop");
}

#[test]
fn the_routes_refuse_a_foreign_host_and_a_post_without_csrf_in_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    ok(lionrt_env(&db.display().to_string(), None).args(["state", "init"]));
    let m = monitor(sqlite_source(&db));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let foreign = axum::http::Request::get("/api/meta")
        .header("host", "rebound.example:8765")
        .body(axum::body::Body::empty())
        .expect("req");
    let (status, body) = call(&rt, &m, foreign);
    assert_eq!(status, 421, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("DNS rebinding")
    );
    let post = |origin: Option<&str>, csrf: Option<&str>| {
        let mut b = axum::http::Request::post("/api/sessions/x/kill").header("host", HOST);
        if let Some(o) = origin {
            b = b.header("origin", o);
        }
        if let Some(c) = csrf {
            b = b.header("x-csrf-token", c);
        }
        b.body(axum::body::Body::empty()).expect("req")
    };
    assert_eq!(call(&rt, &m, post(None, Some(m.csrf()))).0, 403);
    assert_eq!(
        call(&rt, &m, post(Some("http://evil.example"), Some(m.csrf()))).0,
        403
    );
    let (status, body) = call(&rt, &m, post(Some("http://127.0.0.1:8765"), Some("wrong")));
    assert_eq!(status, 403);
    assert!(
        body["error"].as_str().unwrap_or_default().contains("CSRF"),
        "{body}"
    );
    // Same origin and the token: past the guard, and this monitor has no
    // actions (as with --read-only).
    let (status, body) = call(&rt, &m, post(Some("http://127.0.0.1:8765"), Some(m.csrf())));
    assert_eq!(status, 403);
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("read-only"),
        "{body}"
    );
}

// ---- a real server ------------------------------------------------------

struct Served {
    child: Child,
    addr: String,
}

impl Served {
    fn start(db: &Path, args: &[&str], env: &[(&str, &str)]) -> Served {
        let mut cmd = lionrt_env(&db.display().to_string(), None);
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--poll-ms", "50"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn serve");
        let url = crate::read_url(&mut child);
        let addr = url
            .strip_prefix("http://")
            .and_then(|u| u.strip_suffix('/'))
            .unwrap_or_else(|| panic!("not a url: {url:?}"))
            .to_owned();
        Served { child, addr }
    }

    fn port(&self) -> &str {
        self.addr.rsplit(':').next().unwrap_or_default()
    }

    /// One request; status, headers (lower-case names) and body.
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> (u16, Vec<(String, String)>, String) {
        let mut s = TcpStream::connect(&self.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let mut req =
            format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: 0\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).expect("write");
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).expect("read");
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        (status, headers, body.to_owned())
    }

    fn json(&self, path: &str) -> Value {
        let (status, _, body) = self.request("GET", path, &[]);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
    }

    /// Opens the event stream.
    fn events(&self, query: &str, last_event_id: Option<&str>) -> Events {
        let mut s = TcpStream::connect(&self.addr).expect("connect");
        let mut req = format!(
            "GET /api/events{query} HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n",
            self.addr
        );
        if let Some(id) = last_event_id {
            req.push_str(&format!("Last-Event-ID: {id}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).expect("write");
        let mut r = BufReader::new(s);
        let mut line = String::new();
        r.get_mut()
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        r.read_line(&mut line).expect("status line");
        assert!(line.contains(" 200 "), "{line}");
        loop {
            line.clear();
            r.read_line(&mut line).expect("header");
            if line == "\r\n" {
                break;
            }
        }
        Events {
            r,
            pending: String::new(),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
struct Ev {
    id: String,
    kind: String,
    data: Value,
}

/// An open event stream (chunked HTTP/1.1, decoded).
struct Events {
    r: BufReader<TcpStream>,
    pending: String,
}

impl Events {
    /// The next event before `deadline` (heartbeats skipped), or `None`.
    fn next(&mut self, deadline: Instant) -> Option<Ev> {
        loop {
            if let Some(end) = self.pending.find("\n\n") {
                let block: String = self.pending.drain(..end + 2).collect();
                let (mut id, mut kind, mut data) = (String::new(), String::new(), String::new());
                for l in block.lines() {
                    if let Some(v) = l.strip_prefix("id: ").or_else(|| l.strip_prefix("id:")) {
                        id = v.to_owned();
                    } else if let Some(v) = l
                        .strip_prefix("event: ")
                        .or_else(|| l.strip_prefix("event:"))
                    {
                        kind = v.to_owned();
                    } else if let Some(v) =
                        l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:"))
                    {
                        data.push_str(v);
                    }
                }
                if id.is_empty() {
                    continue; // a heartbeat comment
                }
                let data = serde_json::from_str(&data).expect("event data is JSON");
                return Some(Ev { id, kind, data });
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            self.r
                .get_mut()
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .ok()?;
            // A chunk: its size line, the bytes, CRLF.
            let mut size = String::new();
            match self.r.read_line(&mut size) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            let n = usize::from_str_radix(size.trim(), 16).ok()?;
            let mut chunk = vec![0; n + 2];
            self.r.read_exact(&mut chunk).ok()?;
            chunk.truncate(n);
            self.pending.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Events until one with id `last` (inclusive).
    fn until_id(&mut self, last: &str, deadline: Instant) -> Vec<Ev> {
        let mut out = Vec::new();
        while let Some(e) = self.next(deadline) {
            let done = e.id == last;
            out.push(e);
            if done {
                return out;
            }
        }
        panic!(
            "no event {last} before the deadline; got {:?}",
            out.iter().map(|e| &e.id).collect::<Vec<_>>()
        );
    }
}

fn ids(evs: &[Ev]) -> Vec<&str> {
    evs.iter().map(|e| e.id.as_str()).collect()
}

fn soon(secs: u64) -> Instant {
    Instant::now() + Duration::from_secs(secs)
}

#[test]
fn a_reconnect_with_last_event_id_resumes_with_no_gap_and_no_duplicate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    fill(&db.display().to_string(), None, dir.path());
    let served = Served::start(&db, &[], &[]);
    let head = served.json("/api/meta")["cursor"]
        .as_str()
        .expect("cursor")
        .to_owned();
    // Everything from the start of the store.
    let all = served
        .events("?after=0-0-0", None)
        .until_id(&head, soon(30));
    assert!(all.len() > 10, "{:?}", ids(&all));
    let kinds: std::collections::BTreeSet<&str> = all.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["admin", "message", "transition"].into_iter().collect()
    );
    // Resumed after every position: exactly the rest, in order.
    for k in [0, 1, all.len() / 2, all.len() - 2] {
        let rest = served
            .events("?after=0-0-0", Some(&all[k].id))
            .until_id(&head, soon(30));
        assert_eq!(
            ids(&rest),
            ids(&all[k + 1..]),
            "resumed after {}",
            all[k].id
        );
    }
    // Live: a new leg while a stream is open, the stream dropped midway
    // and resumed from the last id it got; what it got in all equals a
    // fresh read of the store.
    let mut live = served.events("", Some(&head));
    let script = dir.path().join("slow.json");
    std::fs::write(&script, slow_script(600, "last words")).expect("script");
    let mut run = lionrt_env(&db.display().to_string(), None)
        .args(["run", "--quiet", "--session", "live-1", "--script"])
        .arg(&script)
        .stdout(Stdio::null())
        .spawn()
        .expect("run");
    let mut got = Vec::new();
    for _ in 0..2 {
        got.push(live.next(soon(30)).expect("a live event"));
    }
    drop(live);
    assert!(run.wait().expect("wait").success());
    let end = wait_for_cursor_past(&served, &head);
    let resumed = served
        .events("", Some(&got.last().expect("got").id))
        .until_id(&end, soon(30));
    got.extend(resumed);
    let fresh = served.events("", Some(&head)).until_id(&end, soon(30));
    assert_eq!(ids(&got), ids(&fresh));
    assert_eq!(got, fresh, "the same events, with the same data");
    let texts: Vec<String> = got
        .iter()
        .filter(|e| e.kind == "message")
        .map(|e| e.data["content"].to_string())
        .collect();
    assert!(texts.iter().any(|t| t.contains("last words")), "{texts:?}");
    // A bad id is refused, not read as zero.
    let (status, _, body) = served.request("GET", "/api/events", &[("Last-Event-ID", "12-x")]);
    assert_eq!(status, 400, "{body}");
}

/// Waits until the server's feed moved past `head` and settled (the leg
/// ended); returns the cursor.
fn wait_for_cursor_past(served: &Served, head: &str) -> String {
    let deadline = soon(30);
    let mut last = head.to_owned();
    let mut stable = 0;
    while Instant::now() < deadline {
        let now = served.json("/api/meta")["cursor"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let ended = served.json("/api/sessions/live-1")["session"]["status"] == "completed";
        if ended && now == last && now != head {
            stable += 1;
            if stable >= 3 {
                return now;
            }
        } else {
            stable = 0;
        }
        last = now;
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the feed never settled past {head}");
}

#[test]
fn a_running_legs_messages_reach_an_open_stream_while_it_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    ok(lionrt_env(&db.display().to_string(), None).args(["state", "init"]));
    let served = Served::start(&db, &[], &[]);
    let mut stream = served.events("?session=live-2", None);
    let script = dir.path().join("slow.json");
    std::fs::write(&script, slow_script(3000, "late-marker")).expect("script");
    let mut run = lionrt_env(&db.display().to_string(), None)
        .args(["run", "--quiet", "--session", "live-2", "--script"])
        .arg(&script)
        .stdout(Stdio::null())
        .spawn()
        .expect("run");
    let deadline = soon(30);
    let mut seen_early_while_running = false;
    let mut kinds = Vec::new();
    loop {
        let e = stream.next(deadline).expect("events until the end");
        assert_eq!(
            e.data["session_id"]
                .as_str()
                .or(e.data["entity_id"].as_str()),
            Some("live-2"),
            "the stream is filtered to the session: {e:?}"
        );
        kinds.push(e.kind.clone());
        if e.kind == "message" && e.data["seq"].is_i64() && !seen_early_while_running {
            // The first message: the leg still runs (it sleeps before its
            // tool call line).
            assert!(!e.data["content"].to_string().contains("late-marker"));
            seen_early_while_running = run.try_wait().expect("try_wait").is_none();
        }
        if e.kind == "transition" && e.data["to_status"] == "completed" {
            break;
        }
    }
    assert!(
        seen_early_while_running,
        "the first message came while the leg ran"
    );
    assert_eq!(kinds.first().map(String::as_str), Some("transition"));
    assert!(run.wait().expect("wait").success());
}

#[test]
fn the_host_is_checked_and_off_loopback_a_token_is_required() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    ok(lionrt_env(&db.display().to_string(), None).args(["state", "init"]));
    let served = Served::start(&db, &[], &[]);
    let port = served.port().to_owned();
    let (status, _, body) = served.request(
        "GET",
        "/api/meta",
        &[("Host", &format!("attacker.example:{port}"))],
    );
    assert_eq!(status, 421, "{body}");
    let (status, _, _) = served.request("GET", "/", &[("Host", &format!("localhost:{port}"))]);
    assert_eq!(status, 200);
    drop(served);
    // --json: the address as a JSON line, for machines.
    let mut child = lionrt_env(&db.display().to_string(), None)
        .args(["--json", "serve", "--listen", "127.0.0.1:0", "--read-only"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let line = crate::read_url(&mut child);
    let _ = child.kill();
    let _ = child.wait();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert!(
        v["url"]
            .as_str()
            .unwrap_or_default()
            .starts_with("http://127.0.0.1:"),
        "{v}"
    );
    assert_eq!(v["read_only"], true);
    // Off loopback without a token: refused before listening.
    let out = lionrt_env(&db.display().to_string(), None)
        .args(["serve", "--listen", "0.0.0.0:0"])
        .output()
        .expect("serve");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("requires --token"),
        "{out:?}"
    );
    // With one: nothing without it, a bearer or the cookie let in.
    let mut cmd = lionrt_env(&db.display().to_string(), None);
    cmd.args([
        "serve",
        "--listen",
        "0.0.0.0:0",
        "--token",
        "t0ken-for-tests",
    ])
    .stdout(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let url = crate::read_url(&mut child);
    let port = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_owned();
    let served = Served {
        child,
        addr: format!("127.0.0.1:{port}"),
    };
    let (status, _, _) = served.request("GET", "/api/meta", &[]);
    assert_eq!(status, 401);
    let (status, _, _) = served.request(
        "GET",
        "/api/meta",
        &[("Authorization", "Bearer wrong-token")],
    );
    assert_eq!(status, 401);
    let (status, _, body) = served.request(
        "GET",
        "/api/meta",
        &[("Authorization", "Bearer t0ken-for-tests")],
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        !body.contains("t0ken-for-tests"),
        "the token is never shown"
    );
    let (status, headers, _) = served.request("GET", "/?token=t0ken-for-tests", &[]);
    assert_eq!(status, 303);
    let cookie = headers
        .iter()
        .find(|(k, _)| k == "set-cookie")
        .map(|(_, v)| v.clone())
        .expect("a cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap_or_default().to_owned();
    let (status, _, _) = served.request("GET", "/api/sessions", &[("Cookie", &pair)]);
    assert_eq!(status, 200);
}

#[test]
fn a_kill_from_the_page_needs_csrf_and_is_recorded_with_its_web_actor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let dbs = db.display().to_string();
    ok(lionrt_env(&dbs, None).args(["state", "init"]));
    let script = dir.path().join("slow.json");
    std::fs::write(&script, slow_script(30_000, "never said")).expect("script");
    let mut run = lionrt_env(&dbs, None)
        .args(["run", "--quiet", "--session", "victim", "--script"])
        .arg(&script)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run");
    let served = Served::start(&db, &[], &[]);
    // Running, with its leg recorded.
    let deadline = soon(30);
    loop {
        let (status, _, body) = served.request("GET", "/api/sessions/victim", &[]);
        if status == 200 {
            let v: Value = serde_json::from_str(&body).expect("json");
            if v["spawn"]["leg_pid"].is_i64() && v["session"]["status"] == "running" {
                break;
            }
        }
        assert!(Instant::now() < deadline, "the leg never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let csrf = served.json("/api/meta")["csrf"]
        .as_str()
        .expect("csrf")
        .to_owned();
    let origin = format!("http://{}", served.addr);
    let kill = "/api/sessions/victim/kill";
    assert_eq!(
        served.request("POST", kill, &[("X-CSRF-Token", &csrf)]).0,
        403,
        "no origin"
    );
    assert_eq!(
        served
            .request(
                "POST",
                kill,
                &[("Origin", "http://evil.example"), ("X-CSRF-Token", &csrf)]
            )
            .0,
        403
    );
    let (status, _, body) = served.request("POST", kill, &[("Origin", &origin)]);
    assert_eq!(status, 403, "no CSRF token: {body}");
    assert_eq!(
        served.json("/api/sessions/victim")["session"]["status"],
        "running",
        "no refused request changed anything"
    );
    let (status, _, body) = served.request(
        "POST",
        kill,
        &[("Origin", &origin), ("X-CSRF-Token", &csrf)],
    );
    assert_eq!(status, 200, "{body}");
    let report: Value = serde_json::from_str(&body).expect("report");
    assert_eq!(report["status"], "cancelled");
    let _ = run.wait();
    // The lifecycle names the web actor, through the CLI too.
    let out = ok(lionrt_env(&dbs, None).args(["--json", "lifecycle", "victim"]));
    let v = crate::stdout_json(&out);
    let last = v["transitions"]
        .as_array()
        .and_then(|t| t.last())
        .cloned()
        .expect("transitions");
    assert_eq!(last["to_status"], "cancelled");
    assert_eq!(last["reason_code"], "run.cancelled.manual_kill");
    assert_eq!(last["actor_type"], "operator");
    assert!(
        last["actor_id"]
            .as_str()
            .unwrap_or_default()
            .starts_with("web:127.0.0.1:"),
        "{last}"
    );
    // A second kill: the session already ended.
    assert_eq!(
        served
            .request(
                "POST",
                kill,
                &[("Origin", &origin), ("X-CSRF-Token", &csrf)]
            )
            .0,
        409
    );
    // A read-only server refuses the action outright.
    let ro = Served::start(&db, &["--read-only"], &[]);
    let csrf = ro.json("/api/meta")["csrf"]
        .as_str()
        .expect("csrf")
        .to_owned();
    let origin = format!("http://{}", ro.addr);
    let (status, _, body) = ro.request(
        "POST",
        kill,
        &[("Origin", &origin), ("X-CSRF-Token", &csrf)],
    );
    assert_eq!(status, 403);
    assert!(body.contains("read-only"), "{body}");
}

#[test]
fn no_route_or_event_shows_a_secret_of_the_servers_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let dbs = db.display().to_string();
    let secret = "sk-live-7f3a9c21e8b4d605";
    let script = dir.path().join("leak.json");
    std::fs::write(
        &script,
        format!(r#"[{{"type": "text", "text": "the key is {secret}"}}]"#),
    )
    .expect("script");
    ok(lionrt_env(&dbs, None)
        .args(["run", "--quiet", "--session", "leaky", "--script"])
        .arg(&script));
    let served = Served::start(&db, &[], &[("DEPLOY_API_TOKEN", secret)]);
    let messages = served.request("GET", "/api/sessions/leaky/messages", &[]).2;
    assert!(!messages.contains(secret), "{messages}");
    assert!(messages.contains("the key is ***"), "{messages}");
    let head = served.json("/api/meta")["cursor"]
        .as_str()
        .expect("cursor")
        .to_owned();
    let events = served
        .events("?after=0-0-0", None)
        .until_id(&head, soon(30));
    let all =
        serde_json::to_string(&events.iter().map(|e| &e.data).collect::<Vec<_>>()).expect("json");
    assert!(!all.contains(secret));
    assert!(all.contains("***"));
}

// ---- headless Chromium --------------------------------------------------

fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in ["/usr/bin", "/usr/local/bin", "/snap/bin"] {
            let p = Path::new(dir).join(name);
            if p.exists() {
                return Some(p);
            }
        }
    }
    #[allow(clippy::print_stderr, reason = "a skipped test says why")]
    {
        eprintln!(
            "skipped: no chromium on this machine (`apt-get install chromium`; .ci/run installs it)"
        );
    }
    None
}

fn screenshots() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf)
        .join("screenshots");
    std::fs::create_dir_all(&dir).expect("screenshots dir");
    dir
}

/// Chromium, headless, on `url`: `--dump-dom` (the rendered page), or a
/// screenshot into `png`.
fn browse(chrome: &Path, profile: &Path, url: &str, png: Option<&Path>) -> String {
    let mut cmd = Command::new(chrome);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--virtual-time-budget=5000",
        "--window-size=1280,900",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    match png {
        Some(p) => cmd.arg(format!("--screenshot={}", p.display())),
        None => cmd.arg("--dump-dom"),
    };
    let mut child = cmd.arg(url).spawn().expect("chromium");
    let mut out = String::new();
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let _ = stdout.read_to_string(&mut out);
        out
    });
    let deadline = soon(90);
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish with {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().expect("reader")
}

#[test]
fn chromium_renders_every_page_from_real_legs() {
    let Some(chrome) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    fill(&db.display().to_string(), None, dir.path());
    let served = Served::start(&db, &[], &[]);
    let base = format!("http://{}", served.addr);
    let profile = dir.path().join("profile");
    let pages = [
        (
            "fleet",
            "/?nolive=1",
            vec![
                "data-id=\"ok-1\"",
                "data-id=\"bad-1\"",
                "Failed (1)",
                "Done (2)",
            ],
        ),
        (
            "session",
            "/session/ok-1?nolive=1",
            vec![
                "data-transition=\"",
                "run.completed.ok",
                "executor:lionrt-",
                "data-seq=\"",
                "unpriced",
            ],
        ),
        (
            "admin",
            "/admin?nolive=1",
            vec!["nightly", "pending", "state.prune"],
        ),
        (
            "costs",
            "/costs?nolive=1&window=7d",
            vec!["scripted", "3 unpriced session(s)"],
        ),
    ];
    let shots = screenshots();
    for (name, path, wants) in pages {
        let dom = browse(&chrome, &profile, &format!("{base}{path}"), None);
        for want in wants {
            assert!(
                dom.contains(want),
                "{name}: {want:?} not in the rendered page:\n{dom}"
            );
        }
        assert!(!dom.contains("class=\"error\""), "{name}: {dom}");
        let png = shots.join(format!("{name}.png"));
        let _ = browse(&chrome, &profile, &format!("{base}{path}"), Some(&png));
        let bytes = std::fs::read(&png).expect("screenshot written");
        assert!(bytes.starts_with(b"\x89PNG"), "{name}.png is a PNG");
    }
}

#[test]
fn chromium_shows_a_running_legs_messages_as_they_are_pushed() {
    let Some(chrome) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let dbs = db.display().to_string();
    ok(lionrt_env(&dbs, None).args(["state", "init"]));
    let served = Served::start(&db, &[], &[]);
    let script = dir.path().join("slow.json");
    // Long enough for a loaded machine to start Chromium and open the
    // stream before the later line is written.
    std::fs::write(&script, slow_script(10_000, "pushed-later-line")).expect("script");
    let mut run = lionrt_env(&dbs, None)
        .args(["run", "--quiet", "--session", "watched", "--script"])
        .arg(&script)
        .stdout(Stdio::null())
        .spawn()
        .expect("run");
    // The page opens while the leg sleeps (its first words recorded).
    let deadline = soon(30);
    loop {
        let (status, _, body) = served.request("GET", "/api/sessions/watched/messages", &[]);
        if status == 200 && body.contains("\"seq\"") {
            break;
        }
        assert!(Instant::now() < deadline, "the leg never spoke");
        std::thread::sleep(Duration::from_millis(30));
    }
    // `until=end`: the page follows the stream until the session ends.
    let dom = browse(
        &chrome,
        &dir.path().join("profile"),
        &format!("http://{}/session/watched?until=end", served.addr),
        None,
    );
    assert!(run.wait().expect("wait").success());
    let late = dom
        .split("<div class=\"msg\"")
        .find(|m| m.contains("pushed-later-line"))
        .unwrap_or_else(|| panic!("the later line is not on the page:\n{dom}"));
    assert!(late.contains("data-live=\"1\""), "it came by push: {late}");
    let early = dom
        .split("<div class=\"msg\"")
        .nth(1)
        .expect("the first message");
    assert!(
        !early.contains("data-live"),
        "the first line was loaded: {early}"
    );
    assert!(dom.contains("status-completed"), "the end came by push too");
}

#[test]
fn an_outbox_retry_from_the_page_is_recorded_with_its_web_actor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let dbs = db.display().to_string();
    ok(lionrt_env(&dbs, None).args(["state", "init"]));
    let out = ok(lionrt_env(&dbs, None).args([
        "--json",
        "outbox",
        "enqueue",
        "--max-attempts",
        "1",
        "hello",
        "--",
        "/bin/false",
    ]));
    let id = crate::stdout_json(&out)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    ok(lionrt_env(&dbs, None).args(["outbox", "deliver"]));
    let served = Served::start(&db, &[], &[]);
    let row = &served.json("/api/outbox")["items"][0];
    assert_eq!(row["id"], id.as_str());
    assert_eq!(row["status"], "dead_letter");
    let csrf = served.json("/api/meta")["csrf"]
        .as_str()
        .expect("csrf")
        .to_owned();
    let origin = format!("http://{}", served.addr);
    let retry = format!("/api/outbox/{id}/retry");
    assert_eq!(
        served.request("POST", &retry, &[("Origin", &origin)]).0,
        403,
        "no CSRF token"
    );
    assert_eq!(
        served.json("/api/outbox")["items"][0]["status"],
        "dead_letter"
    );
    let (status, _, body) = served.request(
        "POST",
        &retry,
        &[("Origin", &origin), ("X-CSRF-Token", &csrf)],
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("json")["revived"],
        true
    );
    let out = ok(lionrt_env(&dbs, None).args(["--json", "outbox", "show", &id]));
    let v = crate::stdout_json(&out);
    assert_eq!(v["dispatch"]["status"], "pending");
    let last = v["history"]
        .as_array()
        .and_then(|h| h.last())
        .cloned()
        .expect("history");
    assert_eq!(last["to_status"], "pending");
    assert_eq!(last["actor_type"], "operator");
    assert!(
        last["actor_id"]
            .as_str()
            .unwrap_or_default()
            .starts_with("web:127.0.0.1:"),
        "{last}"
    );
    // Pending now: nothing to revive.
    assert_eq!(
        served
            .request(
                "POST",
                &retry,
                &[("Origin", &origin), ("X-CSRF-Token", &csrf)]
            )
            .0,
        409
    );
    assert_eq!(
        served
            .request(
                "POST",
                "/api/outbox/dsp-none/retry",
                &[("Origin", &origin), ("X-CSRF-Token", &csrf)]
            )
            .0,
        404
    );
}
