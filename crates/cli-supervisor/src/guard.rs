//! The one place a group signal is sent, and the evidence rule that gates it.
//!
//! A group id is signalled only on positive evidence that it is still this
//! child's group. Exactly two facts count: the child has not been reaped
//! (its pid, and so the group id it leads, cannot have been reissued), or
//! the group currently has a live member (an occupied group id is never
//! reissued). Elapsed time, an exit status or a stored pid count for nothing.

use std::io;

use crate::proc::{ProcessTable, SpawnedProcess};

/// What the caller knows about the direct child (the group leader).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildState {
    /// Not yet waited: its pid, and the group id equal to it, are pinned.
    Unreaped,
    /// Waited: the pid may belong to a stranger now.
    Reaped,
}

/// The signals teardown sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupSignal {
    /// SIGTERM: ask politely.
    Term,
    /// SIGKILL: no appeal.
    Kill,
}

/// The syscall seam: sends a signal to a whole process group. Injectable so
/// tests can prove that no signal is sent where the evidence rule forbids it.
pub trait Signaller: Send + Sync {
    /// Sends `signal` to every member of group `pgid`.
    fn signal_group(&self, pgid: i32, signal: GroupSignal) -> io::Result<()>;
}

/// The real signaller (`kill(-pgid, sig)`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OsSignaller;

impl Signaller for OsSignaller {
    /// Refuses (`InvalidInput`) any id the pid guard refuses: this seam is
    /// public, so calling it directly must not bypass the guard.
    fn signal_group(&self, pgid: i32, signal: GroupSignal) -> io::Result<()> {
        if !group_id_allowed(pgid) {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        let pid = rustix::process::Pid::from_raw(pgid)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        rustix::process::kill_process_group(pid, to_rustix(signal)).map_err(io::Error::from)
    }
}

pub(crate) fn to_rustix(signal: GroupSignal) -> rustix::process::Signal {
    match signal {
        GroupSignal::Term => rustix::process::Signal::TERM,
        GroupSignal::Kill => rustix::process::Signal::KILL,
    }
}

/// What [`signal_group_on_evidence`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignalOutcome {
    /// The signal was sent; `evidence` says which fact allowed it.
    Sent {
        /// The fact that established the group is still this child's.
        evidence: Evidence,
    },
    /// The group is proven empty: nothing to signal.
    GroupEmpty,
    /// After the reap the table could not be read completely and showed no
    /// member: emptiness is unproven, so nothing was signalled (logged).
    Unprovable,
    /// The group id is not one this helper may ever signal (≤ 1, or this
    /// process's own group).
    InvalidGroup,
    /// The record has no start time, or the live start time differs.
    IdentityNotEstablished,
    /// The signal syscall failed (e.g. the group emptied in between).
    Failed {
        /// The OS error kind.
        kind: io::ErrorKind,
    },
}

impl SignalOutcome {
    /// Whether a signal was sent.
    pub fn sent(&self) -> bool {
        matches!(self, Self::Sent { .. })
    }
}

/// Which fact authorised a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// The direct child has not been reaped.
    Unreaped,
    /// The group has a live member (pid given).
    LiveMember(i32),
    /// A record's start time matched a live read of the pid.
    StartTimeMatched,
}

/// Signals group `pgid` only on positive evidence that it is still the
/// child's. This is the only function that calls [`Signaller::signal_group`].
pub fn signal_group_on_evidence(
    table: &dyn ProcessTable,
    signaller: &dyn Signaller,
    pgid: i32,
    state: ChildState,
    signal: GroupSignal,
) -> SignalOutcome {
    if !group_id_allowed(pgid) {
        tracing::warn!(pgid, "refusing to signal a group id that is not a leg's");
        return SignalOutcome::InvalidGroup;
    }
    let evidence = match state {
        // Before the reap identity is guaranteed by the unwaited pid, so an
        // unreadable process table must not block the signal.
        ChildState::Unreaped => Evidence::Unreaped,
        ChildState::Reaped => {
            let scan = table.scan_group(pgid);
            match scan.live.first() {
                Some(&member) => Evidence::LiveMember(member),
                None if scan.complete => {
                    tracing::debug!(pgid, "group proven empty; no signal");
                    return SignalOutcome::GroupEmpty;
                }
                None => {
                    tracing::warn!(
                        pgid,
                        "process table unreadable after the reap; group emptiness unproven, \
                         no signal sent, a member may still be running"
                    );
                    return SignalOutcome::Unprovable;
                }
            }
        }
    };
    send(signaller, pgid, signal, evidence)
}

/// Signals the group of a [`SpawnedProcess`] record held by a consumer that
/// did not spawn it: only if the record has a start time and a live read of
/// the pid gives the same one (the leader is then alive and pins the group).
pub fn signal_recorded_group(
    table: &dyn ProcessTable,
    signaller: &dyn Signaller,
    record: &SpawnedProcess,
    signal: GroupSignal,
) -> SignalOutcome {
    let Some(recorded) = record.create_time else {
        return SignalOutcome::IdentityNotEstablished;
    };
    if table.start_time(record.pid) != Some(recorded) {
        return SignalOutcome::IdentityNotEstablished;
    }
    if !group_id_allowed(record.pgid) {
        return SignalOutcome::InvalidGroup;
    }
    send(signaller, record.pgid, signal, Evidence::StartTimeMatched)
}

fn send(
    signaller: &dyn Signaller,
    pgid: i32,
    signal: GroupSignal,
    evidence: Evidence,
) -> SignalOutcome {
    match signaller.signal_group(pgid, signal) {
        Ok(()) => {
            tracing::debug!(pgid, ?signal, ?evidence, "group signalled");
            SignalOutcome::Sent { evidence }
        }
        Err(error) => {
            tracing::debug!(pgid, ?signal, kind = ?error.kind(), "group signal failed");
            SignalOutcome::Failed { kind: error.kind() }
        }
    }
}

/// The pid guard: never signal group 0/1/negative ids, nor our own group.
fn group_id_allowed(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    rustix::process::getpgrp().as_raw_nonzero().get() != pgid
}
