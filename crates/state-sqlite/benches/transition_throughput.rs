//! Guarded transitions per second on a file database, beside the floor: a
//! bare rusqlite loop doing one UPDATE + one INSERT per transaction with the
//! same pragmas. Run: `cargo bench -p state-sqlite --bench transition_throughput`.

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lifecycle_core::{Actor, ActorType, InitialCommand, Reason, TransitionCommand};
use rusqlite::{TransactionBehavior, params};
use state_sqlite::{Engine, EngineConfig, Store};

fn store(dir: &tempfile::TempDir, sessions: usize) -> Store {
    let store = Store::new(
        Engine::create(dir.path().join("bench.db"), EngineConfig::default()).expect("engine"),
    );
    for i in 0..sessions {
        store
            .create(&InitialCommand {
                entity_type: "session".into(),
                entity_id: format!("s{i}"),
                status: "running".into(),
                reason: Reason::new("run.started.ok"),
                actor: Actor::new(ActorType::Executor, "bench"),
                patch: Default::default(),
            })
            .expect("create");
    }
    store
}

fn heartbeat(id: &str) -> TransitionCommand {
    TransitionCommand::new(
        "session",
        id,
        "running",
        Reason::new("run.started.ok"),
        Actor::new(ActorType::Executor, "bench"),
    )
    .expecting("running")
}

fn service(store: &Store, writers: usize, iters: u64) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for w in 0..writers {
            let store = store.clone();
            s.spawn(move || {
                let cmd = heartbeat(&format!("s{w}"));
                for _ in 0..iters / writers as u64 {
                    store.transition(&cmd).expect("transition");
                }
            });
        }
    });
    start.elapsed()
}

fn floor(store: &Store, writers: usize, iters: u64) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for w in 0..writers {
            let engine = store.engine().clone();
            s.spawn(move || {
                let mut conn = engine.conn().expect("conn");
                let id = format!("s{w}");
                for i in 0..iters / writers as u64 {
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).expect("begin");
                    tx.execute(
                        "UPDATE sessions SET updated_at = ?1 WHERE id = ?2 AND status = 'running'",
                        params![i64::try_from(i).unwrap_or(0), id],
                    )
                    .expect("update");
                    tx.execute(
                        "INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status, reason_code,
                            actor_type, actor_id, created_at) VALUES ('session', ?1, 'running', 'running', 'run.started.ok', 'executor', 'bench', 0)",
                        [&id],
                    )
                    .expect("insert");
                    tx.commit().expect("commit");
                }
            });
        }
    });
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store(&dir, 2);
    let mut group = c.benchmark_group("transition_throughput");
    group.throughput(Throughput::Elements(1));
    for writers in [1usize, 2] {
        group.bench_function(format!("service/{writers}_writer"), |b| {
            b.iter_custom(|n| service(&store, writers, n))
        });
        group.bench_function(format!("floor/{writers}_writer"), |b| {
            b.iter_custom(|n| floor(&store, writers, n))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
