//! SIGKILL of a ticking scheduler at random instants: a worker process (this
//! test binary, re-executed) starts a scheduler on a store and ticks as fast
//! as it can, firing, skipping for overlap and (at each start after a clock
//! jump) recording missed fires; the parent kills it after a random delay,
//! again and again. After every kill the store is judged: every slot of
//! every schedule up to its next due instant has exactly one
//! `schedule_runs` row (fired, or skipped with its policy's reason), none
//! has two, and a coalescing (`run_once`) schedule's last claimed slot has
//! its row. SQLite, and PostgreSQL when `LIONRT_TEST_PG` is set.
//!
//! `SCHEDULER_TEST_KILLS` sets the number of kills per store (default 100);
//! `SCHEDULER_TEST_KILL_SEED` replays a run (the seed is printed).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lifecycle_core::{Actor, ActorType};
use scheduler::{
    Fire, Launcher, ManualClock, MissedFire, PgSchedules, RunOutcome, ScheduleSpec, ScheduleStore,
    Scheduler, SchedulerConfig, Schedules, Trigger,
};
use state_postgres::{DbUrl, PgConfig, PgEngine, PgStore};
use state_sqlite::{Engine, EngineConfig, Store};
use tokio::sync::watch;

use crate::common::{request, runtime};

const ROLE: &str = "SCHEDULER_TEST_KILL_ROLE";
const DB: &str = "SCHEDULER_TEST_KILL_DB";
const SCHEMA: &str = "SCHEDULER_TEST_KILL_SCHEMA";
const JUMP: &str = "SCHEDULER_TEST_KILL_JUMP";
const KILLS: &str = "SCHEDULER_TEST_KILLS";
const SEED: &str = "SCHEDULER_TEST_KILL_SEED";

const T0: i64 = 1_800_000_000_000_000;
const SECOND: i64 = 1_000_000;
/// The generous bound on every wait (a failure, never a timing assertion).
const DEADLINE: Duration = Duration::from_secs(120);

/// A small deterministic generator (xorshift64*), seeded per run.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// The schedules every run ticks: policies, caps and triggers that vary.
fn specs(workspace: &Path) -> Vec<ScheduleSpec> {
    let spec =
        |name: &str, trigger: Trigger, missed_fire: MissedFire, max_concurrent: u32| ScheduleSpec {
            name: name.into(),
            trigger,
            run: request(workspace),
            missed_fire,
            max_concurrent,
            enabled: true,
        };
    vec![
        // Due every tick, one run at a time: overlaps are frequent.
        spec(
            "every-1s",
            Trigger::Interval { seconds: 1 },
            MissedFire::Skip,
            1,
        ),
        // Due every other tick, two at a time.
        spec(
            "every-2s",
            Trigger::Interval { seconds: 2 },
            MissedFire::Skip,
            2,
        ),
        // Cron with seconds in a zone, coalescing missed fires.
        spec(
            "cron-1s",
            Trigger::Cron {
                expr: "* * * * * *".into(),
                tz: "Europe/Paris".into(),
            },
            MissedFire::RunOnce,
            1,
        ),
    ]
}

/// A launcher that records no session: its run ends `completed` after a
/// few milliseconds (derived from its id), so some fires overlap it.
struct Brief;

impl Launcher for Brief {
    fn run(
        &self,
        fire: Fire,
        _shutdown: watch::Receiver<Option<lifecycle_core::Cancellation>>,
    ) -> impl std::future::Future<Output = RunOutcome> + Send {
        let ms = fire.run_id.bytes().map(u64::from).sum::<u64>() % 4;
        async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            RunOutcome {
                status: "completed".into(),
                reason: "run.completed.ok".into(),
                error: None,
            }
        }
    }
}

fn sqlite_store(db: &Path) -> Arc<dyn ScheduleStore> {
    let engine = Engine::open(
        db,
        EngineConfig {
            busy_timeout: Duration::from_secs(60),
            ..EngineConfig::default()
        },
    )
    .expect("open the state file");
    Arc::new(Schedules::new(
        Store::new(engine),
        Actor::new(ActorType::Operator, "kill-test"),
    ))
}

fn pg_store(url: &str, schema: &str) -> Arc<dyn ScheduleStore> {
    let engine = PgEngine::open(&PgConfig::new(DbUrl::new(url)).with_schema(schema))
        .expect("open the schema");
    Arc::new(PgSchedules::new(
        PgStore::new(engine),
        Actor::new(ActorType::Operator, "kill-test"),
    ))
}

/// The store the worker's environment names.
fn worker_store() -> Arc<dyn ScheduleStore> {
    let db = std::env::var(DB).expect("the parent sets the store");
    match std::env::var(SCHEMA) {
        Ok(schema) => pg_store(&db, &schema),
        Err(_) => sqlite_store(Path::new(&db)),
    }
}

