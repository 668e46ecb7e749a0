//! retry_with_backoff and the endpoint retry contract.

use std::cell::{Cell, RefCell};
use std::error::Error as _;
use std::time::Duration;

use providers_core::{
    Backoff, EndpointRetry, Error, HttpError, RetryConfig, TransportFailure, call_with_retries,
    retry_with_backoff,
};

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// An error kind hierarchy like Python's: a connection error is an OS error.
#[derive(Debug, Clone, Copy, PartialEq)]
enum IoLike {
    Os,
    Connection,
    Value,
}

impl IoLike {
    fn is_os_error(self) -> bool {
        matches!(self, Self::Os | Self::Connection)
    }
}

async fn no_sleep(_: Duration) {}

#[test]
fn exclusion_is_checked_per_instance_and_overrides_inclusion() {
    // contract: PRV-051
    for (err, expect_attempts) in [(IoLike::Connection, 1), (IoLike::Os, 4), (IoLike::Value, 1)] {
        let attempts = Cell::new(0);
        let r: Result<(), IoLike> = block_on(retry_with_backoff(
            3,
            Backoff::default(),
            |e: &IoLike| e.is_os_error(),
            |e: &IoLike| *e == IoLike::Connection,
            async |_| {
                attempts.set(attempts.get() + 1);
                Err(err)
            },
            no_sleep,
        ));
        assert_eq!(r, Err(err));
        assert_eq!(attempts.get(), expect_attempts, "{err:?}");
    }
}

#[test]
fn backoff_grows_and_is_bounded() {
    let b = Backoff {
        base: Duration::from_millis(100),
        factor: 2,
        max: Duration::from_millis(350),
    };
    assert_eq!(b.delay(1), Duration::from_millis(100));
    assert_eq!(b.delay(2), Duration::from_millis(200));
    assert_eq!(b.delay(3), Duration::from_millis(350));
    assert_eq!(b.delay(u32::MAX), Duration::from_millis(350));
}

fn http(status: u16) -> TransportFailure {
    TransportFailure::Status(HttpError {
        status,
        body: format!("body {status}"),
    })
}

/// Runs a call whose transport answers each attempt from `answers` (last
/// one repeats); returns the result and the number of sends.
fn run(
    retry: EndpointRetry,
    answers: Vec<Result<u32, TransportFailure>>,
) -> (Result<u32, Error>, u32) {
    let sends = Cell::new(0u32);
    let r = block_on(call_with_retries(
        &retry,
        || Ok(()),
        async |()| {
            let i = sends.get() as usize;
            sends.set(sends.get() + 1);
            answers[i.min(answers.len() - 1)].clone()
        },
        no_sleep,
    ));
    (r, sends.get())
}

fn retry_everything(_: &Error) -> bool {
    true
}

#[test]
fn client_errors_are_wrapped_with_the_http_error_as_source() {
    // contract: PRV-044
    let (r, _) = run(
        EndpointRetry {
            max_retries: 1,
            ..Default::default()
        },
        vec![Err(http(403))],
    );
    let err = r.unwrap_err();
    assert!(matches!(err, Error::NonRetryableClient(_)));
    let src = err
        .source()
        .and_then(|s| s.downcast_ref::<HttpError>())
        .expect("source is the http error");
    assert_eq!((src.status, src.body.as_str()), (403, "body 403"));
}

