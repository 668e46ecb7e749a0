//! Criterion benches for the hot paths: NDJSON throughput, spawn-to-first-event
//! latency, and teardown time beyond the grace period. Each sits beside a
//! floor measured in the same run.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use cli_supervisor::{Leg, LegSpec, LineFormat};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tokio::io::{AsyncBufReadExt, BufReader};

const FIXTURE: &str = env!("CARGO_BIN_EXE_leg-fixture");
const NDJSON_BYTES: u64 = 100 * 1024 * 1024;
const LINE_LEN: usize = 200;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("bench runtime")
}

/// Writes ~100 MB of ~200-byte NDJSON lines; returns the byte count.
fn write_ndjson(path: &Path) -> u64 {
    let file = std::fs::File::create(path).expect("create ndjson file");
    let mut out = std::io::BufWriter::new(file);
    let mut written = 0u64;
    let mut i = 0u64;
    while written < NDJSON_BYTES {
        let head = format!("{{\"type\":\"delta\",\"i\":{i},\"text\":\"");
        let pad = LINE_LEN.saturating_sub(head.len() + 3);
        let line = format!("{head}{}\"}}\n", "x".repeat(pad));
        out.write_all(line.as_bytes()).expect("write line");
        written += line.len() as u64;
        i += 1;
    }
    out.flush().expect("flush");
    written
}

/// Time to read every line through `cat` and a plain tokio line reader.
async fn floor_lines(path: &Path, parse: bool) -> Duration {
    let start = Instant::now();
    let mut child = tokio::process::Command::new("cat")
        .arg(path)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn cat");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::with_capacity(64 * 1024, stdout).lines();
    let mut count = 0u64;
    while let Some(line) = lines.next_line().await.expect("read line") {
        if parse {
            let value: serde_json::Value = serde_json::from_str(&line).expect("json");
            std::hint::black_box(value);
        }
        count += 1;
    }
    child.wait().await.expect("wait cat");
    std::hint::black_box(count);
    start.elapsed()
}

/// Time to read every line as events of a supervised leg running `cat`.
async fn supervised_lines(path: &Path, format: LineFormat) -> Duration {
    let start = Instant::now();
    let mut spec = LegSpec::new([Path::new("cat").as_os_str(), path.as_os_str()]);
    spec.line_format = format;
    let mut leg = Leg::spawn(spec).await.expect("spawn leg");
    let mut count = 0u64;
    while let Some(event) = leg.next_event().await.expect("event") {
        std::hint::black_box(event);
        count += 1;
    }
    leg.wait().await.expect("wait leg");
    std::hint::black_box(count);
    start.elapsed()
}

/// Sums what `timed` reports in each iteration, each followed by a run of
/// `other` whose report is dropped, so that both variants of a pair see the
/// same machine load (this matters on a shared 2-core box, where one run's
/// neighbour is the next's).
fn interleaved<T, O>(rt: &tokio::runtime::Runtime, iters: u64, timed: T, other: O) -> Duration
where
    T: AsyncFn() -> Duration,
    O: AsyncFn() -> Duration,
{
    rt.block_on(async {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            total += timed().await;
            other().await;
        }
        total
    })
}

fn ndjson_throughput(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("stream.ndjson");
    let bytes = write_ndjson(&path);
    let rt = runtime();
    let floor = async || floor_lines(&path, false).await;
    let floor_value = async || floor_lines(&path, true).await;
    let raw = async || supervised_lines(&path, LineFormat::Raw).await;
    let value = async || supervised_lines(&path, LineFormat::Value).await;
    let mut group = c.benchmark_group("ndjson_100mb");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    group.throughput(Throughput::Bytes(bytes));
    // Each pair: the floor and the leg, interleaved.
    group.bench_function("floor_cat_tokio_lines", |b| {
        b.iter_custom(|iters| interleaved(&rt, iters, floor, raw))
    });
    group.bench_function("leg_events_raw", |b| {
        b.iter_custom(|iters| interleaved(&rt, iters, raw, floor))
    });
    group.bench_function("floor_cat_tokio_lines_serde_value", |b| {
        b.iter_custom(|iters| interleaved(&rt, iters, floor_value, value))
    });
    group.bench_function("leg_events", |b| {
        b.iter_custom(|iters| interleaved(&rt, iters, value, floor_value))
    });
    group.finish();
}

/// Time from spawn to the first parsed line with a bare tokio spawn.
async fn floor_first_line() -> Duration {
    let start = Instant::now();
    let mut child = tokio::process::Command::new(FIXTURE)
        .args(["lines", "1", "0", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .await
        .expect("read");
    let value: serde_json::Value = serde_json::from_str(&line).expect("json");
    let elapsed = start.elapsed();
    std::hint::black_box(value);
    child.wait().await.expect("wait");
    elapsed
}

/// Time from spawn to the first event through a supervised leg.
async fn leg_first_event() -> Duration {
    let start = Instant::now();
    let mut leg = Leg::spawn(LegSpec::new([FIXTURE, "lines", "1", "0", "0"]))
        .await
        .expect("spawn");
    let event = leg.next_event().await.expect("event");
    let elapsed = start.elapsed();
    std::hint::black_box(event);
    while leg.next_event().await.expect("event").is_some() {}
    leg.wait().await.expect("wait");
    elapsed
}

fn spawn_to_first_event(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("spawn_to_first_event");
    group.bench_function("floor_tokio_spawn_read_line", |b| {
        b.iter_custom(|iters| interleaved(&rt, iters, floor_first_line, leg_first_event))
    });
    group.bench_function("leg_spawn_first_event", |b| {
        b.iter_custom(|iters| interleaved(&rt, iters, leg_first_event, floor_first_line))
    });
    group.finish();
}

fn end_beyond_grace(c: &mut Criterion) {
    let rt = runtime();
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/cli-supervisor/term-ignoring-grandchild.sh");
    let grace = Duration::from_millis(100);
    let mut group = c.benchmark_group("end_child_group");
    group.sample_size(10);
    group.bench_function("term_ignoring_grandchild_beyond_grace", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut spec = LegSpec::new([Path::new("/bin/sh"), script.as_path()]);
                    spec.grace = grace;
                    let mut leg = Leg::spawn(spec).await.expect("spawn");
                    leg.next_event().await.expect("grandchild started");
                    let start = Instant::now();
                    let exit = leg.end().await.expect("end");
                    total += start.elapsed().saturating_sub(grace);
                    assert!(exit.teardown.survivors.is_empty());
                }
                total
            })
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    ndjson_throughput,
    spawn_to_first_event,
    end_beyond_grace
);
criterion_main!(benches);