/// Worker role: a scheduler whose clock starts at the earliest due instant
/// or `JUMP` and a half seconds past it (a restart after missed fires), and
/// moves one second per tick, ticking until it is killed.
#[test]
fn worker_kill_ticker() {
    if std::env::var(ROLE).as_deref() != Ok("tick") {
        return;
    }
    let jump: i64 = std::env::var(JUMP)
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or(0);
    let schedules = worker_store();
    let earliest = schedules
        .list()
        .expect("list")
        .iter()
        .filter_map(|s| s.next_fire_at)
        .min()
        .expect("a due instant");
    // Half a second past the slot jumped to: the slots before it are
    // missed, the one within the tolerance (one second) is the first
    // tick's fire.
    let at = if jump == 0 {
        earliest
    } else {
        earliest + jump * SECOND + SECOND / 2
    };
    let clock = Arc::new(ManualClock::new(at));
    #[allow(clippy::print_stdout, reason = "the worker reports to its parent")]
    {
        println!("\nREADY");
    }
    std::io::stdout().flush().expect("flush");
    runtime().block_on(async move {
        let (mut sched, _) = Scheduler::start(
            schedules,
            Arc::clone(&clock),
            Arc::new(Brief),
            SchedulerConfig::default(),
        )
        .expect("start");
        let mut first = true;
        loop {
            sched.tick().expect("tick");
            if std::mem::take(&mut first) {
                #[allow(clippy::print_stdout, reason = "the worker reports to its parent")]
                {
                    println!("\nTICKED");
                }
                std::io::stdout().flush().expect("flush");
            }
            clock.advance_secs(1);
            // Lets the runs end meanwhile.
            tokio::time::sleep(Duration::from_micros(300)).await;
        }
    });
}

/// What the store must show after any kill: for every schedule, the slots
/// from its first due instant up to its next one each have exactly one row
/// (a `run_once` schedule may coalesce slots missed across a restart, but
/// its last move is that of its latest row), every row's reason is one its
/// policy allows.
fn check(store: &dyn ScheduleStore, specs: &[ScheduleSpec], kill: usize) -> usize {
    let runs = store.runs(None, 1_000_000).expect("runs");
    let mut slots = 0;
    for s in store.list().expect("list") {
        let spec = specs
            .iter()
            .find(|p| p.name == s.spec.name)
            .expect("a known schedule");
        let first = spec.first_due(T0).expect("first").expect("due");
        let next = s.next_fire_at.expect("a series never ends");
        let mut rows: BTreeMap<i64, Vec<(String, String)>> = BTreeMap::new();
        for r in runs
            .iter()
            .filter(|r| r.schedule_id.as_deref() == Some(&s.id))
        {
            let due = r.due_at.unwrap_or_else(|| {
                panic!(
                    "kill {kill}: run {} of {} has no due instant",
                    r.id, s.spec.name
                )
            });
            rows.entry(due)
                .or_default()
                .push((r.status.clone(), r.reason.clone().unwrap_or_default()));
        }
        let mut expected = Vec::new();
        let mut due = first;
        while due < next {
            expected.push(due);
            due = spec.next_after(due, due).expect("next").expect("due");
        }
        assert_eq!(
            due, next,
            "kill {kill}: {}: next due instant off the series",
            s.spec.name
        );
        for (due, at) in &rows {
            assert!(
                expected.binary_search(due).is_ok(),
                "kill {kill}: {}: a row for {due}, not a slot before {next}",
                s.spec.name
            );
            assert_eq!(
                at.len(),
                1,
                "kill {kill}: {}: slot {due} has {} rows: {at:?}",
                s.spec.name,
                at.len()
            );
            let (status, reason) = &at[0];
            let allowed = match status.as_str() {
                "skipped" => {
                    reason == "schedule.skipped.overlap"
                        || (reason == "schedule.skipped.missed_fire"
                            && spec.missed_fire == MissedFire::Skip)
                }
                "running" => reason == "schedule.fired.due",
                "completed" => reason == "run.completed.ok",
                // A run a killed worker left running, ended by the next
                // start's preamble (its session was never recorded).
                "failed" => reason == "run.failed.exception",
                _ => false,
            };
            assert!(
                allowed,
                "kill {kill}: {}: slot {due}: {status} {reason}",
                s.spec.name
            );
        }
        if spec.missed_fire == MissedFire::Skip {
            let missing: Vec<&i64> = expected.iter().filter(|d| !rows.contains_key(d)).collect();
            assert!(
                missing.is_empty(),
                "kill {kill}: {}: slots with no row (lost): {missing:?} (next due {next})",
                s.spec.name
            );
        } else if let Some((&latest, at)) = rows.iter().next_back() {
            // A coalescing schedule's slots may lack rows, but its last
            // move is its latest row's: the move from that slot, at the
            // instant the row was written.
            let detected = runs
                .iter()
                .find(|r| r.schedule_id.as_deref() == Some(&s.id) && r.due_at == Some(latest))
                .and_then(|r| r.detected_at);
            assert_eq!(
                (s.last_fire_at, Some(next)),
                (
                    detected,
                    detected.and_then(|d| spec.next_after(latest, d).expect("next"))
                ),
                "kill {kill}: {}: the last move (last fire, next due) is not its latest row's (slot {latest}: {at:?})",
                s.spec.name
            );
            assert!(
                rows.contains_key(&first),
                "kill {kill}: {}: its first slot has no row",
                s.spec.name
            );
        } else {
            assert_eq!(
                next, first,
                "kill {kill}: {}: moved with no row",
                s.spec.name
            );
        }
        slots += expected.len();
    }
    slots
}

