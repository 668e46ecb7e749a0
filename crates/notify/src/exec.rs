//! The exec adapter: run an argv directly with the envelope on stdin.
//!
//! The child runs through cli-supervisor's [`Leg`]: its own process group,
//! and one teardown routine (SIGTERM to the group, a grace period, SIGKILL)
//! that also reaps it. The child's whole life is owned by a detached
//! supervising task, so cancelling the call (the registry's deadline
//! dropping the handler, or any caller dropping the future) cannot interrupt
//! the cleanup: the dropped call only tells the task to end the group, and
//! the task ends and reaps it on its own. The call's own timeout, identical
//! to the registry's budget, ends the child the same way.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cli_supervisor::{Leg, LegExit, LegSpec, LineFormat, StdinPolicy};
use tokio::io::AsyncWriteExt;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::envelope::RunTerminalEnvelope;
use crate::error::Error;
use crate::outcome::{NotifyOutcome, OutcomeSink, reason, write_private};
use crate::redact::Argv;
use crate::registry::{DEFAULT_BUDGET, Handler};

/// Longest stderr kept (the tail) for capture to the owner-only file.
const STDERR_LIMIT: usize = 64 * 1024;
/// Longest stdout line read (stdout is drained and discarded).
const STDOUT_LINE_LIMIT: usize = 64 * 1024;
/// Longest redacted stderr line that goes to the log when no file is bound.
const SNIPPET_LIMIT: usize = 200;

/// How an adapter call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The child exited on its own.
    Exited,
    /// The call's own timeout fired; the group was ended.
    TimedOut,
    /// The call was dropped (e.g. the registry's deadline); the group was
    /// ended.
    Cancelled,
}

impl Ending {
    /// The outcome reason code of an unsuccessful call that ended this way.
    fn reason(self) -> &'static str {
        match self {
            Self::Exited => reason::EXITED_UNSUCCESSFULLY,
            Self::TimedOut => reason::TIMED_OUT,
            Self::Cancelled => reason::CANCELLED,
        }
    }
}

/// What one adapter call did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecReport {
    /// How it ended.
    pub ending: Ending,
    /// The child's pid (its process group id too).
    pub pid: i32,
    /// The exit code, when it exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Where its raw stderr was captured (mode 0600), if it was.
    pub stderr_path: Option<PathBuf>,
}

impl ExecReport {
    /// Whether the child exited on its own with status 0.
    pub fn ok(&self) -> bool {
        self.ending == Ending::Exited && self.exit_code == Some(0)
    }
}

/// Runs one argv per envelope: no shell, its own process group, the
/// envelope as JSON on stdin, stdout discarded, stderr captured.
#[derive(Clone)]
pub struct ExecAdapter {
    argv: Argv,
    timeout: Duration,
    grace: Duration,
    outcome: Option<Arc<dyn OutcomeSink>>,
}

impl std::fmt::Debug for ExecAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecAdapter")
            .field("argv", &self.argv)
            .field("timeout", &self.timeout)
            .field("grace", &self.grace)
            .field("records_outcome", &self.outcome.is_some())
            .finish()
    }
}

impl ExecAdapter {
    /// An adapter for `argv` with the default budget as timeout and a 2 s
    /// grace between SIGTERM and SIGKILL.
    pub fn new(argv: Argv) -> Self {
        Self {
            argv,
            timeout: DEFAULT_BUDGET,
            grace: Duration::from_secs(2),
            outcome: None,
        }
    }

    /// Sets the call's own timeout (make it the registry's budget).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the grace period between SIGTERM and SIGKILL.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Records each call's outcome (and captures stderr) through `sink`.
    pub fn record_to(mut self, sink: Arc<dyn OutcomeSink>) -> Self {
        self.outcome = Some(sink);
        self
    }

    /// The adapter's label (its program's basename).
    pub fn label(&self) -> String {
        self.argv.label()
    }

    /// Runs the adapter once for `envelope` and waits for the child to be
    /// ended and reaped. Dropping the returned future ends the child's
    /// group in the background; nothing is left running or unreaped.
    ///
    /// Errors only when the child could not be started (or its supervising
    /// task was lost); an unsuccessful exit is a report, see
    /// [`ExecReport::ok`].
    pub async fn call(&self, envelope: &RunTerminalEnvelope) -> Result<ExecReport, Error> {
        let json = envelope.to_json()?;
        let argv = fill_placeholders(self.argv.as_slice(), envelope, &json);
        let payload = json.into_bytes();
        let (cancel, cancelled) = oneshot::channel::<()>();
        let task = tokio::spawn(supervise(self.clone(), argv, payload, cancelled));
        // Held across the await: if this future is dropped, the sender goes
        // with it and the supervising task sees the cancellation.
        let _cancel_on_drop = cancel;
        match task.await {
            Ok(result) => result,
            Err(_) => Err(Error::SupervisorLost {
                label: self.label(),
            }),
        }
    }

