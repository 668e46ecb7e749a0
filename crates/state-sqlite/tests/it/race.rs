//! Races and crashes on a real database file: threads, processes, SIGKILL.
//!
//! The process tests re-run this test binary as a worker (an environment
//! variable selects the worker role), so the racers are real processes
//! with their own connections.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lifecycle_core::{ActorType, Reason, TransitionCommand};
use serde_json::json;
use state_sqlite::{Engine, EngineConfig, LegacyTransitionRequest, Store};

use crate::common::{actor, count, create, db};

const ROLE: &str = "STATE_SQLITE_TEST_ROLE";
const DB: &str = "STATE_SQLITE_TEST_DB";

fn claim(id: &str, attempt: i64) -> LegacyTransitionRequest {
    LegacyTransitionRequest {
        entity_type: "dispatch".into(),
        entity_id: id.into(),
        from_status: "delivering".into(),
        to_status: "delivering".into(),
        reason: Reason::new("dispatch.delivering.attempt"),
        actor: actor(ActorType::Executor),
        guard: BTreeMap::from([("attempt".to_owned(), json!(attempt))]),
        patch: BTreeMap::from([("attempt".to_owned(), json!(attempt + 1))]),
    }
}

fn open(path: &std::path::Path) -> Store {
    let config = EngineConfig {
        busy_timeout: Duration::from_secs(30),
        ..EngineConfig::default()
    };
    Store::new(Engine::open(path, config).expect("engine"))
}

fn setup_claim(store: &Store, id: &str) {
    create(
        store,
        "dispatch",
        id,
        "pending",
        "dispatch.pending.enqueued",
        &[],
    );
    let mut to_delivering = claim(id, 0);
    to_delivering.from_status = "pending".into();
    to_delivering.guard.clear();
    to_delivering.patch.clear();
    assert!(
        store
            .legacy_transition(&to_delivering)
            .expect("delivering")
            .ok
    );
}

// contract: SQL-023
#[test]
fn exactly_one_thread_wins_each_guarded_claim() {
    let db = db();
    let rounds = 1000;
    let threads = 4;
    for round in 0..rounds {
        setup_claim(&db.store, &format!("d{round}"));
    }
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let store = db.store.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut wins = Vec::new();
                for round in 0..rounds {
                    if round % 50 == 0 {
                        barrier.wait();
                    }
                    let out = store
                        .legacy_transition(&claim(&format!("d{round}"), 0))
                        .expect("no error under contention");
                    if out.ok {
                        wins.push(round);
                    } else {
                        assert_eq!(out.current_status.as_deref(), Some("delivering"));
                    }
                }
                wins
            })
        })
        .collect();
    let mut wins = vec![0usize; rounds];
    for h in handles {
        for round in h.join().expect("thread") {
            wins[round] += 1;
        }
    }
    assert!(
        wins.iter().all(|w| *w == 1),
        "every claim has exactly one winner"
    );
    // One history row per claim (plus create and pending -> delivering).
    assert_eq!(
        count(&db.store, "SELECT count(*) FROM status_transitions"),
        (rounds * 3) as i64
    );
    assert_eq!(
        count(
            &db.store,
            "SELECT count(*) FROM dispatch_outbox WHERE attempt = 1"
        ),
        rounds as i64
    );
}

/// Worker role: claim every dispatch row once; print the ids won.
#[test]
fn worker_claim_all() {
    if std::env::var(ROLE).as_deref() != Ok("claim") {
        return;
    }
    let path = std::env::var(DB).expect("db path");
    let store = open(std::path::Path::new(&path));
    let n: usize = std::env::var("STATE_SQLITE_TEST_ROUNDS")
        .expect("rounds")
        .parse()
        .expect("number");
    let mut won = Vec::new();
    for round in 0..n {
        if store
            .legacy_transition(&claim(&format!("d{round}"), 0))
            .expect("claim")
            .ok
        {
            won.push(round.to_string());
        }
    }
    #[allow(
        clippy::print_stdout,
        reason = "the worker reports to its parent on stdout"
    )]
    {
        println!("WON {}", won.join(","));
    }
}

