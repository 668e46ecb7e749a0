//! The scheduler on PostgreSQL (`LIONRT_TEST_PG`), each test in a schema of
//! its own: a due schedule fires as a run through the runner, a fire that
//! overlaps the running one is skipped, missed fires are detected once per
//! start, `apply` reconciles in one transaction, the advisory tick lock
//! admits one daemon per schema across hosts, and fires racing from two
//! hosts never exceed a schedule's concurrency cap.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use lifecycle_core::{Actor, ActorType};
use scheduler::{
    Error, ManualClock, MissedFire, PgSchedules, ScheduleStore, Scheduler, SchedulerConfig,
    TickReport, parse_set,
};
use state_postgres::{DbUrl, PgConfig, PgEngine, PgStore};

use crate::cap;
use crate::common::{gated_launcher, interval, runtime};

const T0: i64 = 1_800_000_000_000_000;

/// One test's schema on the server; dropped at the end.
struct PgEnv {
    url: String,
    schema: String,
    store: PgStore,
    dir: tempfile::TempDir,
}

impl PgEnv {
    /// `None` (after saying why) when no server is configured.
    fn new(tag: &str) -> Option<Self> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let Ok(url) = std::env::var("LIONRT_TEST_PG") else {
            #[allow(clippy::print_stderr, reason = "a skipped test says why")]
            {
                eprintln!(
                    "skipped: LIONRT_TEST_PG is unset (start a server with `eval \"$(.ci/pg-cluster start)\"`)"
                );
            }
            return None;
        };
        let schema = format!(
            "sched_{tag}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        Some(Self {
            store: Self::open(&url, &schema),
            url,
            schema,
            dir: tempfile::tempdir().expect("tempdir"),
        })
    }

    /// Another engine on the same schema: another host.
    fn open(url: &str, schema: &str) -> PgStore {
        let engine = PgEngine::open(&PgConfig::new(DbUrl::new(url)).with_schema(schema))
            .expect("open the schema");
        PgStore::new(engine)
    }

    fn schedules(&self) -> Arc<PgSchedules> {
        Arc::new(PgSchedules::new(
            self.store.clone(),
            Actor::new(ActorType::Operator, "test"),
        ))
    }

    fn gate(&self) -> std::path::PathBuf {
        self.dir.path().join("gate")
    }
}

impl Drop for PgEnv {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}

/// (status, reason) of a schedule's runs, oldest first.
fn statuses(s: &dyn ScheduleStore, name: &str) -> Vec<(String, String)> {
    let mut runs: Vec<(String, String)> = s
        .runs(Some(name), 100)
        .expect("runs")
        .into_iter()
        .map(|r| (r.status, r.reason.unwrap_or_default()))
        .collect();
    runs.reverse();
    runs
}

#[test]
fn a_daemon_on_postgres_fires_a_due_schedule_and_skips_an_overlapping_fire() {
    // contract: LC-042
    let Some(env) = PgEnv::new("fire") else {
        return;
    };
    let schedules = env.schedules();
    let clock = Arc::new(ManualClock::new(T0));
    schedules
        .create(&interval("poll", 60, env.dir.path()), T0)
        .expect("create");
    let launcher = gated_launcher(env.store.clone(), &env.gate());
    runtime().block_on(async {
        let (mut sched, pre) = Scheduler::start(
            schedules.clone(),
            Arc::clone(&clock),
            launcher,
            SchedulerConfig::default(),
        )
        .expect("start");
        assert!(pre.missed.is_empty() && pre.stale_runs_ended.is_empty());
        assert!(sched.tick().expect("tick").fired.is_empty(), "not due yet");

        clock.advance_secs(60);
        let first = sched.tick().expect("tick");
        assert_eq!(first.fired.len(), 1);
        assert_eq!(
            statuses(&*schedules, "poll"),
            [("running".into(), "schedule.fired.due".into())]
        );

        // The leg waits on its gate: the next fire overlaps it.
        clock.advance_secs(60);
        let second = sched.tick().expect("tick");
        assert!(second.fired.is_empty());
        assert_eq!(second.skipped_overlap.len(), 1);
        assert_eq!(
            statuses(&*schedules, "poll")[1],
            ("skipped".into(), "schedule.skipped.overlap".into())
        );

        std::fs::write(env.gate(), b"").expect("gate");
        sched.wait_idle().await;
        let runs = schedules.runs(Some("poll"), 10).expect("runs");
        let fired = runs.iter().find(|r| r.id == first.fired[0]).expect("run");
        assert_eq!(fired.status, "completed", "the run ended with its leg");
        let session = fired.session_id.as_deref().expect("session");
        let (status, _) = schedules
            .session_status(session)
            .expect("read")
            .expect("the run's session is in PostgreSQL");
        assert_eq!(status, "completed");
    });
}

