//! The circuit breaker: after enough consecutive endpoint failures, calls
//! fail fast without reaching the transport until a cooldown has passed.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A circuit breaker. Models share one by reference (`Arc`), so failures
/// seen through a copy open the breaker for the original too.
///
/// Closed: calls go through and consecutive failures are counted. Open
/// (the count reached `failure_threshold`): calls are refused with
/// [`Error::CircuitOpen`](crate::Error::CircuitOpen) until `cooldown` has
/// passed since it opened; then calls are let through again as trials, and
/// the first result decides (a success closes it, a failure re-opens it).
/// Only endpoint failures count (HTTP 5xx/429 after retries, no response);
/// a 4xx the caller caused says nothing about the endpoint's health.
#[derive(Debug)]
pub struct CircuitBreaker {
    failure_threshold: u32,
    cooldown: Duration,
    state: Mutex<BreakerState>,
}

#[derive(Debug, Clone, Copy)]
struct BreakerState {
    failures: u32,
    opened_at: Option<Instant>,
}

impl CircuitBreaker {
    /// A closed breaker opening after `failure_threshold` consecutive
    /// failures (a threshold of 0 is read as 1) for `cooldown`.
    pub fn new(failure_threshold: u32, cooldown: Duration) -> Self {
        Self {
            failure_threshold: failure_threshold.max(1),
            cooldown,
            state: Mutex::new(BreakerState {
                failures: 0,
                opened_at: None,
            }),
        }
    }

    /// Consecutive failures before the breaker opens.
    pub fn failure_threshold(&self) -> u32 {
        self.failure_threshold
    }

    /// Whether the breaker is open now (refusing calls).
    pub fn is_open(&self) -> bool {
        !self.allows()
    }

    /// Consecutive failures counted so far.
    pub fn failures(&self) -> u32 {
        self.lock().failures
    }

    /// Whether a call may go through now.
    pub fn allows(&self) -> bool {
        match self.lock().opened_at {
            None => true,
            Some(at) => at.elapsed() >= self.cooldown,
        }
    }

    /// Records a successful call: the breaker closes.
    pub fn record_success(&self) {
        let mut st = self.lock();
        st.failures = 0;
        st.opened_at = None;
    }

    /// Records an endpoint failure: at the threshold (or on a failed trial)
    /// the breaker opens.
    pub fn record_failure(&self) {
        let mut st = self.lock();
        st.failures = st.failures.saturating_add(1);
        if st.failures >= self.failure_threshold {
            if st.opened_at.is_none() {
                tracing::warn!(failures = st.failures, "circuit breaker opened");
            }
            st.opened_at = Some(Instant::now());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BreakerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