fn worker(role: &str, path: &std::path::Path, extra: &[(&str, String)]) -> Command {
    let exe = std::env::current_exe().expect("test binary");
    let name = if role == "claim" {
        "race::worker_claim_all"
    } else {
        "race::worker_churn"
    };
    let mut cmd = Command::new(exe);
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(DB, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd
}

// contract: SQL-023, SQL-018
#[test]
fn exactly_one_process_wins_each_guarded_claim() {
    let db = db();
    let rounds = 300;
    for round in 0..rounds {
        setup_claim(&db.store, &format!("d{round}"));
    }
    let children: Vec<_> = (0..3)
        .map(|_| {
            worker(
                "claim",
                &db.path(),
                &[("STATE_SQLITE_TEST_ROUNDS", rounds.to_string())],
            )
            .spawn()
            .expect("spawn worker")
        })
        .collect();
    let mut wins = vec![0usize; rounds];
    for child in children {
        let out = child.wait_with_output().expect("worker output");
        assert!(out.status.success(), "worker failed");
        let text = String::from_utf8_lossy(&out.stdout);
        // libtest may print "test name ... " on the same line before ours.
        let line = text
            .lines()
            .find_map(|l| l.split_once("WON ").map(|(_, ids)| ids))
            .expect("worker report");
        for id in line.split(',').filter(|s| !s.is_empty()) {
            wins[id.parse::<usize>().expect("id")] += 1;
        }
    }
    assert!(wins.iter().all(|w| *w == 1), "{wins:?}");
    assert_eq!(
        count(&db.store, "SELECT count(*) FROM status_transitions"),
        (rounds * 3) as i64
    );
}

/// Worker role: churn sessions through transitions until killed.
#[test]
fn worker_churn() {
    if std::env::var(ROLE).as_deref() != Ok("churn") {
        return;
    }
    let path = std::env::var(DB).expect("db path");
    let store = open(std::path::Path::new(&path));
    let prefix = std::env::var("STATE_SQLITE_TEST_PREFIX").expect("prefix");
    #[allow(
        clippy::print_stdout,
        reason = "the worker reports to its parent on stdout"
    )]
    {
        println!("READY");
    }
    for i in 0.. {
        let id = format!("{prefix}-{i}");
        create(&store, "session", &id, "running", "run.started.ok", &[]);
        let heartbeat = TransitionCommand::new(
            "session",
            &id,
            "running",
            Reason::new("run.started.ok"),
            actor(ActorType::Executor),
        );
        store.transition(&heartbeat).expect("heartbeat");
        let done = TransitionCommand::new(
            "session",
            &id,
            "completed",
            Reason::new("run.completed.ok"),
            actor(ActorType::Executor),
        )
        .with_patch("num_turns", json!(i));
        store.transition(&done).expect("complete");
    }
}

#[test]
fn sigkill_at_random_points_leaves_rows_and_history_consistent() {
    let db = db();
    let path = db.path();
    for round in 0..8 {
        let mut child = worker(
            "churn",
            &path,
            &[("STATE_SQLITE_TEST_PREFIX", format!("r{round}"))],
        )
        .spawn()
        .expect("spawn");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
        let ready = lines
            .by_ref()
            .map_while(Result::ok)
            .any(|l| l.contains("READY"));
        assert!(ready, "worker never became ready");
        let jitter = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
            % 150;
        std::thread::sleep(Duration::from_millis(20 + u64::from(jitter)));
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
    }
    let store = open(&path);
    let conn = store.engine().conn().expect("conn");
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity");
    assert_eq!(ok, "ok");
    let mismatched: i64 = conn
        .query_row(
            "SELECT count(*) FROM sessions s WHERE s.status IS NOT (
                SELECT st.to_status FROM status_transitions st
                WHERE st.entity_type = 'session' AND st.entity_id = s.id ORDER BY st.id DESC LIMIT 1)",
            [],
            |r| r.get(0),
        )
        .expect("check");
    assert_eq!(mismatched, 0);
    let orphans: i64 = conn
        .query_row(
            "SELECT count(*) FROM status_transitions st WHERE st.entity_type = 'session'
             AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = st.entity_id)",
            [],
            |r| r.get(0),
        )
        .expect("orphans");
    assert_eq!(orphans, 0, "no history without its row");
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
        .expect("rows");
    assert!(rows > 0, "the workers made progress");
}