#[test]
fn missed_fires_on_postgres_are_detected_once_per_start() {
    // contract: LC-043
    let Some(env) = PgEnv::new("missed") else {
        return;
    };
    let schedules = env.schedules();
    schedules
        .create(&interval("fast", 1, env.dir.path()), T0)
        .expect("create");
    let mut late = interval("late", 1, env.dir.path());
    late.missed_fire = MissedFire::RunOnce;
    schedules.create(&late, T0).expect("create");
    // Down for 10 s: T0+1 .. T0+8 were missed; T0+9 and T0+10 are within
    // the 1 s tolerance, a fire rather than a miss.
    let clock = Arc::new(ManualClock::new(T0 + 10_000_000));
    let start = || {
        Scheduler::start(
            schedules.clone(),
            Arc::clone(&clock),
            gated_launcher(env.store.clone(), &env.gate()),
            SchedulerConfig::default(),
        )
        .expect("start")
        .1
    };
    assert_eq!(start().missed, [("fast".to_owned(), 8)]);
    let skipped = schedules
        .runs(Some("fast"), 100)
        .expect("runs")
        .into_iter()
        .filter(|r| r.reason.as_deref() == Some("schedule.skipped.missed_fire"))
        .inspect(|r| assert_eq!(r.detected_at, Some(T0 + 10_000_000)))
        .count();
    assert_eq!(skipped, 8);
    // The run-late schedule misses the same instants but records no skips:
    // it fires once, late, on the next tick instead.
    assert!(
        schedules
            .runs(Some("late"), 100)
            .expect("runs")
            .iter()
            .all(|r| r.reason.as_deref() != Some("schedule.skipped.missed_fire")),
        "a run-late schedule records no missed-fire skips"
    );
    assert!(start().missed.is_empty(), "a second start finds none again");
}

