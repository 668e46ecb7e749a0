//! Dropping the leg's future at every await point leaves nothing running.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use cli_supervisor::{Leg, LegSpec, OnSpawn};

use crate::support::{assert_all_gone, fixture, live_with_marker, marker, script};

/// Polls `inner` until it has returned `Pending` `limit` times, then gives
/// up (`None`), which drops `inner` at that await point.
struct CancelAfter<F> {
    inner: Pin<Box<F>>,
    pending_left: usize,
}

impl<F: Future> Future for CancelAfter<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.inner.as_mut().poll(cx) {
            Poll::Ready(out) => Poll::Ready(Some(out)),
            Poll::Pending if self.pending_left == 0 => Poll::Ready(None),
            Poll::Pending => {
                self.pending_left -= 1;
                Poll::Pending
            }
        }
    }
}

struct Run {
    marker: String,
    record: Arc<Mutex<Option<i32>>>,
    on_spawn_calls: Arc<AtomicUsize>,
}

fn spec(argv: Vec<String>, run: &Run) -> LegSpec {
    let mut spec = LegSpec::new(argv);
    spec.grace = Duration::from_millis(100);
    let record = Arc::clone(&run.record);
    let calls = Arc::clone(&run.on_spawn_calls);
    spec.on_spawn = Some(OnSpawn::asynchronous(move |spawned| {
        let (calls, record) = (Arc::clone(&calls), Arc::clone(&record));
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            *record.lock().expect("lock") = Some(spawned.pgid);
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(1)).await;
            Ok(())
        }
    }));
    spec
}

fn new_run() -> Run {
    Run {
        marker: marker(),
        record: Arc::default(),
        on_spawn_calls: Arc::default(),
    }
}

/// After each cancellation: either nothing was spawned (no record, no
/// process) or the record exists and its group has no live member.
fn assert_nothing_left(run: &Run) {
    let pgid = *run.record.lock().expect("lock");
    match pgid {
        None => {
            assert_eq!(run.on_spawn_calls.load(Ordering::SeqCst), 0);
            assert_all_gone(&run.marker, None);
        }
        Some(pgid) => assert_all_gone(&run.marker, Some(pgid)),
    }
}

#[tokio::test]
async fn dropping_spawn_and_stream_at_every_await_point_leaves_nothing() {
    // contract: SUP-014
    // contract: SUP-018
    // contract: SUP-031
    let mut limit = 0;
    loop {
        let run = new_run();
        let argv = vec![
            fixture().to_owned(),
            "lines".to_owned(),
            "4".to_owned(),
            "5".to_owned(),
            "0".to_owned(),
            run.marker.clone(),
        ];
        let leg_spec = spec(argv, &run);
        let work = async move {
            let mut leg = Leg::spawn(leg_spec).await?;
            while leg.next_event().await?.is_some() {}
            leg.wait().await
        };
        let finished = CancelAfter {
            inner: Box::pin(work),
            pending_left: limit,
        }
        .await;
        assert_nothing_left(&run);
        if let Some(result) = finished {
            assert!(result.expect("run completes").status.success());
            break;
        }
        limit += 1;
        assert!(limit < 10_000, "the run never finished");
    }
    assert!(limit > 3, "the loop covered several await points ({limit})");
}

#[tokio::test]
async fn dropping_teardown_at_every_await_point_leaves_nothing() {
    // contract: SUP-016
    // contract: SUP-022
    let mut limit = 0;
    loop {
        let run = new_run();
        // The marker rides along as $0's argument; the grandchild is found
        // through the recorded group instead.
        let argv = vec![
            "/bin/sh".to_owned(),
            script("term-ignoring-grandchild.sh"),
            run.marker.clone(),
        ];
        let leg_spec = spec(argv, &run);
        let work = async move {
            let mut leg = Leg::spawn(leg_spec).await?;
            leg.next_event().await?;
            leg.end().await
        };
        let finished = CancelAfter {
            inner: Box::pin(work),
            pending_left: limit,
        }
        .await;
        assert_nothing_left(&run);
        if let Some(result) = finished {
            result.expect("teardown completes");
            break;
        }
        limit += 1;
        assert!(limit < 10_000, "the run never finished");
    }
    assert!(limit > 3, "the loop covered several await points ({limit})");
}

#[tokio::test]
async fn a_future_dropped_before_its_first_poll_creates_nothing() {
    // Rust has no window between OS creation and holding the handle (the
    // spawn call is synchronous); the emptiness is asserted, not assumed.
    // contract: SUP-029
    // contract: SUP-031
    let run = new_run();
    let argv = vec![fixture().to_owned(), "hang".to_owned(), run.marker.clone()];
    let spawning = Leg::spawn(spec(argv, &run));
    drop(spawning);
    assert_eq!(run.on_spawn_calls.load(Ordering::SeqCst), 0);
    assert!(run.record.lock().expect("lock").is_none());
    assert!(live_with_marker(&run.marker).is_empty());
}
