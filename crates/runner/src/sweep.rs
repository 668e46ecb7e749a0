//! Crash recovery: who owns a session, the orphan sweep, and ending a live
//! leg from another process (`lionrt kill`).
//!
//! A session is *orphaned* when its owner (the process that recorded its
//! start) is provably gone: the recorded boot id differs from this boot's,
//! or a live read of the owner's pid gives no start time or a different one.
//! An owner with no recorded start time can never be proven gone, and an
//! owner that is alive is never touched.
//!
//! A pid, a start time and a boot id mean something only on the host that
//! recorded them, and a store may be shared by several hosts (PostgreSQL).
//! So the owner also records its host's identity ([`host_id`]: the machine
//! id and the hostname), and only a session owned by *this* host is judged:
//! one owned by another host is left alone ([`OwnerState::OtherHost`]). A
//! row from before the host was recorded is judged as before on a store
//! only this host opens (a SQLite file); on a store shared by hosts it is
//! judged only when its boot id is this boot's (the same kernel), and left
//! alone otherwise ([`OwnerState::HostUnknown`]): a differing boot id there
//! may be another host's live session, not a reboot.
//!
//! Signals follow the evidence rule for a consumer that did not spawn the
//! leg (SUP-006): the group of a spawn record is signalled only when a live
//! read of the leader's pid gives the recorded `create_time` back; a
//! recycled pid, a missing start time or a record from another boot is
//! never signalled.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use cli_supervisor::{
    GroupSignal, ProcessTable, SignalOutcome, Signaller, SpawnedProcess, signal_recorded_group,
};
use lifecycle_core::{
    Actor, Cancellation, ID_CANDIDATES, IdMatch, LegRecord, OutcomeKind, OwnerRecord, Reason,
    SessionRecorder, SessionSnapshot, TransitionCommand, reasons::SessionReasons,
};
use serde::Serialize;

use crate::error::Error;

/// The reason code a sweep stamps on an orphaned session.
pub const ORPHAN_REASON: &str = SessionReasons::ORPHANED_NO_PROCESS;

/// The status an orphaned session ends in.
pub const ORPHAN_STATUS: &str = "failed";

/// This boot's id, or `None` where it cannot be read.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// This host's identity, stable across its reboots, or `None` where none
/// can be read: `<machine id>:<hostname>`, or the hostname alone where no
/// machine id is readable (`/etc/machine-id`, then
/// `/var/lib/dbus/machine-id`).
///
/// The hostname is part of it because containers often share the machine
/// id of the host they run on (a bind mount, or one baked into an image)
/// while each has its own hostname and its own pids: with the machine id
/// alone, one container would judge another's sessions by pids it cannot
/// see. Containers sharing both (host UTS namespace and machine id) count
/// as one host; give each its own hostname.
pub fn host_id() -> Option<String> {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let machine = read("/etc/machine-id").or_else(|| read("/var/lib/dbus/machine-id"));
    let hostname = read("/proc/sys/kernel/hostname");
    match (machine, hostname) {
        (Some(m), Some(h)) => Some(format!("{m}:{h}")),
        (Some(m), None) => Some(m),
        (None, h) => h,
    }
}

/// This process as a session owner: pid, start time, boot id and host.
pub fn current_owner(table: &dyn ProcessTable) -> OwnerRecord {
    let pid = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
    OwnerRecord {
        pid: i64::from(pid),
        start_time: table.start_time(pid).and_then(|t| i64::try_from(t).ok()),
        boot_id: boot_id(),
        host_id: host_id(),
    }
}

/// Where a judgement is made: this boot, this host, and whether the store
/// is shared by several hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Here {
    /// This boot's id ([`boot_id`]).
    pub boot_id: Option<String>,
    /// This host's identity ([`host_id`]).
    pub host_id: Option<String>,
    /// Whether other hosts record sessions in the same store
    /// ([`SessionRecorder::shared_by_hosts`]).
    pub shared_store: bool,
}

impl Here {
    /// This boot and host, for a store shared by hosts or not.
    pub fn detect(shared_store: bool) -> Self {
        Self {
            boot_id: boot_id(),
            host_id: host_id(),
            shared_store,
        }
    }
}

