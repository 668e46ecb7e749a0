//! The concurrency cap under racing fires: threads and processes triggering
//! one schedule while a daemon's tick fires it too never get more than
//! `max_concurrent` runs `running`; every refused fire is a `skipped` row
//! with `schedule.skipped.overlap`. The legs wait on a gate file, so no run
//! ends during the race and the `running` count at its end is its maximum.
//! And a daemon starting while a trigger's run is in flight leaves that run
//! (and so the slot it takes) to the trigger.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use lifecycle_core::{Actor, ActorType, TransitionRecord};
use scheduler::{
    Clock, Fire, Launcher, ManualClock, RunOutcome, ScheduleRun, ScheduleStore, Scheduler,
    SchedulerConfig, Schedules, TickReport,
};
use state_sqlite::{Engine, EngineConfig, Store};
use tokio::sync::watch;

use crate::common::{Env, gated_launcher, interval, runtime};

const T0: i64 = 1_800_000_000_000_000;
/// The schedule's first due instant (an interval of 60 s from `T0`): every
/// racer's clock shows it, so the daemon's tick fires it too.
pub(crate) const DUE: i64 = T0 + 60_000_000;
pub(crate) const NAME: &str = "capped";

const ROLE: &str = "SCHEDULER_TEST_CAP_ROLE";
const DB: &str = "SCHEDULER_TEST_CAP_DB";
const GATE: &str = "SCHEDULER_TEST_CAP_GATE";
const GO: &str = "SCHEDULER_TEST_CAP_GO";
/// Triggers per triggering racer.
pub(crate) const TRIGGERS: usize = 3;
/// The generous bound on every wait (a failure, never a timing assertion).
pub(crate) const DEADLINE: Duration = Duration::from_secs(180);

/// An engine on `db` that waits long for SQLite's write lock (the racers
/// contend for it on a loaded machine).
fn engine(db: &Path) -> Engine {
    Engine::open(
        db,
        EngineConfig {
            busy_timeout: Duration::from_secs(60),
            ..EngineConfig::default()
        },
    )
    .expect("open the state file")
}

fn sqlite_schedules(engine: &Engine) -> Arc<dyn ScheduleStore> {
    Arc::new(Schedules::new(
        Store::new(engine.clone()),
        Actor::new(ActorType::Operator, "racer"),
    ))
}

/// A racer's scheduler: the daemon (`tick`, its preamble run by
/// `Scheduler::start`) or a trigger (`Scheduler::attach`).
pub(crate) fn racer<C: Clock, L: Launcher>(
    schedules: Arc<dyn ScheduleStore>,
    clock: C,
    launcher: Arc<L>,
    tick: bool,
) -> Scheduler<C, L> {
    if tick {
        Scheduler::start(schedules, clock, launcher, SchedulerConfig::default())
            .expect("start")
            .0
    } else {
        Scheduler::attach(schedules, clock, launcher)
    }
}

/// One racer's fires: the daemon's tick (`tick`) or `TRIGGERS` triggers.
/// The scheduler is ready (the daemon's preamble has run) before `ready`
/// returns; the race starts when it does.
pub(crate) async fn race<C: Clock, L: Launcher>(
    sched: &mut Scheduler<C, L>,
    tick: bool,
    ready: impl FnOnce(),
) -> TickReport {
    ready();
    let mut all = TickReport::default();
    let rounds = if tick { 1 } else { TRIGGERS };
    for _ in 0..rounds {
        let r = if tick {
            sched.tick().expect("tick")
        } else {
            sched.trigger(NAME).expect("trigger")
        };
        all.fired.extend(r.fired);
        all.skipped_overlap.extend(r.skipped_overlap);
    }
    all
}

