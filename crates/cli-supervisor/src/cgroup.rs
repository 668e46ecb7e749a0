//! Optional cgroup v2 containment: a leg in its own cgroup is ended with
//! `cgroup.kill`, which also reaches descendants that left the process group
//! with `setsid()`. Detected at run time, never required.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
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

impl LegCgroup {
    /// Creates a cgroup for `pid` and moves it there; `None` (with nothing
    /// left behind) where cgroup v2 is missing, read-only or lacks `cgroup.kill`.
    ///
    /// The move happens right after spawn, so a descendant the child forks
    /// in the first instants of its life stays in the parent cgroup; it is
    /// still in the leg's process group.
    pub(crate) fn create(policy: &ContainmentPolicy, pid: i32) -> Option<Self> {
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
            "cli-supervisor-leg-{}-{}-{}",
            std::process::id(),
            pid,
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        if std::fs::create_dir(&dir).is_err() {
            tracing::debug!(parent = %parent.display(), "cgroup not writable; process group only");
            return None;
        }
        let cgroup = Self { dir };
        let moved = cgroup.dir.join("cgroup.kill").exists()
            && std::fs::write(cgroup.dir.join("cgroup.procs"), pid.to_string()).is_ok();
        if !moved {
            tracing::debug!(
                pid,
                "cannot move the leg into its cgroup; process group only"
            );
            let _ = std::fs::remove_dir(&cgroup.dir);
            return None;
        }
        tracing::info!(pid, cgroup = %cgroup.dir.display(), "leg contained in its own cgroup");
        Some(cgroup)
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