/// What is known about a session's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnerState {
    /// The recorded owner is running.
    Alive,
    /// The owner is provably gone; the reason says how it is known.
    Gone(GoneBecause),
    /// Nothing can be proven (no owner recorded, or no start time).
    Unknown,
    /// The owner runs on another host: its pid, start time and boot id
    /// cannot be checked from here, so it is never judged here.
    OtherHost,
    /// Whose host the owner runs on is not known (a row from before the
    /// host was recorded, on a store shared by hosts, from another boot or
    /// none recorded; or this host's own identity cannot be read): left
    /// alone.
    HostUnknown,
}

/// How an owner is known to be gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GoneBecause {
    /// The machine rebooted since (the boot id differs).
    Rebooted,
    /// No live process has that pid.
    NoProcess,
    /// The pid belongs to another process now (its start time differs).
    PidReused,
}

/// Judges a recorded owner against the live process table, from `here`.
/// Only an owner of this host is judged by its boot id and pid: see the
/// module docs for rows that name another host or none.
pub fn owner_state(
    owner: Option<&OwnerRecord>,
    table: &dyn ProcessTable,
    here: &Here,
) -> OwnerState {
    let Some(owner) = owner else {
        return OwnerState::Unknown;
    };
    let this_boot = here.boot_id.as_deref();
    match (owner.host_id.as_deref(), here.host_id.as_deref()) {
        (Some(recorded), Some(mine)) if recorded != mine => return OwnerState::OtherHost,
        (Some(_), Some(_)) => {}
        // A host is recorded but this one cannot name itself: nothing
        // shows the owner is ours.
        (Some(_), None) => return OwnerState::HostUnknown,
        // A row from before the host column: on a shared store only the
        // same kernel (the same boot id) shows it is ours.
        (None, _) => {
            let same_kernel = matches!(
                (owner.boot_id.as_deref(), this_boot),
                (Some(recorded), Some(now)) if recorded == now
            );
            if here.shared_store && !same_kernel {
                return OwnerState::HostUnknown;
            }
        }
    }
    if let (Some(recorded), Some(now)) = (owner.boot_id.as_deref(), this_boot)
        && recorded != now
    {
        return OwnerState::Gone(GoneBecause::Rebooted);
    }
    let Some(recorded) = owner.start_time else {
        return OwnerState::Unknown;
    };
    let Ok(pid) = i32::try_from(owner.pid) else {
        return OwnerState::Unknown;
    };
    match table.start_time(pid) {
        None => OwnerState::Gone(GoneBecause::NoProcess),
        Some(live) if i64::try_from(live).ok() == Some(recorded) => OwnerState::Alive,
        Some(_) => OwnerState::Gone(GoneBecause::PidReused),
    }
}

/// A stored leg record as the supervisor's spawn record, when it can name
/// this boot's processes at all.
fn spawned(leg: &LegRecord, same_boot: bool) -> Option<SpawnedProcess> {
    Some(SpawnedProcess {
        pid: i32::try_from(leg.pid).ok()?,
        pgid: i32::try_from(leg.pgid).ok()?,
        // A record from another boot names nobody alive now.
        create_time: if same_boot {
            leg.create_time.and_then(|t| u64::try_from(t).ok())
        } else {
            None
        },
    })
}

/// How the process side of a sweep or kill should act.
pub struct Processes<'a> {
    /// The process table.
    pub table: &'a dyn ProcessTable,
    /// The signal syscall.
    pub signaller: &'a dyn Signaller,
}

impl std::fmt::Debug for Processes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Processes")
    }
}

/// What the sweep did with one session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweptSession {
    /// Session id.
    pub id: String,
    /// Why its owner counts as gone.
    pub owner: OwnerState,
    /// The SIGKILL to the leg's group under the evidence rule (`None`: no
    /// leg was recorded, or a dry run).
    pub leg_signal: Option<String>,
    /// Whether the session was moved to its terminal status (false on a dry
    /// run, or when it moved on meanwhile).
    pub ended: bool,
}

/// What a sweep found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SweepReport {
    /// Open sessions whose owner is provably gone.
    pub orphans: Vec<SweptSession>,
    /// Open sessions left alone: (id, owner state).
    pub left_alone: Vec<(String, OwnerState)>,
}

fn describe(outcome: &SignalOutcome) -> String {
    match outcome {
        SignalOutcome::Sent { .. } => "sent".into(),
        SignalOutcome::IdentityNotEstablished => "not sent: leader gone or pid reused".into(),
        SignalOutcome::InvalidGroup => "not sent: invalid group".into(),
        SignalOutcome::Failed { kind } => format!("failed: {kind:?}"),
        other => format!("{other:?}"),
    }
}

