//! The runner's overhead: `lionrt run` with the scripted provider against
//! its floor, a bare spawn of the scripted leg (`lionrt __scripted-leg`)
//! plus the same SQLite writes (session start, one message per event,
//! session end) from this process. Both are measured in the same run,
//! alternating, so both see the same machine load.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use lifecycle_core::{Actor, ActorType, SessionEnd, SessionStart};
use providers_scripted::{Response, response_to_ndjson};
use state_sqlite::{Engine, EngineConfig, Store, now_micros};

const LIONRT: &str = env!("CARGO_BIN_EXE_lionrt");

/// The demo script's one response, as the scripted provider writes it.
fn demo_leg_file() -> String {
    response_to_ndjson(
        "scripted-1",
        &Response::Stream {
            chunks: vec![
                "Reading the task. ".into(),
                "Planning the change. ".into(),
                "Done: README updated.".into(),
            ],
        },
    )
}

fn lionrt_run(db: &std::path::Path, n: u64) -> Duration {
    let start = Instant::now();
    let status = Command::new(LIONRT)
        .arg("--db")
        .arg(db)
        .args(["run", "--session", &format!("bench-{n}")])
        .env_remove("LIONRT_DB")
        .stdout(Stdio::null())
        .status()
        .expect("lionrt run");
    assert!(status.success());
    start.elapsed()
}

fn floor(store: &Store, leg_file: &std::path::Path, n: u64) -> Duration {
    let actor = Actor::new(ActorType::Executor, "bench");
    let id = format!("floor-{n}");
    let start = Instant::now();
    store
        .persist_session_start(&SessionStart::new(&id, "run.started.ok"), &actor)
        .expect("start");
    let out = Command::new(LIONRT)
        .args(["__scripted-leg", "--script"])
        .arg(leg_file)
        .stderr(Stdio::null())
        .output()
        .expect("leg");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    for (i, line) in text.lines().enumerate() {
        store
            .record_message(&id, &format!("{id}:{i}"), "event", line, now_micros())
            .expect("message");
    }
    store
        .persist_session_end(
            &SessionEnd::new(&id, "completed", "run.completed.ok", now_micros()),
            &actor,
        )
        .expect("end");
    start.elapsed()
}

fn run_vs_floor(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let floor_db = dir.path().join("floor.db");
    let store = Store::new(Engine::create(&floor_db, EngineConfig::default()).expect("db"));
    drop(Engine::create(&db, EngineConfig::default()).expect("db"));
    let leg_file = dir.path().join("leg.ndjson");
    std::fs::write(&leg_file, demo_leg_file()).expect("leg file");
    let mut group = c.benchmark_group("lionrt_run");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    let mut n = 0u64;
    // Each timed iteration of one is followed by an untimed one of the
    // other, so both run under the same load.
    group.bench_function("lionrt_run_scripted", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                total += lionrt_run(&db, n);
                floor(&store, &leg_file, n);
            }
            total
        });
    });
    group.bench_function("floor_bare_leg_plus_inserts", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                total += floor(&store, &leg_file, n);
                lionrt_run(&db, n);
            }
            total
        });
    });
    group.finish();
}

criterion_group!(benches, run_vs_floor);
criterion_main!(benches);
