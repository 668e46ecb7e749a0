//! Retries: `retry_with_backoff` with per-instance exclusion, and the
//! endpoint retry contract (non-retryable 4xx sentinel, body rebuilt per
//! attempt, `max_retries` as a total-attempt cap).

use std::time::Duration;

use crate::error::{Error, HttpError};

/// Exponential backoff between attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Delay before the first retry.
    pub base: Duration,
    /// Multiplier per further retry.
    pub factor: u32,
    /// Upper bound of any one delay.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            base: Duration::from_millis(500),
            factor: 2,
            max: Duration::from_secs(30),
        }
    }
}

impl Backoff {
    /// The delay before retry number `retry` (1-based).
    pub fn delay(&self, retry: u32) -> Duration {
        let mult = self.factor.saturating_pow(retry.saturating_sub(1));
        self.base.saturating_mul(mult).min(self.max)
    }
}

/// Runs `op` up to `max_retries + 1` times.
///
/// An error is retried when `retry_on` accepts it and `exclude` does not;
/// both are asked about the error *instance*, so an excluded sub-kind (a
/// connection error that is also an I/O error) is never retried even when
/// its parent kind is retryable. `sleep` waits out the backoff; it is a
/// parameter so this crate names no async runtime.
pub async fn retry_with_backoff<T, E>(
    max_retries: u32,
    backoff: Backoff,
    retry_on: impl Fn(&E) -> bool,
    exclude: impl Fn(&E) -> bool,
    mut op: impl AsyncFnMut(u32) -> Result<T, E>,
    mut sleep: impl AsyncFnMut(Duration),
) -> Result<T, E> {
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        match op(attempt).await {
            Ok(v) => return Ok(v),
            Err(e) => {
                let retryable = !exclude(&e) && retry_on(&e);
                if !retryable || attempt > max_retries {
                    return Err(e);
                }
                sleep(backoff.delay(attempt)).await;
            }
        }
    }
}

/// An explicit retry configuration wrapping the whole call.
#[derive(Debug, Clone, Copy)]
pub struct RetryConfig {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Backoff between attempts.
    pub backoff: Backoff,
    /// Which errors this layer retries (it may be as broad as "every
    /// error"; the non-retryable sentinel is excluded regardless).
    pub retry_on: fn(&Error) -> bool,
}

/// How an endpoint call retries.
#[derive(Debug, Clone, Copy)]
pub struct EndpointRetry {
    /// The native path's cap on *total attempts* (not retries).
    pub max_retries: u32,
    /// Backoff of the native path.
    pub backoff: Backoff,
    /// An explicit retry layer; when set, the native path sends once per
    /// outer attempt.
    pub retry_config: Option<RetryConfig>,
}

impl Default for EndpointRetry {
    fn default() -> Self {
        Self {
            max_retries: 3,
            backoff: Backoff::default(),
            retry_config: None,
        }
    }
}

impl EndpointRetry {
    /// Whether any attempt after the first can happen: an explicit retry
    /// config, or a native cap of at least two attempts. Only when this is
    /// false may a caller hand over a one-shot body.
    pub fn can_retry(&self) -> bool {
        self.retry_config.is_some() || self.max_retries >= 2
    }
}

/// What a transport's send can fail with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportFailure {
    /// An HTTP error response.
    Status(HttpError),
    /// No response (connection refused, timeout); the text is the
    /// transport's description.
    Other(String),
}

/// Maps a transport's HTTP error onto the crate error, wrapping a 4xx other
/// than 429 in the non-retryable sentinel.
pub fn classify_http_error(e: HttpError) -> Error {
    if e.is_non_retryable_client_error() {
        Error::NonRetryableClient(e)
    } else {
        Error::Http(e)
    }
}

fn is_sentinel(e: &Error) -> bool {
    matches!(e, Error::NonRetryableClient(_))
}

fn native_retryable(e: &Error) -> bool {
    matches!(e, Error::Http(_) | Error::Transport(_))
}

/// Calls an endpoint under the retry contract.
///
/// `build_body` runs inside every attempt, so a body a previous attempt
/// consumed is rebuilt, never replayed exhausted. `send` returns the
/// transport's result; a 4xx other than 429 becomes the sentinel, which
/// stays excluded in whichever layer is active until that layer gives up,
/// and is what the caller receives (the HTTP error is its source).
///
/// Native path: `max_retries` is the total-attempt cap (`0` is read as one
/// attempt: a call is always made once).
pub async fn call_with_retries<T, B>(
    retry: &EndpointRetry,
    mut build_body: impl FnMut() -> Result<B, Error>,
    mut send: impl AsyncFnMut(B) -> Result<T, TransportFailure>,
    sleep: impl AsyncFnMut(Duration),
) -> Result<T, Error> {
    let one_attempt = async |_attempt: u32| -> Result<T, Error> {
        let body = build_body()?;
        match send(body).await {
            Ok(v) => Ok(v),
            Err(TransportFailure::Status(http)) => Err(classify_http_error(http)),
            Err(TransportFailure::Other(msg)) => Err(Error::Transport(msg)),
        }
    };
    match retry.retry_config {
        Some(rc) => {
            retry_with_backoff(
                rc.max_retries,
                rc.backoff,
                rc.retry_on,
                is_sentinel,
                one_attempt,
                sleep,
            )
            .await
        }
        None => {
            retry_with_backoff(
                retry.max_retries.max(1) - 1,
                retry.backoff,
                native_retryable,
                is_sentinel,
                one_attempt,
                sleep,
            )
            .await
        }
    }
}
