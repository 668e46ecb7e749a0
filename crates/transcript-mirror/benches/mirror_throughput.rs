//! Mirror throughput (transcript lines per second, into a fresh SQLite file)
//! beside its floor: a bare `serde_json::from_slice::<Value>` of every line
//! of the same transcript. The transcript is a realistic Claude Code mix
//! (prompts, thinking, tool calls, multi-KB tool results, progress and
//! system lines). Run: `cargo bench -p transcript-mirror --bench mirror_throughput`;
//! the ratio mirror/floor is printed at the end (target: at least 0.5).
//! With `LIONRT_TEST_PG` set, the same is measured into a fresh schema of
//! that PostgreSQL server and printed as a second ratio.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use state_sqlite::{Engine, EngineConfig, Store};
use transcript_mirror::{Mirror, MirrorConfig, Source};

const LINES: usize = 2000;
const SESSION: &str = "9a6c3f0e-1111-4222-8333-444455556666";

fn base(uuid: usize, kind: &str) -> serde_json::Value {
    json!({
        "parentUuid": format!("e{:011}", uuid.saturating_sub(1)), "isSidechain": false,
        "userType": "external", "cwd": "/home/dev/acme", "sessionId": SESSION,
        "version": "2.0.14", "gitBranch": "main", "type": kind,
        "uuid": format!("e{uuid:011}"), "timestamp": "2026-11-30T10:00:00.000Z",
    })
}

fn transcript(dir: &Path) -> (PathBuf, Vec<Vec<u8>>) {
    let usage = json!({"input_tokens": 4, "cache_creation_input_tokens": 310,
        "cache_read_input_tokens": 16384, "output_tokens": 96, "service_tier": "standard"});
    let output: String = (0..80)
        .map(|i| format!("{i:5}\tfn handler_{i}(req: &Request) -> Response {{ route(req) }}\n"))
        .collect();
    let mut lines = Vec::with_capacity(LINES);
    for i in 0..LINES {
        let mut v = match i % 8 {
            0 => {
                let mut v = base(i, "user");
                v["message"] = json!({"role": "user", "content": format!("Step {i}: look at the router and tell me why request {i} is slow.")});
                v
            }
            1 => {
                let mut v = base(i, "assistant");
                v["message"] = json!({"id": "msg_01", "type": "message", "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929", "content": [{"type": "thinking",
                    "thinking": "The router is matched linearly; ".repeat(20), "signature": "EqQBCkYIBxgCKkB".repeat(20)}],
                    "stop_reason": null, "usage": usage});
                v
            }
            2 => {
                let mut v = base(i, "assistant");
                v["message"] = json!({"id": "msg_02", "type": "message", "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929", "content": [
                        {"type": "text", "text": "Let me read the router."},
                        {"type": "tool_use", "id": format!("toolu_{i}"), "name": "Read",
                         "input": {"file_path": "/home/dev/acme/src/router.rs", "offset": i, "limit": 80}}],
                    "stop_reason": "tool_use", "usage": usage});
                v["requestId"] = json!("req_011CTX7Lh8mP6p7kA1");
                v
            }
            3 => {
                let mut v = base(i, "user");
                v["message"] = json!({"role": "user", "content": [{"tool_use_id": format!("toolu_{}", i - 1),
                    "type": "tool_result", "content": output}]});
                v["toolUseResult"] = json!({"type": "text", "file": {"filePath": "/home/dev/acme/src/router.rs", "numLines": 80}});
                v
            }
            4 => {
                let mut v = base(i, "progress");
                v["data"] = json!({"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": "PostToolUse:Read", "command": "echo ok"});
                v
            }
            5 => {
                let mut v = base(i, "assistant");
                v["message"] = json!({"id": "msg_03", "type": "message", "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929", "content": [{"type": "text",
                    "text": "The route table is scanned linearly for every request; a trie would make lookups logarithmic. ".repeat(4)}],
                    "stop_reason": "end_turn", "usage": usage});
                v
            }
            6 => {
                let mut v = base(i, "system");
                v["subtype"] = json!("stop_hook_summary");
                v["hookInfos"] = json!([{"command": "echo done", "durationMs": 12}]);
                v
            }
            _ => {
                let mut v = base(i, "user");
                v["message"] =
                    json!({"role": "user", "content": [{"type": "text", "text": "Go on."}]});
                v
            }
        };
        v["timestamp"] = json!(format!(
            "2026-11-30T10:{:02}:{:02}.000Z",
            (i / 60) % 60,
            i % 60
        ));
        lines.push(serde_json::to_vec(&v).expect("serialise"));
    }
    let path = dir.join(format!("{SESSION}.jsonl"));
    let mut text = Vec::new();
    for l in &lines {
        text.extend_from_slice(l);
        text.push(b'\n');
    }
    std::fs::write(&path, text).expect("write transcript");
    let mut warm = serde_json::to_vec(&{
        let mut v = base(0, "user");
        v["message"] = json!({"role": "user", "content": "warm up"});
        v
    })
    .expect("serialise");
    warm.push(b'\n');
    std::fs::write(dir.join("warm.jsonl"), warm).expect("write warm-up");
    (path, lines)
}