/// Checks a race on `NAME` whose legs still wait on their gate: exactly
/// `cap` runs are `running` (none can have ended, so this is the most
/// there ever were), they are the fires reported started, and every other
/// fire is a `skipped` row for overlap that names the cap.
pub(crate) fn check_cap(store: &dyn ScheduleStore, cap: u32, reports: &[TickReport], fires: usize) {
    let fired: Vec<&String> = reports.iter().flat_map(|r| &r.fired).collect();
    let skipped: Vec<&String> = reports.iter().flat_map(|r| &r.skipped_overlap).collect();
    let runs = store.runs(Some(NAME), 10_000).expect("runs");
    assert_eq!(runs.len(), fires, "one row per fire: {runs:?}");
    assert_eq!(fired.len() + skipped.len(), fires, "{reports:?}");
    let mut running: Vec<&String> = runs
        .iter()
        .filter(|r| r.status == "running")
        .map(|r| &r.id)
        .collect();
    assert_eq!(
        running.len(),
        cap as usize,
        "max_concurrent = {cap}, yet these runs are running: {running:?}"
    );
    let mut started = fired.clone();
    running.sort();
    started.sort();
    assert_eq!(running, started, "the running runs are the fires started");
    let schedule = store.get(NAME).expect("get").expect("the schedule");
    assert_eq!(store.running_count(&schedule.id).expect("count"), cap);
    for r in runs.iter().filter(|r| r.status != "running") {
        assert!(skipped.contains(&&r.id), "an unreported row: {r:?}");
        check_overlap_row(r, cap);
    }
}

/// Checks that `run` is recorded as a fire refused for overlap: `skipped`
/// with `schedule.skipped.overlap`, its reason's JSON naming the cap `cap`
/// and at least `cap` runs running.
pub(crate) fn check_overlap_row(run: &ScheduleRun, cap: u32) {
    assert_eq!(run.status, "skipped", "{run:?}");
    assert_eq!(
        run.reason.as_deref(),
        Some("schedule.skipped.overlap"),
        "{run:?}"
    );
    let json: serde_json::Value =
        serde_json::from_str(run.reason_json.as_deref().expect("reason json")).expect("json");
    assert_eq!(json["metadata"]["max_concurrent"], cap, "{json}");
    assert!(
        json["metadata"]["running"].as_u64().expect("running") >= u64::from(cap),
        "a fire is refused only at the cap: {json}"
    );
}

/// Reads the fires a tick reported skipped for overlap back from `store`:
/// each is one recorded row of schedule `name`, checked by
/// [`check_overlap_row`]; and exactly those rows of `name` are skipped.
pub(crate) fn check_recorded_skips(
    store: &dyn ScheduleStore,
    name: &str,
    report: &TickReport,
    cap: u32,
) {
    let runs = store.runs(Some(name), 10_000).expect("runs");
    let mut recorded: Vec<&String> = runs
        .iter()
        .filter(|r| r.status == "skipped")
        .map(|r| &r.id)
        .collect();
    let mut reported: Vec<&String> = report.skipped_overlap.iter().collect();
    recorded.sort();
    reported.sort();
    assert_eq!(recorded, reported, "the skipped rows: {runs:?}");
    for id in &report.skipped_overlap {
        let run = runs
            .iter()
            .find(|r| &r.id == id)
            .unwrap_or_else(|| panic!("no row for the skipped fire {id}: {runs:?}"));
        check_overlap_row(run, cap);
    }
}

/// The first fire the racers reported started.
pub(crate) fn first_fire(reports: &[TickReport]) -> &String {
    reports
        .iter()
        .flat_map(|r| &r.fired)
        .next()
        .expect("a fire")
}

/// Checks a claimed run's history while its leg still waits: one row,
/// created `running` with the fire's reason.
pub(crate) fn check_claimed_history(history: &[TransitionRecord]) {
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(
        (
            history[0].from_status.as_deref(),
            history[0].to_status.as_str()
        ),
        (None, "running")
    );
    assert_eq!(history[0].reason_code, "schedule.fired.due");
}

