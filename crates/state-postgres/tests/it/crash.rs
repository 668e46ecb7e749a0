//! Killing the server mid-transaction (`pg_ctl stop -m immediate` on a
//! private cluster this test starts), then restarting it: every row still
//! equals its newest history row.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lifecycle_core::{Actor, ActorType, InitialCommand, Reason, TransitionCommand};
use outbox::{NewDispatch, OutboxStore, ScanConfig, SystemClock, deliver_due};
use serde_json::json;
use state_postgres::{PgConfig, PgEngine, PgOutbox, PgStore, now_micros};

fn pg_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("LIONRT_TEST_PG_BIN")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    if let Ok(entries) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<PathBuf> = entries.flatten().map(|e| e.path().join("bin")).collect();
        versions.sort();
        versions.reverse();
        dirs.extend(versions);
    }
    dirs.into_iter()
        .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
}

fn euid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// A private cluster, run as `user` when we are root.
struct Cluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    user: Option<String>,
}

impl Cluster {
    fn cmd(&self, program: &str) -> Command {
        let exe = self.bin.join(program);
        match &self.user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(exe);
                c
            }
            None => Command::new(exe),
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn run(&self, mut c: Command, what: &str) {
        let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(
            out.status.success(),
            "{what}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn start(&self) {
        let mut c = self.cmd("pg_ctl");
        c.arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.path().join("log"))
            .arg("-w")
            .arg("-o")
            .arg(format!(
                "-c listen_addresses='' -c unix_socket_directories={}",
                self.dir.path().display()
            ));
        c.arg("start");
        self.run(c, "pg_ctl start");
    }

    fn kill(&self) {
        let mut c = self.cmd("pg_ctl");
        c.arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"]);
        self.run(c, "pg_ctl stop -m immediate");
    }

    fn url(&self) -> String {
        format!(
            "host={} user={} dbname=postgres connect_timeout=5",
            self.dir.path().display(),
            self.user.clone().unwrap_or_else(|| "postgres".into())
        )
    }

    fn create(bin: PathBuf, user: Option<String>) -> Cluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let cluster = Cluster { bin, dir, user };
        if let Some(u) = &cluster.user {
            let ok = Command::new("chown")
                .arg(u)
                .arg(cluster.dir.path())
                .status()
                .expect("chown");
            assert!(ok.success(), "chown");
        }
        let mut c = cluster.cmd("initdb");
        c.arg("-D")
            .arg(cluster.data())
            .args(["-A", "trust", "-U"])
            .arg(cluster.user.clone().unwrap_or_else(|| "postgres".into()));
        c.args(["--no-sync", "-E", "UTF8"]);
        cluster.run(c, "initdb");
        cluster.start();
        cluster
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let mut c = self.cmd("pg_ctl");
        c.arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "stop"]);
        let _ = c.output();
    }
}

fn private_cluster() -> Option<Cluster> {
    let Some(bin) = pg_bin() else {
        eprintln!("server_crash: skipped: no initdb/pg_ctl found (install postgresql)");
        return None;
    };
    let user = if euid_is_root() {
        match std::env::var("LIONRT_TEST_PG_OS_USER") {
            Ok(u) if !u.is_empty() => Some(u),
            _ => {
                eprintln!(
                    "server_crash: skipped: running as root and LIONRT_TEST_PG_OS_USER names no unprivileged user to run a private cluster"
                );
                return None;
            }
        }
    } else {
        None
    };
    Some(Cluster::create(bin, user))
}

fn open(url: &str) -> (PgStore, PgOutbox) {
    let engine =
        PgEngine::open(&PgConfig::new(url).with_schema("crash").with_pool_size(4)).expect("open");
    let store = PgStore::new(engine);
    (store.clone(), PgOutbox::new(store))
}

fn actor() -> Actor {
    Actor::new(ActorType::Executor, "crash")
}

