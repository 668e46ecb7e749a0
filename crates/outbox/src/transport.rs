//! Transports: how one attempt is sent. [`ExecTransport`] runs the command
//! template by direct exec; [`FnTransport`] runs a closure in process (tests,
//! benches, embedders with their own client).

use std::collections::HashSet;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::{Pid, PidfdFlags, Signal, kill_process_group, pidfd_open};

use crate::template::{Fill, Template};

/// One attempt to send.
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    /// The row id.
    pub id: &'a str,
    /// The payload.
    pub payload: &'a str,
    /// The destination.
    pub deliver_to: Option<&'a str>,
    /// The row's own template, if any.
    pub template: Option<&'a Template>,
    /// The attempt number (1-based) this send is.
    pub attempt: u32,
}

/// A failed send; its message becomes the row's `last_error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SendError(pub String);

/// Sends one attempt. `Ok` means the transport accepted it (exit status 0
/// for the exec transport).
pub trait Transport {
    /// Sends `delivery`.
    fn send(&self, delivery: &Delivery<'_>) -> Result<(), SendError>;
}

impl<T: Transport + ?Sized> Transport for &T {
    fn send(&self, delivery: &Delivery<'_>) -> Result<(), SendError> {
        (**self).send(delivery)
    }
}

/// A transport from a closure.
pub struct FnTransport<F>(pub F);

impl<F> std::fmt::Debug for FnTransport<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnTransport")
    }
}

impl<F: Fn(&Delivery<'_>) -> Result<(), SendError>> Transport for FnTransport<F> {
    fn send(&self, delivery: &Delivery<'_>) -> Result<(), SendError> {
        (self.0)(delivery)
    }
}

/// Runs the row's template (or the default) by direct exec: no shell, so
/// shell metacharacters in the template, the payload or `deliver_to` are
/// inert bytes; each placeholder element becomes exactly one argument. The
/// child gets a null stdin/stdout/stderr and its own process group; on
/// timeout the whole group is killed (SIGKILL) and reaped.
#[derive(Debug, Clone, Default)]
pub struct ExecTransport {
    /// Used for rows that carry no template.
    pub default_template: Option<Template>,
    /// Deadline per send (None: wait for the child however long it takes).
    /// Keep it below the scan lease, or another scan may take the claim over
    /// while this send still runs.
    pub timeout: Option<Duration>,
    /// Where the process group of every running send is registered while it
    /// runs, so the owner can end them all at shutdown
    /// ([`LiveGroups::kill_all`]); None: not tracked.
    pub live: Option<Arc<LiveGroups>>,
}

/// The process groups of the sends running now (their leaders' pids).
///
/// A daemon shares one with its transport and calls
/// [`kill_all`](LiveGroups::kill_all) when it stops, so a notification
/// command still running never outlives the daemon that started it.
#[derive(Debug, Default)]
pub struct LiveGroups {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    groups: HashSet<i32>,
    /// Set by [`LiveGroups::kill_all`]: no send starts after it.
    closed: bool,
}

impl LiveGroups {
    /// An empty registry.
    pub fn new() -> Self {
        LiveGroups::default()
    }

    fn remove(&self, pid: i32) {
        self.lock().groups.remove(&pid);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The number of sends running now.
    pub fn len(&self) -> usize {
        self.lock().groups.len()
    }

    /// Whether no send is running.
    pub fn is_empty(&self) -> bool {
        self.lock().groups.is_empty()
    }

    /// Sends SIGKILL to the group of every running send, refuses every
    /// send from then on, and returns how many groups were signalled. The
    /// sends themselves then fail (their child ended by a signal) and their
    /// rows are retried as any failed attempt. A send is spawned and
    /// registered under the same lock, so none can slip between; a group
    /// registered is still unreaped, so its id cannot have been reused.
    pub fn kill_all(&self) -> usize {
        let mut inner = self.lock();
        inner.closed = true;
        let mut signalled = 0;
        for &pid in inner.groups.iter() {
            if let Some(pid) = Pid::from_raw(pid)
                && kill_process_group(pid, Signal::KILL).is_ok()
            {
                signalled += 1;
            }
        }
        signalled
    }
}

/// Unregisters a send's group when the send ends, however it ends.
struct Registered<'a> {
    live: Option<&'a LiveGroups>,
    pid: i32,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if let Some(live) = self.live {
            live.remove(self.pid);
        }
    }
}

