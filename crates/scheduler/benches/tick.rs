//! Tick overhead with 1,000 schedules, none of them due: one
//! `Scheduler::tick` (reap, the due SELECT through the pool, decoding,
//! hooks) against the floor of the bare SELECT of due schedules on a
//! connection of the same file. Both alternate within each sample, so they
//! see the same load; the ratio tick/floor is what to read (printed per
//! sample on stderr).
#![allow(clippy::print_stderr, reason = "the bench prints its ratio")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use lifecycle_core::{Actor, ActorType};
use runner::LegProgram;
use scheduler::{
    ManualClock, RunnerLauncher, ScheduleSpec, ScheduleStore, Scheduler, SchedulerConfig, Schedules,
};
use state_sqlite::{Engine, EngineConfig, Store};

const T0: i64 = 1_800_000_000_000_000;
const SCHEDULES: usize = 1_000;

fn spec(i: usize, ws: &str) -> ScheduleSpec {
    serde_json::from_value(serde_json::json!({
        "name": format!("s{i:04}"),
        "trigger": if i.is_multiple_of(2) {
            serde_json::json!({"interval": {"seconds": 3600 + i}})
        } else {
            serde_json::json!({"cron": {"expr": "0 3 * * *", "tz": "+02:00"}})
        },
        "run": {"prompt": "bench", "workspace": ws},
    }))
    .expect("spec")
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Engine::create(dir.path().join("state.db"), EngineConfig::default()).expect("db");
    let ws = dir.path().display().to_string();
    let schedules = Arc::new(Schedules::new(
        Store::new(engine.clone()),
        Actor::new(ActorType::Operator, "bench"),
    ));
    let set: Vec<ScheduleSpec> = (0..SCHEDULES).map(|i| spec(i, &ws)).collect();
    schedules.apply(&set, T0).expect("apply");
    let launcher = Arc::new(RunnerLauncher::new(
        Arc::new(Store::new(engine.clone())),
        LegProgram {
            program: "/bin/true".into(),
            args: Vec::new(),
        },
        Actor::new(ActorType::Executor, "bench"),
    ));
    let clock = Arc::new(ManualClock::new(T0 + 1_000_000));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = rt.enter();
    let (mut sched, _) = Scheduler::start(
        schedules.clone(),
        Arc::clone(&clock),
        launcher,
        SchedulerConfig::default(),
    )
    .expect("start");
    let floor_conn = engine.conn().expect("conn");
    let now = T0 + 1_000_000;

    let mut group = c.benchmark_group("tick_1000_schedules");
    group.sample_size(30);
    group.bench_function("tick_and_floor_alternating", |b| {
        b.iter_custom(|iters| {
            let mut tick = Duration::ZERO;
            let mut floor = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                let r = sched.tick().expect("tick");
                tick += t.elapsed();
                assert!(r.fired.is_empty());
                let t = Instant::now();
                let mut stmt = floor_conn
                    .prepare_cached(
                        "SELECT id, status, spec_json, next_fire_at, last_fire_at FROM schedules
                         WHERE status = 'enabled' AND next_fire_at <= ?1 ORDER BY next_fire_at, id",
                    )
                    .expect("prepare");
                let n = stmt
                    .query_map([now], |r| r.get::<_, String>(0))
                    .expect("query")
                    .count();
                floor += t.elapsed();
                assert_eq!(n, 0);
            }
            eprintln!(
                "tick/floor over {iters}: tick {:?}/iter, floor {:?}/iter, ratio {:.2}",
                tick.div_f64(iters.max(1) as f64),
                floor.div_f64(iters.max(1) as f64),
                tick.as_secs_f64() / floor.as_secs_f64().max(1e-12)
            );
            tick + floor
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