/// Ends every open session whose owner is provably gone: its leg's group
/// gets SIGKILL under the evidence rule, then the session moves to
/// `failed` with [`ORPHAN_REASON`] through the guarded transition (expected
/// status and version as read, so a session that moved on is left as it
/// is). With `dry_run` nothing is signalled or written. A session owned by
/// another host, or by an unknown host on a store shared by hosts, is
/// never signalled nor ended: it is reported in `left_alone`.
pub fn sweep_orphans<R: SessionRecorder>(
    recorder: &R,
    procs: &Processes<'_>,
    actor: &Actor,
    dry_run: bool,
) -> Result<SweepReport, Error> {
    sweep_orphans_known_gone(recorder, procs, actor, dry_run, &HashSet::new())
}

/// [`sweep_orphans`], where the caller also knows the owners of the
/// sessions in `known_gone` to be gone whatever host they ran on (a daemon
/// holding the tick lock knows that the daemon which started a schedule
/// run still marked running is gone). Such a session whose owner is on
/// another host, or on an unknown one, is ended too, and nothing is
/// signalled for it (its leg's pid names nothing here). A session of this
/// host is judged by its process as always, listed or not.
pub fn sweep_orphans_known_gone<R: SessionRecorder>(
    recorder: &R,
    procs: &Processes<'_>,
    actor: &Actor,
    dry_run: bool,
    known_gone: &HashSet<String>,
) -> Result<SweepReport, Error> {
    let here = Here::detect(recorder.shared_by_hosts());
    let mut report = SweepReport::default();
    for session in recorder
        .open_sessions()
        .map_err(Error::store("listing open sessions"))?
    {
        let state = owner_state(session.owner().as_ref(), procs.table, &here);
        let elsewhere = matches!(state, OwnerState::OtherHost | OwnerState::HostUnknown);
        let vouched = elsewhere && known_gone.contains(&session.id);
        if !matches!(state, OwnerState::Gone(_)) && !vouched {
            report.left_alone.push((session.id.clone(), state));
            continue;
        }
        let mut swept = SweptSession {
            id: session.id.clone(),
            owner: state,
            leg_signal: None,
            ended: false,
        };
        if !dry_run {
            let same_boot = state != OwnerState::Gone(GoneBecause::Rebooted);
            // Another host's leg is never signalled from here.
            let leg = session.leg().filter(|_| !elsewhere);
            if let Some(record) = leg.and_then(|l| spawned(&l, same_boot)) {
                let outcome =
                    signal_recorded_group(procs.table, procs.signaller, &record, GroupSignal::Kill);
                tracing::info!(session = %session.id, ?outcome, "orphaned leg group");
                swept.leg_signal = Some(describe(&outcome));
            }
            swept.ended = end_session(
                recorder,
                &session,
                ORPHAN_STATUS,
                Reason::new(ORPHAN_REASON).with_summary(if elsewhere {
                    format!("owner pid {} on another host is gone", owner_pid(&session))
                } else {
                    format!("owner pid {} is gone", owner_pid(&session))
                }),
                actor,
            )?;
        }
        report.orphans.push(swept);
    }
    Ok(report)
}

fn owner_pid(session: &SessionSnapshot) -> i64 {
    session.owner().map_or(0, |o| o.pid)
}

/// The guarded terminal move: expects the status and version read, so a
/// session that moved on meanwhile is not touched. Returns whether it moved.
fn end_session<R: SessionRecorder>(
    recorder: &R,
    session: &SessionSnapshot,
    status: &str,
    reason: Reason,
    actor: &Actor,
) -> Result<bool, Error> {
    let cmd = TransitionCommand::new("session", &session.id, status, reason, actor.clone())
        .expecting(session.status.clone())
        .with_version(session.version)
        .with_patch("ended_at", serde_json::Value::from(lifecycle_now_micros()));
    let outcome = recorder
        .transition(&cmd)
        .map_err(Error::store("ending a session"))?;
    Ok(outcome.result == OutcomeKind::Applied && outcome.transition_id.is_some())
}