    /// A registry handler running this adapter; an unsuccessful call is a
    /// handler error (logged and swallowed by the registry).
    pub fn into_handler(self) -> Handler {
        let adapter = Arc::new(self);
        Handler::from_async(move |envelope| {
            let adapter = Arc::clone(&adapter);
            async move { adapter.call_checked(&envelope).await.map_err(Into::into) }
        })
    }

    pub(crate) async fn call_checked(&self, envelope: &RunTerminalEnvelope) -> Result<(), Error> {
        let report = self.call(envelope).await?;
        let label = self.label();
        match report.ending {
            _ if report.ok() => Ok(()),
            Ending::Exited => Err(Error::AdapterFailed {
                label,
                exit: render_exit(&report),
            }),
            Ending::TimedOut => Err(Error::AdapterTimedOut { label }),
            Ending::Cancelled => Err(Error::AdapterCancelled { label }),
        }
    }
}

fn render_exit(report: &ExecReport) -> String {
    match (report.exit_code, report.signal) {
        (Some(code), _) => format!("status {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "an unknown status".to_owned(),
    }
}

/// The placeholders an exec adapter's argument may be, as li's
/// `--notify-on-terminal` knows them. An argument that is exactly one of
/// them is replaced by the value as one whole argument (never spliced into
/// a longer one, never given to a shell); a value the envelope lacks is
/// the empty string. `argv[0]` is never replaced.
pub const EXEC_PLACEHOLDERS: [&str; 12] = [
    "{payload}",
    "{status}",
    "{previous_status}",
    "{reason_code}",
    "{event_id}",
    "{entity_type}",
    "{entity_id}",
    "{target}",
    "{session_id}",
    "{invocation_id}",
    "{schedule_run_id}",
    "{run_id}",
];

/// `argv` with every whole-argument placeholder filled from `envelope`
/// (`json` is its payload).
pub fn fill_placeholders(
    argv: &[String],
    envelope: &RunTerminalEnvelope,
    json: &str,
) -> Vec<String> {
    let c = &envelope.correlation;
    let of_kind = |kind: &str| (envelope.entity.kind == kind).then(|| envelope.entity.id.clone());
    let value = |p: &str| -> Option<String> {
        Some(match p {
            "{payload}" => json.to_owned(),
            "{status}" => envelope.terminal_status.clone(),
            "{previous_status}" => envelope.previous_status.clone().unwrap_or_default(),
            "{reason_code}" => envelope.reason_code.clone(),
            "{event_id}" => envelope.event_id.clone(),
            "{entity_type}" => envelope.entity.kind.clone(),
            "{entity_id}" | "{target}" => envelope.entity.id.clone(),
            "{session_id}" => c
                .session_id
                .clone()
                .or_else(|| of_kind("session"))
                .unwrap_or_default(),
            "{invocation_id}" => c
                .invocation_id
                .clone()
                .or_else(|| of_kind("invocation"))
                .unwrap_or_default(),
            "{schedule_run_id}" => c
                .schedule_run_id
                .clone()
                .or_else(|| of_kind("schedule_run"))
                .unwrap_or_default(),
            "{run_id}" => c.run_id.clone().unwrap_or_default(),
            _ => return None,
        })
    };
    argv.iter()
        .enumerate()
        .map(|(i, a)| match i {
            0 => a.clone(),
            _ => value(a).unwrap_or_else(|| a.clone()),
        })
        .collect()
}

/// The detached owner of one child: spawn, feed, drain, end, reap, record.
async fn supervise(
    adapter: ExecAdapter,
    argv: Vec<String>,
    payload: Vec<u8>,
    mut cancelled: oneshot::Receiver<()>,
) -> Result<ExecReport, Error> {
    let label = adapter.label();
    let deadline = Instant::now() + adapter.timeout;
    let mut spec = LegSpec::new(&argv);
    spec.stdin = StdinPolicy::Piped;
    spec.grace = adapter.grace;
    spec.stderr_tail_len = STDERR_LIMIT;
    spec.max_line_len = STDOUT_LINE_LIMIT;
    spec.line_format = LineFormat::Raw;
    let mut leg = match Leg::spawn(spec).await {
        Ok(leg) => leg,
        Err(error) => {
            // The program is named by its basename here as everywhere; the
            // rest of the text passes the argument redaction.
            let mut detail = adapter.argv.redact(&error_chain(&error));
            if let Some(program) = adapter.argv.as_slice().first() {
                detail = detail.replace(program.as_str(), &label);
            }
            tracing::warn!(adapter = %label, %detail, "notify adapter could not start");
            record(
                &adapter,
                &NotifyOutcome::failed(None, None, reason::SPAWN_FAILED),
            );
            return Err(Error::Spawn { label, detail });
        }
    };
    let pid = leg.record().pid;
    let stdin = leg.take_stdin();
    let ending = tokio::select! {
        biased;
        _ = &mut cancelled => Ending::Cancelled,
        () = tokio::time::sleep_until(deadline) => Ending::TimedOut,
        () = drive(&mut leg, stdin, &payload, pid) => Ending::Exited,
    };
    let exit = match ending {
        Ending::Exited => leg.wait().await,
        Ending::TimedOut | Ending::Cancelled => leg.end().await,
    };
    let report = match exit {
        Ok(exit) => finish(&adapter, ending, pid, exit),
        Err(error) => {
            // The teardown itself ran; only the exit status is missing.
            tracing::warn!(adapter = %label, pid, error = %adapter.argv.redact(&error.to_string()), "notify adapter status unavailable");
            record(
                &adapter,
                &NotifyOutcome::failed(None, None, ending.reason()),
            );
            ExecReport {
                ending,
                pid,
                exit_code: None,
                signal: None,
                stderr_path: None,
            }
        }
    };
    Ok(report)
}

/// Feeds the payload, drains stdout, then waits for the leader to exit
/// without reaping it (the teardown routine reaps). Cancel-safe: it only
/// borrows the leg.
async fn drive(leg: &mut Leg, stdin: Option<tokio::process::ChildStdin>, payload: &[u8], pid: i32) {
    if let Some(mut stdin) = stdin {
        // An adapter that does not read stdin closes it: a broken pipe here
        // is its choice, not a failure of the call.
        let _ = stdin.write_all(payload).await;
        let _ = stdin.shutdown().await;
    }
    while let Ok(Some(_)) = leg.next_event().await {}
    let mut interval = Duration::from_millis(1);
    while !leader_exited(pid) {
        tokio::time::sleep(interval).await;
        interval = (interval * 2).min(Duration::from_millis(20));
    }
}

/// Whether the child has exited, observed without reaping it: while it is
/// unreaped its pid cannot be reused, so this never reads another process.
fn leader_exited(pid: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid) else {
        return true;
    };
    let options = rustix::process::WaitIdOptions::EXITED
        | rustix::process::WaitIdOptions::NOWAIT
        | rustix::process::WaitIdOptions::NOHANG;
    match rustix::process::waitid(rustix::process::WaitId::Pid(pid), options) {
        Ok(status) => status.is_some(),
        // ECHILD: already reaped (by the teardown routine); nothing to wait for.
        Err(_) => true,
    }
}

