//! Who claimed a run: the scheduler's role (a ticking daemon, or a one-off
//! trigger such as `lionrt schedule trigger`) and its process, written on
//! the run's `leased_by`. A starting daemon's preamble ends the runs a dead
//! daemon left (it holds the tick lock, so the previous daemon is gone),
//! but a trigger is no daemon: its run is left alone while the trigger's
//! process is not provably gone, even before it has recorded its session.

use cli_supervisor::ProcTable;
use lifecycle_core::OwnerRecord;
use runner::{Here, OwnerState};
use serde::{Deserialize, Serialize};

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

/// Whether `claimed_by` names a trigger whose process is not provably gone
/// (alive, on another host, or unknowable): its run is its own to end. A
/// daemon's claim, a missing or unreadable one are not.
pub(crate) fn live_trigger(claimed_by: Option<&str>) -> bool {
    let Some(claimer) = claimed_by.and_then(|t| serde_json::from_str::<Claimer>(t).ok()) else {
        return false;
    };
    claimer.role == Role::Trigger
        && !matches!(
            runner::owner_state(Some(&claimer.owner), &ProcTable, &Here::detect(true)),
            OwnerState::Gone(_)
        )
}
