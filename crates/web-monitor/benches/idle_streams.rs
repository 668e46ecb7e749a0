//! What idle event streams cost: the server's CPU over an idle window with
//! 0 (the floor: the feed alone), 1 and 1,000 open `/api/events` streams,
//! in one run. No stream polls the store (one feed per process), so 1,000
//! idle streams should cost what one does. Then the latency from a
//! message's commit to its event on a stream, p50 and p99, over a burst
//! at about 50 messages a second.
//!
//! `cargo bench -p web-monitor --bench idle_streams` (`IDLE_SECS` sets the
//! window, default 3).
#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// CPU time of this whole process so far (every thread), nanoseconds.
fn cpu_ns() -> u64 {
    let mut total = 0;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat"))
                && let Some(ns) = s
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
            {
                total += ns;
            }
        }
    }
    total
}

fn open_stream(addr: &str) -> BufReader<TcpStream> {
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .expect("write");
    let mut r = BufReader::new(s);
    let mut line = String::new();
    loop {
        line.clear();
        r.read_line(&mut line).expect("header");
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    r
}

fn idle_cpu(window: Duration) -> Duration {
    let before = cpu_ns();
    std::thread::sleep(window);
    Duration::from_nanos(cpu_ns() - before)
}

fn main() {
    // 1,000 streams take 2,000 descriptors here.
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let raised = rustix::process::Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    let _ = rustix::process::setrlimit(rustix::process::Resource::Nofile, raised);
    let window = Duration::from_secs(
        std::env::var("IDLE_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let engine =
        state_sqlite::Engine::create(&path, state_sqlite::EngineConfig::default()).expect("create");
    engine.conn().expect("conn").execute_batch(
        "INSERT INTO sessions (id, status, created_at, updated_at) VALUES ('s', 'running', 1, 1);
         INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status, reason_code, actor_type, actor_id, created_at)
         VALUES ('session', 's', NULL, 'running', 'run.started.ok', 'executor', 'bench', 1);",
    )
    .expect("seed");
    let ro = state_sqlite::ReadOnlyEngine::open(&path, Duration::from_secs(5)).expect("open");
    let src: Arc<dyn web_monitor::Source> = Arc::new(web_monitor::SqliteSource::new(
        ro,
        path.display().to_string(),
    ));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let addr = listener.local_addr().expect("addr");
    let mut config = web_monitor::Config::new(addr);
    config.poll = Duration::from_millis(250);
    let monitor = web_monitor::Monitor::new(src, config, None).expect("monitor");
    let feed = monitor.feed().clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            monitor
                .serve(listener, std::future::pending())
                .await
                .expect("serve");
        });
    });
    let addr = addr.to_string();
    // Warm up: the server is up and has answered once.
    drop(open_stream(&addr));
    std::thread::sleep(Duration::from_millis(300));

    let floor = idle_cpu(window);
    let one = open_stream(&addr);
    let single = idle_cpu(window);
    let mut many = vec![one];
    for _ in 1..1000 {
        many.push(open_stream(&addr));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while feed.listeners() < 1000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    let thousand = idle_cpu(window);
    let checks = feed.checks();
    println!(
        "idle CPU over {window:?}: floor (feed, no stream) {floor:?}, 1 stream {single:?}, {} streams {thousand:?}; feed checks so far {checks}",
        feed.listeners()
    );

    // Commit-to-event latency on one of the open streams: a writer commits
    // a message every 20 ms (50/s) and notes when; the reader notes when
    // each arrives.
    let mut probe = many.pop().expect("a stream");
    probe
        .get_mut()
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    const N: usize = 150;
    let committed: Arc<std::sync::Mutex<Vec<Option<Instant>>>> =
        Arc::new(std::sync::Mutex::new(vec![None; N]));
    let writer = {
        let committed = committed.clone();
        std::thread::spawn(move || {
            let conn = engine.conn().expect("conn");
            let start = Instant::now();
            for n in 0..N {
                let due = start + Duration::from_millis(20 * n as u64);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
                conn.execute(
                    "INSERT INTO messages (id, session_id, role, content, created_at) VALUES (?1, 's', 'assistant', ?2, 2)",
                    rusqlite::params![format!("s:{n}"), format!("{{\"text\":\"<bench-{n}>\"}}")],
                )
                .expect("insert");
                committed.lock().expect("lock")[n] = Some(Instant::now());
            }
        })
    };
    let mut latencies = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut seen = String::new();
    let mut next = 0;
    while next < N {
        let k = probe.read(&mut buf).expect("read");
        let now = Instant::now();
        seen.push_str(&String::from_utf8_lossy(&buf[..k]));
        while next < N && seen.contains(&format!("<bench-{next}>")) {
            if let Some(at) = committed.lock().expect("lock")[next] {
                latencies.push(now.saturating_duration_since(at));
            }
            next += 1;
        }
        if let Some(cut) = seen.rfind("\n\n") {
            seen.drain(..cut);
        }
    }
    writer.join().expect("writer");
    latencies.sort();
    println!(
        "commit-to-event latency, {} messages at 50/s (poll 250 ms, {} streams open): p50 {:?}, p99 {:?}",
        latencies.len(),
        feed.listeners(),
        latencies[latencies.len() / 2],
        latencies[latencies.len() * 99 / 100]
    );
    drop(many);
}
