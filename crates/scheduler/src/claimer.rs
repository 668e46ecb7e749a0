//! Who claimed a run: the scheduler's role (a ticking daemon, or a one-off
//! trigger such as `lionrt schedule trigger`) and its process (pid, start
//! time, boot id and host id), written on the run's `leased_by` as JSON.
//! A starting daemon holds the tick lock, so any daemon that claimed a run
//! still `running` is gone, on whatever host it ran: its start vouches for
//! the sessions of those runs as gone ([`daemon_claimed_sessions`]) and
//! its preamble ends the runs. A trigger is no daemon: its run is never
//! vouched for. Its session is judged by its owner's process on the
//! trigger's own host only (the runner's host-scoped sweep), and its run
//! is left alone while the trigger's process is not provably gone, even
//! before it has recorded its session.

use std::collections::HashSet;

use cli_supervisor::ProcTable;
use lifecycle_core::OwnerRecord;
use runner::{Here, OwnerState};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::store::ScheduleStore;

/// What kind of scheduler claimed a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Role {
    /// A ticking daemon ([`crate::Scheduler::start`]).
    Daemon,
    /// A one-off fire from another process ([`crate::Scheduler::attach`]).
    Trigger,
}

/// The claim as stored.
#[derive(Debug, Serialize, Deserialize)]
struct Claimer {
    role: Role,
    owner: OwnerRecord,
}

/// This process claiming as `role`, as stored on a run.
pub(crate) fn this_process(role: Role) -> String {
    let claimer = Claimer {
        role,
        owner: runner::current_owner(&ProcTable),
    };
    serde_json::to_string(&claimer).unwrap_or_default()
}

/// The stored claim, when it can be read (`None`: no claim was recorded,
/// as on a row from before claims were, or an unreadable one).
fn read(claimed_by: Option<&str>) -> Option<Claimer> {
    claimed_by.and_then(|t| serde_json::from_str::<Claimer>(t).ok())
}

/// The sessions of the `running` runs a daemon claimed, on any host: what
/// a daemon starting with the tick lock held may vouch for as gone in its
/// orphan sweep (`runner::sweep_orphans_known_gone`), since no other
/// daemon ticks while it holds the lock (on PostgreSQL the lock is the
/// schema's, whatever the host), and a leg dies with its supervisor.
///
/// A run claimed by a trigger is never listed: its process may live on
/// another host, where only that host's sweep can judge it (on this host
/// the sweep judges its session by its owner's process, listed or not). A
/// run with no readable claim (from before claims were recorded) is not
/// listed either: whether a daemon or a live trigger on another host
/// started it is unknown, so its session is left to its owner's host.
pub fn daemon_claimed_sessions(schedules: &dyn ScheduleStore) -> Result<HashSet<String>, Error> {
    Ok(schedules
        .running_claims()?
        .into_iter()
        .filter(|run| read(run.claimed_by.as_deref()).is_some_and(|c| c.role == Role::Daemon))
        .filter_map(|run| run.session_id)
        .collect())
}

/// Whether `claimed_by` names a trigger whose process is not provably gone
/// (alive, on another host, or unknowable): its run is its own to end. A
/// daemon's claim, a missing or unreadable one are not.
pub(crate) fn live_trigger(claimed_by: Option<&str>) -> bool {
    let Some(claimer) = read(claimed_by) else {
        return false;
    };
    claimer.role == Role::Trigger
        && !matches!(
            runner::owner_state(Some(&claimer.owner), &ProcTable, &Here::detect(true)),
            OwnerState::Gone(_)
        )
}

/// Whether `claimed_by` names a process on this host (`here`) that is
/// still running (a trigger whose session has ended but which has not yet
/// ended its run): its run is its own to end.
pub(crate) fn alive_here(claimed_by: Option<&str>, here: &Here) -> bool {
    let Some(claimer) = read(claimed_by) else {
        return false;
    };
    runner::owner_state(Some(&claimer.owner), &ProcTable, here) == OwnerState::Alive
}
