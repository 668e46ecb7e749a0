//! The executor through the model's call path: in-flight cleanup, denial
//! as deferral, the replenisher and its cancellation.

use std::future::pending;
use std::time::Duration;

use providers_core::TransportFailure;
use providers_openai::{Error, Sleeper, Transport};
use serde_json::{Value, json};

use crate::{
    Fake, NoSleep, api_model, block_on, block_on_within, limited, status, user, wait_until,
};

/// Records that a send started, then never answers.
struct Hang {
    sends: usize,
    in_flight_at_send: Option<usize>,
    probe: providers_openai::Executor,
}

impl Transport for Hang {
    async fn post_json(&mut self, _path: &str, _body: &Value) -> Result<Value, TransportFailure> {
        self.sends += 1;
        self.in_flight_at_send = Some(self.probe.stats().in_flight);
        pending().await
    }
    async fn post_file(
        &mut self,
        _path: &str,
        _fields: &Value,
        _file: Box<dyn std::io::Read + Send>,
    ) -> Result<Value, TransportFailure> {
        pending().await
    }
}

struct TokioSleep;
impl Sleeper for TokioSleep {
    async fn sleep(&mut self, d: Duration) {
        tokio::time::sleep(d).await;
    }
}

#[test]
fn an_in_flight_call_is_removed_however_it_ends() {
    // contract: PRV-022
    let m = api_model("gpt-5", limited(10));

    // Completion.
    let mut t = Fake::ok();
    t.probe = Some(m.executor().clone());
    block_on(m.chat(&mut t, &mut NoSleep, &user("a"))).unwrap();
    assert_eq!(t.in_flight_at_send, [1], "in flight while sending");
    assert_eq!(m.executor().stats().in_flight, 0, "removed on completion");

    // Error (non-retryable and retried-out).
    for answer in [status(401), status(503)] {
        let mut t = Fake::new(vec![Err(answer)]);
        t.probe = Some(m.executor().clone());
        assert!(block_on(m.chat(&mut t, &mut NoSleep, &user("b"))).is_err());
        assert!(t.in_flight_at_send.iter().all(|n| *n == 1));
        assert_eq!(m.executor().stats().in_flight, 0, "removed on error");
    }

    // Cancellation: a timeout around a call that never answers fires at
    // its deadline, and the call leaves the in-flight set with it.
    let mut t = Hang {
        sends: 0,
        in_flight_at_send: None,
        probe: m.executor().clone(),
    };
    let r = block_on(async {
        tokio::time::timeout(
            Duration::from_millis(20),
            m.chat(&mut t, &mut NoSleep, &user("c")),
        )
        .await
    });
    assert!(r.is_err(), "the timeout fired");
    assert_eq!(t.sends, 1);
    assert_eq!(
        t.in_flight_at_send,
        Some(1),
        "it was in flight when cancelled"
    );
    assert_eq!(m.executor().stats().in_flight, 0, "removed on cancellation");

    // Cancellation while deferred: the call leaves the queue.
    let m = api_model("gpt-5", limited(1));
    block_on(async {
        let mut a = Fake::ok();
        m.chat(&mut a, &mut NoSleep, &user("takes the budget"))
            .await
            .unwrap();
        let mut b = Fake::ok();
        let r = tokio::time::timeout(
            Duration::from_millis(20),
            m.chat(&mut b, &mut NoSleep, &user("deferred")),
        )
        .await;
        assert!(r.is_err());
        assert!(b.sent_json.is_empty());
    });
    let s = m.executor().stats();
    assert_eq!((s.queued, s.in_flight), (0, 0), "{s:?}");
}

