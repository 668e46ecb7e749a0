//! Spawning from one long-lived thread, with `PR_SET_PDEATHSIG` on the leg.
//!
//! The kernel sends the parent-death signal when the *thread* that forked
//! the child exits, not the process. A leg spawned from a tokio worker or a
//! blocking-pool thread (which exits when idle) would be killed long before
//! its supervisor died. So every leg is forked by one dedicated thread that
//! lives as long as the process: the signal then fires exactly when the
//! supervising process dies (a SIGKILL, the OOM killer, a closed terminal).
//!
//! The caller blocks on the thread's answer (a fork and exec, a few
//! milliseconds) instead of awaiting it, so there is still no await point
//! between the OS creating the child and the caller holding its handle.
#![allow(
    unsafe_code,
    reason = "setting the parent-death signal must happen in the child between fork and exec, \
              which only the unsafe pre_exec hook reaches"
)]

use std::io;
use std::sync::OnceLock;
use std::sync::mpsc::{Sender, SyncSender, channel, sync_channel};

use tokio::process::{Child, Command};
use tokio::runtime::Handle;

/// One spawn request: the command, the runtime its child belongs to, and
/// where to answer.
struct Request {
    command: Command,
    runtime: Handle,
    reply: SyncSender<io::Result<Child>>,
}

/// The spawner thread's inbox; `None` if the thread could not be started.
fn spawner() -> Option<&'static Sender<Request>> {
    static SPAWNER: OnceLock<Option<Sender<Request>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = channel::<Request>();
            let started = std::thread::Builder::new()
                .name("cli-supervisor-spawner".to_owned())
                .spawn(move || {
                    // Lives as long as the process: the inbox sender is in a
                    // static and is never dropped.
                    for mut request in rx {
                        let _entered = request.runtime.enter();
                        // A panic inside spawn (a runtime shutting down) is
                        // the caller's error, never the end of this thread.
                        let spawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(
                            || request.command.spawn(),
                        ))
                        .unwrap_or_else(|_| Err(io::Error::other("spawning panicked")));
                        let _ = request.reply.send(spawned);
                    }
                });
            match started {
                Ok(_) => Some(tx),
                Err(error) => {
                    tracing::warn!(%error, "spawner thread unavailable; legs get no parent-death signal");
                    None
                }
            }
        })
        .as_ref()
}

/// Spawns `command` with SIGKILL as its parent-death signal, from the
/// long-lived spawner thread. Where that thread cannot run, spawns on the
/// calling thread without the signal (logged).
pub(crate) fn spawn_with_death_signal(mut command: Command) -> io::Result<Child> {
    let Some(inbox) = spawner() else {
        return command.spawn();
    };
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child before exec. It only
    // makes two raw syscalls (prctl, getppid) through rustix, allocates
    // nothing, takes no lock and touches no state shared with the parent,
    // so it is async-signal-safe. Its error path builds an io::Error from a
    // raw errno, which does not allocate.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(io::Error::from)?;
            // The parent may have died between fork and prctl: the signal
            // would then never come, so refuse to exec at all.
            if rustix::process::getppid() != Some(parent) {
                return Err(io::Error::from(rustix::io::Errno::SRCH));
            }
            Ok(())
        });
    }
    let (reply, answer) = sync_channel(1);
    let request = Request {
        command,
        runtime: Handle::current(),
        reply,
    };
    if let Err(mut returned) = inbox.send(request) {
        // The thread is gone (it cannot panic, but be safe): spawn here.
        return returned.0.command.spawn();
    }
    answer
        .recv()
        .unwrap_or_else(|_| Err(io::Error::other("spawner thread ended")))
}
