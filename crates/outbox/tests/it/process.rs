//! Real processes: durability across a restart, SIGKILLed scanners at every
//! step of a delivery, and 2 and 4 scanners racing on the same rows.
//!
//! The test binary re-runs itself as the worker (`worker_entry`, selected by
//! an environment variable); a worker's transport appends `id attempt pid`
//! to a file, so the parent counts every send that really happened.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lifecycle_core::{Actor, ActorType, TransitionRecord};
use outbox::{
    AuditRecord, Delivery, DispatchMove, DispatchRow, DispatchStatus, Enqueued, FnTransport,
    ListQuery, MoveOutcome, NewDispatch, OutboxStore, PurgeReport, PurgeSelection, ScanConfig,
    SendError, SystemClock, deliver_due_concurrent, enqueue_dispatch,
};
use state_sqlite::SqliteOutbox;

use crate::common::open;

const ROLE: &str = "OUTBOX_TEST_ROLE";
const DB: &str = "OUTBOX_TEST_DB";
const SENDS: &str = "OUTBOX_TEST_SENDS";
const PAUSE: &str = "OUTBOX_TEST_PAUSE";
const MARKER: &str = "OUTBOX_TEST_MARKER";
const LEASE_MS: &str = "OUTBOX_TEST_LEASE_MS";
const WORKERS: &str = "OUTBOX_TEST_WORKERS";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Where a worker stops (until SIGKILL): the k-th time it reaches `point`.
struct Pause {
    point: String,
    at: usize,
    seen: AtomicUsize,
    marker: PathBuf,
}

impl Pause {
    fn from_env() -> Option<Pause> {
        let spec = env(PAUSE)?;
        let (point, at) = spec.split_once(':')?;
        Some(Pause {
            point: point.to_owned(),
            at: at.parse().ok()?,
            seen: AtomicUsize::new(0),
            marker: PathBuf::from(env(MARKER)?),
        })
    }

    fn reach(&self, point: &str) {
        if point != self.point || self.seen.fetch_add(1, Ordering::SeqCst) + 1 != self.at {
            return;
        }
        std::fs::write(&self.marker, point).expect("write marker");
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// The worker's store: the SQLite outbox with pause points around moves.
struct Paused<'a> {
    inner: SqliteOutbox,
    pause: Option<&'a Pause>,
}

impl Paused<'_> {
    fn reach(&self, point: &str) {
        if let Some(p) = self.pause {
            p.reach(point);
        }
    }
}

impl OutboxStore for Paused<'_> {
    type Error = state_sqlite::StoreError;
    fn enqueue(
        &self,
        id: &str,
        n: &NewDispatch,
        a: &Actor,
        now: i64,
    ) -> Result<Enqueued, Self::Error> {
        self.inner.enqueue(id, n, a, now)
    }
    fn get(&self, id: &str) -> Result<Option<DispatchRow>, Self::Error> {
        self.inner.get(id)
    }
    fn list(&self, q: &ListQuery) -> Result<Vec<DispatchRow>, Self::Error> {
        self.inner.list(q)
    }
    fn due(&self, now: i64, limit: usize) -> Result<Vec<DispatchRow>, Self::Error> {
        self.inner.due(now, limit)
    }
    fn apply(&self, mv: &DispatchMove) -> Result<MoveOutcome, Self::Error> {
        let claim = mv.to == DispatchStatus::Delivering;
        if claim {
            self.reach("before_claim");
        } else if mv.from == DispatchStatus::Delivering {
            self.reach("after_transport");
        }
        let out = self.inner.apply(mv)?;
        if claim && out.is_applied() {
            self.reach("after_claim");
        }
        Ok(out)
    }
    fn purge(&self, id: &str, a: &Actor) -> Result<Option<DispatchStatus>, Self::Error> {
        self.inner.purge(id, a)
    }
    fn purge_many(
        &self,
        s: &PurgeSelection,
        d: bool,
        a: &Actor,
    ) -> Result<PurgeReport, Self::Error> {
        self.inner.purge_many(s, d, a)
    }
    fn sweep_terminal(&self, b: i64) -> Result<u64, Self::Error> {
        self.inner.sweep_terminal(b)
    }
    fn history(&self, id: &str) -> Result<Vec<TransitionRecord>, Self::Error> {
        self.inner.history(id)
    }
    fn audit(&self) -> Result<Vec<AuditRecord>, Self::Error> {
        self.inner.audit()
    }
}

