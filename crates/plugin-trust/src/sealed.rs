//! Sealed in-memory copies of verified bytes, executed by `/proc/self/fd`.
//!
//! The verified bytes go into a memfd that is then sealed against any
//! write, shrink or growth and reopened read-only (an executable open for
//! writing would fail with `ETXTBSY`). The kernel executes that memfd, so a
//! swap of the file on disk after verification cannot change what runs.
//!
//! The memfd is close-on-exec in this process, so the many children a
//! supervisor spawns never inherit it. Only the child that runs it clears
//! the flag, between fork and exec: `exec("/proc/self/fd/N")` then resolves
//! in the child, and a `#!` script's interpreter can still open
//! `/proc/self/fd/N` after the exec. Doing that in the child is the one use
//! of `unsafe` in this crate (`CommandExt::pre_exec`).
//!
//! Known limit: while the memfd is being filled, its writable descriptor
//! exists (close-on-exec) for a few microseconds. A child another thread
//! forks in that window holds it until its own exec, and an exec of the
//! sealed copy in that same instant fails with `ETXTBSY`: a spurious
//! failure to run, never a run of other bytes.
#![allow(
    unsafe_code,
    reason = "pre_exec clears close-on-exec in the forked child only"
)]

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Arc;

use rustix::fs::{MemfdFlags, Mode, OFlags, SealFlags};

/// A sealed, read-only, close-on-exec memfd holding verified bytes.
#[derive(Debug, Clone)]
pub(crate) struct SealedFile {
    fd: Arc<OwnedFd>,
}

impl SealedFile {
    /// Copies `bytes` into a new sealed memfd named after `name`.
    pub(crate) fn new(name: &str, bytes: &[u8]) -> io::Result<SealedFile> {
        let base = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING;
        // MFD_EXEC (Linux >= 6.3) keeps the memfd executable where the
        // vm.memfd_noexec sysctl would otherwise default it to noexec; older
        // kernels reject the flag, and there every memfd is executable.
        let rw = match rustix::fs::memfd_create(name, base | MemfdFlags::EXEC) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::INVAL) => rustix::fs::memfd_create(name, base)?,
            Err(e) => return Err(e.into()),
        };
        let mut file = File::from(rw);
        file.write_all(bytes)?;
        rustix::fs::fcntl_add_seals(
            &file,
            SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE | SealFlags::SEAL,
        )?;
        let reopened = rustix::fs::open(
            format!("/proc/self/fd/{}", file.as_raw_fd()),
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        drop(file);
        Ok(SealedFile {
            fd: Arc::new(reopened),
        })
    }

    /// The path a child process uses to reach the memfd.
    pub(crate) fn proc_path(&self) -> String {
        format!("/proc/self/fd/{}", self.fd.as_raw_fd())
    }

    /// Reads the sealed content back (for checks and tests).
    pub(crate) fn read_back(&self) -> io::Result<Vec<u8>> {
        let path = self.proc_path();
        std::fs::read(path)
    }
}

/// Arranges for `sealed` to be open (not close-on-exec) in the child that
/// `command` spawns, and keeps the memfds alive as long as `command` is.
pub(crate) fn inherit_in_child(command: &mut Command, sealed: Vec<SealedFile>) {
    if sealed.is_empty() {
        return;
    }
    let fds: Vec<Arc<OwnedFd>> = sealed.into_iter().map(|s| s.fd).collect();
    let hook = move || -> io::Result<()> {
        for fd in &fds {
            rustix::io::fcntl_setfd(&**fd, rustix::io::FdFlags::empty())?;
        }
        Ok(())
    };
    // SAFETY: the closure runs in the forked child before exec. It only
    // iterates an already-built Vec (no allocation) and issues the
    // async-signal-safe fcntl(F_SETFD) system call on descriptors the child
    // inherited from the parent, where they are kept open by the Arcs the
    // closure owns for as long as the Command exists.
    unsafe {
        command.pre_exec(hook);
    }
}
