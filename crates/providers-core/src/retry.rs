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
///
/// `op` and `sleep` are plain closures returning futures (an `async`
/// closure that borrows only its surroundings is one), never borrowed
/// across an `.await` here: the returned future is `Send` whenever the
/// closures and their futures are, so it can be `tokio::spawn`ed.
pub async fn retry_with_backoff<T, E, Op, OpFut, Sl, SlFut>(
    max_retries: u32,
    backoff: Backoff,
    retry_on: impl Fn(&E) -> bool,
    exclude: impl Fn(&E) -> bool,
    mut op: Op,
    mut sleep: Sl,
) -> Result<T, E>
where
    Op: FnMut(u32) -> OpFut,
    OpFut: Future<Output = Result<T, E>>,
    Sl: FnMut(Duration) -> SlFut,
    SlFut: Future<Output = ()>,
{
    retry_threaded(
        max_retries,
        backoff,
        retry_on,
        exclude,
        (),
        |(), attempt| without_state(op(attempt)),
        |(), d| without_state(sleep(d)),
    )
    .await
}

/// Awaits `fut` and hands back the unit state alongside its output.
async fn without_state<O>(fut: impl Future<Output = O>) -> ((), O) {
    ((), fut.await)
}

/// The one retry loop. `state` is moved into each attempt and each sleep
/// and handed back by its future, so an attempt may use a `&mut` resource
/// (a transport) without a closure lending it out.
async fn retry_threaded<C, T, E, Op, OpFut, Sl, SlFut>(
    max_retries: u32,
    backoff: Backoff,
    retry_on: impl Fn(&E) -> bool,
    exclude: impl Fn(&E) -> bool,
    mut state: C,
    mut op: Op,
    mut sleep: Sl,
) -> Result<T, E>
where
    Op: FnMut(C, u32) -> OpFut,
    OpFut: Future<Output = (C, Result<T, E>)>,
    Sl: FnMut(C, Duration) -> SlFut,
    SlFut: Future<Output = (C, ())>,
{
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let (back, result) = op(state, attempt).await;
        state = back;
        match result {
            Ok(v) => return Ok(v),
            Err(e) => {
                let retryable = !exclude(&e) && retry_on(&e);
                if !retryable || attempt > max_retries {
                    return Err(e);
                }
                (state, ()) = sleep(state, backoff.delay(attempt)).await;
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
///
/// `send` and `sleep` are plain closures returning futures (an `async`
/// closure that borrows only its surroundings is one); the returned future
/// is `Send` whenever they, their futures and the body are. A send that
/// needs a `&mut` resource uses [`call_with_retries_on`].
pub async fn call_with_retries<T, B, Se, SeFut, Sl, SlFut>(
    retry: &EndpointRetry,
    build_body: impl FnMut() -> Result<B, Error>,
    mut send: Se,
    mut sleep: Sl,
) -> Result<T, Error>
where
    Se: FnMut(B) -> SeFut,
    SeFut: Future<Output = Result<T, TransportFailure>>,
    Sl: FnMut(Duration) -> SlFut,
    SlFut: Future<Output = ()>,
{
    call_with_retries_on(
        retry,
        (),
        build_body,
        |(), body| without_state(send(body)),
        |(), d| without_state(sleep(d)),
    )
    .await
}

/// [`call_with_retries`] over a state each send and sleep borrows
/// mutably.
///
/// `state` (for instance `(&mut transport, &mut sleeper)`) is moved into
/// each send and each sleep, and their futures hand it back with their
/// output, so the closures never lend it out: the returned future is `Send`
/// whenever the state, the body, the closures and their futures are, and
/// can be `tokio::spawn`ed on a multi-threaded runtime. The retry contract
/// is exactly [`call_with_retries`]'s (which is this with a unit state).
pub async fn call_with_retries_on<C, T, B, Se, SeFut, Sl, SlFut>(
    retry: &EndpointRetry,
    state: C,
    mut build_body: impl FnMut() -> Result<B, Error>,
    mut send: Se,
    sleep: Sl,
) -> Result<T, Error>
where
    Se: FnMut(C, B) -> SeFut,
    SeFut: Future<Output = (C, Result<T, TransportFailure>)>,
    Sl: FnMut(C, Duration) -> SlFut,
    SlFut: Future<Output = (C, ())>,
{
    // A plain closure returning a future: it lends nothing out across an
    // `.await`, and the body is built inside every attempt.
    let one_attempt = |state: C, _attempt: u32| match build_body() {
        Ok(body) => attempt_outcome(Ok(send(state, body))),
        Err(e) => attempt_outcome(Err((state, e))),
    };
    let (max_retries, backoff, retry_on): (u32, Backoff, fn(&Error) -> bool) =
        match retry.retry_config {
            Some(rc) => (rc.max_retries, rc.backoff, rc.retry_on),
            None => (
                retry.max_retries.max(1) - 1,
                retry.backoff,
                native_retryable,
            ),
        };
    retry_threaded(
        max_retries,
        backoff,
        retry_on,
        is_sentinel,
        state,
        one_attempt,
        sleep,
    )
    .await
}

/// One attempt's outcome: the body build's error, or the send's result
/// with a transport failure mapped onto the crate error.
async fn attempt_outcome<C, T, F>(attempt: Result<F, (C, Error)>) -> (C, Result<T, Error>)
where
    F: Future<Output = (C, Result<T, TransportFailure>)>,
{
    match attempt {
        Err((state, e)) => (state, Err(e)),
        Ok(sent) => {
            let (state, result) = sent.await;
            let result = result.map_err(|failure| match failure {
                TransportFailure::Status(http) => classify_http_error(http),
                TransportFailure::Other(msg) => Error::Transport(msg),
            });
            (state, result)
        }
    }
}
