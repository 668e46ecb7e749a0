//! LISTEN/NOTIFY: a waiting scanner wakes when a row becomes due.

use std::time::{Duration, Instant};

use lifecycle_core::{Actor, ActorType};
use outbox::{NewDispatch, OutboxStore};
use state_postgres::now_micros;

use crate::common::{Schema, server};

fn actor() -> Actor {
    Actor::new(ActorType::Scheduler, "listen-test")
}

#[test]
fn an_enqueue_on_another_connection_wakes_a_waiting_listener() {
    let Some(url) = server("listen") else { return };
    let schema = Schema::new(&url, "listen");
    let outbox = schema.outbox();
    let mut listener = outbox.listener().expect("listen");
    // Nothing stored: the wait runs to its timeout.
    let t0 = Instant::now();
    assert!(
        !listener
            .wait_for_due(Duration::from_millis(200))
            .expect("wait")
    );
    assert!(t0.elapsed() >= Duration::from_millis(200));

    // Another host (its own engine) enqueues while we wait: we wake long
    // before the timeout.
    let producer = schema.outbox();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        producer
            .enqueue("d1", &NewDispatch::new("p"), &actor(), now_micros())
            .expect("enqueue");
    });
    let t0 = Instant::now();
    assert!(
        listener
            .wait_for_due(Duration::from_secs(20))
            .expect("wait")
    );
    let woke = t0.elapsed();
    t.join().expect("producer");
    assert!(woke < Duration::from_secs(10), "woke after {woke:?}");

    // A due row already stored: no wait at all.
    assert!(
        listener
            .wait_for_due(Duration::from_secs(20))
            .expect("wait")
    );
}

#[test]
fn a_row_due_later_wakes_the_listener_when_its_time_comes() {
    let Some(url) = server("listen_later") else {
        return;
    };
    let schema = Schema::new(&url, "listen_later");
    let outbox = schema.outbox();
    let mut new = NewDispatch::new("p");
    let due_at = now_micros() + 400_000;
    new.not_before = Some(due_at);
    outbox
        .enqueue("later", &new, &actor(), now_micros())
        .expect("enqueue");
    let mut listener = outbox.listener().expect("listen");
    let t0 = Instant::now();
    assert!(
        listener
            .wait_for_due(Duration::from_secs(20))
            .expect("wait")
    );
    let woke_at = now_micros();
    let waited = t0.elapsed();
    // Not before the row's instant, and not long after it.
    assert!(woke_at >= due_at, "woke {} µs early", due_at - woke_at);
    assert!(waited < Duration::from_secs(10), "waited {waited:?}");
    assert_eq!(
        outbox.due(now_micros(), 10).expect("due").len(),
        1,
        "the row is due when the listener says so"
    );
}