#[test]
fn apply_on_postgres_reconciles_a_set_and_the_verbs_work() {
    let Some(env) = PgEnv::new("apply") else {
        return;
    };
    let schedules = env.schedules();
    let ws = env.dir.path().display().to_string();
    let set = |body: &str| parse_set(&body.replace("WS", &ws)).expect("set");
    let first = set(
        r#"[{"name": "a", "trigger": {"interval": {"seconds": 60}}, "run": {"prompt": "p", "workspace": "WS"}},
            {"name": "b", "trigger": {"cron": {"expr": "0 9 * * *", "tz": "Europe/Berlin"}}, "run": {"prompt": "p", "workspace": "WS"}}]"#,
    );
    let r = schedules.apply(&first, T0).expect("apply");
    assert_eq!(r.created, ["a", "b"]);
    let second = set(
        r#"[{"name": "b", "trigger": {"cron": {"expr": "0 10 * * *", "tz": "Europe/Berlin"}}, "run": {"prompt": "p", "workspace": "WS"}},
            {"name": "c", "trigger": {"interval": {"seconds": 5}}, "run": {"prompt": "p", "workspace": "WS"}}]"#,
    );
    let r = schedules.apply(&second, T0 + 1).expect("apply");
    assert_eq!(
        (r.created, r.updated, r.deleted),
        (
            vec!["c".to_owned()],
            vec!["b".to_owned()],
            vec!["a".to_owned()]
        )
    );
    let names: Vec<String> = schedules
        .list()
        .expect("list")
        .into_iter()
        .map(|s| s.spec.name)
        .collect();
    assert_eq!(names, ["b", "c"]);
    // 10:00 in Berlin in December is 09:00 UTC.
    let b = schedules.get("b").expect("get").expect("b");
    assert_eq!(
        b.next_fire_at,
        Some(
            chrono::DateTime::parse_from_rfc3339("2027-01-15T09:00:00Z")
                .expect("t")
                .timestamp_micros()
        )
    );
    // An invalid set writes nothing.
    let mut bad = second.clone();
    bad[1].max_concurrent = 0;
    assert!(matches!(
        schedules.apply(&bad, T0 + 2),
        Err(Error::Invalid { .. })
    ));
    assert_eq!(schedules.list().expect("list").len(), 2);

    // The single verbs: a duplicate name is refused, disable/enable/delete.
    let dup = schedules.create(&interval("c", 9, env.dir.path()), T0 + 3);
    assert!(matches!(dup, Err(Error::Exists(_))), "{dup:?}");
    let c = schedules.set_enabled("c", false, T0 + 4).expect("disable");
    assert_eq!(c.status, "disabled");
    assert!(
        schedules
            .due(i64::MAX)
            .expect("due")
            .iter()
            .all(|s| s.spec.name != "c")
    );
    let c = schedules.set_enabled("c", true, T0 + 5).expect("enable");
    assert_eq!(c.next_fire_at, Some(T0 + 5 + 5_000_000));
    schedules.delete("c", T0 + 6).expect("delete");
    assert!(schedules.get("c").expect("get").is_none());
    schedules
        .create(&interval("c", 9, env.dir.path()), T0 + 7)
        .expect("a deleted name is free again");
}

#[test]
fn the_advisory_tick_lock_admits_one_daemon_per_schema_across_hosts() {
    let Some(env) = PgEnv::new("lock") else {
        return;
    };
    // Two hosts: two engines, two pools, one schema.
    let host_a = env.schedules();
    let host_b = PgSchedules::new(
        PgEnv::open(&env.url, &env.schema),
        Actor::new(ActorType::Operator, "b"),
    );
    let held = host_a.tick_lock().expect("the first daemon ticks");
    let second = host_b.tick_lock();
    assert!(
        matches!(second, Err(Error::AdvisoryLocked(_))),
        "{second:?}"
    );
    drop(held);
    host_b.tick_lock().expect("free once the first let go");
}

#[test]
fn two_schedulers_racing_on_one_schema_fire_each_due_instant_once() {
    // Without the tick lock (say, a host whose lock check lags), the
    // compare-and-swap on the due instant still lets one tick win it.
    let Some(env) = PgEnv::new("race") else {
        return;
    };
    let ws = env.dir.path();
    let set: Vec<_> = (0..20)
        .map(|i| interval(&format!("s{i:02}"), 60, ws))
        .collect();
    env.schedules().apply(&set, T0).expect("apply");
    std::fs::write(env.gate(), b"").expect("gate");
    let clock = Arc::new(ManualClock::new(T0 + 60_000_000));
    let host = |store: PgStore| {
        let schedules: Arc<dyn ScheduleStore> = Arc::new(PgSchedules::new(
            store.clone(),
            Actor::new(ActorType::Operator, "host"),
        ));
        (schedules, gated_launcher(store, &env.gate()))
    };
    // Host b: an engine of its own on the same schema.
    let store_b = PgEnv::open(&env.url, &env.schema);
    let (a, la) = host(env.store.clone());
    let (b, lb) = host(store_b.clone());
    let barrier = std::sync::Barrier::new(2);
    let fired: Vec<usize> = std::thread::scope(|s| {
        let run = |schedules: Arc<dyn ScheduleStore>, launcher| {
            let barrier = &barrier;
            let clock = Arc::clone(&clock);
            s.spawn(move || {
                runtime().block_on(async move {
                    let mut sched = Scheduler::attach(schedules, clock, launcher);
                    barrier.wait();
                    let n = sched.tick().expect("tick").fired.len();
                    sched.wait_idle().await;
                    n
                })
            })
        };
        let ha = run(a, la);
        let hb = run(b, lb);
        vec![ha.join().expect("a"), hb.join().expect("b")]
    });
    assert_eq!(fired.iter().sum::<usize>(), 20, "{fired:?}");
    let runs = env.schedules().runs(None, 1000).expect("runs");
    assert_eq!(runs.len(), 20, "one run per schedule");
    assert!(runs.iter().all(|r| r.status == "completed"), "{runs:?}");
    drop(store_b);
}

