//! The runner's own overhead: `runner::run` (SQLite recorder, scripted
//! provider, a `/bin/sh` leg replaying the file) with and without a leg
//! cgroup, against the floor of a bare spawn of the same leg plus the same
//! SQLite writes (session start, one message per line, session end). All
//! three alternate within each sample so they see the same load.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cli_supervisor::ContainmentPolicy;
use criterion::{Criterion, criterion_group, criterion_main};
use lifecycle_core::{Actor, ActorType, Cancellation, SessionEnd, SessionStart};
use providers_scripted::{Response, ScriptModel, response_to_ndjson};
use runner::{LegProgram, ProviderChoice, RunConfig};
use state_sqlite::{Engine, EngineConfig, Store, now_micros};

const SCRIPT: &str = r#"[{"type": "stream", "chunks": ["Reading the task. ", "Planning the change. ", "Done: README updated."]}]"#;

fn leg() -> LegProgram {
    LegProgram {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), r#"cat "$2""#.into(), "leg".into()],
    }
}

fn one_run(rt: &tokio::runtime::Runtime, store: &Arc<Store>, n: u64, cgroup: bool) -> Duration {
    let provider = ProviderChoice::Scripted {
        script: ScriptModel::from_json(SCRIPT).expect("script"),
        leg: leg(),
    };
    let mut config = RunConfig::new(format!("r-{n}"), provider, "go", std::env::temp_dir());
    if !cgroup {
        config.containment = ContainmentPolicy::ProcessGroup;
    }
    let start = Instant::now();
    let report = rt
        .block_on(runner::run(
            Arc::clone(store),
            config,
            std::future::pending::<Cancellation>(),
        ))
        .expect("run");
    assert!(report.ok, "{report:?}");
    start.elapsed()
}

fn floor(store: &Store, file: &Path, n: u64) -> Duration {
    let actor = Actor::new(ActorType::Executor, "bench");
    let id = format!("f-{n}");
    let start = Instant::now();
    store
        .persist_session_start(&SessionStart::new(&id, "run.started.ok"), &actor)
        .expect("start");
    let leg = leg();
    let out = Command::new(&leg.program)
        .args(&leg.args)
        .arg("--script")
        .arg(file)
        .output()
        .expect("leg");
    assert!(out.status.success());
    for (i, line) in String::from_utf8_lossy(&out.stdout).lines().enumerate() {
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

fn runner_vs_floor(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Store::new(
        Engine::create(dir.path().join("s.db"), EngineConfig::default()).expect("db"),
    ));
    let file = dir.path().join("leg.ndjson");
    let response = Response::Stream {
        chunks: vec![
            "Reading the task. ".into(),
            "Planning the change. ".into(),
            "Done: README updated.".into(),
        ],
    };
    std::fs::write(&file, response_to_ndjson("scripted-1", &response)).expect("leg file");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut n = 0u64;
    let mut group = c.benchmark_group("runner");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(6));
    for (name, which) in [
        ("run_cgroup", 0),
        ("run_process_group", 1),
        ("floor_bare_leg_plus_inserts", 2),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    for k in 0..3 {
                        n += 1;
                        let took = match k {
                            0 => one_run(&rt, &store, n, true),
                            1 => one_run(&rt, &store, n, false),
                            _ => floor(&store, &file, n),
                        };
                        if k == which {
                            total += took;
                        }
                    }
                }
                total
            });
        });
    }
    group.finish();
}

criterion_group!(benches, runner_vs_floor);
criterion_main!(benches);
