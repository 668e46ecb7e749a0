//! The tick loop with an injected clock: fires, overlap skips, missed-fire
//! detection once per start, stalls coalesce, graceful shutdown.

#[allow(unused_imports, reason = "trait methods")]
use scheduler::ScheduleStore;
use std::sync::Arc;

use scheduler::{ManualClock, MissedFire, Scheduler, SchedulerConfig};

use crate::common::{Env, interval, runs, runtime};

const T0: i64 = 1_800_000_000_000_000;

fn missed_rows(env: &Env) -> Vec<(i64, i64)> {
    let conn = env.conn();
    let mut stmt = conn
        .prepare(
            "SELECT due_at, detected_at FROM schedule_runs
             WHERE status = 'skipped' AND status_reason_code = 'schedule.skipped.missed_fire'
             ORDER BY due_at",
        )
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[test]
fn fires_when_due_and_skips_a_fire_that_overlaps_the_running_one() {
    // contract: LC-042
    let env = Env::new();
    let schedules = env.schedules();
    let clock = Arc::new(ManualClock::new(T0));
    let s = schedules
        .create(&interval("poll", 60, env.dir.path()), T0)
        .expect("create");
    runtime().block_on(async {
        let (mut sched, pre) = Scheduler::start(
            schedules.clone(),
            Arc::clone(&clock),
            env.launcher(),
            SchedulerConfig::default(),
        )
        .expect("start");
        assert!(pre.missed.is_empty() && pre.stale_runs_ended.is_empty());
        assert!(sched.tick().expect("tick").fired.is_empty(), "not due yet");

        clock.advance_secs(60);
        let first = sched.tick().expect("tick");
        assert_eq!(first.fired.len(), 1);
        assert_eq!(runs(&env, &s.id), [("running".into(), "schedule.fired.due".into())]);

        // The leg still waits on its gate: the next fire overlaps it.
        clock.advance_secs(60);
        let second = sched.tick().expect("tick");
        assert!(second.fired.is_empty());
        assert_eq!(second.skipped_overlap.len(), 1);
        assert_eq!(
            runs(&env, &s.id)[1],
            ("skipped".into(), "schedule.skipped.overlap".into())
        );

        env.open_gate();
        sched.wait_idle().await;
        assert_eq!(runs(&env, &s.id)[0].0, "completed", "the run ended with its leg");
        let session: String = env
            .conn()
            .query_row(
                "SELECT s.status FROM sessions s JOIN schedule_runs r ON r.session_id = s.id WHERE r.id = ?1",
                [&first.fired[0]],
                |r| r.get(0),
            )
            .expect("session of the run");
        assert_eq!(session, "completed");

        // Nothing runs any more: the next fire starts a run.
        clock.advance_secs(60);
        assert_eq!(sched.tick().expect("tick").fired.len(), 1);
        sched.wait_idle().await;
    });
}

#[test]
fn a_concurrency_cap_of_two_allows_two_running_runs_before_skipping() {
    // contract: LC-042
    let env = Env::new();
    let schedules = env.schedules();
    let clock = Arc::new(ManualClock::new(T0));
    let mut spec = interval("wide", 10, env.dir.path());
    spec.max_concurrent = 2;
    let s = schedules.create(&spec, T0).expect("create");
    runtime().block_on(async {
        let (mut sched, _) = Scheduler::start(
            schedules.clone(),
            Arc::clone(&clock),
            env.launcher(),
            SchedulerConfig::default(),
        )
        .expect("start");
        let mut fired = 0;
        let mut skipped = 0;
        for _ in 0..3 {
            clock.advance_secs(10);
            let r = sched.tick().expect("tick");
            fired += r.fired.len();
            skipped += r.skipped_overlap.len();
        }
        assert_eq!((fired, skipped), (2, 1));
        assert_eq!(schedules.running_count(&s.id).expect("count"), 2);
        env.open_gate();
        sched.wait_idle().await;
        assert_eq!(schedules.running_count(&s.id).expect("count"), 0);
    });
}

#[test]
fn a_slot_within_the_tolerance_after_missed_ones_is_fired_not_lost() {
    // contract: LC-043
    let env = Env::new();
    env.open_gate();
    let schedules = env.schedules();
    let s = schedules
        .create(&interval("tol", 10, env.dir.path()), T0)
        .expect("create");
    // Down from T0 to T0+30.5 s: T0+10 and T0+20 are missed, T0+30 is
    // within the tolerance (1 s): the first tick's fire.
    let clock = Arc::new(ManualClock::new(T0 + 30_500_000));
    runtime().block_on(async {
        let (mut sched, pre) = Scheduler::start(
            schedules.clone(),
            Arc::clone(&clock),
            env.launcher(),
            SchedulerConfig::default(),
        )
        .expect("start");
        assert_eq!(pre.missed, [("tol".to_owned(), 2)]);
        let t = sched.tick().expect("tick");
        assert_eq!(t.fired.len(), 1, "{t:?}");
        sched.wait_idle().await;
        let rows = schedules.runs(Some("tol"), 10).expect("runs");
        let mut slots: Vec<(i64, String)> = rows
            .iter()
            .map(|r| (r.due_at.expect("due"), r.reason.clone().unwrap_or_default()))
            .collect();
        slots.sort();
        assert_eq!(
            slots,
            [
                (T0 + 10_000_000, "schedule.skipped.missed_fire".to_owned()),
                (T0 + 20_000_000, "schedule.skipped.missed_fire".to_owned()),
                (T0 + 30_000_000, "run.completed.ok".to_owned()),
            ]
        );
        let stored = schedules.get("tol").expect("get").expect("schedule");
        assert_eq!(stored.id, s.id);
        assert_eq!(stored.next_fire_at, Some(T0 + 40_000_000));
        sched.shutdown().await;
    });
}

#[test]
fn missed_fires_are_detected_once_at_start_stamped_at_detection() {
    // contract: LC-043
    // contract: LC-044
    // contract: LC-045
    let env = Env::new();
    env.open_gate();
    let schedules = env.schedules();
    let clock = Arc::new(ManualClock::new(T0));
    let skip = schedules
        .create(&interval("skip", 60, env.dir.path()), T0)
        .expect("create");
    let mut late = interval("late", 60, env.dir.path());
    late.missed_fire = MissedFire::RunOnce;
    let late = schedules.create(&late, T0).expect("create");

    // The scheduler was down from T0 to T0+330 s: due instants T0+60 ..
    // T0+300 (5 of each) passed.
    clock.advance_secs(330);
    let restart = scheduler::Clock::now(&*clock);
    runtime().block_on(async {
        let (mut sched, pre) = Scheduler::start(
            schedules.clone(),
            Arc::clone(&clock),
            env.launcher(),
            SchedulerConfig::default(),
        )
        .expect("start");
        assert_eq!(pre.missed, [("skip".to_owned(), 5)]);
        let missed = missed_rows(&env);
        let dues: Vec<i64> = missed.iter().map(|m| m.0).collect();
        assert_eq!(
            dues,
            (1..=5).map(|k| T0 + k * 60_000_000).collect::<Vec<_>>()
        );
        // LC-045: stamped with the detection time, not the due instant.
        assert!(missed.iter().all(|m| m.1 == restart && m.0 < restart));
        // LC-043: only the skip schedule; the run-late one fires once, late.
        assert!(runs(&env, &late.id).is_empty());
        let t = sched.tick().expect("tick");
        assert_eq!(t.fired.len(), 1, "only the run-late schedule is due now");
        assert_eq!(runs(&env, &late.id).len(), 1);
        assert_eq!(
            runs(&env, &skip.id).len(),
            5,
            "the skip schedule waits for T0+360"
        );
        sched.wait_idle().await;

        // LC-044: a stall of a running scheduler (10 minutes without a
        // tick) produces no missed-fire rows: the fires coalesce into one.
        clock.advance_secs(600);
        let t = sched.tick().expect("tick");
        assert_eq!(t.fired.len(), 2, "one fire per schedule after the stall");
        sched.wait_idle().await;
        assert_eq!(missed_rows(&env).len(), 5, "no rows for the stall");
        sched.shutdown().await;
    });

    // A second start detects only what was missed since (once per start).
    clock.advance_secs(125);
    runtime().block_on(async {
        let (sched, pre) = Scheduler::start(
            schedules.clone(),
            Arc::clone(&clock),
            env.launcher(),
            SchedulerConfig::default(),
        )
        .expect("start");
        assert_eq!(pre.missed, [("skip".to_owned(), 2)]);
        assert_eq!(missed_rows(&env).len(), 7);
        sched.shutdown().await;
    });
}

#[test]
fn shutdown_cancels_running_legs_and_records_their_sessions_cancelled() {
    let env = Env::new();
    let schedules = env.schedules();
    let clock = Arc::new(ManualClock::new(T0));
    let s = schedules
        .create(&interval("long", 60, env.dir.path()), T0)
        .expect("create");
    runtime().block_on(async {
        let (mut sched, _) = Scheduler::start(
            schedules.clone(),
            Arc::clone(&clock),
            env.launcher(),
            SchedulerConfig::default(),
        )
        .expect("start");
        clock.advance_secs(60);
        let fired = sched.tick().expect("tick").fired;
        assert_eq!(fired.len(), 1);
        // Let the leg spawn before shutting down (its gate never opens).
        for _ in 0..200 {
            let spawned: Option<i64> = env
                .conn()
                .query_row(
                    "SELECT s.leg_pid FROM sessions s JOIN schedule_runs r ON r.session_id = s.id WHERE r.id = ?1",
                    [&fired[0]],
                    |r| r.get(0),
                )
                .unwrap_or(None);
            if spawned.is_some() {
                break;
            }
            tokio::task::yield_now().await;
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        sched.shutdown().await;
    });
    assert_eq!(runs(&env, &s.id)[0].0, "cancelled");
    let status: String = env
        .conn()
        .query_row(
            "SELECT s.status FROM sessions s JOIN schedule_runs r ON r.session_id = s.id WHERE r.schedule_id = ?1",
            [&s.id],
            |r| r.get(0),
        )
        .expect("session");
    assert_eq!(status, "cancelled");
}

#[test]
fn a_second_lock_on_the_same_database_is_refused_until_the_first_is_dropped() {
    let env = Env::new();
    let db = env.dir.path().join("state.db");
    let first = scheduler::TickLock::acquire(&db).expect("first");
    let second = scheduler::TickLock::acquire(&db);
    assert!(
        matches!(second, Err(scheduler::Error::Locked(_))),
        "{second:?}"
    );
    drop(first);
    scheduler::TickLock::acquire(&db).expect("free again");
}

struct Counting {
    name: &'static str,
    calls: Arc<std::sync::atomic::AtomicUsize>,
    fail: bool,
}

impl scheduler::TickHook for Counting {
    fn name(&self) -> &str {
        self.name
    }

    fn tick(&mut self, _now: i64) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.fail {
            return Err("scan refused".into());
        }
        Ok(())
    }
}

#[test]
fn every_tick_drives_every_hook_and_a_failing_hook_does_not_stop_the_tick() {
    let env = Env::new();
    env.open_gate();
    let schedules = env.schedules();
    let clock = Arc::new(ManualClock::new(T0));
    schedules
        .create(&interval("poll", 60, env.dir.path()), T0)
        .expect("create");
    let outbox = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mirror = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    runtime().block_on(async {
        let (mut sched, _) = Scheduler::start(
            schedules.clone(),
            Arc::clone(&clock),
            env.launcher(),
            SchedulerConfig::default(),
        )
        .expect("start");
        sched.add_hook(Box::new(Counting {
            name: "outbox",
            calls: Arc::clone(&outbox),
            fail: true,
        }));
        sched.add_hook(Box::new(Counting {
            name: "mirror",
            calls: Arc::clone(&mirror),
            fail: false,
        }));
        for _ in 0..3 {
            clock.advance_secs(60);
            let r = sched.tick().expect("tick");
            assert_eq!(r.fired.len(), 1, "the schedule still fires");
            assert!(r.hooks_busy.is_empty(), "{r:?}");
            // The hooks run on threads of their own; their errors come back
            // when they end, once.
            assert_eq!(sched.wait_hooks().await, ["outbox: scan refused"]);
            assert!(sched.wait_hooks().await.is_empty());
            sched.wait_idle().await;
        }
    });
    assert_eq!(outbox.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(mirror.load(std::sync::atomic::Ordering::SeqCst), 3);
}

#[test]
fn missed_fires_beyond_the_row_cap_are_counted_on_the_last_row() {
    // contract: LC-043
    let env = Env::new();
    let schedules = env.schedules();
    let clock = Arc::new(ManualClock::new(T0));
    schedules
        .create(&interval("fast", 1, env.dir.path()), T0)
        .expect("create");
    // Down for 1,000 s: due instants T0+1 .. T0+998 were missed; those at
    // T0+999 and T0+1000 are within the 1 s tolerance: a fire, not a miss.
    clock.advance_secs(1000);
    let config = SchedulerConfig {
        missed_rows_cap: 10,
        ..SchedulerConfig::default()
    };
    let (_sched, pre) = Scheduler::start(
        schedules.clone(),
        Arc::clone(&clock),
        env.launcher(),
        config,
    )
    .expect("start");
    assert_eq!(pre.missed, [("fast".to_owned(), 998)]);
    assert_eq!(missed_rows(&env).len(), 10);
    let meta: String = env
        .conn()
        .query_row(
            "SELECT status_reason_json FROM schedule_runs ORDER BY due_at DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .expect("row");
    let meta: serde_json::Value = serde_json::from_str(&meta).expect("json");
    assert_eq!(meta["metadata"]["more"], 988, "{meta}");
    assert_eq!(meta["metadata"]["more_is_lower_bound"], false, "{meta}");
}

/// A hook that blocks until released, telling when it started.
struct Slow {
    started: std::sync::mpsc::Sender<i64>,
    release: std::sync::mpsc::Receiver<()>,
}

impl scheduler::TickHook for Slow {
    fn name(&self) -> &str {
        "slow"
    }

    fn tick(&mut self, now: i64) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let _ = self.started.send(now);
        // Bounded, so a tick that ran hooks inline would fail below rather
        // than hang.
        self.release
            .recv_timeout(std::time::Duration::from_secs(120))
            .map_err(|e| format!("never released: {e}"))?;
        Ok(())
    }
}

#[test]
fn a_slow_hook_does_not_hold_up_the_next_tick() {
    let env = Env::new();
    let schedules = env.schedules();
    let clock = Arc::new(ManualClock::new(T0));
    let mut spec = interval("poll", 60, env.dir.path());
    spec.max_concurrent = 5;
    let s = schedules.create(&spec, T0).expect("create");
    let (started_tx, started) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel();
    runtime().block_on(async {
        let (mut sched, _) = Scheduler::start(
            schedules.clone(),
            Arc::clone(&clock),
            env.launcher(),
            SchedulerConfig::default(),
        )
        .expect("start");
        sched.add_hook(Box::new(Slow {
            started: started_tx,
            release: release_rx,
        }));
        clock.advance_secs(60);
        let first = sched.tick().expect("tick");
        assert_eq!(first.fired.len(), 1);
        let t1 = started
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the hook started");
        assert_eq!(t1, T0 + 60_000_000);

        // The hook still blocks: the next tick fires on time, reports the
        // hook busy and does not start it a second time.
        clock.advance_secs(60);
        let second = sched.tick().expect("tick");
        assert_eq!(second.fired.len(), 1, "{second:?}");
        assert_eq!(second.hooks_busy, ["slow"]);
        assert!(started.try_recv().is_err(), "not started again while busy");
        assert_eq!(runs(&env, &s.id).len(), 2);

        release.send(()).expect("release");
        assert!(sched.wait_hooks().await.is_empty());
        clock.advance_secs(60);
        let third = sched.tick().expect("tick");
        assert!(third.hooks_busy.is_empty(), "{third:?}");
        assert_eq!(
            started
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("started again"),
            T0 + 180_000_000
        );
        release.send(()).expect("release");
        assert!(sched.wait_hooks().await.is_empty());
        env.open_gate();
        sched.wait_idle().await;
    });
}
