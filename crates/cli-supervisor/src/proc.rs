//! Reading the process table: start times, groups, and the spawn record.

use std::fmt::Write as _;
use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
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

/// The real process table, read from `/proc`.
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

    /// One pass over `/proc`: each entry's `stat` is opened relative to one
    /// directory handle and read once into a stack buffer, and only the
    /// state and group fields are parsed (teardown runs this on every leg).
    fn scan_group(&self, pgid: i32) -> GroupScan {
        let mut scan = GroupScan {
            complete: true,
            ..GroupScan::default()
        };
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let Ok(proc_dir) = rustix::fs::open("/proc", flags, Mode::empty()) else {
            scan.complete = false;
            return scan;
        };
        let Ok(entries) = rustix::fs::Dir::read_from(&proc_dir) else {
            scan.complete = false;
            return scan;
        };
        let mut path = String::with_capacity(24);
        for entry in entries {
            let Ok(entry) = entry else {
                scan.complete = false;
                break;
            };
            let Some(pid) = entry
                .file_name()
                .to_str()
                .ok()
                .and_then(|name| name.parse::<i32>().ok())
            else {
                continue;
            };
            path.clear();
            let _ = write!(path, "{pid}/stat");
            match read_stat_head(&proc_dir, &path) {
                StatRead::Gone => {}
                StatRead::Unreadable => scan.complete = false,
                StatRead::Read { state, pgrp } => {
                    if pgrp != pgid {
                        continue;
                    }
                    if matches!(state, b'Z' | b'X' | b'x') {
                        scan.zombies.push(pid);
                    } else {
                        scan.live.push(pid);
                    }
                }
            }
        }
        scan
    }
}

/// What reading one `/proc/PID/stat` gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StatRead {
    /// The process exited between listing and reading: not a member.
    Gone,
    /// Any other failure, or a line that does not parse.
    Unreadable,
    /// The state letter and the process group.
    Read { state: u8, pgrp: i32 },
}

/// Reads the head of `/proc/PID/stat` (`path` relative to the `/proc`
/// handle): the fields up to the process group fit well within the buffer,
/// since the command name is at most 64 bytes.
fn read_stat_head(proc_dir: &OwnedFd, path: &str) -> StatRead {
    let fd = match rustix::fs::openat(
        proc_dir,
        path,
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT | Errno::SRCH) => return StatRead::Gone,
        Err(_) => return StatRead::Unreadable,
    };
    let mut buf = [0u8; 256];
    let len = match rustix::io::read(&fd, &mut buf) {
        Ok(len) => len,
        Err(Errno::NOENT | Errno::SRCH) => return StatRead::Gone,
        Err(_) => return StatRead::Unreadable,
    };
    parse_stat_head(&buf[..len]).map_or(StatRead::Unreadable, |(state, pgrp)| StatRead::Read {
        state,
        pgrp,
    })
}

/// The state letter and process group from the head of a `stat` line,
/// `PID (COMM) STATE PPID PGRP ...`. COMM may hold spaces and parentheses,
/// so the fields start after the last `)`.
fn parse_stat_head(head: &[u8]) -> Option<(u8, i32)> {
    let close = head.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(head.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.as_bytes();
    let [state] = state else {
        return None;
    };
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((*state, pgrp))
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

#[cfg(test)]
mod tests {
    use super::{ProcTable, ProcessTable, parse_stat_head};

    #[test]
    fn the_fields_start_after_the_last_parenthesis_of_the_name() {
        assert_eq!(parse_stat_head(b"42 (sh) S 1 42 42 0"), Some((b'S', 42)));
        assert_eq!(
            parse_stat_head(b"7 (a) Z 9 (b)) R 3 1234 1 0 -1"),
            Some((b'R', 1234))
        );
        assert_eq!(parse_stat_head(b"7 (x y) Z 1 -5"), Some((b'Z', -5)));
        assert_eq!(parse_stat_head(b"7 (sh) S 1"), None);
        assert_eq!(parse_stat_head(b"7 (sh) SS 1 7"), None);
        assert_eq!(parse_stat_head(b"7 sh S 1 7"), None);
        assert_eq!(parse_stat_head(b""), None);
    }

    #[test]
    fn the_scan_finds_this_process_in_its_own_group() {
        let me = i32::try_from(std::process::id()).expect("pid");
        let group = rustix::process::getpgrp().as_raw_nonzero().get();
        let scan = ProcTable.scan_group(group);
        assert!(scan.complete);
        assert!(scan.live.contains(&me), "{scan:?}");
        let elsewhere = ProcTable.scan_group(i32::MAX);
        assert!(elsewhere.live.is_empty() && elsewhere.zombies.is_empty());
    }
}