/// Every row equals its newest history row: status and version.
fn assert_rows_match_history(url: &str) -> usize {
    let mut c = postgres::Client::connect(url, postgres::NoTls).expect("reconnect");
    let mut checked = 0;
    for (entity, table) in [
        ("session", "crash.sessions"),
        ("dispatch", "crash.dispatch_outbox"),
    ] {
        let rows = c
            .query(
                &format!(
                    "SELECT t.id, t.status, t.updated_at, h.to_status, h.created_at
                     FROM {table} t LEFT JOIN LATERAL (
                        SELECT to_status, created_at FROM crash.status_transitions
                        WHERE entity_type = $1 AND entity_id = t.id ORDER BY id DESC LIMIT 1) h ON true"
                ),
                &[&entity],
            )
            .expect("rows");
        for r in rows {
            let id: String = r.get(0);
            let status: String = r.get(1);
            let version: i64 = r.get(2);
            let newest: Option<String> = r.get(3);
            let at: Option<i64> = r.get(4);
            assert_eq!(
                Some(status),
                newest,
                "{entity} {id}: status vs newest history"
            );
            assert_eq!(
                Some(version),
                at,
                "{entity} {id}: version vs newest history"
            );
            checked += 1;
        }
    }
    checked
}

fn wait_down(dir: &Path) {
    for _ in 0..100 {
        if !dir.join("data/postmaster.pid").exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn server_crash() {
    let Some(cluster) = private_cluster() else {
        return;
    };
    let url = cluster.url();
    let (store, outbox) = open(&url);
    for i in 0..40 {
        store
            .create(&InitialCommand {
                entity_type: "session".into(),
                entity_id: format!("s{i}"),
                status: "running".into(),
                reason: Reason::new("run.started.ok"),
                actor: actor(),
                patch: Default::default(),
            })
            .expect("create");
        outbox
            .enqueue(
                &format!("d{i}"),
                &NewDispatch::new("p"),
                &actor(),
                now_micros(),
            )
            .expect("enqueue");
    }
    // Writers: session appends with patches and outbox deliveries, from
    // several threads, until the server dies under them.
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..3 {
        let (store, outbox) = (store.clone(), outbox.clone());
        let stop = Arc::clone(&stop);
        writers.push(std::thread::spawn(move || {
            let transport = outbox::FnTransport(|_: &outbox::Delivery<'_>| Ok(()));
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let id = format!("s{}", (n * 3 + w) % 40);
                let cmd = TransitionCommand::new(
                    "session",
                    &id,
                    "running",
                    Reason::new("run.started.ok"),
                    actor(),
                )
                .with_patch("num_turns", json!(n));
                if store.transition(&cmd).is_err() {
                    break;
                }
                let cfg = ScanConfig {
                    batch: 2,
                    ..ScanConfig::default()
                };
                if deliver_due(&outbox, &transport, &SystemClock, &cfg).is_err() {
                    break;
                }
                n += 1;
            }
            n
        }));
    }
    // A transaction left open on purpose: a CAS update and its history row
    // written but not committed when the server dies.
    let mut open_tx = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    open_tx
        .batch_execute(
            "BEGIN;
             WITH w AS (UPDATE crash.sessions SET status = 'failed', updated_at = updated_at + 1
                        WHERE id = 's0' RETURNING id, updated_at)
             INSERT INTO crash.status_transitions (entity_type, entity_id, from_status, to_status,
                reason_code, actor_type, actor_id, created_at)
             SELECT 'session', id, 'running', 'failed', 'run.failed.exception', 'executor', 'x', updated_at FROM w;",
        )
        .expect("open transaction");
    std::thread::sleep(Duration::from_millis(300));
    cluster.kill();
    stop.store(true, Ordering::SeqCst);
    let moves: u64 = writers.into_iter().map(|w| w.join().expect("writer")).sum();
    assert!(moves > 0, "the writers ran before the crash");
    drop(open_tx);
    drop((store, outbox));
    wait_down(cluster.dir.path());

    cluster.start();
    let checked = assert_rows_match_history(&url);
    assert_eq!(checked, 80);
    // The uncommitted write is gone, and the store works again.
    let (store, _) = open(&url);
    assert_eq!(
        store
            .status_of("session", "s0")
            .expect("s0")
            .map(|s| s.0)
            .as_deref(),
        Some("running")
    );
    let out = store
        .transition(
            &TransitionCommand::new(
                "session",
                "s0",
                "completed",
                Reason::new("run.completed.ok"),
                actor(),
            )
            .expecting("running"),
        )
        .expect("after restart");
    assert_eq!(out.result, lifecycle_core::OutcomeKind::Applied);
}