/// The worker; dropping it kills it, so a failing test leaves none behind.
struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The worker's reports: its store is open (`false`), its first tick is
/// done (`true`).
type Reports = std::sync::mpsc::Receiver<bool>;

fn spawn(db: &str, schema: Option<&str>, jump: u64) -> (Worker, Reports) {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args([
        "kill::worker_kill_ticker",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ROLE, "tick")
    .env(DB, db)
    .env(JUMP, jump.to_string())
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    if let Some(schema) = schema {
        cmd.env(SCHEMA, schema);
    }
    let mut child = cmd.spawn().expect("spawn the worker");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if line.contains("READY") {
                let _ = tx.send(false);
            } else if line.contains("TICKED") {
                let _ = tx.send(true);
            }
        }
    });
    (Worker(child), rx)
}

/// Kills workers on one store `kills` times at random instants, judging
/// the store after each.
fn kill_loop(store: &dyn ScheduleStore, db: &str, schema: Option<&str>, workspace: &Path) {
    let kills: usize = std::env::var(KILLS)
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(100);
    let seed = std::env::var(SEED)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    #[allow(clippy::print_stderr, reason = "the seed replays a failure")]
    {
        eprintln!("kill test: {kills} kills, {SEED}={seed}");
    }
    let mut rng = Rng(seed);
    let specs = specs(workspace);
    for spec in &specs {
        store.create(spec, T0).expect("create");
    }
    let started = Instant::now();
    let mut slots = 0;
    let mut ticked = 0;
    for kill in 0..kills {
        // Most starts resume at once; some after a gap of missed fires.
        let jump = if rng.next(3) == 0 { 1 + rng.next(4) } else { 0 };
        let (mut worker, reports) = spawn(db, schema, jump);
        assert!(
            !reports
                .recv_timeout(DEADLINE)
                .expect("the worker opened its store"),
            "READY comes first"
        );
        // A third of the kills land in the start (the preamble, the first
        // fires); the others a few dozen ticks into the loop.
        if rng.next(3) != 0 {
            assert!(reports.recv_timeout(DEADLINE).expect("the worker ticked"));
            ticked += 1;
        }
        std::thread::sleep(Duration::from_micros(rng.next(20_000)));
        assert!(
            worker.0.try_wait().expect("poll").is_none(),
            "kill {kill}: the worker ended before its kill"
        );
        worker.0.kill().expect("SIGKILL the worker");
        worker.0.wait().expect("reap the worker");
        slots = check(store, &specs, kill);
    }
    #[allow(clippy::print_stderr, reason = "the figures of the run")]
    {
        eprintln!(
            "kill test: {kills} kills ({ticked} after a first tick), {slots} slots accounted for in {:?}",
            started.elapsed()
        );
    }
    assert!(
        slots >= ticked,
        "every worker killed after its first tick fired ({slots} slots, {ticked} such kills)"
    );
}

#[test]
fn sigkill_of_a_ticking_scheduler_at_random_instants_loses_and_doubles_no_slot_on_sqlite() {
    // contract: LC-043
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    Engine::create(&db, EngineConfig::default()).expect("db");
    let store = sqlite_store(&db);
    kill_loop(&*store, &db.display().to_string(), None, dir.path());
}

#[test]
fn sigkill_of_a_ticking_scheduler_at_random_instants_loses_and_doubles_no_slot_on_postgres() {
    // contract: LC-043
    static N: AtomicUsize = AtomicUsize::new(0);
    let Ok(url) = std::env::var("LIONRT_TEST_PG") else {
        #[allow(clippy::print_stderr, reason = "a skipped test says why")]
        {
            eprintln!(
                "skipped: LIONRT_TEST_PG is unset (start a server with `eval \"$(.ci/pg-cluster start)\"`)"
            );
        }
        return;
    };
    let schema = format!(
        "sched_kill_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let store = pg_store(&url, &schema);
    /// Drops the schema at the end.
    struct DropSchema(String, String);
    impl Drop for DropSchema {
        fn drop(&mut self) {
            if let Ok(mut c) = postgres::Client::connect(&self.0, postgres::NoTls) {
                let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.1));
            }
        }
    }
    let _drop = DropSchema(url.clone(), schema.clone());
    kill_loop(&*store, &url, Some(&schema), dir.path());
}