/// One host's whole life inside `rt`, in a task of its own when `spawned`:
/// definitions changed, a due schedule fired and its run ended, then every
/// handle on the store (schedules, launcher, scheduler) dropped there too.
fn a_host_lives_and_ends_inside(rt: &tokio::runtime::Runtime, spawned: bool) {
    let Some(env) = PgEnv::new("rt") else {
        return;
    };
    std::fs::write(env.gate(), b"").expect("gate");
    // A host of its own: nothing outside the runtime keeps its pool alive.
    let store = PgEnv::open(&env.url, &env.schema);
    let schedules = Arc::new(PgSchedules::new(
        store.clone(),
        Actor::new(ActorType::Operator, "host"),
    ));
    let launcher = gated_launcher(store, &env.gate());
    let spec = interval("poll", 60, env.dir.path());
    let life = async move {
        let clock = Arc::new(ManualClock::new(T0));
        schedules.create(&spec, T0).expect("create");
        assert_eq!(schedules.list().expect("list").len(), 1);
        let (mut sched, _) = Scheduler::start(
            schedules.clone(),
            Arc::clone(&clock),
            launcher,
            SchedulerConfig::default(),
        )
        .expect("start");
        clock.advance_secs(60);
        let fired = sched.tick().expect("tick").fired;
        assert_eq!(fired.len(), 1);
        sched.wait_idle().await;
        let runs = schedules.runs(Some("poll"), 10).expect("runs");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].status, "completed", "{runs:?}");
        drop(sched);
        drop(schedules);
    };
    if spawned {
        rt.block_on(async { tokio::spawn(life).await.expect("the host's task") });
    } else {
        rt.block_on(life);
    }
    // The host's sessions are gone and the schema is usable by the next.
    let runs = env.schedules().runs(None, 10).expect("runs");
    assert_eq!(runs.len(), 1);
}

#[test]
fn a_host_on_a_current_thread_runtime_calls_and_drops_the_store_there() {
    let rt = runtime();
    a_host_lives_and_ends_inside(&rt, false);
    a_host_lives_and_ends_inside(&rt, true);
}

#[test]
fn a_host_on_a_multi_thread_runtime_calls_and_drops_the_store_there() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    a_host_lives_and_ends_inside(&rt, false);
    a_host_lives_and_ends_inside(&rt, true);
}