#[test]
fn a_rate_limit_denial_defers_and_only_a_refusal_is_terminal() {
    // contract: PRV-037
    let m = api_model("gpt-5", limited(1));
    let ex = m.executor().clone();
    let (mut a, mut b) = (Fake::ok(), Fake::new(vec![Ok(json!({"id": "late"}))]));
    let (ra, rb, ()) = block_on_within(async {
        tokio::join!(
            async { m.chat(&mut a, &mut NoSleep, &user("a")).await },
            async { m.chat(&mut b, &mut NoSleep, &user("b")).await },
            async {
                wait_until("the second call to be denied", || ex.stats().queued == 1).await;
                // Denied: still queued and pending, nothing refused.
                for _ in 0..50 {
                    tokio::task::yield_now().await;
                }
                let s = ex.stats();
                assert_eq!((s.queued, s.granted, s.rejected), (1, 1, 0), "{s:?}");
                // Budget returns: the queue is re-driven and it completes.
                ex.tick();
            }
        )
    });
    ra.unwrap();
    assert_eq!(rb.unwrap(), json!({"id": "late"}));
    assert_eq!(b.sent_json.len(), 1);
    let s = ex.stats();
    assert_eq!((s.queued, s.granted, s.rejected), (0, 2, 0), "{s:?}");

    // A refusal is terminal: a stopped executor refuses the waiting call
    // and every later one.
    let (mut c, mut d) = (Fake::ok(), Fake::ok());
    let (rc, ()) = block_on_within(async {
        tokio::join!(
            async { m.chat(&mut c, &mut NoSleep, &user("c")).await },
            async {
                wait_until("the call to wait for budget", || ex.stats().queued == 1).await;
                m.close();
            }
        )
    });
    assert!(matches!(rc, Err(Error::ExecutorClosed)), "{rc:?}");
    let rd = block_on(m.chat(&mut d, &mut NoSleep, &user("d")));
    assert!(matches!(rd, Err(Error::ExecutorClosed)), "{rd:?}");
    ex.tick();
    assert!(c.sent_json.is_empty() && d.sent_json.is_empty());
    assert_eq!(ex.stats().rejected, 2);

    // A full queue refuses too.
    let m = api_model(
        "gpt-5",
        providers_openai::ModelConfig {
            rate_limit: providers_openai::RateLimit {
                requests: 1,
                queue_capacity: 1,
            },
            ..Default::default()
        },
    );
    let ex = m.executor().clone();
    let (mut a, mut b, mut c) = (Fake::ok(), Fake::ok(), Fake::ok());
    let (ra, rb, rc) = block_on_within(async {
        let first = m.chat(&mut a, &mut NoSleep, &user("a")).await;
        tokio::join!(
            async { Ok::<_, Error>(first) },
            async { m.chat(&mut b, &mut NoSleep, &user("b")).await },
            async {
                wait_until("the queue to fill", || ex.stats().queued == 1).await;
                let r = m.chat(&mut c, &mut NoSleep, &user("c")).await;
                ex.tick();
                r
            }
        )
    });
    ra.unwrap().unwrap();
    rb.unwrap();
    assert!(
        matches!(rc, Err(Error::QueueFull { capacity: 1 })),
        "{rc:?}"
    );
}

#[test]
fn each_replenish_tick_re_drives_deferred_calls() {
    // contract: PRV-035
    let m = api_model("gpt-5", limited(1));
    let ex = m.executor().clone();
    let mut ts: Vec<Fake> = (0..4).map(|_| Fake::ok()).collect();
    let results = block_on(async {
        let rep = tokio::spawn(ex.replenisher(Duration::from_millis(2), tokio::time::sleep));
        let [a, b, c, d] = &mut ts[..] else {
            unreachable!()
        };
        // Each caller asks once; nobody re-invokes.
        let r = tokio::time::timeout(Duration::from_secs(60), async {
            tokio::join!(
                async { m.chat(a, &mut NoSleep, &user("a")).await },
                async { m.chat(b, &mut NoSleep, &user("b")).await },
                async { m.chat(c, &mut NoSleep, &user("c")).await },
                async { m.chat(d, &mut NoSleep, &user("d")).await },
            )
        })
        .await
        .expect("deferred calls complete once budget returns");
        m.close();
        rep.await.expect("replenisher ends on close");
        r
    });
    results.0.unwrap();
    results.1.unwrap();
    results.2.unwrap();
    results.3.unwrap();
    assert!(ts.iter().all(|t| t.sent_json.len() == 1));
    let s = ex.stats();
    assert_eq!((s.granted, s.rejected, s.queued), (4, 0, 0), "{s:?}");
    assert!(s.ticks >= 3, "three calls waited for a tick each: {s:?}");
}