/// After the gate opened and every racer waited for its runs: they all
/// completed, and none is running.
pub(crate) fn check_ended(store: &dyn ScheduleStore, reports: &[TickReport]) {
    let runs = store.runs(Some(NAME), 10_000).expect("runs");
    for id in reports.iter().flat_map(|r| &r.fired) {
        let run = runs.iter().find(|r| &r.id == id).expect("the fired run");
        assert_eq!(run.status, "completed", "{run:?}");
    }
    let schedule = store.get(NAME).expect("get").expect("the schedule");
    assert_eq!(store.running_count(&schedule.id).expect("count"), 0);
}

/// Opens the gate when dropped: on success, and when a failed assertion
/// unwinds, so the racers' legs end and the racers can be joined.
pub(crate) struct OpenOnDrop(pub(crate) PathBuf);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, b"");
    }
}

/// Waits (polling, up to the deadline) until `ready` says go.
pub(crate) fn wait_until(what: &str, ready: impl Fn() -> bool) {
    let since = Instant::now();
    while !ready() {
        assert!(since.elapsed() < DEADLINE, "{what} never happened");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits (polling, up to the deadline counted from `since`) until `child`
/// exits, and checks that it succeeded.
fn wait_exit(child: &mut Child, what: &str, since: Instant) {
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "{what} failed: {status}");
            return;
        }
        assert!(since.elapsed() < DEADLINE, "{what} never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn threads_triggering_while_the_daemon_ticks_never_exceed_max_concurrent() {
    // contract: LC-042
    let env = Env::new();
    let db = env.dir.path().join("state.db");
    let cap = 3;
    let mut spec = interval(NAME, 60, env.dir.path());
    spec.max_concurrent = cap;
    env.schedules().create(&spec, T0).expect("create");
    let triggering = 8;
    let go = AtomicBool::new(false);
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let (reports_tx, reports_rx) = mpsc::channel::<TickReport>();
    let clock = Arc::new(ManualClock::new(DUE));
    let schedules = env.schedules();
    let reports = std::thread::scope(|scope| {
        let gate = OpenOnDrop(env.gate());
        // The daemon (its preamble first) and the triggering threads, each
        // with an engine of its own on the same file.
        for i in 0..=triggering {
            let tick = i == 0;
            let (go, ready_tx, reports_tx, clock, db, gate) = (
                &go,
                ready_tx.clone(),
                reports_tx.clone(),
                Arc::clone(&clock),
                &db,
                env.gate(),
            );
            scope.spawn(move || {
                let engine = engine(db);
                let schedules = sqlite_schedules(&engine);
                let launcher = gated_launcher(Store::new(engine), &gate);
                runtime().block_on(async move {
                    let mut sched = racer(schedules, clock, launcher, tick);
                    let report = race(&mut sched, tick, || {
                        ready_tx.send(()).expect("ready");
                        wait_until("go", || go.load(Ordering::SeqCst));
                    })
                    .await;
                    reports_tx.send(report).expect("report");
                    sched.wait_idle().await;
                });
            });
        }
        for _ in 0..=triggering {
            ready_rx.recv_timeout(DEADLINE).expect("a racer got ready");
        }
        go.store(true, Ordering::SeqCst);
        let reports: Vec<TickReport> = (0..=triggering)
            .map(|_| reports_rx.recv_timeout(DEADLINE).expect("a racer's report"))
            .collect();
        check_cap(&*schedules, cap, &reports, 1 + triggering * TRIGGERS);
        // A claimed run's history is the lifecycle store's: created
        // `running` by the scheduler with the fire's reason.
        let history = schedules
            .store()
            .history("schedule_run", first_fire(&reports))
            .expect("history");
        check_claimed_history(&history);
        assert_eq!(history[0].actor_type, "scheduler");
        drop(gate);
        reports
    });
    check_ended(&*schedules, &reports);
    let history = schedules
        .store()
        .history("schedule_run", first_fire(&reports))
        .expect("history");
    assert_eq!(
        history.last().map(|h| h.to_status.as_str()),
        Some("completed"),
        "the claimed run ended through the lifecycle store: {history:?}"
    );
}

/// Worker role: one racer in a process of its own (`tick`: the daemon,
/// started before the race; `trigger`: `TRIGGERS` triggers). Waits for the
/// go file, races, prints its report, then waits for its runs (their legs
/// wait on the gate).
#[test]
fn worker_cap_racer() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} is set by the parent"));
    let engine = engine(Path::new(&var(DB)));
    let schedules = sqlite_schedules(&engine);
    let launcher = gated_launcher(Store::new(engine), Path::new(&var(GATE)));
    let go = PathBuf::from(var(GO));
    let clock = Arc::new(ManualClock::new(DUE));
    let tick = role == "tick";
    runtime().block_on(async move {
        let mut sched = racer(schedules, clock, launcher, tick);
        let report = race(&mut sched, tick, || {
            #[allow(clippy::print_stdout, reason = "the worker reports to its parent")]
            {
                println!("\nREADY");
            }
            std::io::stdout().flush().expect("flush");
            wait_until("go", || go.exists());
        })
        .await;
        #[allow(clippy::print_stdout, reason = "the worker reports to its parent")]
        {
            println!(
                "\nREPORT {} {}",
                report.fired.join(","),
                report.skipped_overlap.join(",")
            );
        }
        std::io::stdout().flush().expect("flush");
        sched.wait_idle().await;
    });
}

