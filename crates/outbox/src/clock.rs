//! The injected clock: every outbox decision reads time through [`Clock`].

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of "now" in microseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    /// Now.
    fn now_micros(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_micros(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
    }
}

/// A clock that moves only when told to (tests, models, replays). Clones
/// share one time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock reading `micros`.
    pub fn new(micros: i64) -> Self {
        ManualClock(Arc::new(AtomicI64::new(micros)))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_micros()).unwrap_or(i64::MAX);
        self.0.fetch_add(by, Ordering::SeqCst);
    }

    /// Sets the clock.
    pub fn set(&self, micros: i64) {
        self.0.store(micros, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_micros(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now_micros(&self) -> i64 {
        (**self).now_micros()
    }
}

/// A duration in microseconds, saturating.
pub(crate) fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}
