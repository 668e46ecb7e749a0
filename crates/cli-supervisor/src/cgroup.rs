//! Optional cgroup v2 containment: a leg in its own cgroup is ended with
//! `cgroup.kill`, which also reaches descendants that left the process group
//! with `setsid()`. Detected at run time, never required.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

/// Whether a leg should get its own cgroup.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ContainmentPolicy {
    /// Process group only (the default).
    #[default]
    ProcessGroup,
    /// A cgroup of its own where a writable cgroup v2 with `cgroup.kill`
    /// (Linux 5.14+) is available, else the process group alone.
    CgroupIfAvailable {
        /// The cgroup directory to create leg cgroups under; `None` uses
        /// this process's own cgroup.
        parent: Option<PathBuf>,
    },
}

/// Which mechanism a leg actually got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Containment {
    /// Its own process group (always).
    ProcessGroup,
    /// Its own process group and its own cgroup at this path.
    Cgroup {
        /// The leg's cgroup directory.
        path: PathBuf,
    },
}

/// A leg's own cgroup.
#[derive(Debug)]
pub(crate) struct LegCgroup {
    dir: PathBuf,
}

/// A leg cgroup whose directory exists and into which `pid` is to be
/// moved. Writing `cgroup.procs` is the slow part of containment (the
/// kernel waits for an RCU grace period, milliseconds, and holds back every
/// fork on the machine meanwhile), so [`CgroupMove::begin`] runs it on a
/// thread of its own while the spawn goes on (the spawn record is stored,
/// the leg runs); [`CgroupMove::wait`] waits for it. Begin it after any
/// process this supervisor must fork (the orphan guard): that fork would
/// otherwise wait for the move.
///
/// The move names `pid`, so the child must stay unreaped until the move
/// has settled: dropping a `CgroupMove` joins its thread.
#[derive(Debug)]
pub(crate) struct CgroupMove {
    dir: PathBuf,
    pid: i32,
    thread: Option<std::thread::JoinHandle<()>>,
    outcome: Option<tokio::sync::oneshot::Receiver<bool>>,
    moved: Option<bool>,
}

impl CgroupMove {
    /// The cgroup directory the leg is being moved into.
    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }

    /// Starts the move on its own thread (synchronously if no thread can
    /// start). Idempotent.
    pub(crate) fn begin(&mut self) {
        if self.outcome.is_some() || self.moved.is_some() {
            return;
        }
        let (tell, outcome) = tokio::sync::oneshot::channel();
        let (target, pid) = (self.dir.clone(), self.pid);
        let spawned = std::thread::Builder::new()
            .name("cli-supervisor-cgroup-move".to_owned())
            .spawn(move || {
                let _ = tell.send(move_into(&target, pid));
            });
        match spawned {
            Ok(thread) => {
                self.thread = Some(thread);
                self.outcome = Some(outcome);
            }
            Err(_) => self.moved = Some(move_into(&self.dir, self.pid)),
        }
    }

    /// Gives the move up before it began: the leg has already exited, and
    /// moving its remains would only wait for the kernel. Descendants it
    /// forked stay where they are either way (a move takes one process),
    /// in the leg's process group. No effect once the move has begun.
    pub(crate) fn skip(&mut self) {
        if self.outcome.is_none() && self.moved.is_none() {
            self.moved = Some(false);
        }
    }

    /// Waits for the move (beginning it if need be); whether the leg is in
    /// the cgroup. Cancel-safe: a cancelled wait leaves the move to be
    /// waited for again.
    pub(crate) async fn wait(&mut self) -> bool {
        self.begin();
        if let Some(outcome) = self.outcome.as_mut() {
            let moved = outcome.await.unwrap_or(false);
            self.outcome = None;
            self.moved = Some(moved);
        }
        self.join();
        self.moved.unwrap_or(false)
    }

    /// [`CgroupMove::wait`] for a synchronous caller (the Drop backstop).
    pub(crate) fn wait_blocking(&mut self) -> bool {
        self.begin();
        self.join();
        if let Some(mut outcome) = self.outcome.take() {
            self.moved = Some(outcome.try_recv().unwrap_or(false));
        }
        self.moved.unwrap_or(false)
    }

    fn join(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// The leg's cgroup once the move settled with the leg in it, else
    /// `None` with the directory removed.
    pub(crate) fn conclude(mut self, moved: bool) -> Option<LegCgroup> {
        self.join();
        let dir = std::mem::take(&mut self.dir);
        if moved {
            tracing::info!(pid = self.pid, cgroup = %dir.display(), "leg contained in its own cgroup");
            Some(LegCgroup { dir })
        } else {
            tracing::debug!(
                pid = self.pid,
                "cannot move the leg into its cgroup; process group only"
            );
            let _ = std::fs::remove_dir(&dir);
            None
        }
    }
}