/// The racing processes; dropping it opens the gate and ends any still
/// running, so a failing test leaves no process behind.
struct Racers {
    children: Vec<Child>,
    gate: PathBuf,
}

impl Drop for Racers {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.gate, b"");
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn processes_triggering_while_a_daemon_process_ticks_never_exceed_max_concurrent() {
    // contract: LC-042
    let env = Env::new();
    let db = env.dir.path().join("state.db");
    let go = env.dir.path().join("go");
    let cap = 2;
    let mut spec = interval(NAME, 60, env.dir.path());
    spec.max_concurrent = cap;
    env.schedules().create(&spec, T0).expect("create");
    let triggering = 4;
    let exe = std::env::current_exe().expect("test binary");
    let mut racers = Racers {
        children: Vec::new(),
        gate: env.gate(),
    };
    // `None`: a racer is ready (the daemon's preamble has run); `Some`: a
    // racer's report.
    let (reports_tx, reports_rx) = mpsc::channel::<Option<TickReport>>();
    for i in 0..=triggering {
        let mut child = Command::new(&exe)
            .args([
                "cap::worker_cap_racer",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ROLE, if i == 0 { "tick" } else { "trigger" })
            .env(DB, &db)
            .env(GATE, env.gate())
            .env(GO, &go)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn a racer");
        let out = child.stdout.take().expect("stdout");
        racers.children.push(child);
        let tx = reports_tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some((_, ids)) = line.split_once("REPORT ") {
                    let (fired, skipped) = ids.split_once(' ').unwrap_or((ids, ""));
                    let list = |l: &str| -> Vec<String> {
                        l.split(',')
                            .filter(|s| !s.is_empty())
                            .map(str::to_owned)
                            .collect()
                    };
                    let _ = tx.send(Some(TickReport {
                        fired: list(fired),
                        skipped_overlap: list(skipped),
                        ..TickReport::default()
                    }));
                } else if line.contains("READY") {
                    let _ = tx.send(None);
                }
            }
        });
    }
    drop(reports_tx);
    let next = || {
        reports_rx
            .recv_timeout(DEADLINE)
            .expect("a racer's message")
    };
    for _ in 0..=triggering {
        assert!(next().is_none(), "a racer reported before it was ready");
    }
    std::fs::write(&go, b"").expect("go");
    let reports: Vec<TickReport> = (0..=triggering)
        .map(|_| next().expect("a racer's report"))
        .collect();
    let schedules = env.schedules();
    check_cap(&*schedules, cap, &reports, 1 + triggering * TRIGGERS);

    env.open_gate();
    let since = Instant::now();
    for c in &mut racers.children {
        wait_exit(c, "a racer", since);
    }
    check_ended(&*schedules, &reports);
}