fn lifecycle_now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// Resolves a session id or a unique prefix of one. An exact id wins; a
/// prefix matching several ids is refused, naming some of them.
pub fn resolve_session<R: SessionRecorder>(recorder: &R, prefix: &str) -> Result<String, Error> {
    let exact = recorder
        .session(prefix)
        .map_err(Error::store("reading a session"))?
        .is_some();
    let ids = if exact {
        Vec::new()
    } else {
        recorder
            .session_ids_with_prefix(prefix, ID_CANDIDATES)
            .map_err(Error::store("looking up a session prefix"))?
    };
    match IdMatch::from_candidates(exact, prefix, ids) {
        IdMatch::One(id) => Ok(id),
        IdMatch::Several(candidates) => Err(Error::AmbiguousSession {
            prefix: prefix.to_owned(),
            candidates,
        }),
        _ => Err(Error::NoSuchSession {
            prefix: prefix.to_owned(),
        }),
    }
}

/// What `kill` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KillReport {
    /// The resolved session id.
    pub id: String,
    /// The owner's state when the kill ran.
    pub owner: OwnerState,
    /// The signals sent to the leg's group, in order, with their outcome.
    pub signals: Vec<(String, String)>,
    /// The status recorded.
    pub status: String,
}

/// Ends a live session's leg from another process: the session moves to
/// `cancelled` (`run.cancelled.manual_kill`) through the guarded transition
/// first, so the owner's own end then only adds usage; then the leg's group
/// gets SIGTERM, up to `grace` to leave, and SIGKILL, each only while a live
/// read of the leader gives the recorded start time back. The owner, still
/// alive, ends whatever is left of the group under its own evidence.
///
/// A session owned by another host is refused ([`Error::OtherHost`]): its
/// leg's pid names nothing here, and ending the record would leave the leg
/// running there.
pub fn kill_session<R: SessionRecorder>(
    recorder: &R,
    procs: &Processes<'_>,
    prefix: &str,
    grace: Duration,
    actor: &Actor,
) -> Result<KillReport, Error> {
    let id = resolve_session(recorder, prefix)?;
    let session = recorder
        .session(&id)
        .map_err(Error::store("reading a session"))?
        .ok_or_else(|| Error::NoSuchSession {
            prefix: prefix.to_owned(),
        })?;
    // Fails closed: an unreadable policy counts as terminal (no kill).
    let terminal = match lifecycle_core::default_registry().get("session") {
        Ok(policy) => policy.is_terminal(&session.status),
        Err(_) => true,
    };
    if terminal {
        return Err(Error::AlreadyEnded {
            id,
            status: session.status,
        });
    }
    let here = Here::detect(recorder.shared_by_hosts());
    let owner = owner_state(session.owner().as_ref(), procs.table, &here);
    if owner == OwnerState::OtherHost {
        return Err(Error::OtherHost {
            id,
            host: session.owner().and_then(|o| o.host_id).unwrap_or_default(),
        });
    }
    // A record from another boot names no process here.
    let same_boot = owner != OwnerState::Gone(GoneBecause::Rebooted);
    // A leg whose host is not known to be this one is never signalled.
    let record = session
        .leg()
        .filter(|_| owner != OwnerState::HostUnknown)
        .and_then(|l| spawned(&l, same_boot));
    if record.is_none() && owner == OwnerState::Alive {
        return Err(Error::NoLegYet { id });
    }
    let ended = end_session(
        recorder,
        &session,
        "cancelled",
        Reason::new(Cancellation::ManualKill.reason_code()).with_summary(format!(
            "ended by {}:{}",
            actor.kind.as_str(),
            actor.id
        )),
        actor,
    )?;
    if !ended {
        let now = recorder
            .session(&id)
            .map_err(Error::store("reading a session"))?
            .map_or_else(|| "gone".to_owned(), |s| s.status);
        return Err(Error::AlreadyEnded { id, status: now });
    }
    let mut signals = Vec::new();
    if let Some(record) = record {
        let first = if owner == OwnerState::Alive {
            GroupSignal::Term
        } else {
            GroupSignal::Kill
        };
        let outcome = signal_recorded_group(procs.table, procs.signaller, &record, first);
        signals.push((format!("{first:?}"), describe(&outcome)));
        if first == GroupSignal::Term && outcome.sent() {
            let deadline = Instant::now() + grace;
            let leader_alive = || {
                procs.table.start_time(record.pid) == record.create_time
                    && record.create_time.is_some()
            };
            while leader_alive() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if leader_alive() {
                let outcome =
                    signal_recorded_group(procs.table, procs.signaller, &record, GroupSignal::Kill);
                signals.push(("Kill".to_owned(), describe(&outcome)));
            }
        }
    }
    Ok(KillReport {
        id,
        owner,
        signals,
        status: "cancelled".into(),
    })
}
