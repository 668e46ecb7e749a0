//! Tick overhead with 1,000 schedules, none of them due: one
//! `Scheduler::tick` (reap, the due SELECT through the pool, decoding,
//! hooks) against the floor of the bare SELECT of due schedules on a
//! connection of the same database. Both alternate within each sample, so
//! they see the same load; the ratio tick/floor is what to read (printed
//! per sample on stderr). On SQLite always; on PostgreSQL too when
//! `LIONRT_TEST_PG` names a server (the tick runs inside a current-thread
//! runtime as the daemon's does, so its queries go through the store's
//! worker thread; a second group runs it on a plain thread, the queries
//! inline).
#![allow(clippy::print_stderr, reason = "the bench prints its ratio")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use lifecycle_core::{Actor, ActorType};
use runner::LegProgram;
use scheduler::{
    Launcher, ManualClock, PgSchedules, RunnerLauncher, ScheduleSpec, ScheduleStore, Scheduler,
    SchedulerConfig, Schedules,
};
use state_postgres::{DbUrl, PgConfig, PgEngine, PgStore};
use state_sqlite::{Engine, EngineConfig, Store};

const T0: i64 = 1_800_000_000_000_000;
const NOW: i64 = T0 + 1_000_000;
const SCHEDULES: usize = 1_000;
const DUE_SQL: &str = "SELECT id, status, spec_json, next_fire_at, last_fire_at FROM schedules
                       WHERE status = 'enabled' AND next_fire_at <= ";

fn spec(i: usize, ws: &str) -> ScheduleSpec {
    serde_json::from_value(serde_json::json!({
        "name": format!("s{i:04}"),
        "trigger": match i % 3 {
            0 => serde_json::json!({"interval": {"seconds": 3600 + i}}),
            1 => serde_json::json!({"cron": {"expr": "0 3 * * *", "tz": "+02:00"}}),
            _ => serde_json::json!({"cron": {"expr": "0 3 * * *", "tz": "Europe/Berlin"}}),
        },
        "run": {"prompt": "bench", "workspace": ws},
    }))
    .expect("spec")
}

fn leg() -> LegProgram {
    LegProgram {
        program: "/bin/true".into(),
        args: Vec::new(),
    }
}

/// Alternates one tick and one floor query per iteration.
fn measure<L: Launcher>(
    c: &mut Criterion,
    name: &str,
    sched: &mut Scheduler<Arc<ManualClock>, L>,
    mut floor_query: impl FnMut() -> usize,
) {
    let mut group = c.benchmark_group(name);
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
                let n = floor_query();
                floor += t.elapsed();
                assert_eq!(n, 0);
            }
            eprintln!(
                "{name} tick/floor over {iters}: tick {:?}/iter, floor {:?}/iter, ratio {:.2}",
                tick.div_f64(iters.max(1) as f64),
                floor.div_f64(iters.max(1) as f64),
                tick.as_secs_f64() / floor.as_secs_f64().max(1e-12)
            );
            tick + floor
        });
    });
    group.finish();
}

fn start<L: Launcher>(
    schedules: Arc<dyn ScheduleStore>,
    launcher: Arc<L>,
) -> Scheduler<Arc<ManualClock>, L> {
    let clock = Arc::new(ManualClock::new(NOW));
    Scheduler::start(schedules, clock, launcher, SchedulerConfig::default())
        .expect("start")
        .0
}

fn sqlite(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
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
        leg(),
        Actor::new(ActorType::Executor, "bench"),
    ));
    let _guard = rt.enter();
    let mut sched = start(schedules, launcher);
    let floor_conn = engine.conn().expect("conn");
    measure(c, "tick_1000_schedules_sqlite", &mut sched, || {
        let mut stmt = floor_conn
            .prepare_cached(&format!("{DUE_SQL} ?1 ORDER BY next_fire_at, id"))
            .expect("prepare");
        stmt.query_map([NOW], |r| r.get::<_, String>(0))
            .expect("query")
            .count()
    });
}

fn postgres(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let Ok(url) = std::env::var("LIONRT_TEST_PG") else {
        eprintln!(
            "scheduler PostgreSQL tick bench skipped: LIONRT_TEST_PG is unset (start a server with `eval \"$(.ci/pg-cluster start)\"`)"
        );
        return;
    };
    let schema = format!("bench_sched_{}", std::process::id());
    let engine = PgEngine::open(&PgConfig::new(DbUrl::new(url.as_str())).with_schema(&schema))
        .expect("engine");
    let store = PgStore::new(engine.clone());
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().display().to_string();
    let schedules = Arc::new(PgSchedules::new(
        store.clone(),
        Actor::new(ActorType::Operator, "bench"),
    ));
    let set: Vec<ScheduleSpec> = (0..SCHEDULES).map(|i| spec(i, &ws)).collect();
    schedules.apply(&set, T0).expect("apply");
    let launcher = Arc::new(RunnerLauncher::new(
        Arc::new(store),
        leg(),
        Actor::new(ActorType::Executor, "bench"),
    ));
    let mut floor_conn = engine.conn().expect("conn");
    let floor_sql = format!("{DUE_SQL} $1 ORDER BY next_fire_at, id");
    let mut sched = start(schedules, launcher);
    {
        let _guard = rt.enter();
        measure(c, "tick_1000_schedules_postgres", &mut sched, || {
            floor_conn.query(&floor_sql, &[&NOW]).expect("query").len()
        });
    }
    // The same tick on a plain thread (no runtime entered: nothing is due,
    // so nothing is spawned): the store's calls run inline, which shows
    // what the worker thread costs.
    measure(
        c,
        "tick_1000_schedules_postgres_plain_thread",
        &mut sched,
        || floor_conn.query(&floor_sql, &[&NOW]).expect("query").len(),
    );
    drop(sched);
    drop(floor_conn);
    if let Ok(mut client) = postgres::Client::connect(&url, postgres::NoTls) {
        let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    sqlite(c, &rt);
    postgres(c, &rt);
}

criterion_group!(benches, bench);
criterion_main!(benches);
