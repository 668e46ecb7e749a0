//! The ticking daemon's re-check: a run another process started whose
//! session has ended with no one left to end the run (a trigger that died
//! on another host, its session ended by that host's sweep) is ended
//! while the daemon runs, not only at its next start; its own runs, a run
//! whose session still runs and one whose session is not recorded are
//! left alone.

use std::sync::Arc;

use lifecycle_core::{Actor, ActorType, SessionEnd, SessionStart};
use scheduler::{
    Claim, Clock, ManualClock, RunStart, ScheduleRun, ScheduleStore, Scheduler, SchedulerConfig,
};
use state_sqlite::Store;

use crate::cap::Sessionless;
use crate::common::{Env, interval, runtime};

const T0: i64 = 1_800_000_000_000_000;
const MINUTE: i64 = 60_000_000;

/// A trigger's claim on another host (pid, start time and boot id mean
/// nothing here).
const FAR_TRIGGER: &str = r#"{"role":"trigger","owner":{"pid":4242,"start_time":7,"boot_id":"b0","host_id":"far-away-host"}}"#;

fn run(schedules: &dyn ScheduleStore, id: &str) -> ScheduleRun {
    schedules
        .runs(Some("watched"), 100)
        .expect("runs")
        .into_iter()
        .find(|r| r.id == id)
        .expect("the run")
}

#[test]
fn a_ticking_daemon_ends_a_run_whose_session_ended_elsewhere() {
    let env = Env::new();
    let schedules = env.schedules();
    // Hourly: no fire is due during the test but the daemon's own.
    let mut spec = interval("watched", 3600, env.dir.path());
    spec.max_concurrent = 8;
    let s = schedules.create(&spec, T0).expect("create");
    let sessions = Store::new(env.engine.clone());
    let executor = Actor::new(ActorType::Executor, "far");
    let claim = |run_id: &str, session: &str| {
        let start = RunStart {
            run_id: run_id.into(),
            schedule_id: s.id.clone(),
            max_concurrent: 8,
            due_at: T0,
            fired_at: T0,
            session_id: session.into(),
            claimed_by: Some(FAR_TRIGGER.into()),
        };
        let claimed = schedules
            .claim_run(&start, &Actor::new(ActorType::Scheduler, "far"))
            .expect("claim");
        assert_eq!(claimed, Claim::Started);
    };
    let start_session = |id: &str| {
        sessions
            .persist_session_start(&SessionStart::new(id, "run.started.ok"), &executor)
            .expect("session start");
    };
    let end_session = |id: &str, at: i64| {
        sessions
            .persist_session_end(
                &SessionEnd::new(id, "failed", "session.orphaned.no_process", at),
                &executor,
            )
            .expect("session end");
    };
    let gate = env.dir.path().join("own-gate");
    let clock = Arc::new(ManualClock::new(T0 + 1));
    runtime().block_on(async {
        let (mut daemon, pre) = Scheduler::start(
            schedules.clone(),
            Arc::clone(&clock),
            Arc::new(Sessionless(gate.clone())),
            SchedulerConfig::default(),
        )
        .expect("start");
        assert!(pre.stale_runs_ended.is_empty(), "{pre:?}");

        // Started on another host after this daemon's preamble: one whose
        // session will end there, one whose session runs on, one whose
        // session was never recorded.
        claim("far-ended", "far-ended-session");
        start_session("far-ended-session");
        claim("far-live", "far-live-session");
        start_session("far-live-session");
        claim("far-unrecorded", "far-unrecorded-session");
        // A trigger still running on this host (this process) whose
        // session has ended: it ends its run itself.
        let here = serde_json::json!({
            "role": "trigger",
            "owner": runner::current_owner(&cli_supervisor::ProcTable),
        })
        .to_string();
        let near = RunStart {
            run_id: "near-live".into(),
            schedule_id: s.id.clone(),
            max_concurrent: 8,
            due_at: T0,
            fired_at: T0,
            session_id: "near-live-session".into(),
            claimed_by: Some(here),
        };
        assert_eq!(
            schedules
                .claim_run(&near, &Actor::new(ActorType::Scheduler, "near"))
                .expect("claim"),
            Claim::Started
        );
        start_session("near-live-session");
        end_session("near-live-session", T0 + 2);
        // The daemon's own run (its leg waits on a shut gate), whose session
        // row says ended: its task, not the re-check, ends it.
        let fired = daemon.trigger("watched").expect("own fire").fired;
        assert_eq!(fired.len(), 1, "{fired:?}");
        let own = fired[0].clone();
        let own_session = run(&*schedules, &own).session_id.expect("a session id");
        start_session(&own_session);
        end_session(&own_session, T0 + 2);

        // That host's sweep ends the first session.
        end_session("far-ended-session", T0 + 3);
        let before = daemon.tick().expect("tick");
        assert!(
            before.stale_runs_ended.is_empty(),
            "not yet due: {before:?}"
        );

        // First look, a minute on: seen ended, left one more interval (a
        // live trigger would end its own run meanwhile).
        clock.advance_secs(60);
        let first = daemon.tick().expect("tick");
        assert!(first.stale_runs_ended.is_empty(), "{first:?}");
        assert_eq!(run(&*schedules, "far-ended").status, "running");

        // Second look: ended as the preamble ends such a run.
        clock.advance_secs(60);
        let second = daemon.tick().expect("tick");
        assert_eq!(second.stale_runs_ended, ["far-ended"], "{second:?}");
        let ended = run(&*schedules, "far-ended");
        assert_eq!(ended.status, "failed");
        assert_eq!(ended.reason.as_deref(), Some("run.failed.exception"));
        for left in ["far-live", "far-unrecorded", "near-live", own.as_str()] {
            assert_eq!(run(&*schedules, left).status, "running", "{left}");
        }

        // A session that ends between two looks is ended at the second
        // look after it, and only once.
        end_session("far-live-session", T0 + 2 * MINUTE + 5);
        clock.advance_secs(30);
        let between = daemon.tick().expect("tick");
        assert!(between.stale_runs_ended.is_empty(), "{between:?}");
        clock.advance_secs(30);
        assert!(daemon.tick().expect("tick").stale_runs_ended.is_empty());
        clock.advance_secs(60);
        let last = daemon.tick().expect("tick");
        assert_eq!(last.stale_runs_ended, ["far-live"], "{last:?}");
        clock.advance_secs(120);
        assert!(daemon.tick().expect("tick").stale_runs_ended.is_empty());
        assert_eq!(run(&*schedules, "far-unrecorded").status, "running");
        assert_eq!(run(&*schedules, "near-live").status, "running");
        assert_eq!(run(&*schedules, &own).status, "running");

        // A clock stepped back past a whole interval does not stall the
        // re-check: the next tick looks again, the one an interval later
        // ends what it saw.
        claim("far-late", "far-late-session");
        start_session("far-late-session");
        end_session("far-late-session", T0 + 6 * MINUTE);
        clock.set(clock.now() - 10 * MINUTE);
        assert!(daemon.tick().expect("tick").stale_runs_ended.is_empty());
        clock.advance_secs(60);
        let after = daemon.tick().expect("tick");
        assert_eq!(after.stale_runs_ended, ["far-late"], "{after:?}");

        std::fs::write(&gate, b"").expect("open the gate");
        daemon.wait_idle().await;
        assert_eq!(
            run(&*schedules, &own).status,
            "completed",
            "its task ended it"
        );
        daemon.shutdown().await;
    });
}
