//! Reading the process table: start times, groups, and the spawn record.

use serde::Serialize;

/// The spawn record handed to `on_spawn`: one observation of the new child.
///
/// `pid` and `pgid` are recyclable once the child is reaped; `create_time`
/// (the kernel's start time in clock ticks since boot) binds them to this
/// child. `None` means nothing was established and is never a claim about
/// the process: a consumer must not treat it as a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SpawnedProcess {
    /// The child's pid.
    pub pid: i32,
    /// The child's process group id, captured at spawn (equal to `pid`:
    /// every leg leads its own group).
    pub pgid: i32,
    /// The child's start time, or `None` when it could not be established.
    pub create_time: Option<u64>,
}

/// Membership of one process group, as far as the table could be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupScan {
    /// Members that are not zombies.
    pub live: Vec<i32>,
    /// Zombie members (exited, not yet reaped by their parent).
    pub zombies: Vec<i32>,
    /// Whether every process entry could be read. An incomplete scan that
    /// found nobody proves nothing.
    pub complete: bool,
}

/// The process-table reads the supervisor relies on; injectable for tests.
pub trait ProcessTable: Send + Sync {
    /// The start time of `pid`, or `None` if it does not exist, is a zombie
    /// or cannot be read.
    fn start_time(&self, pid: i32) -> Option<u64>;
    /// The process group of `pid`, or `None` if it cannot be read.
    fn pgid(&self, pid: i32) -> Option<i32>;
    /// Every process whose group is `pgid`.
    fn scan_group(&self, pgid: i32) -> GroupScan;
}

/// The real process table, read from `/proc` through `procfs`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcTable;

impl ProcessTable for ProcTable {
    fn start_time(&self, pid: i32) -> Option<u64> {
        let stat = procfs::process::Process::new(pid).ok()?.stat().ok()?;
        // A zombie's pid is about to be released; a dead (`X`) one already is.
        // Neither may be claimed as "this child exists".
        if matches!(stat.state, 'Z' | 'X' | 'x') {
            return None;
        }
        Some(stat.starttime)
    }

    fn pgid(&self, pid: i32) -> Option<i32> {
        // A syscall rather than a /proc read: this sits between the two
        // start-time reads of every spawn observation.
        let pid = rustix::process::Pid::from_raw(pid)?;
        rustix::process::getpgid(Some(pid))
            .ok()
            .map(|pgid| pgid.as_raw_nonzero().get())
    }

    fn scan_group(&self, pgid: i32) -> GroupScan {
        let mut scan = GroupScan {
            complete: true,
            ..GroupScan::default()
        };
        let Ok(all) = procfs::process::all_processes() else {
            scan.complete = false;
            return scan;
        };
        for entry in all {
            let stat = match entry.and_then(|process| process.stat()) {
                Ok(stat) => stat,
                // The process exited between listing and reading: not a member.
                Err(procfs::ProcError::NotFound(_)) => continue,
                Err(_) => {
                    scan.complete = false;
                    continue;
                }
            };
            if stat.pgrp != pgid {
                continue;
            }
            if matches!(stat.state, 'Z' | 'X' | 'x') {
                scan.zombies.push(stat.pid);
            } else {
                scan.live.push(stat.pid);
            }
        }
        scan
    }
}

/// Observes a just-spawned child: start time, then group, then start time
/// again. Disagreeing start times, or a child that is already a zombie or
/// reaped, give `create_time: None`. A group that differs from the one the
/// child was created in also gives `None`, since the observation then does
/// not describe the record's group.
///
/// The bracket rejects a replacement arriving during the observation; it
/// cannot speak for one that arrived before the first read, which is covered
/// by the probe answering `None` for a reaped or zombie pid.
pub fn observe_spawned(table: &dyn ProcessTable, pid: i32) -> SpawnedProcess {
    let before = table.start_time(pid);
    let group = table.pgid(pid);
    let after = table.start_time(pid);
    let create_time = match (before, group, after) {
        (Some(before), Some(group), Some(after)) if before == after && group == pid => Some(before),
        _ => None,
    };
    SpawnedProcess {
        pid,
        pgid: pid,
        create_time,
    }
}