fn open_rows(store: &SqliteOutbox) -> usize {
    [DispatchStatus::Pending, DispatchStatus::Delivering]
        .into_iter()
        .map(|s| {
            store
                .list(&ListQuery {
                    status: Some(s),
                    limit: None,
                })
                .expect("list")
                .len()
        })
        .sum()
}

fn run_scanner(db: &Path) {
    let pause = Pause::from_env();
    let store = Paused {
        inner: open(db),
        pause: pause.as_ref(),
    };
    let sends = PathBuf::from(env(SENDS).expect("sends path"));
    let transport = FnTransport(|d: &Delivery<'_>| {
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&sends)
            .map_err(|e| SendError(e.to_string()))?;
        // One write per line: O_APPEND keeps lines from racing writers whole.
        f.write_all(format!("{} {} {}\n", d.id, d.attempt, std::process::id()).as_bytes())
            .map_err(|e| SendError(e.to_string()))?;
        if let Some(p) = &pause {
            p.reach("during_transport");
        }
        Ok(())
    });
    let lease = env(LEASE_MS).and_then(|l| l.parse().ok()).unwrap_or(30_000);
    let config = ScanConfig {
        batch: 50,
        lease: Duration::from_millis(lease),
        ..ScanConfig::default()
    };
    let workers = env(WORKERS)
        .and_then(|w| w.parse().ok())
        .and_then(std::num::NonZeroUsize::new)
        .unwrap_or(std::num::NonZeroUsize::MIN);
    let deadline = Instant::now() + Duration::from_secs(60);
    while open_rows(&store.inner) > 0 {
        assert!(Instant::now() < deadline, "worker gave up with rows open");
        let report = deliver_due_concurrent(&store, &transport, &SystemClock, &config, workers)
            .expect("scan");
        if report.claimed == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The worker entry point: a no-op unless the role variable is set.
#[test]
fn worker_entry() {
    let Some(role) = env(ROLE) else {
        return;
    };
    let db = PathBuf::from(env(DB).expect("db path"));
    match role.as_str() {
        "enqueue" => {
            let store = open(&db);
            let mut new = NewDispatch::new("durable payload");
            new.dedup_key = Some("durable-key".into());
            let out = enqueue_dispatch(
                &store,
                &SystemClock,
                &new,
                &Actor::new(ActorType::Executor, "w"),
            )
            .expect("enqueue");
            let mut stdout = std::io::stdout().lock();
            writeln!(stdout, "ENQUEUED {} {}", out.id, out.created).expect("stdout");
        }
        "scan" => run_scanner(&db),
        other => panic!("unknown role {other}"),
    }
}

fn worker(role: &str, db: &Path, extra: &[(&str, String)]) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args([
        "--exact",
        "process::worker_entry",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(ROLE, role)
    .env(DB, db)
    .stdin(Stdio::null());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd
}

fn sends(path: &Path) -> BTreeMap<String, Vec<u32>> {
    let mut out: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    for line in text.lines() {
        let mut parts = line.split(' ');
        let (Some(id), Some(attempt)) = (parts.next(), parts.next()) else {
            panic!("torn send line {line:?}");
        };
        out.entry(id.to_owned())
            .or_default()
            .push(attempt.parse().expect("attempt"));
    }
    out
}

// contract: OBX-001
#[test]
fn an_enqueued_row_outlives_its_producer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    drop(open(&db));
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let out = worker("enqueue", &db, &[])
                .stdout(Stdio::piped())
                .output()
                .expect("run producer");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            // libtest may print its own words before ours on the same line.
            let (_, rest) = text.split_once("ENQUEUED ").expect("producer reported");
            rest.split(' ').next().expect("id").to_owned()
        })
        .collect();
    assert_eq!(
        ids[0], ids[1],
        "the second producer found the first one's row"
    );
    // No consumer ever ran; the producers are gone; a fresh open sees it.
    let store = open(&db);
    let rows = store.list(&ListQuery::default()).expect("list");
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].id.as_str(), rows[0].status),
        (ids[0].as_str(), DispatchStatus::Pending)
    );
    assert_eq!(rows[0].payload, "durable payload");
}

fn seed() -> u64 {
    env("OUTBOX_TEST_SEED")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(7, |d| d.as_nanos() as u64)
        })
}

