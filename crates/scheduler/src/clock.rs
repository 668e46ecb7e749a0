//! The scheduler's clock, injected so tests move time without sleeping.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::model::Micros;

/// A source of "now" in microseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Micros;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Micros {
        state_sqlite::now_micros()
    }
}

/// A clock that only moves when told to.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock showing `now`.
    pub fn new(now: Micros) -> Self {
        Self(AtomicI64::new(now))
    }

    /// Sets it.
    pub fn set(&self, now: Micros) {
        self.0.store(now, Ordering::SeqCst);
    }

    /// Moves it forward by `seconds`.
    pub fn advance_secs(&self, seconds: i64) {
        self.0.fetch_add(seconds * 1_000_000, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Micros {
        self.0.load(Ordering::SeqCst)
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now(&self) -> Micros {
        (**self).now()
    }
}
