//! The orphan guard: a sentinel process inside the leg's group that ends
//! the group when the supervising process dies.
//!
//! `PR_SET_PDEATHSIG` reaches only the leader; its descendants would be
//! re-parented and keep running. The sentinel is a `/bin/sh` that joins the
//! leg's process group and blocks reading a pipe whose only write end this
//! process holds. The kernel closes that end when this process dies, however
//! it dies; the sentinel then reads end-of-file and sends SIGTERM to its own
//! group, waits the grace period, writes the leg's `cgroup.kill` if it has
//! one and sends SIGKILL to the group (itself included). Signalling its own
//! group needs no evidence: the sentinel is a live member, so the group id
//! cannot have been reissued. On a normal end the supervisor writes a line
//! first, and the sentinel exits without signalling anyone.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// The sentinel's script: `$1` is the grace in seconds, `$2` the leg's
/// cgroup directory or empty.
const SCRIPT: &str = r#"trap '' TERM INT HUP
if read -r _; then exit 0; fi
kill -TERM 0
sleep "$1"
if [ -n "$2" ]; then echo 1 > "$2/cgroup.kill"; fi
kill -KILL 0
"#;

/// How long a dismissed sentinel may take to exit before it is killed.
const DISMISS_SETTLE: Duration = Duration::from_secs(1);

/// A running sentinel.
#[derive(Debug)]
pub(crate) struct Sentinel {
    child: Child,
    pid: i32,
    dismiss: Option<OwnedFd>,
}

impl Sentinel {
    /// Starts a sentinel in group `pgid` (the unreaped leader's group, so
    /// joining it is safe). `None` (logged) when it cannot start; the leg
    /// keeps its parent-death signal either way.
    pub(crate) fn start(pgid: i32, grace: Duration, cgroup: Option<&Path>) -> Option<Self> {
        let (read, write) = match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
            Ok(ends) => ends,
            Err(error) => {
                tracing::warn!(%error, "orphan guard pipe unavailable; no sentinel");
                return None;
            }
        };
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(SCRIPT)
            .arg("cli-supervisor-sentinel")
            .arg(format!("{:.3}", grace.as_secs_f64()))
            .arg(cgroup.map(Path::as_os_str).unwrap_or_default())
            .process_group(pgid)
            .stdin(Stdio::from(read))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .kill_on_drop(false);
        match command.spawn() {
            Ok(child) => {
                let pid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
                tracing::debug!(pid, pgid, "orphan guard sentinel started");
                Some(Self {
                    child,
                    pid,
                    dismiss: Some(write),
                })
            }
            Err(error) => {
                tracing::warn!(%error, pgid, "orphan guard sentinel could not start");
                None
            }
        }
    }

    /// The sentinel's pid.
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// Stands the sentinel down (it exits without signalling) and reaps it.
    /// A sentinel that does not leave in time is killed through its
    /// unreaped pid.
    pub(crate) async fn dismiss(mut self) {
        if let Some(fd) = self.dismiss.take()
            && let Err(error) = rustix::io::write(&fd, b"\n")
        {
            tracing::debug!(error = %io::Error::from(error), "sentinel already gone");
        }
        match tokio::time::timeout(DISMISS_SETTLE, self.child.wait()).await {
            Ok(_) => {}
            Err(_) => {
                let _ = self.child.start_kill();
                let _ = self.child.wait().await;
            }
        }
    }
}