fn next(state: &mut u64) -> u64 {
    // xorshift64*: enough randomness for kill points, reproducible by seed.
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

fn wait_for(marker: &Path, child: &mut Child, seed: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        if let Some(status) = child.try_wait().expect("try_wait") {
            panic!("seed {seed}: worker exited ({status}) before its pause point");
        }
        assert!(Instant::now() < deadline, "seed {seed}: no pause marker");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn sigkilled_scanners_lose_no_row_and_never_exceed_max_attempts() {
    let seed = seed().max(1);
    let mut rng = seed;
    let points = [
        "before_claim",
        "after_claim",
        "during_transport",
        "after_transport",
    ];
    for round in 0..8 {
        let point = points[round % points.len()];
        let k = 1 + (next(&mut rng) % 6) as usize;
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("state.db");
        let sends_path = dir.path().join("sends.log");
        let marker = dir.path().join("paused");
        let store = open(&db);
        let mut max = BTreeMap::new();
        for i in 0..8u32 {
            let mut new = NewDispatch::new(format!("row {i}"));
            new.max_attempts = if i % 3 == 0 { 1 } else { 3 };
            new.ack_required = false;
            let id = enqueue_dispatch(
                &store,
                &SystemClock,
                &new,
                &Actor::new(ActorType::Executor, "p"),
            )
            .expect("enqueue")
            .id;
            max.insert(id, new.max_attempts);
        }
        let env = [
            (SENDS, sends_path.to_string_lossy().into_owned()),
            (LEASE_MS, "300".to_owned()),
        ];
        let mut paused_env = env.to_vec();
        paused_env.push((PAUSE, format!("{point}:{k}")));
        paused_env.push((MARKER, marker.to_string_lossy().into_owned()));
        let mut child = worker("scan", &db, &paused_env)
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn scanner");
        wait_for(&marker, &mut child, seed);
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
        // Restart: a fresh scanner converges once the dead one's lease ran out.
        let status = worker("scan", &db, &env)
            .stdout(Stdio::null())
            .status()
            .expect("restart scanner");
        assert!(
            status.success(),
            "seed {seed} round {round}: restarted scanner failed"
        );
        let sent = sends(&sends_path);
        let rows = store.list(&ListQuery::default()).expect("list");
        assert_eq!(
            rows.len(),
            max.len(),
            "seed {seed} round {round} ({point}:{k}): a row was lost"
        );
        for row in rows {
            let n = sent.get(&row.id).map_or(0, Vec::len);
            let bound = max[&row.id];
            assert!(
                n as u32 <= bound,
                "seed {seed} round {round} ({point}:{k}): {} sent {n} times, max {bound}",
                row.id
            );
            match row.status {
                DispatchStatus::Delivered => assert!(n >= 1),
                // Only a row whose one allowed attempt was cut short by the
                // kill may end without a confirmed delivery.
                DispatchStatus::DeadLetter => assert_eq!(bound, 1, "seed {seed}: {row:?}"),
                other => panic!("seed {seed} round {round}: {} left {other}", row.id),
            }
        }
    }
}

fn race(workers: usize, threads: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let sends_path = dir.path().join("sends.log");
    let store = open(&db);
    let rows = 150;
    for i in 0..rows {
        let mut new = NewDispatch::new(format!("row {i}"));
        new.max_attempts = 3;
        enqueue_dispatch(
            &store,
            &SystemClock,
            &new,
            &Actor::new(ActorType::Executor, "p"),
        )
        .expect("enqueue");
    }
    let env = [
        (SENDS, sends_path.to_string_lossy().into_owned()),
        (WORKERS, threads.to_string()),
    ];
    let children: Vec<Child> = (0..workers)
        .map(|_| {
            worker("scan", &db, &env)
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn scanner")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("wait").success(), "a scanner failed");
    }
    let text = std::fs::read_to_string(&sends_path).expect("sends");
    let mut seen = BTreeSet::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts.len(), 3, "torn line {line:?}");
        assert!(
            seen.insert((parts[0].to_owned(), parts[1].to_owned())),
            "{line}: attempt sent twice"
        );
    }
    assert_eq!(
        seen.len(),
        rows,
        "each row sent exactly once (no crash, no failure)"
    );
    let all = store.list(&ListQuery::default()).expect("list");
    assert!(all.iter().all(|r| r.status == DispatchStatus::Delivered));
}

// contract: OBX-013
#[test]
fn two_scanner_processes_send_each_attempt_at_most_once() {
    race(2, 1);
}

// contract: OBX-013
#[test]
fn four_scanner_processes_of_two_threads_send_each_attempt_at_most_once() {
    race(4, 2);
}
