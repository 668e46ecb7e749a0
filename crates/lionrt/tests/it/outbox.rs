//! `lionrt outbox ...` end to end.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{lionrt, stdout_json};

fn ok(out: &std::process::Output) {
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn enqueue_deliver_show_ack_retry_purge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    ok(&lionrt(&db, &["state", "init"]));
    let marker = dir.path().join("pwned");
    let payload = format!(
        "done; touch {} $(touch {})",
        marker.display(),
        marker.display()
    );
    let out = lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "enqueue",
            &payload,
            "--dedup-key",
            "run:1",
            "--",
            "/bin/echo",
            "{payload}",
        ],
    );
    ok(&out);
    let first = stdout_json(&out);
    assert_eq!(first["created"], true);
    let again = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "enqueue",
            "other",
            "--dedup-key",
            "run:1",
            "--default-template",
        ],
    ));
    assert_eq!(
        (again["id"].clone(), again["created"].clone()),
        (first["id"].clone(), false.into())
    );
    let failing = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "enqueue",
            "x",
            "--max-attempts",
            "1",
            "--",
            "/bin/false",
        ],
    ));
    let acked = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "enqueue",
            "y",
            "--ack-required",
            "--",
            "/bin/true",
        ],
    ));
    let report = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "deliver",
            "--concurrency",
            "2",
            "--actor",
            "system:cli-test",
        ],
    ));
    assert_eq!(report["delivered"], 1, "{report}");
    assert_eq!(report["dead_lettered"], 1, "{report}");
    assert_eq!(report["rescheduled"], 1, "{report}");
    assert!(!marker.exists(), "the payload reached no shell");
    let ls = stdout_json(&lionrt(
        &db,
        &["--json", "outbox", "ls", "--status", "dead_letter"],
    ));
    assert_eq!(ls.as_array().map(Vec::len), Some(1));
    let show = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "show",
            first["id"].as_str().expect("id"),
        ],
    ));
    assert_eq!(show["dispatch"]["status"], "delivered");
    assert_eq!(show["history"][1]["actor_id"], "cli-test");
    let id = acked["id"].as_str().expect("id");
    let out = stdout_json(&lionrt(
        &db,
        &["--json", "outbox", "ack", id, "--actor", "webhook:consumer"],
    ));
    assert_eq!(out["status"], "acked");
    let failed = failing["id"].as_str().expect("id");
    let out = lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "retry",
            failed,
            "--actor",
            "agent:not-an-operator",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let out = stdout_json(&lionrt(&db, &["--json", "outbox", "retry", failed]));
    assert_eq!(out[0]["revived"], true);
    let out = lionrt(&db, &["outbox", "purge"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("full-table delete"));
    let dry = stdout_json(&lionrt(
        &db,
        &[
            "--json",
            "outbox",
            "purge",
            "--older-than",
            "0",
            "--dry-run",
        ],
    ));
    assert_eq!(dry["ids"].as_array().map(Vec::len), Some(2), "{dry}");
    // A dry run names no single row: `purge ID --dry-run` is refused rather
    // than deleting for real.
    let out = lionrt(&db, &["outbox", "purge", failed, "--dry-run"]);
    assert!(!out.status.success());
    let gone = stdout_json(&lionrt(&db, &["--json", "outbox", "purge", failed]));
    assert_eq!(gone["status"], "pending");
    let all = stdout_json(&lionrt(&db, &["--json", "outbox", "ls"]));
    assert_eq!(all.as_array().map(Vec::len), Some(2));
}

