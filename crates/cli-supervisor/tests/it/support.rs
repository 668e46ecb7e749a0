//! Shared helpers: fixture paths, /proc checks, log capture.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cli_supervisor::{Event, Leg, ProcTable, ProcessTable};

/// The Rust fixture program.
pub(crate) fn fixture() -> &'static str {
    env!("CARGO_BIN_EXE_leg-fixture")
}

/// FNV-1a 64 of `value` as hex, as `leg-fixture env-hash` prints it.
pub(crate) fn fnv1a_hex(value: &str) -> String {
    let h = value.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{h:016x}")
}

/// A shell fixture under fixtures/cli-supervisor/.
pub(crate) fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/cli-supervisor")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// A token unique to this test run, appended to a fixture's argv so its
/// processes can be found in /proc.
pub(crate) fn marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "marker-{}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        nanos
    )
}

/// Live (non-zombie) processes whose command line contains `marker`.
pub(crate) fn live_with_marker(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    let Ok(all) = procfs::process::all_processes() else {
        return found;
    };
    for process in all.flatten() {
        let Ok(cmdline) = process.cmdline() else {
            continue;
        };
        if !cmdline.iter().any(|arg| arg.contains(marker)) {
            continue;
        }
        if let Ok(stat) = process.stat()
            && !matches!(stat.state, 'Z' | 'X' | 'x')
        {
            found.push(process.pid);
        }
    }
    found
}

/// Whether `pid` exists and is not a zombie.
pub(crate) fn alive(pid: i32) -> bool {
    ProcTable.start_time(pid).is_some()
}

/// Waits (generously, for a loaded machine) until `done` holds.
pub(crate) fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until no live process carries `marker` and, if given, group `pgid`
/// has no live member.
pub(crate) fn assert_all_gone(marker: &str, pgid: Option<i32>) {
    let gone = eventually(|| {
        live_with_marker(marker).is_empty()
            && pgid.is_none_or(|pgid| ProcTable.scan_group(pgid).live.is_empty())
    });
    assert!(
        gone,
        "processes still alive: marker {:?}, group {:?}",
        live_with_marker(marker),
        pgid.map(|p| ProcTable.scan_group(p).live)
    );
}

/// Test-only cleanup of a process the supervisor is documented not to reach.
pub(crate) fn kill_pid(pid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// The next event, which must be a JSON line.
pub(crate) async fn next_json(leg: &mut Leg) -> serde_json::Value {
    match leg.next_event().await {
        Ok(Some(Event::Json { value, .. })) => value,
        other => panic!("expected a json event, got {other:?}"),
    }
}

/// A current-thread runtime for tests that need to wrap it in a log capture.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("test runtime builds")
}

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl io::Write for Buffer {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .expect("log buffer lock")
            .extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs `f` with every tracing event (all levels) captured; returns the logs.
pub(crate) fn capture_logs<R>(f: impl FnOnce() -> R) -> (R, String) {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let result = tracing::subscriber::with_default(subscriber, f);
    let logs = String::from_utf8_lossy(&buffer.0.lock().expect("log buffer lock")).into_owned();
    (result, logs)
}
