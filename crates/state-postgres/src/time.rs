//! Clock helpers: microseconds since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in microseconds since the Unix epoch (0 if the clock is before it).
pub fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The next version for a row at `previous`: now, but strictly later.
pub(crate) fn next_version(previous: i64) -> i64 {
    now_micros().max(previous.saturating_add(1))
}
