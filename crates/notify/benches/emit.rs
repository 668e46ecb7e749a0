//! Emit with 10 handlers each taking `d`: the total should be about `d`
//! (the floor: one bare `sleep(d)` in the same run), never past the
//! deadline (10 handlers taking far longer than the budget: about the
//! budget).

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use lifecycle_core::{TerminalEvent, TransitionRecord, default_registry};
use notify::{Handler, Registration, Registry, RunTerminalEnvelope};

const D: Duration = Duration::from_millis(20);
const HANDLERS: usize = 10;

fn envelope() -> RunTerminalEnvelope {
    let event = TerminalEvent {
        transition: TransitionRecord {
            id: 1,
            entity_type: "session".into(),
            entity_id: "s1".into(),
            from_status: Some("running".into()),
            to_status: "completed".into(),
            reason_code: "run.completed.ok".into(),
            reason_summary: String::new(),
            actor_type: "system".into(),
            actor_id: "bench".into(),
            overridden: false,
            created_at: 0,
        },
    };
    RunTerminalEnvelope::for_terminal_event(&event, default_registry()).expect("envelope")
}

fn registry(budget: Duration, handler: impl Fn() -> Handler) -> Registry {
    let registry = Registry::new(budget);
    for i in 0..HANDLERS {
        registry.register(Registration::new(format!("h{i}"), handler()));
    }
    registry
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let envelope = envelope();
    let mut group = c.benchmark_group("emit_10_handlers");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));

    group.bench_function("floor_one_sleep_d", |b| {
        b.iter(|| runtime.block_on(async { tokio::time::sleep(D).await }));
    });
    let async_handlers = registry(Duration::from_secs(10), || {
        Handler::from_async(|_| async {
            tokio::time::sleep(D).await;
            Ok(())
        })
    });
    group.bench_function("async_each_d", |b| {
        b.iter(|| runtime.block_on(async_handlers.emit(&envelope)));
    });
    let blocking_handlers = registry(Duration::from_secs(10), || {
        Handler::blocking(|_| {
            std::thread::sleep(D);
            Ok(())
        })
    });
    group.bench_function("blocking_each_d", |b| {
        b.iter(|| runtime.block_on(blocking_handlers.emit(&envelope)));
    });
    // The deadline: budget 2d, handlers taking 50d; the blocking ones are
    // abandoned and finish in the background (the pool has room for them).
    let deadline_floor = D * 2;
    group.bench_function("floor_one_sleep_2d", |b| {
        b.iter(|| runtime.block_on(async { tokio::time::sleep(deadline_floor).await }));
    });
    let slow = registry(deadline_floor, || {
        Handler::from_async(|_| async {
            tokio::time::sleep(D * 50).await;
            Ok(())
        })
    });
    group.bench_function("async_each_50d_budget_2d", |b| {
        b.iter(|| runtime.block_on(slow.emit(&envelope)));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