#[test]
fn a_replenisher_cancelled_before_it_starts_leaves_stop_ordinary() {
    // contract: PRV-034
    let m = api_model("gpt-5", limited(1));
    let other = api_model("gpt-5", limited(1));
    block_on(async {
        let rep = m
            .executor()
            .replenisher(Duration::from_secs(3600), tokio::time::sleep);
        assert_eq!(m.executor().stats().replenishers, 1, "running once made");
        let task = tokio::spawn(rep);
        // Cancelled before it was ever polled (start-up).
        task.abort();
        let end = task.await;
        assert!(end.is_err_and(|e| e.is_cancelled()));
        assert_eq!(
            m.executor().stats().replenishers,
            0,
            "the cancellation was absorbed: nothing is left registered"
        );
        let other_rep = tokio::spawn(
            other
                .executor()
                .replenisher(Duration::from_secs(3600), tokio::time::sleep),
        );
        let mut manager = providers_openai::ModelManager::new();
        let m = manager.register(m);
        let other = manager.register(other);
        assert!(manager.shutdown().is_empty(), "stop surfaced nothing");
        assert!(m.executor().stats().stopped && other.executor().stats().stopped);
        tokio::time::timeout(Duration::from_secs(60), other_rep)
            .await
            .expect("the other model's replenisher ended")
            .expect("it was not cancelled");
    });
}

#[test]
fn closing_models_in_sequence_treats_a_cancelled_replenisher_as_stopped() {
    // contract: PRV-036
    let mut manager = providers_openai::ModelManager::new();
    let models: Vec<_> = (0..3)
        .map(|_| manager.register(api_model("gpt-5", limited(1))))
        .collect();
    block_on(async {
        let mut tasks: Vec<_> = models
            .iter()
            .map(|m| {
                tokio::spawn(
                    m.executor()
                        .replenisher(Duration::from_secs(3600), tokio::time::sleep),
                )
            })
            .collect();
        wait_until("the replenishers to sleep", || {
            models
                .iter()
                .all(|m| m.executor().stats().replenishers == 1)
        })
        .await;
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        // The first model's replenisher is cancelled mid-sleep.
        let first = tasks.remove(0);
        first.abort();
        assert!(first.await.is_err_and(|e| e.is_cancelled()));
        assert!(manager.shutdown().is_empty(), "no close failed");
        for m in &models {
            let s = m.executor().stats();
            assert!(s.stopped, "every model closed: {s:?}");
        }
        for t in tasks {
            tokio::time::timeout(Duration::from_secs(60), t)
                .await
                .expect("the others' replenishers ended")
                .expect("they ended by stopping, not by cancellation");
        }
        assert!(
            models
                .iter()
                .all(|m| m.executor().stats().replenishers == 0)
        );
    });
    let mut t = Fake::ok();
    let r = block_on(models[2].chat(&mut t, &mut NoSleep, &user("x")));
    assert!(matches!(r, Err(Error::ExecutorClosed)));
}

#[test]
fn retries_sleep_through_the_callers_sleeper() {
    let m = api_model(
        "gpt-5",
        providers_openai::ModelConfig {
            max_retries: 2,
            backoff: providers_core::Backoff {
                base: Duration::from_millis(1),
                factor: 1,
                max: Duration::from_millis(1),
            },
            ..Default::default()
        },
    );
    let mut t = Fake::new(vec![Err(status(502)), Ok(json!({"ok": true}))]);
    let r = block_on(m.chat(&mut t, &mut TokioSleep, &user("x")));
    assert_eq!(r.unwrap(), json!({"ok": true}));
    assert_eq!(t.sent_json.len(), 2);
}
