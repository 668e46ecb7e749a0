//! Output helpers: stdout for results, stderr for errors, UTC timestamps.
//!
//! Every command checks its own output: the first failed write to stdout
//! (a closed pipe, a full disk) is kept, later writes are skipped, and
//! [`finish`] turns it into the command's error, so the command exits
//! non-zero with a message naming the cause instead of exiting 0 or
//! panicking.

use std::io::Write;
use std::sync::Mutex;

/// The first error writing stdout, if any.
static WRITE_ERROR: Mutex<Option<std::io::Error>> = Mutex::new(None);

/// Keeps `e` when it is the first output error.
pub(crate) fn note_write_error(e: std::io::Error) {
    let mut slot = WRITE_ERROR
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if slot.is_none() {
        *slot = Some(e);
    }
}

/// Whether writing stdout has failed: a loop that only prints (a follow, a
/// watch) stops.
pub(crate) fn failed() -> bool {
    WRITE_ERROR
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .is_some()
}

/// Writes `bytes` to stdout as they are, unless an earlier write failed.
pub(crate) fn raw(bytes: &[u8]) {
    if failed() {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(bytes) {
        note_write_error(e);
    }
}

/// Writes one line to stdout; a failure is kept for [`finish`].
pub(crate) fn line(text: impl AsRef<str>) {
    if failed() {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = writeln!(stdout, "{}", text.as_ref()) {
        note_write_error(e);
    }
}

/// Flushes stdout and reports the first output error as the command's.
pub(crate) fn finish() -> anyhow::Result<()> {
    if let Err(e) = std::io::stdout().lock().flush() {
        note_write_error(e);
    }
    let taken = WRITE_ERROR
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    match taken {
        Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(anyhow::anyhow!(
            "writing the output: the reader closed the pipe ({e})"
        )),
        Some(e) => Err(anyhow::Error::new(e).context("writing the output")),
        None => Ok(()),
    }
}

/// Writes a JSON value as one line to stdout.
pub(crate) fn json(value: &serde_json::Value) {
    line(value.to_string());
}

/// Writes an error and its causes to stderr.
pub(crate) fn error(e: &anyhow::Error) {
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "error: {e}");
    for cause in e.chain().skip(1) {
        let _ = write!(stderr, ": {cause}");
    }
    let _ = writeln!(stderr);
}

/// Microseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
pub(crate) fn timestamp(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (proleptic Gregorian), valid for all i64 day counts
    // that matter here.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{frac:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps_render_in_utc() {
        assert_eq!(super::timestamp(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            super::timestamp(1_709_251_199_123_456),
            "2024-02-29T23:59:59.123456Z"
        );
        assert_eq!(super::timestamp(-1), "1969-12-31T23:59:59.999999Z");
    }
}
