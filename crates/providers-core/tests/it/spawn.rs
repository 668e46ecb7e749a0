//! The retry futures are `Send`: they run under `tokio::spawn` on a
//! multi-threaded runtime (a compile-time check), and still follow the
//! retry contract there (checked at run time).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use providers_core::{
    Backoff, EndpointRetry, Error, HttpError, TransportFailure, call_with_retries,
    call_with_retries_on, retry_with_backoff,
};

/// Runs `f` as a task on a two-worker runtime and returns its output.
fn spawn_on_multi_thread<F>(f: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime")
        .block_on(async { tokio::spawn(f).await.expect("the task finished") })
}

fn http(status: u16) -> TransportFailure {
    TransportFailure::Status(HttpError {
        status,
        body: String::new(),
    })
}

fn backoff() -> Backoff {
    Backoff {
        base: Duration::from_millis(100),
        factor: 3,
        max: Duration::from_secs(60),
    }
}

/// An in-memory transport answering from a script (the last answer
/// repeats), recording each body it was sent and each delay waited out.
/// A sleep yields to the scheduler, so the task may resume on another
/// worker.
#[derive(Default)]
struct Script {
    answers: Vec<Result<String, TransportFailure>>,
    sent: Vec<String>,
    slept: Vec<Duration>,
}

impl Script {
    fn new(answers: Vec<Result<String, TransportFailure>>) -> Self {
        Self {
            answers,
            ..Self::default()
        }
    }

    async fn send(&mut self, body: String) -> Result<String, TransportFailure> {
        tokio::task::yield_now().await;
        let n = self.sent.len();
        self.sent.push(body);
        self.answers[n.min(self.answers.len() - 1)].clone()
    }

    async fn sleep(&mut self, d: Duration) {
        self.slept.push(d);
        tokio::task::yield_now().await;
    }
}

#[test]
fn call_with_retries_on_a_borrowed_transport_is_spawnable() {
    let (result, script) = spawn_on_multi_thread(async {
        let mut script = Script::new(vec![Err(http(503)), Err(http(429)), Ok("done".into())]);
        let retry = EndpointRetry {
            max_retries: 5,
            backoff: backoff(),
            retry_config: None,
        };
        let mut built = 0;
        let result = call_with_retries_on(
            &retry,
            &mut script,
            || {
                built += 1;
                Ok(format!("body {built}"))
            },
            |s: &mut Script, body| async move {
                let r = s.send(body).await;
                (s, r)
            },
            |s: &mut Script, d| async move {
                s.sleep(d).await;
                (s, ())
            },
        )
        .await;
        (result, script)
    });
    assert_eq!(result, Ok("done".to_owned()));
    assert_eq!(script.sent, ["body 1", "body 2", "body 3"]);
    assert_eq!(
        script.slept,
        [Duration::from_millis(100), Duration::from_millis(300)]
    );
}

#[test]
fn a_spawned_call_still_stops_at_the_non_retryable_sentinel() {
    let (result, script) = spawn_on_multi_thread(async {
        let mut script = Script::new(vec![Err(http(500)), Err(http(404)), Ok("never".into())]);
        let retry = EndpointRetry {
            max_retries: 5,
            backoff: backoff(),
            retry_config: None,
        };
        let result = call_with_retries_on(
            &retry,
            &mut script,
            || Ok(String::from("b")),
            |s: &mut Script, body| async move {
                let r = s.send(body).await;
                (s, r)
            },
            |s: &mut Script, d| async move {
                s.sleep(d).await;
                (s, ())
            },
        )
        .await;
        (result, script)
    });
    assert!(
        matches!(
            result,
            Err(Error::NonRetryableClient(HttpError { status: 404, .. }))
        ),
        "{result:?}"
    );
    assert_eq!(script.sent.len(), 2, "the 404 ends the call");
    assert_eq!(script.slept, [Duration::from_millis(100)]);
}

#[test]
fn call_with_retries_over_shared_state_is_spawnable() {
    let script = Arc::new(Mutex::new(Script::new(vec![
        Err(TransportFailure::Other("reset".into())),
        Ok("ok".into()),
    ])));
    let shared = Arc::clone(&script);
    let result = spawn_on_multi_thread(async move {
        let retry = EndpointRetry {
            max_retries: 2,
            backoff: backoff(),
            retry_config: None,
        };
        call_with_retries(
            &retry,
            || Ok(String::from("b")),
            |body| {
                let shared = Arc::clone(&shared);
                async move {
                    tokio::task::yield_now().await;
                    let mut s = shared.lock().expect("lock");
                    let n = s.sent.len();
                    s.sent.push(body);
                    s.answers[n.min(s.answers.len() - 1)].clone()
                }
            },
            |_| tokio::task::yield_now(),
        )
        .await
    });
    assert_eq!(result, Ok("ok".to_owned()));
    assert_eq!(script.lock().expect("lock").sent, ["b", "b"]);
}

#[test]
fn retry_with_backoff_is_spawnable() {
    let (result, attempts, slept) = spawn_on_multi_thread(async {
        let mut attempts = Vec::new();
        let mut slept = Vec::new();
        let result: Result<u32, u32> = retry_with_backoff(
            3,
            backoff(),
            |e: &u32| *e >= 500,
            |e: &u32| *e == 501,
            |attempt| {
                attempts.push(attempt);
                async move {
                    tokio::task::yield_now().await;
                    if attempt < 3 { Err(500) } else { Err(501) }
                }
            },
            |d| {
                slept.push(d);
                tokio::task::yield_now()
            },
        )
        .await;
        (result, attempts, slept)
    });
    assert_eq!(result, Err(501), "the excluded instance ends the retries");
    assert_eq!(attempts, [1, 2, 3]);
    assert_eq!(
        slept,
        [Duration::from_millis(100), Duration::from_millis(300)]
    );
}
