//! The registry: concurrent fan-out, one shared deadline, swallowed
//! failures, overrides, and sync handlers on the blocking pool.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use notify::{Filter, Handler, Registration, Registry};

use crate::common::{current_thread, envelope, multi_thread};

fn only_ids(ids: &[&str]) -> Filter {
    Filter {
        kinds: None,
        ids: Some(ids.iter().map(|s| (*s).to_owned()).collect()),
    }
}

fn noop() -> Handler {
    Handler::from_async(|_| async { Ok(()) })
}

// contract: NTF-003
#[test]
fn handlers_run_concurrently_not_one_after_another() {
    // Each handler waits at a barrier for the other: run one after the
    // other, the first would wait forever and the deadline would cut both.
    // Done concurrently, both pass it and succeed. Async and blocking alike.
    let runtime = multi_thread();
    let registry = Registry::new(Duration::from_secs(10));
    let gate = Arc::new(tokio::sync::Barrier::new(2));
    for name in ["a1", "a2"] {
        let gate = Arc::clone(&gate);
        registry.register(Registration::new(
            name,
            Handler::from_async(move |_| {
                let gate = Arc::clone(&gate);
                async move {
                    gate.wait().await;
                    Ok(())
                }
            }),
        ));
    }
    let report = runtime.block_on(registry.emit(&envelope("session", "s1")));
    assert_eq!(report.succeeded.len(), 2, "{report:?}");
    assert!(report.timed_out.is_empty());

    let registry = Registry::new(Duration::from_secs(10));
    let gate = Arc::new(std::sync::Barrier::new(2));
    for name in ["b1", "b2"] {
        let gate = Arc::clone(&gate);
        registry.register(Registration::new(
            name,
            Handler::blocking(move |_| {
                gate.wait();
                Ok(())
            }),
        ));
    }
    let report = runtime.block_on(registry.emit(&envelope("session", "s1")));
    assert_eq!(report.succeeded.len(), 2, "{report:?}");
}

// contract: NTF-004
#[test]
fn one_deadline_bounds_emit_however_many_slow_handlers() {
    let runtime = multi_thread();
    let budget = Duration::from_millis(300);
    let registry = Registry::new(budget);
    for i in 0..20 {
        registry.register(Registration::new(
            format!("slow{i}"),
            Handler::from_async(|_| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            }),
        ));
    }
    let started = Instant::now();
    let report = runtime.block_on(registry.emit(&envelope("session", "s1")));
    let took = started.elapsed();
    assert_eq!(report.timed_out.len(), 20, "{report:?}");
    assert!(took >= budget, "returned before the deadline: {took:?}");
    // One shared deadline, not one per handler (20 x 300 ms = 6 s); the
    // bound leaves room for a loaded machine.
    assert!(took < budget * 10, "emit took {took:?}");
}

// contract: NTF-005
#[test]
fn failures_timeouts_and_panics_are_swallowed_and_the_rest_still_run() {
    let runtime = multi_thread();
    let registry = Registry::new(Duration::from_millis(300));
    let ran = Arc::new(AtomicBool::new(false));
    registry.register(Registration::new(
        "errors",
        Handler::from_async(|_| async { Err("nope".into()) }),
    ));
    registry.register(Registration::new(
        "panics",
        Handler::from_async(|_| async { panic!("async handler exploded") }),
    ));
    registry.register(Registration::new(
        "panics_blocking",
        Handler::blocking(|_| panic!("blocking handler exploded")),
    ));
    registry.register(Registration::new(
        "hangs",
        Handler::from_async(|_| std::future::pending()),
    ));
    {
        let ran = Arc::clone(&ran);
        registry.register(Registration::new(
            "fine",
            Handler::blocking(move |_| {
                ran.store(true, Ordering::SeqCst);
                Ok(())
            }),
        ));
    }
    let report = runtime.block_on(registry.emit(&envelope("session", "s1")));
    assert!(ran.load(Ordering::SeqCst));
    assert_eq!(report.succeeded, ["fine"]);
    let mut failed = report.failed.clone();
    failed.sort();
    assert_eq!(failed, ["errors", "panics", "panics_blocking"]);
    assert_eq!(report.timed_out, ["hangs"]);
}