/// One full mirror of the transcript into a fresh database. Only the
/// mirror is timed: creating and migrating the database, and warming the
/// store (a pooled connection with its prepared statements, as a running
/// mirror has after its first pass) by mirroring a one-line file, are not.
fn mirror_once(dir: &Path, path: &Path, round: u64) -> Duration {
    let db = dir.join(format!("bench-{round}.db"));
    let store = Store::new(Engine::create(&db, EngineConfig::default()).expect("engine"));
    let mut mirror = Mirror::new(store, config());
    let warm = dir.join("warm.jsonl");
    mirror.mirror_file(Source::Claude, &warm).expect("warm-up");
    let start = Instant::now();
    let r = mirror.mirror_file(Source::Claude, path).expect("mirror");
    let elapsed = start.elapsed();
    assert_eq!(r.stats.lines, LINES as u64);
    drop(mirror);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    elapsed
}

fn config() -> MirrorConfig {
    let var = |k: &str| std::env::var(k).ok().and_then(|v| v.parse().ok());
    let mut c = MirrorConfig::default();
    if let Some(n) = var("LIONRT_BENCH_BATCH_LINES") {
        c.batch_lines = n;
    }
    if let Some(n) = var("LIONRT_BENCH_BATCH_BYTES") {
        c.batch_bytes = n;
    }
    c
}

/// The same mirror into a fresh schema of the PostgreSQL server named by
/// `LIONRT_TEST_PG` (the schema is dropped after the round).
fn pg_mirror_once(url: &str, dir: &Path, path: &Path, round: u64) -> Duration {
    let schema = format!("bench_mirror_{}_{round}", std::process::id());
    let engine = state_postgres::PgEngine::open(
        &state_postgres::PgConfig::new(url).with_schema(schema.clone()),
    )
    .expect("postgres engine");
    let mut mirror = Mirror::new(state_postgres::PgStore::new(engine), config());
    mirror
        .mirror_file(Source::Claude, &dir.join("warm.jsonl"))
        .expect("warm-up");
    let start = Instant::now();
    let r = mirror.mirror_file(Source::Claude, path).expect("mirror");
    let elapsed = start.elapsed();
    assert_eq!(r.stats.lines, LINES as u64);
    drop(mirror);
    let mut c = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .expect("drop schema");
    elapsed
}

fn floor_once(lines: &[Vec<u8>]) -> Duration {
    let start = Instant::now();
    for l in lines {
        std::hint::black_box(serde_json::from_slice::<serde_json::Value>(l).expect("parse"));
    }
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    // LIONRT_BENCH_DIR picks the file system (e.g. /dev/shm to leave the
    // disk's write-back and fsync costs out); default: the temp dir.
    let dir = match std::env::var_os("LIONRT_BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d).expect("tempdir in LIONRT_BENCH_DIR"),
        None => tempfile::tempdir().expect("tempdir"),
    };
    let (path, lines) = transcript(dir.path());
    let mut round = 0u64;
    let mut group = c.benchmark_group("mirror_throughput");
    group.throughput(Throughput::Elements(LINES as u64));
    group.sample_size(20);
    group.bench_function("mirror_file", |b| {
        b.iter_custom(|n| {
            (0..n)
                .map(|_| {
                    round += 1;
                    mirror_once(dir.path(), &path, round)
                })
                .sum()
        })
    });
    group.bench_function("serde_json_floor", |b| {
        b.iter_custom(|n| (0..n).map(|_| floor_once(&lines)).sum())
    });
    group.finish();
    // The ratio, measured in this run: medians of interleaved rounds.
    let mut mirror: Vec<Duration> = Vec::new();
    let mut floor: Vec<Duration> = Vec::new();
    for _ in 0..15 {
        round += 1;
        mirror.push(mirror_once(dir.path(), &path, round));
        floor.push(floor_once(&lines));
    }
    mirror.sort();
    floor.sort();
    let (m, f) = (mirror[7].as_secs_f64(), floor[7].as_secs_f64());
    #[allow(
        clippy::print_stderr,
        reason = "the bench reports its ratio to the operator"
    )]
    {
        eprintln!(
            "mirror_throughput: mirror {:.0} lines/s, serde_json floor {:.0} lines/s, ratio {:.2} (target >= 0.5)",
            LINES as f64 / m,
            LINES as f64 / f,
            f / m
        );
    }
    // PostgreSQL (when a server is named): the same transcript into a
    // fresh schema, interleaved with the floor.
    if let Ok(url) = std::env::var("LIONRT_TEST_PG") {
        let mut pg: Vec<Duration> = Vec::new();
        let mut pg_floor: Vec<Duration> = Vec::new();
        for _ in 0..15 {
            round += 1;
            pg.push(pg_mirror_once(&url, dir.path(), &path, round));
            pg_floor.push(floor_once(&lines));
        }
        pg.sort();
        pg_floor.sort();
        let (p, pf) = (pg[7].as_secs_f64(), pg_floor[7].as_secs_f64());
        #[allow(
            clippy::print_stderr,
            reason = "the bench reports its ratio to the operator"
        )]
        {
            eprintln!(
                "mirror_throughput (postgres): mirror {:.0} lines/s, serde_json floor {:.0} lines/s, ratio {:.2}",
                LINES as f64 / p,
                LINES as f64 / pf,
                pf / p
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