impl ExecTransport {
    /// An exec transport with a default template and no timeout.
    pub fn new(default_template: Option<Template>) -> Self {
        ExecTransport {
            default_template,
            timeout: None,
            live: None,
        }
    }
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("transport exited with status {code}"),
        (None, Some(sig)) => format!("transport killed by signal {sig}"),
        (None, None) => "transport ended abnormally".into(),
    }
}

/// Waits for `child` until `timeout`, without polling: a pidfd becomes
/// readable when the child exits.
fn wait_until(
    child: &mut std::process::Child,
    timeout: Duration,
) -> Result<Option<ExitStatus>, SendError> {
    let io = |e: std::io::Error| SendError(format!("waiting for transport: {e}"));
    let pid = Pid::from_child(child);
    let pidfd = pidfd_open(pid, PidfdFlags::empty()).map_err(|e| io(e.into()))?;
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        let spec = Timespec::try_from(left).unwrap_or(Timespec {
            tv_sec: i64::MAX,
            tv_nsec: 0,
        });
        let mut fds = [PollFd::new(&pidfd, PollFlags::IN)];
        match poll(&mut fds, Some(&spec)) {
            Ok(0) => continue,
            Ok(_) => return child.wait().map(Some).map_err(io),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(io(e.into())),
        }
    }
}

impl Transport for ExecTransport {
    fn send(&self, d: &Delivery<'_>) -> Result<(), SendError> {
        let template = d
            .template
            .or(self.default_template.as_ref())
            .ok_or_else(|| SendError("no command template for this dispatch".into()))?;
        let argv = template
            .fill(&Fill {
                id: d.id,
                payload: d.payload,
                deliver_to: d.deliver_to,
                attempt: d.attempt,
            })
            .map_err(|e| SendError(e.to_string()))?;
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| SendError("empty command template".into()))?;
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let spawn_error =
            |e: std::io::Error| SendError(format!("cannot run {}: {e}", program.to_string_lossy()));
        // With a registry, spawned and registered under its lock, so a
        // shutdown's kill_all either sees this group or refuses the send.
        let mut child = match &self.live {
            Some(live) => {
                let mut inner = live.lock();
                if inner.closed {
                    return Err(SendError("the transport is shutting down".into()));
                }
                let child = command.spawn().map_err(spawn_error)?;
                inner
                    .groups
                    .insert(Pid::from_child(&child).as_raw_nonzero().get());
                child
            }
            None => command.spawn().map_err(spawn_error)?,
        };
        let pid = Pid::from_child(&child).as_raw_nonzero().get();
        // Removed after the child is reaped below (the guard drops last).
        let _registered = Registered {
            live: self.live.as_deref(),
            pid,
        };
        let status = match self.timeout {
            None => child
                .wait()
                .map_err(|e| SendError(format!("waiting for transport: {e}")))?,
            Some(timeout) => match wait_until(&mut child, timeout)? {
                Some(status) => status,
                None => {
                    let pid = Pid::from_child(&child);
                    // The group may already be gone; the direct kill and the
                    // wait below reap the child either way.
                    let _ = kill_process_group(pid, Signal::KILL);
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(SendError(format!(
                        "transport timed out after {} ms",
                        timeout.as_millis()
                    )));
                }
            },
        };
        if status.success() {
            Ok(())
        } else {
            Err(SendError(describe(status)))
        }
    }
}