fn finish(adapter: &ExecAdapter, ending: Ending, pid: i32, exit: LegExit) -> ExecReport {
    let label = adapter.label();
    let stderr_path = capture_stderr(adapter, &exit.stderr_tail);
    let report = ExecReport {
        ending,
        pid,
        exit_code: exit.status.code(),
        signal: exit.status.signal(),
        stderr_path,
    };
    let outcome = if report.ok() {
        NotifyOutcome {
            ok: true,
            exit_code: report.exit_code,
            stderr_path: report.stderr_path.clone(),
            reason: None,
        }
    } else {
        NotifyOutcome::failed(
            report.exit_code,
            report.stderr_path.clone(),
            ending.reason(),
        )
    };
    if report.ok() {
        tracing::debug!(adapter = %label, pid, "notify adapter succeeded");
    } else if let Some(path) = &report.stderr_path {
        tracing::warn!(
            adapter = %label,
            pid,
            ending = ?ending,
            exit = %render_exit(&report),
            stderr_path = %path.display(),
            "notify adapter failed; stderr captured to a file"
        );
    } else {
        let snippet = first_line(&exit.stderr_tail, &adapter.argv);
        tracing::warn!(
            adapter = %label,
            pid,
            ending = ?ending,
            exit = %render_exit(&report),
            stderr_first_line = snippet.as_deref().unwrap_or(""),
            "notify adapter failed; stderr not captured (no run directory bound)"
        );
    }
    record(adapter, &outcome);
    report
}

fn record(adapter: &ExecAdapter, outcome: &NotifyOutcome) {
    if let Some(sink) = &adapter.outcome
        && let Err(error) = sink.record(outcome)
    {
        tracing::warn!(adapter = %adapter.label(), %error, "notify outcome not recorded");
    }
}

/// Writes the raw stderr tail to the sink's owner-only file, if one is
/// bound and there is anything to write.
fn capture_stderr(adapter: &ExecAdapter, stderr: &[u8]) -> Option<PathBuf> {
    let path = adapter.outcome.as_ref()?.stderr_path()?;
    if stderr.is_empty() {
        return None;
    }
    match write_private(&path, stderr) {
        Ok(()) => Some(path),
        Err(error) => {
            tracing::warn!(adapter = %adapter.label(), %error, "notify adapter stderr not captured");
            None
        }
    }
}

/// The first non-blank stderr line, argument values redacted, bounded.
fn first_line(stderr: &[u8], argv: &Argv) -> Option<String> {
    // Redact the whole text first: a value spanning lines is still found.
    let text = argv.redact(&String::from_utf8_lossy(stderr));
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(SNIPPET_LIMIT).collect())
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