#[test]
fn hosts_triggering_while_a_daemon_ticks_on_postgres_never_exceed_max_concurrent() {
    // contract: LC-042
    let Some(env) = PgEnv::new("cap") else {
        return;
    };
    let cap = 2;
    let mut spec = interval(cap::NAME, 60, env.dir.path());
    spec.max_concurrent = cap;
    env.schedules().create(&spec, T0).expect("create");
    // Two hosts (two engines, two pools) on one schema; a daemon on the
    // first, triggering threads on both.
    let store_b = PgEnv::open(&env.url, &env.schema);
    let hosts = [env.store.clone(), store_b.clone()];
    let triggering = 6;
    let go = std::sync::atomic::AtomicBool::new(false);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let (reports_tx, reports_rx) = std::sync::mpsc::channel::<TickReport>();
    let clock = Arc::new(ManualClock::new(cap::DUE));
    let reports = std::thread::scope(|scope| {
        let gate = cap::OpenOnDrop(env.gate());
        for i in 0..=triggering {
            let tick = i == 0;
            let store = hosts[i % 2].clone();
            let (go, ready_tx, reports_tx, clock, gate) = (
                &go,
                ready_tx.clone(),
                reports_tx.clone(),
                Arc::clone(&clock),
                env.gate(),
            );
            scope.spawn(move || {
                let schedules: Arc<dyn ScheduleStore> = Arc::new(PgSchedules::new(
                    store.clone(),
                    Actor::new(ActorType::Operator, "racer"),
                ));
                let launcher = gated_launcher(store, &gate);
                runtime().block_on(async move {
                    let mut sched = cap::racer(schedules, clock, launcher, tick);
                    let report = cap::race(&mut sched, tick, || {
                        ready_tx.send(()).expect("ready");
                        cap::wait_until("go", || go.load(Ordering::SeqCst));
                    })
                    .await;
                    reports_tx.send(report).expect("report");
                    sched.wait_idle().await;
                });
            });
        }
        for _ in 0..=triggering {
            ready_rx
                .recv_timeout(cap::DEADLINE)
                .expect("a racer got ready");
        }
        go.store(true, Ordering::SeqCst);
        let reports: Vec<TickReport> = (0..=triggering)
            .map(|_| {
                reports_rx
                    .recv_timeout(cap::DEADLINE)
                    .expect("a racer's report")
            })
            .collect();
        cap::check_cap(
            &*env.schedules(),
            cap,
            &reports,
            1 + triggering * cap::TRIGGERS,
        );
        // A claimed run's history is the lifecycle store's.
        let history = env
            .store
            .history("schedule_run", cap::first_fire(&reports))
            .expect("history");
        cap::check_claimed_history(&history);
        drop(gate);
        reports
    });
    cap::check_ended(&*env.schedules(), &reports);
    drop(store_b);
}

#[test]
fn a_daemon_starting_on_postgres_leaves_a_live_triggers_run_and_the_cap_holds() {
    // contract: LC-042
    let Some(env) = PgEnv::new("held") else {
        return;
    };
    let schedules = env.schedules();
    let s = schedules
        .create(&interval("held", 60, env.dir.path()), T0)
        .expect("create");
    runtime().block_on(async {
        // A trigger (this process, alive) holds the one slot; its launcher
        // records no session while the gate is shut.
        let mut trigger = Scheduler::attach(
            schedules.clone(),
            Arc::new(ManualClock::new(T0 + 1)),
            Arc::new(cap::Sessionless(env.gate())),
        );
        let held = trigger.trigger("held").expect("trigger").fired;
        assert_eq!(held.len(), 1);
        let claims = schedules.running_claims().expect("claims");
        assert_eq!(claims.len(), 1);
        assert!(
            claims[0]
                .claimed_by
                .as_deref()
                .is_some_and(|c| c.contains("\"trigger\"")),
            "{claims:?}"
        );
        let (mut daemon, pre) = Scheduler::start(
            schedules.clone(),
            Arc::new(ManualClock::new(cap::DUE)),
            gated_launcher(env.store.clone(), &env.gate()),
            SchedulerConfig::default(),
        )
        .expect("start");
        assert!(pre.stale_runs_ended.is_empty(), "{pre:?}");
        let tick = daemon.tick().expect("tick");
        assert!(tick.fired.is_empty(), "{tick:?}");
        assert_eq!(tick.skipped_overlap.len(), 1, "{tick:?}");
        // The refused fire is recorded: a `skipped` row for overlap.
        cap::check_recorded_skips(&*schedules, "held", &tick, 1);
        assert_eq!(schedules.running_count(&s.id).expect("count"), 1);
        std::fs::write(env.gate(), b"").expect("gate");
        trigger.wait_idle().await;
        daemon.shutdown().await;
        assert_eq!(statuses(&*schedules, "held")[0].0, "completed");
    });
}
