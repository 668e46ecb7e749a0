//! A pidfd for the direct child: signals that cannot reach a recycled pid,
//! and an exit notification that does not reap.
#![allow(
    unsafe_code,
    reason = "tokio's AsyncFd::register is unsafe: it needs the fd to stay open while registered"
)]

use std::os::fd::{AsFd, OwnedFd};

use tokio::io::unix::AsyncFd;

use crate::guard::{GroupSignal, to_rustix};

/// An open pidfd registered with the tokio reactor.
#[derive(Debug)]
pub(crate) struct PidFd {
    fd: AsyncFd<OwnedFd>,
}

impl PidFd {
    /// Opens a pidfd for `pid`; `None` where the kernel has no pidfd
    /// (Linux < 5.3) or registration fails. Call only while `pid` is an
    /// unreaped child of this process, so it cannot name anyone else.
    pub(crate) fn open(pid: i32) -> Option<Self> {
        let pid = rustix::process::Pid::from_raw(pid)?;
        let owned = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::NONBLOCK).ok()?;
        // SAFETY: `owned` is a valid open descriptor that the AsyncFd owns
        // from here on; nothing else closes or replaces it, and `as_raw_fd`
        // on an OwnedFd always returns the same descriptor.
        let fd = unsafe { AsyncFd::register(owned) }.ok()?;
        Some(Self { fd })
    }

    /// Signals the direct child; after it is reaped this fails with ESRCH
    /// instead of reaching whoever got its pid.
    pub(crate) fn signal(&self, signal: GroupSignal) {
        let _ = rustix::process::pidfd_send_signal(self.fd.get_ref(), to_rustix(signal));
    }

    /// Whether the child has exited, without reaping it.
    pub(crate) fn exited(&self) -> bool {
        let options = rustix::process::WaitIdOptions::EXITED
            | rustix::process::WaitIdOptions::NOWAIT
            | rustix::process::WaitIdOptions::NOHANG;
        matches!(
            rustix::process::waitid(
                rustix::process::WaitId::PidFd(self.fd.get_ref().as_fd()),
                options
            ),
            Ok(Some(_))
        )
    }

    /// Resolves once the child has exited (the pidfd turns readable).
    pub(crate) async fn wait_exit(&self) {
        loop {
            if self.exited() {
                return;
            }
            match self.fd.readable().await {
                Ok(mut ready) => {
                    if !self.exited() {
                        ready.clear_ready();
                    }
                }
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        }
    }
}