/// A launcher that records no session: its run waits for the gate, then
/// ends completed. While the gate is shut it is a trigger caught between
/// its claim and its session's start.
pub(crate) struct Sessionless(pub(crate) PathBuf);

impl Launcher for Sessionless {
    fn run(
        &self,
        _fire: Fire,
        shutdown: watch::Receiver<Option<lifecycle_core::Cancellation>>,
    ) -> impl std::future::Future<Output = RunOutcome> + Send {
        let gate = self.0.clone();
        async move {
            while !gate.exists() && shutdown.borrow().is_none() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            RunOutcome {
                status: "completed".into(),
                reason: "run.completed.ok".into(),
                error: None,
            }
        }
    }
}

/// Worker role: triggers `held` once through a [`Sessionless`] launcher,
/// prints the run's id, then waits for it (for the gate).
#[test]
fn worker_cap_holder() {
    if std::env::var(ROLE).as_deref() != Ok("hold") {
        return;
    }
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} is set by the parent"));
    let engine = engine(Path::new(&var(DB)));
    let launcher = Arc::new(Sessionless(PathBuf::from(var(GATE))));
    runtime().block_on(async move {
        let mut sched = Scheduler::attach(
            sqlite_schedules(&engine),
            Arc::new(ManualClock::new(T0 + 1)),
            launcher,
        );
        let report = sched.trigger("held").expect("trigger");
        #[allow(clippy::print_stdout, reason = "the worker reports to its parent")]
        {
            println!("\nHELD {}", report.fired.join(","));
        }
        std::io::stdout().flush().expect("flush");
        sched.wait_idle().await;
    });
}

/// Starts a holder on `gate` and returns it with the id of the run it
/// holds (none when its trigger was refused).
fn holder(db: &Path, gate: &Path) -> (Child, String) {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "cap::worker_cap_holder",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, "hold")
        .env(DB, db)
        .env(GATE, gate)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn a holder");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some((_, id)) = line.split_once("HELD ") {
                let _ = tx.send(id.to_owned());
            }
        }
    });
    let id = rx.recv_timeout(DEADLINE).expect("the holder's run");
    (child, id)
}