#[test]
fn sentinel_stays_excluded_under_a_broad_retry_config() {
    // contract: PRV-045
    for status in [400, 401, 403, 404, 422] {
        let rc = RetryConfig {
            max_retries: 5,
            backoff: Backoff::default(),
            retry_on: retry_everything,
        };
        let (r, sends) = run(
            EndpointRetry {
                max_retries: 5,
                retry_config: Some(rc),
                ..Default::default()
            },
            vec![Err(http(status))],
        );
        assert_eq!(sends, 1, "{status} sent once under retry config");
        assert!(
            matches!(r, Err(Error::NonRetryableClient(HttpError { status: s, .. })) if s == status)
        );
        // And on the native path.
        let (_, sends) = run(
            EndpointRetry {
                max_retries: 5,
                ..Default::default()
            },
            vec![Err(http(status))],
        );
        assert_eq!(sends, 1, "{status} sent once natively");
    }
    // Control: the same broad retry config really does retry (a 500), so the
    // single send above is the sentinel's exclusion, not an inactive layer.
    let rc = RetryConfig {
        max_retries: 5,
        backoff: Backoff::default(),
        retry_on: retry_everything,
    };
    let (r, sends) = run(
        EndpointRetry {
            max_retries: 5,
            retry_config: Some(rc),
            ..Default::default()
        },
        vec![Err(http(500)), Ok(7)],
    );
    assert_eq!((r, sends), (Ok(7), 2));
}

#[test]
fn too_many_requests_stays_retryable() {
    // contract: PRV-046
    let (r, sends) = run(
        EndpointRetry {
            max_retries: 3,
            ..Default::default()
        },
        vec![Err(http(429)), Ok(7)],
    );
    assert_eq!((r, sends), (Ok(7), 2));
    let (r, _) = run(
        EndpointRetry {
            max_retries: 1,
            ..Default::default()
        },
        vec![Err(http(429))],
    );
    assert!(matches!(r, Err(Error::Http(HttpError { status: 429, .. }))));
}

#[test]
fn body_is_rebuilt_for_every_attempt() {
    // contract: PRV-047
    let built = Cell::new(0);
    let seen = RefCell::new(Vec::new());
    let r = block_on(call_with_retries(
        &EndpointRetry {
            max_retries: 3,
            ..Default::default()
        },
        || {
            built.set(built.get() + 1);
            // A one-shot stream: each build makes a new one over the content.
            Ok(std::io::Cursor::new(b"full content".to_vec()))
        },
        async |mut body: std::io::Cursor<Vec<u8>>| {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut body, &mut s)
                .map_err(|e| TransportFailure::Other(e.to_string()))?;
            seen.borrow_mut().push(s);
            if seen.borrow().len() < 3 {
                Err(http(503))
            } else {
                Ok(())
            }
        },
        no_sleep,
    ));
    assert_eq!(r, Ok(()));
    assert_eq!(built.get(), 3);
    assert_eq!(*seen.borrow(), ["full content"; 3]);
}

#[test]
fn native_max_retries_is_a_total_attempt_cap() {
    // contract: PRV-048
    for n in 1..=5 {
        let (r, sends) = run(
            EndpointRetry {
                max_retries: n,
                ..Default::default()
            },
            vec![Err(http(500))],
        );
        assert_eq!(sends, n, "max_retries={n}");
        assert!(matches!(r, Err(Error::Http(HttpError { status: 500, .. }))));
    }
    // Zero is read as one attempt.
    let (_, sends) = run(
        EndpointRetry {
            max_retries: 0,
            ..Default::default()
        },
        vec![Err(http(500))],
    );
    assert_eq!(sends, 1);
    // Transport failures count against the same cap.
    let (r, sends) = run(
        EndpointRetry {
            max_retries: 2,
            ..Default::default()
        },
        vec![Err(TransportFailure::Other("reset".into()))],
    );
    assert_eq!(sends, 2);
    assert!(matches!(r, Err(Error::Transport(_))));
}

#[test]
fn can_retry_truth_table() {
    // contract: PRV-049
    let rc = RetryConfig {
        max_retries: 0,
        backoff: Backoff::default(),
        retry_on: retry_everything,
    };
    assert!(
        EndpointRetry {
            max_retries: 0,
            retry_config: Some(rc),
            ..Default::default()
        }
        .can_retry()
    );
    assert!(
        EndpointRetry {
            max_retries: 2,
            ..Default::default()
        }
        .can_retry()
    );
    assert!(
        !EndpointRetry {
            max_retries: 1,
            ..Default::default()
        }
        .can_retry()
    );
    assert!(
        !EndpointRetry {
            max_retries: 0,
            ..Default::default()
        }
        .can_retry()
    );
}
