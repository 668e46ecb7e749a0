//! Schedules and the tick loop.
//!
//! A schedule ([`ScheduleSpec`]) is a trigger (a cron expression with
//! optional seconds in an explicit zone, an interval, or a one-shot), the
//! runner request it starts, a missed-fire policy and a concurrency cap,
//! stored in the `schedules` table ([`Schedules`]; `apply` reconciles a
//! whole declarative set in one transaction). [`Scheduler::start`] runs the
//! preamble once per start (stale runs ended, missed fires recorded
//! `schedule.skipped.missed_fire`); [`Scheduler::tick`] fires due
//! schedules as runs through a [`Launcher`] ([`RunnerLauncher`]: the runner
//! library), records a fire beyond the cap `schedule.skipped.overlap`, and
//! drives the [`TickHook`]s. The clock is injected ([`Clock`],
//! [`ManualClock`]); [`TickLock`] keeps a second daemon off the database.
//!
//! Features: none. Linux only (through the runner).
#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]

mod claimer;
mod clock;
mod error;
mod launch;
mod lock;
mod model;
mod pg;
mod sqlite;
mod store;
mod tick;

pub use claimer::daemon_claimed_sessions;
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::Error;
pub use launch::{DEFAULT_SCRIPT, Fire, Launcher, RunOutcome, RunnerLauncher};
pub use lock::TickLock;
pub use model::{Micros, MissedFire, PROVIDERS, RunRequest, ScheduleSpec, Trigger};
pub use pg::{PgSchedules, TICK_LOCK};
pub use sqlite::Schedules;
pub use store::{
    ApplyReport, Claim, FireKind, Fired, MissedRow, RunStart, Schedule, ScheduleRun, ScheduleStore,
    keep_unlisted, parse_set, preview_apply,
};
pub use tick::{PreambleReport, Scheduler, SchedulerConfig, TickHook, TickReport, scheduler_actor};
