//! Shared helpers: envelopes, runtimes, log capture and /proc checks.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use lifecycle_core::{TerminalEvent, TransitionRecord, default_registry};
use notify::RunTerminalEnvelope;

/// A committed terminal transition record of `kind`/`id`.
pub(crate) fn record(kind: &str, id: &str, from: Option<&str>, to: &str) -> TerminalEvent {
    TerminalEvent {
        transition: TransitionRecord {
            id: 42,
            entity_type: kind.into(),
            entity_id: id.into(),
            from_status: from.map(Into::into),
            to_status: to.into(),
            reason_code: "run.completed.ok".into(),
            reason_summary: "done".into(),
            actor_type: "system".into(),
            actor_id: "test".into(),
            overridden: false,
            created_at: 1_700_000_000_250_000,
        },
    }
}

/// The envelope for a `running -> <terminal>` move of `kind`/`id`.
pub(crate) fn envelope(kind: &str, id: &str) -> RunTerminalEnvelope {
    let (from, to) = match kind {
        "play" => ("running", "merged"),
        "schedule_run" => ("running", "failed"),
        _ => ("running", "completed"),
    };
    RunTerminalEnvelope::for_terminal_event(&record(kind, id, Some(from), to), default_registry())
        .expect("an execution entity's terminal move has an envelope")
}

pub(crate) fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

pub(crate) fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Runs `f` and returns what it returned with every log record of this
/// test binary so far (a superset of `f`'s records). One global subscriber:
/// a scoped one misses records of callsites whose interest another test
/// thread cached first.
pub(crate) fn capture_logs<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("log buffer").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    let logs = LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = Sink(Arc::clone(&buffer));
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber");
        buffer
    });
    let out = f();
    let text = String::from_utf8_lossy(&logs.lock().expect("log buffer")).into_owned();
    (out, text)
}

/// The state letter of `/proc/<pid>/stat` (`Z` for a zombie), or `None`
/// when the process no longer exists.
pub(crate) fn proc_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.chars().next()
}

/// The process group id field of a `/proc/<pid>/stat` text.
pub(crate) fn pgid_of_stat(stat: &str) -> i32 {
    let after = &stat[stat.rfind(')').expect("comm end") + 2..];
    after
        .split_whitespace()
        .nth(2)
        .expect("pgrp field")
        .parse()
        .expect("numeric pgrp")
}

/// The parent pid of `pid`, if it exists.
pub(crate) fn ppid(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Waits (bounded) until `path` holds a pid and returns it.
pub(crate) fn read_pid(path: &Path) -> i32 {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < until, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits (bounded) until `pid` is gone: neither running nor a zombie of
/// ours. A reparented zombie of another parent (init's business) also
/// counts as gone for a grandchild; the direct child must vanish.
pub(crate) fn wait_gone(pid: i32, direct_child: bool) -> bool {
    let me = i32::try_from(std::process::id()).expect("pid fits");
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        match proc_state(pid) {
            None => return true,
            Some('Z') if !direct_child && ppid(pid) != Some(me) => return true,
            _ => {}
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