#[test]
fn deliver_watch_scans_until_sigint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    ok(&lionrt(&db, &["state", "init"]));
    ok(&lionrt(&db, &["outbox", "enqueue", "p", "--", "/bin/true"]));
    let mut child = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(&db)
        .args(["--json", "outbox", "deliver", "--watch", "0.05"])
        .env_remove("LIONRT_DB")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    // Read scan reports as they come; after three scans, interrupt.
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut reports: Vec<serde_json::Value> = Vec::new();
    while reports.len() < 3 {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("a scan report while watching");
        reports.push(serde_json::from_str(&line).expect("one JSON report per scan"));
    }
    let pid = child.id().to_string();
    let kill = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(kill.success());
    let started = Instant::now();
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    reader.join().expect("reader");
    reports.extend(
        rx.try_iter()
            .map(|l| serde_json::from_str(&l).expect("json")),
    );
    let delivered: u64 = reports
        .iter()
        .map(|r| r["delivered"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(delivered, 1, "one delivery however many scans: {reports:?}");
}

mod revival {
    //! OBX-026: revival is one library function, so every path that can
    //! reach it (a direct call, the CLI, a schedule's fire through the
    //! scheduler's `Launcher` seam, a scheduler tick hook) gives the same
    //! result over the same outbox state.

    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex, mpsc};
    use std::time::Duration;

    use lifecycle_core::{Actor, ActorType};
    use outbox::{
        DispatchStatus, FnTransport, ListQuery, ManualClock, NewDispatch, OutboxStore,
        ReviveOptions, ReviveSelection, Revived, ScanConfig, SendError, SystemClock, ack_dispatch,
        deliver_due, enqueue_dispatch, revive_dispatches,
    };
    use serde_json::{Value, json};
    use state_sqlite::{Engine, EngineConfig, SqliteOutbox, Store};

    use crate::{lionrt, stdout_json};

    fn open(db: &Path) -> SqliteOutbox {
        SqliteOutbox::new(Store::new(
            Engine::create(db, EngineConfig::default()).expect("engine"),
        ))
    }

    /// A small deterministic generator (the states must be reproducible).
    struct Gen(u64);

    impl Gen {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % n
        }
    }

    /// Builds a varied outbox state in `db` from `seed` (pending,
    /// delivered, acked, dead_letter and expired rows), on a manual clock an
    /// hour in the past so every deadline has passed by revival time, and
    /// adds the schedule the fire path triggers. Returns the row ids.
    fn generate(db: &Path, seed: u64) -> Vec<String> {
        let mut g = Gen(seed.wrapping_add(0x9e37_79b9));
        let start = outbox::Clock::now_micros(&SystemClock) - 3_600_000_000;
        let clock = ManualClock::new(start);
        let producer = Actor::new(ActorType::Executor, "producer");
        let store = open(db);
        let mut ids = Vec::new();
        for i in 0..8 {
            let mut new = NewDispatch::new(format!("payload {seed}/{i}"));
            new.dedup_key = Some(format!("k{seed}-{i}"));
            new.max_attempts = 1 + u32::try_from(g.next(3)).expect("small");
            new.ack_required = g.next(4) == 0;
            if g.next(3) == 0 {
                new.expires_at =
                    Some(start + 1_000_000 * i64::try_from(g.next(1_500)).expect("small"));
            }
            ids.push(
                enqueue_dispatch(&store, &clock, &new, &producer)
                    .expect("enqueue")
                    .id,
            );
        }
        let config = ScanConfig {
            lease: Duration::from_secs(30),
            backoff: outbox::Backoff {
                base: Duration::from_secs(10),
                max: Duration::from_secs(60),
            },
            ..ScanConfig::default()
        };
        let sends = Mutex::new(Gen(seed));
        let transport = FnTransport(|_: &outbox::Delivery<'_>| {
            if sends.lock().expect("lock").next(3) == 0 {
                Ok(())
            } else {
                Err(SendError("receiver down".into()))
            }
        });
        for _ in 0..6 {
            let config = ScanConfig {
                batch: 1 + usize::try_from(g.next(4)).expect("small"),
                ..config.clone()
            };
            deliver_due(&store, &transport, &clock, &config).expect("scan");
            if g.next(3) == 0 {
                let id = &ids[usize::try_from(g.next(8)).expect("small")];
                let _ = ack_dispatch(&store, id, &producer);
            }
            clock.advance(Duration::from_secs(g.next(400)));
        }
        drop(store);
        let out = lionrt(
            db,
            &[
                "schedule", "create", "revive", "--every", "86400", "--prompt", "revive",
            ],
        );
        assert!(out.status.success(), "{out:?}");
        ids
    }

    /// A fresh copy of the generated state for one path.
    fn copy(base: &Path, dir: &Path, name: &str) -> PathBuf {
        let to = dir.join(name);
        std::fs::copy(base, &to).expect("copy");
        let wal = base.with_extension("db-wal");
        if wal.exists() {
            std::fs::copy(&wal, to.with_extension("db-wal")).expect("copy wal");
        }
        to
    }

    /// Everything revival could have changed, with the instants it wrote
    /// (at or after `since`) replaced by "now".
    fn observe(db: &Path, since: i64, revived: &[Revived]) -> Value {
        let store = open(db);
        let at = |t: Option<i64>| match t {
            Some(t) if t >= since => json!("now"),
            other => json!(other),
        };
        let rows: Vec<Value> = store
            .list(&ListQuery::default())
            .expect("list")
            .iter()
            .map(|r| {
                let history: Vec<Value> = store
                    .history(&r.id)
                    .expect("history")
                    .iter()
                    .map(|t| {
                        json!([
                            t.from_status,
                            t.to_status,
                            t.reason_code,
                            t.reason_summary,
                            t.actor_type,
                            t.actor_id,
                            at(Some(t.created_at))
                        ])
                    })
                    .collect();
                json!({
                    "id": r.id, "status": r.status, "attempt": r.attempt,
                    "next_attempt_at": at(r.next_attempt_at), "last_error": r.last_error,
                    "expires_at": r.expires_at, "updated_at": at(Some(r.updated_at)),
                    "history": history,
                })
            })
            .collect();
        let audit: Vec<Value> = store
            .audit()
            .expect("audit")
            .iter()
            .map(|a| {
                json!([
                    a.kind,
                    a.entity_id,
                    a.actor.kind.as_str(),
                    a.actor.id,
                    a.detail
                ])
            })
            .collect();
        json!({"revived": revived, "rows": rows, "audit": audit})
    }

    fn now() -> i64 {
        outbox::Clock::now_micros(&SystemClock)
    }

    fn by_library(db: &Path, sel: &ReviveSelection, actor: &Actor) -> Vec<Revived> {
        revive_dispatches(
            &open(db),
            &SystemClock,
            sel,
            &ReviveOptions::default(),
            actor,
        )
        .expect("revive")
    }

    fn by_cli(db: &Path, sel: &ReviveSelection, actor: &Actor) -> Vec<Revived> {
        let who = format!("{}:{}", actor.kind.as_str(), actor.id);
        let mut args = vec!["--json", "outbox", "retry", "--actor", &who];
        let status;
        match sel {
            ReviveSelection::Ids(ids) => args.extend(ids.iter().map(String::as_str)),
            ReviveSelection::All(s) => {
                args.push("--all");
                if let Some(s) = s {
                    status = s.to_string();
                    args.extend(["--status", &status]);
                }
            }
        }
        let out = lionrt(db, &args);
        assert!(matches!(out.status.code(), Some(0 | 3)), "{out:?}");
        serde_json::from_value(stdout_json(&out)).expect("revived rows")
    }

    /// The only action a schedule fires: its `Launcher` run. This one
    /// revives instead of starting an agent.
    struct ReviveLauncher {
        db: PathBuf,
        sel: ReviveSelection,
        actor: Actor,
        out: Mutex<Option<mpsc::Sender<Vec<Revived>>>>,
    }

    impl scheduler::Launcher for ReviveLauncher {
        async fn run(
            &self,
            _fire: scheduler::Fire,
            _shutdown: tokio::sync::watch::Receiver<Option<lifecycle_core::Cancellation>>,
        ) -> scheduler::RunOutcome {
            let revived = by_library(&self.db, &self.sel, &self.actor);
            if let Some(tx) = self.out.lock().expect("lock").take() {
                let _ = tx.send(revived);
            }
            scheduler::RunOutcome {
                status: "completed".into(),
                reason: "run.completed".into(),
                error: None,
            }
        }
    }

    struct ReviveHook {
        db: PathBuf,
        sel: ReviveSelection,
        actor: Actor,
        out: Option<mpsc::Sender<Vec<Revived>>>,
    }

    impl scheduler::TickHook for ReviveHook {
        fn name(&self) -> &str {
            "revive"
        }

        fn tick(&mut self, _now: i64) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            if let Some(tx) = self.out.take() {
                let _ = tx.send(by_library(&self.db, &self.sel, &self.actor));
            }
            Ok(())
        }
    }

    /// Waits (polling, generous deadline) for a path's result.
    async fn receive(rx: &mpsc::Receiver<Vec<Revived>>) -> Vec<Revived> {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(v) = rx.try_recv() {
                return v;
            }
            assert!(std::time::Instant::now() < deadline, "the path never ran");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn scheduler_on(db: &Path) -> Arc<scheduler::Schedules> {
        let engine = Engine::create(db, EngineConfig::default()).expect("engine");
        Arc::new(scheduler::Schedules::new(
            Store::new(engine),
            scheduler::scheduler_actor(),
        ))
    }

    fn by_schedule_fire(db: &Path, sel: &ReviveSelection, actor: &Actor) -> Vec<Revived> {
        let (tx, rx) = mpsc::channel();
        let launcher = Arc::new(ReviveLauncher {
            db: db.to_owned(),
            sel: sel.clone(),
            actor: actor.clone(),
            out: Mutex::new(Some(tx)),
        });
        runtime().block_on(async {
            let (mut sched, _) = scheduler::Scheduler::start(
                scheduler_on(db),
                scheduler::SystemClock,
                launcher,
                scheduler::SchedulerConfig::default(),
            )
            .expect("scheduler");
            let report = sched.trigger("revive").expect("trigger");
            assert_eq!(report.fired.len(), 1, "{report:?}");
            let revived = receive(&rx).await;
            sched.wait_idle().await;
            revived
        })
    }

    fn by_tick_hook(db: &Path, sel: &ReviveSelection, actor: &Actor) -> Vec<Revived> {
        let (tx, rx) = mpsc::channel();
        let launcher = Arc::new(ReviveLauncher {
            db: db.to_owned(),
            sel: sel.clone(),
            actor: actor.clone(),
            out: Mutex::new(None),
        });
        runtime().block_on(async {
            let (mut sched, _) = scheduler::Scheduler::start(
                scheduler_on(db),
                scheduler::SystemClock,
                launcher,
                scheduler::SchedulerConfig::default(),
            )
            .expect("scheduler");
            sched.add_hook(Box::new(ReviveHook {
                db: db.to_owned(),
                sel: sel.clone(),
                actor: actor.clone(),
                out: Some(tx),
            }));
            sched.tick().expect("tick");
            let revived = receive(&rx).await;
            sched.wait_idle().await;
            revived
        })
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    type RevivePath = fn(&Path, &ReviveSelection, &Actor) -> Vec<Revived>;

    #[test]
    fn revival_gives_the_same_result_through_every_path_that_reaches_it() {
        let paths: [(&str, RevivePath); 4] = [
            ("library", by_library),
            ("cli", by_cli),
            ("schedule fire", by_schedule_fire),
            ("tick hook", by_tick_hook),
        ];
        let operator = Actor::new(ActorType::Operator, "op");
        let scheduler_actor = Actor::new(ActorType::Scheduler, "tick");
        let dir = tempfile::tempdir().expect("tempdir");
        let mut revived_somewhere = false;
        for seed in 0..5u64 {
            let base = dir.path().join(format!("base-{seed}.db"));
            let ids = generate(&base, seed);
            let mut named: Vec<String> = ids.iter().step_by(2).cloned().collect();
            named.push("dsp-not-there".to_owned());
            let cases = [
                (ReviveSelection::Ids(named), operator.clone()),
                (ReviveSelection::All(None), operator.clone()),
                (
                    ReviveSelection::All(Some(DispatchStatus::Expired)),
                    operator.clone(),
                ),
                // Not an operator: refused (and audited) the same way everywhere.
                (ReviveSelection::All(None), scheduler_actor.clone()),
            ];
            for (c, (sel, actor)) in cases.iter().enumerate() {
                let mut seen: Vec<(&str, Value)> = Vec::new();
                for (p, (name, path)) in paths.iter().enumerate() {
                    let db = copy(&base, dir.path(), &format!("s{seed}-c{c}-p{p}.db"));
                    let since = now();
                    let revived = path(&db, sel, actor);
                    revived_somewhere |= revived.iter().any(|r| r.revived);
                    seen.push((name, observe(&db, since, &revived)));
                }
                let (first, expected) = &seen[0];
                for (name, got) in &seen[1..] {
                    assert_eq!(
                        got, expected,
                        "seed {seed}, case {c} ({sel:?} by {actor:?}): {name} differs from {first}"
                    );
                }
            }
        }
        assert!(revived_somewhere, "the generated states gave revival work");
    }

    #[test]
    fn revival_reads_no_action_kind_and_the_outbox_knows_no_scheduler() {
        let ops = include_str!("../../../outbox/src/ops.rs");
        let start = ops
            .find("pub fn revive_dispatches")
            .expect("revive_dispatches is in ops.rs");
        let end = start + ops[start..].find("\n}\n").expect("its end");
        let body = &ops[start..end];
        for word in ["action_kind", "schedule", "Schedule", "kind"] {
            assert!(
                !body.contains(word),
                "revive_dispatches mentions {word:?}: revival must not depend on who calls it"
            );
        }
        let manifest = include_str!("../../../outbox/Cargo.toml");
        assert!(
            !manifest.contains("scheduler"),
            "the outbox crate does not depend on the scheduler"
        );
    }
}