// contract: NTF-008
#[test]
fn a_matching_override_silences_every_non_override() {
    let runtime = multi_thread();
    let registry = Registry::default();
    registry.register(Registration::new("global", noop()));
    registry.register(Registration::new("global_for_s1", noop()).with_filter(only_ids(&["s1"])));
    registry.register(
        Registration::new("run_s1", noop())
            .with_filter(only_ids(&["s1"]))
            .as_override(),
    );
    registry.register(
        Registration::new("run_s1_too", noop())
            .with_filter(only_ids(&["s1"]))
            .as_override(),
    );
    let report = runtime.block_on(registry.emit(&envelope("session", "s1")));
    assert_eq!(report.fired, ["run_s1", "run_s1_too"]);
    assert_eq!(report.succeeded.len(), 2);
}

// contract: NTF-009
#[test]
fn an_override_leaves_envelopes_it_does_not_match_alone() {
    let runtime = multi_thread();
    let registry = Registry::default();
    registry.register(Registration::new("global", noop()));
    registry.register(
        Registration::new("run_s1", noop())
            .with_filter(only_ids(&["s1"]))
            .as_override(),
    );
    let report = runtime.block_on(registry.emit(&envelope("session", "s2")));
    assert_eq!(report.fired, ["global"]);
    let report = runtime.block_on(registry.emit(&envelope("invocation", "i9")));
    assert_eq!(report.fired, ["global"]);
    let report = runtime.block_on(registry.emit(&envelope("session", "s1")));
    assert_eq!(report.fired, ["run_s1"]);
}

// contract: NTF-010
#[test]
fn a_blocking_sync_handler_never_blocks_the_event_loop() {
    // A single-threaded runtime: if the sync handler ran on it, the async
    // handler it waits for could never run, and neither could the deadline.
    let runtime = current_thread();
    let registry = Registry::new(Duration::from_secs(10));
    let (tx, rx) = mpsc::channel::<()>();
    let rx = std::sync::Mutex::new(rx);
    registry.register(Registration::new(
        "sync_waits_for_async",
        Handler::blocking(move |_| {
            rx.lock()
                .expect("rx")
                .recv_timeout(Duration::from_secs(20))
                .map_err(|e| e.to_string().into())
        }),
    ));
    registry.register(Registration::new(
        "async_signals",
        Handler::from_async(move |_| {
            let tx = tx.clone();
            async move {
                tokio::task::yield_now().await;
                tx.send(()).map_err(|e| e.to_string().into())
            }
        }),
    ));
    let report = runtime.block_on(registry.emit(&envelope("session", "s1")));
    let mut ok = report.succeeded.clone();
    ok.sort();
    assert_eq!(ok, ["async_signals", "sync_waits_for_async"], "{report:?}");

    // And a sync handler blocking forever does not stop the deadline.
    let registry = Registry::new(Duration::from_millis(200));
    let (_keep, never) = mpsc::channel::<()>();
    let never = std::sync::Mutex::new(never);
    registry.register(Registration::new(
        "stuck",
        Handler::blocking(move |_| {
            let _ = never
                .lock()
                .expect("rx")
                .recv_timeout(Duration::from_secs(30));
            Ok(())
        }),
    ));
    let started = Instant::now();
    let report = runtime.block_on(registry.emit(&envelope("session", "s1")));
    assert_eq!(report.timed_out, ["stuck"]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the deadline fired"
    );
}

// contract: NTF-011
#[test]
fn at_the_deadline_a_sync_handler_is_abandoned_not_killed() {
    let runtime = multi_thread();
    let registry = Registry::new(Duration::from_millis(200));
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let release_rx = std::sync::Mutex::new(release_rx);
    registry.register(Registration::new(
        "outlives",
        Handler::blocking(move |_| {
            // Bounded, so an emit that waited for the thread would return
            // late (and fail below) instead of hanging the test.
            let _ = release_rx
                .lock()
                .expect("rx")
                .recv_timeout(Duration::from_secs(30));
            let _ = done_tx.send(());
            Ok(())
        }),
    ));
    let started = Instant::now();
    let report = runtime.block_on(registry.emit(&envelope("session", "s1")));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "emit returned at its deadline, not when the thread ended"
    );
    assert_eq!(report.timed_out, ["outlives"]);
    // emit has returned; the thread is still there, waiting, and finishes
    // once released.
    assert!(done_rx.try_recv().is_err(), "not finished at return");
    release_tx
        .send(())
        .expect("the abandoned thread is still alive");
    done_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the abandoned handler ran to its end");
}