impl Drop for CgroupMove {
    fn drop(&mut self) {
        // Never let the caller release (and so reap) the child while a
        // write naming its pid may still be under way.
        self.join();
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// Writes `pid` into the cgroup's `cgroup.procs`; whether it worked.
fn move_into(dir: &Path, pid: i32) -> bool {
    dir.join("cgroup.kill").exists()
        && std::fs::write(dir.join("cgroup.procs"), pid.to_string()).is_ok()
}

impl LegCgroup {
    /// Creates a cgroup for the unreaped child `pid`, to move it there with
    /// [`CgroupMove::begin`]; `None` (with nothing left behind) where cgroup
    /// v2 is missing or read-only. A cgroup without `cgroup.kill`, or a move the kernel
    /// refuses, comes out of [`CgroupMove::wait`] as `None`.
    ///
    /// The move starts right after spawn, so a descendant the child forks
    /// in the first instants of its life stays in the parent cgroup; it is
    /// still in the leg's process group. [`Leg::spawn`](crate::Leg::spawn)
    /// settles the move before it returns, so every descendant forked
    /// after that (for example in answer to stdin) is contained.
    pub(crate) fn start(policy: &ContainmentPolicy, pid: i32) -> Option<CgroupMove> {
        let ContainmentPolicy::CgroupIfAvailable { parent } = policy else {
            return None;
        };
        let parent = match parent {
            Some(parent) => parent.clone(),
            None => own_cgroup_dir()?,
        };
        if !parent.join("cgroup.kill").exists() && !parent.join("cgroup.procs").exists() {
            return None;
        }
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = parent.join(format!(
            "{LEG_PREFIX}{}-{}-{}",
            std::process::id(),
            pid,
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        if std::fs::create_dir(&dir).is_err() {
            tracing::debug!(parent = %parent.display(), "cgroup not writable; process group only");
            return None;
        }
        sweep_stale_in_background(parent);
        Some(CgroupMove {
            dir,
            pid,
            thread: None,
            outcome: None,
            moved: None,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }

    /// Whether any process is left in the cgroup (unreadable counts as yes).
    pub(crate) fn populated(&self) -> bool {
        match std::fs::read_to_string(self.dir.join("cgroup.events")) {
            Ok(events) => !events.lines().any(|line| line.trim() == "populated 0"),
            Err(_) => true,
        }
    }

    /// SIGKILLs everything in the cgroup. Only members of this cgroup, which
    /// are necessarily the leg's descendants, can be reached: no pid is
    /// named, so no recycled pid can be hit.
    pub(crate) fn kill(&self) -> bool {
        std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok()
    }

    /// Removes the cgroup once it is empty; from a background thread when
    /// it is not empty yet (the Drop path cannot wait).
    pub(crate) fn remove(self) {
        if std::fs::remove_dir(&self.dir).is_ok() {
            return;
        }
        let dir = self.dir;
        let spawned = std::thread::Builder::new()
            .name("cli-supervisor-cgroup-rmdir".to_owned())
            .spawn(move || {
                for _ in 0..500 {
                    if std::fs::remove_dir(&dir).is_ok() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                tracing::warn!(cgroup = %dir.display(), "leg cgroup could not be removed");
            });
        if spawned.is_err() {
            tracing::warn!("leg cgroup removal thread could not start");
        }
    }
}

/// The prefix of every leg cgroup's name: `cli-supervisor-leg-SUPERVISOR-LEG-N`.
const LEG_PREFIX: &str = "cli-supervisor-leg-";

/// How old a leg cgroup must be before a sweep may remove it.
const STALE_AFTER: Duration = Duration::from_secs(60);

/// Removes, on a detached thread (one sweep at a time), the leg cgroups a
/// supervisor that died without tearing down left under `parent` (a SIGKILL
/// gives it no chance to; its orphan guard ends the processes but cannot
/// remove the directory). Only a cgroup whose supervisor pid no longer
/// exists and that is older than [`STALE_AFTER`] is touched, and `rmdir`
/// itself refuses a cgroup that still has a process in it.
fn sweep_stale_in_background(parent: PathBuf) {
    static SWEEPING: AtomicBool = AtomicBool::new(false);
    if SWEEPING.swap(true, Ordering::AcqRel) {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("cli-supervisor-cgroup-sweep".to_owned())
        .spawn(move || {
            let removed = sweep_stale(&parent, std::process::id());
            if removed > 0 {
                tracing::info!(removed, parent = %parent.display(), "stale leg cgroups removed");
            }
            SWEEPING.store(false, Ordering::Release);
        });
    if spawned.is_err() {
        SWEEPING.store(false, Ordering::Release);
    }
}

/// The sweep itself; returns how many cgroups it removed.
pub(crate) fn sweep_stale(parent: &Path, own_pid: u32) -> usize {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(supervisor) = name
            .to_str()
            .and_then(|n| n.strip_prefix(LEG_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if supervisor == own_pid || Path::new("/proc").join(supervisor.to_string()).exists() {
            continue;
        }
        let old_enough = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if old_enough && std::fs::remove_dir(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// This process's cgroup v2 directory, from /proc/self/cgroup and mountinfo.
fn own_cgroup_dir() -> Option<PathBuf> {
    let myself = procfs::process::Process::myself().ok()?;
    let own = myself
        .cgroups()
        .ok()?
        .0
        .into_iter()
        .find(|group| group.hierarchy == 0 && group.controllers.is_empty())?
        .pathname;
    let mounts = myself.mountinfo().ok()?;
    let mount = mounts.iter().find(|mount| mount.fs_type == "cgroup2")?;
    let relative = own
        .strip_prefix(mount.root.as_str())?
        .trim_start_matches('/');
    Some(mount.mount_point.join(relative))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::{LEG_PREFIX, STALE_AFTER, sweep_stale};

    /// A pid above the kernel's largest `pid_max`: never a live process.
    const DEAD: u32 = 4_194_305;

    fn make(parent: &std::path::Path, name: &str, age: Duration) -> std::path::PathBuf {
        let dir = parent.join(name);
        std::fs::create_dir(&dir).expect("mkdir");
        let when = SystemTime::now() - age;
        std::fs::File::open(&dir)
            .expect("open dir")
            .set_modified(when)
            .expect("set mtime");
        dir
    }

    // Only an old, empty leg cgroup of a supervisor that no longer exists
    // is removed: never one of this process, of a live pid, a recent one,
    // one with something in it (rmdir refuses a populated cgroup the same
    // way it refuses a non-empty directory), or a foreign name.
    #[test]
    fn the_sweep_removes_only_old_empty_cgroups_of_dead_supervisors() {
        let parent = tempfile::tempdir().expect("tempdir");
        let old = STALE_AFTER + Duration::from_secs(5);
        let own = std::process::id();
        let stale = make(parent.path(), &format!("{LEG_PREFIX}{DEAD}-1-0"), old);
        let kept = [
            make(
                parent.path(),
                &format!("{LEG_PREFIX}{DEAD}-2-0"),
                Duration::ZERO,
            ),
            make(parent.path(), &format!("{LEG_PREFIX}1-3-0"), old),
            make(parent.path(), &format!("{LEG_PREFIX}{own}-4-0"), old),
            make(parent.path(), "unrelated-5", old),
            make(parent.path(), &format!("{LEG_PREFIX}x-6-0"), old),
        ];
        let busy = parent.path().join(format!("{LEG_PREFIX}{DEAD}-7-0"));
        std::fs::create_dir(&busy).expect("mkdir");
        std::fs::write(busy.join("cgroup.procs"), "123").expect("member");
        std::fs::File::open(&busy)
            .expect("open")
            .set_modified(SystemTime::now() - old)
            .expect("mtime");

        assert_eq!(sweep_stale(parent.path(), own), 1);
        assert!(!stale.exists());
        for dir in kept.iter().chain([&busy]) {
            assert!(dir.exists(), "{} was removed", dir.display());
        }
    }
}