#[test]
fn a_daemon_starting_while_a_trigger_holds_a_run_leaves_it_and_the_cap_holds() {
    // contract: LC-042
    let env = Env::new();
    let db = env.dir.path().join("state.db");
    let schedules = env.schedules();
    let spec = interval("held", 60, env.dir.path());
    let s = schedules.create(&spec, T0).expect("create");
    let status = |id: &str| -> (String, Option<String>) {
        let run = schedules
            .runs(Some("held"), 100)
            .expect("runs")
            .into_iter()
            .find(|r| r.id == id)
            .expect("the run");
        (run.status, run.reason)
    };
    let mut racers = Racers {
        children: Vec::new(),
        gate: env.gate(),
    };
    // A trigger in another process holds the schedule's one slot; its
    // session is not recorded (and will not be while the gate is shut).
    let (child, held) = holder(&db, &env.gate());
    racers.children.push(child);
    assert!(!held.is_empty(), "the trigger started its run");
    assert_eq!(status(&held).0, "running");
    let session = schedules.runs(Some("held"), 1).expect("runs")[0]
        .session_id
        .clone()
        .expect("a session id");
    assert!(schedules.session_status(&session).expect("read").is_none());

    runtime().block_on(async {
        // A daemon starts meanwhile: its preamble leaves the live
        // trigger's run alone, and its tick at the due instant finds the
        // slot taken.
        let (mut sched, pre) = Scheduler::start(
            schedules.clone(),
            Arc::new(ManualClock::new(DUE)),
            env.launcher(),
            SchedulerConfig::default(),
        )
        .expect("start");
        assert!(pre.stale_runs_ended.is_empty(), "{pre:?}");
        assert_eq!(status(&held).0, "running");
        let tick = sched.tick().expect("tick");
        assert!(tick.fired.is_empty(), "{tick:?}");
        assert_eq!(tick.skipped_overlap.len(), 1, "{tick:?}");
        // The refused fire is recorded: a `skipped` row for overlap.
        check_recorded_skips(&*schedules, "held", &tick, 1);
        assert_eq!(schedules.running_count(&s.id).expect("count"), 1);
        sched.shutdown().await;
    });
    env.open_gate();
    wait_exit(&mut racers.children[0], "the holder", Instant::now());
    assert_eq!(
        status(&held).0,
        "completed",
        "the trigger ended its own run"
    );

    // A trigger that dies holding its run: the next daemon start ends it.
    let shut = env.dir.path().join("never-opened");
    let (mut child, orphan) = holder(&db, &shut);
    child.kill().expect("SIGKILL the holder");
    child.wait().expect("reap the holder");
    let (_sched, pre) = Scheduler::start(
        schedules.clone(),
        Arc::new(ManualClock::new(DUE + 60_000_000)),
        env.launcher(),
        SchedulerConfig::default(),
    )
    .expect("start");
    assert_eq!(pre.stale_runs_ended, std::slice::from_ref(&orphan));
    assert_eq!(
        status(&orphan),
        ("failed".to_owned(), Some("run.failed.exception".to_owned()))
    );
}

#[test]
fn only_the_runs_a_daemon_claimed_are_vouched_for() {
    let env = Env::new();
    let schedules = env.schedules();
    let mut spec = interval("vouch", 60, env.dir.path());
    spec.max_concurrent = 3;
    let s = schedules.create(&spec, T0).expect("create");
    let gate = env.dir.path().join("vouch-gate");
    let launcher = Arc::new(Sessionless(gate.clone()));
    // A row from before claims were recorded: no claimer.
    let legacy = scheduler::RunStart {
        run_id: "legacy".into(),
        schedule_id: s.id.clone(),
        max_concurrent: 3,
        due_at: T0,
        fired_at: T0,
        session_id: "legacy-session".into(),
        claimed_by: None,
    };
    assert_eq!(
        schedules
            .claim_run(&legacy, &Actor::new(ActorType::Scheduler, "old"))
            .expect("claim"),
        scheduler::Claim::Started
    );
    runtime().block_on(async {
        let mut trigger = Scheduler::attach(
            schedules.clone(),
            Arc::new(ManualClock::new(T0 + 1)),
            launcher.clone(),
        );
        let triggered = trigger.trigger("vouch").expect("trigger");
        assert_eq!(triggered.fired.len(), 1, "{triggered:?}");
        let (mut daemon, _) = Scheduler::start(
            schedules.clone(),
            Arc::new(ManualClock::new(DUE)),
            launcher.clone(),
            SchedulerConfig::default(),
        )
        .expect("start");
        let ticked = daemon.tick().expect("tick");
        assert_eq!(ticked.fired.len(), 1, "{ticked:?}");
        let session_of = |run: &str| {
            schedules
                .runs(Some("vouch"), 10)
                .expect("runs")
                .into_iter()
                .find(|r| r.id == run)
                .and_then(|r| r.session_id)
                .expect("a session id")
        };
        let vouched = scheduler::daemon_claimed_sessions(&*schedules).expect("claims");
        assert_eq!(
            vouched,
            std::iter::once(session_of(&ticked.fired[0])).collect(),
            "the trigger's run and the unclaimed one are not vouched for"
        );
        std::fs::write(&gate, b"").expect("open the gate");
        trigger.wait_idle().await;
        daemon.shutdown().await;
    });
}
