//! Many hosts on one database: worker processes (this test binary run
//! again), each with its own engine and pool, race through one outbox
//! while others are SIGKILLed mid-claim.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use lifecycle_core::reasons::DispatchReasons;
use lifecycle_core::{Actor, ActorType, Reason};
use outbox::{
    DispatchMove, DispatchPatch, DispatchStatus, FnTransport, NewDispatch, OutboxStore, ScanConfig,
    SendError, SystemClock, deliver_due,
};
use rustix::process::{Pid, Signal, kill_process};
use state_postgres::{PgConfig, PgEngine, PgOutbox, PgStore, now_micros};

use crate::common::{PG_VAR, Schema, server};

const ROLE: &str = "STATE_PG_RACE_ROLE";
const SCHEMA: &str = "STATE_PG_RACE_SCHEMA";
const ROWS: usize = 120;

fn worker_outbox() -> (PgOutbox, String) {
    let url = std::env::var(PG_VAR).expect("server");
    let schema = std::env::var(SCHEMA).expect("schema");
    let engine = PgEngine::open(
        &PgConfig::new(url.as_str())
            .with_schema(schema.clone())
            .with_pool_size(2),
    )
    .expect("worker engine");
    (PgOutbox::new(PgStore::new(engine)), url)
}

fn say(line: &str) {
    #[allow(
        clippy::print_stdout,
        reason = "the worker reports to its parent on stdout"
    )]
    {
        println!("{line}");
    }
}

/// The worker entry point: does nothing unless started by a race test.
#[test]
fn worker() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let (outbox, url) = worker_outbox();
    let me = format!("{role}-{}", std::process::id());
    match role.as_str() {
        // Holds d0's row lock in an open claim transaction until killed.
        "hold" => {
            let mut c = outbox.store().engine().connect_direct().expect("direct");
            let mut tx = c.transaction().expect("begin");
            tx.query_one(
                "SELECT attempt FROM dispatch_outbox WHERE id = 'd0' FOR UPDATE",
                &[],
            )
            .expect("lock d0");
            say("READY");
            std::thread::sleep(Duration::from_secs(120));
        }
        // Wins d1's first claim (committed, one-second lease), then is
        // killed before sending.
        "claim_and_die" => {
            let out = outbox
                .apply(&DispatchMove {
                    id: "d1".into(),
                    from: DispatchStatus::Pending,
                    to: DispatchStatus::Delivering,
                    expected_attempt: 0,
                    patch: DispatchPatch {
                        attempt: Some(1),
                        next_attempt_at: Some(Some(now_micros() + 1_000_000)),
                        last_error: None,
                    },
                    reason: Reason::new(DispatchReasons::DELIVERING_ATTEMPT),
                    actor: Actor::new(ActorType::Scheduler, me.clone()),
                    expires_at: None,
                })
                .expect("claim d1");
            assert!(out.is_applied(), "{out:?}");
            say("READY");
            std::thread::sleep(Duration::from_secs(120));
        }
        // Scans until every row is terminal; the transport records each
        // send (row, attempt, worker) in the shared database.
        _ => {
            let mut log = postgres::Client::connect(&url, postgres::NoTls).expect("log client");
            let schema = std::env::var(SCHEMA).expect("schema");
            log.batch_execute(&format!("SET search_path = {schema}"))
                .expect("path");
            let log = Mutex::new(log);
            let transport = FnTransport(|d: &outbox::Delivery<'_>| {
                let mut c = log.lock().map_err(|_| SendError("poisoned".into()))?;
                c.execute(
                    "INSERT INTO transport_log (id, attempt, worker) VALUES ($1, $2, $3)",
                    &[&d.id, &i64::from(d.attempt), &me],
                )
                .map_err(|e| SendError(e.to_string()))?;
                Ok(())
            });
            let config = ScanConfig {
                batch: 8,
                lease: Duration::from_secs(1),
                actor: Some(Actor::new(ActorType::Scheduler, me.clone())),
                ..ScanConfig::default()
            };
            say("READY");
            let deadline = Instant::now() + Duration::from_secs(90);
            loop {
                let report = deliver_due(&outbox, &transport, &SystemClock, &config).expect("scan");
                let open = outbox
                    .list(&outbox::ListQuery::default())
                    .expect("list")
                    .iter()
                    .filter(|r| !r.status.is_terminal())
                    .count();
                if open == 0 {
                    break;
                }
                assert!(Instant::now() < deadline, "rows never finished");
                if report.examined == 0 {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            say("DONE");
        }
    }
}

fn spawn(role: &str, schema: &str) -> (Child, BufReader<std::process::ChildStdout>) {
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args(["race::worker", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(SCHEMA, schema)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn worker");
    let out = BufReader::new(child.stdout.take().expect("stdout"));
    (child, out)
}

fn wait_for(out: &mut BufReader<std::process::ChildStdout>, word: &str) {
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).expect("read worker");
        assert!(n > 0, "worker ended before {word}");
        if line.contains(word) {
            return;
        }
    }
}

fn sigkill(child: &mut Child) {
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid")).expect("pid");
    kill_process(pid, Signal::KILL).expect("kill");
    child.wait().expect("reap");
}

// contract: OBX-013
// Four scanning processes with their own pools, one more holding a row lock
// mid-claim and one dying after a won claim, plus one scanner SIGKILLed
// mid-run: every claim has exactly one winner, the transport runs at most
// once per (row, attempt), nothing is lost, and the leases recover the
// rows the dead held.
#[test]
fn four_hosts_race_on_one_outbox_and_killed_workers_lose_nothing() {
    let Some(url) = server("race") else { return };
    let schema = Schema::new(&url, "race");
    let outbox = schema.outbox();
    let actor = Actor::new(ActorType::Scheduler, "producer");
    for i in 0..ROWS {
        let mut new = NewDispatch::new(format!("payload {i}"));
        new.max_attempts = 10;
        outbox
            .enqueue(&format!("d{i}"), &new, &actor, now_micros())
            .expect("enqueue");
    }
    schema
        .client()
        .batch_execute("CREATE TABLE transport_log (id TEXT NOT NULL, attempt BIGINT NOT NULL, worker TEXT NOT NULL)")
        .expect("log table");

    let (mut holder, mut holder_out) = spawn("hold", &schema.name);
    wait_for(&mut holder_out, "READY");
    let (mut dier, mut dier_out) = spawn("claim_and_die", &schema.name);
    wait_for(&mut dier_out, "READY");
    sigkill(&mut dier);

    let mut scanners: Vec<_> = (0..4).map(|_| spawn("scan", &schema.name)).collect();
    for (_, out) in &mut scanners {
        wait_for(out, "READY");
    }
    // Kill one scanner mid-run (it may hold claims it never finishes) and
    // the lock holder (its open transaction rolls back).
    std::thread::sleep(Duration::from_millis(150));
    let (mut victim, _) = scanners.remove(0);
    sigkill(&mut victim);
    std::thread::sleep(Duration::from_millis(150));
    sigkill(&mut holder);
    for (mut child, mut out) in scanners {
        wait_for(&mut out, "DONE");
        assert!(child.wait().expect("wait").success(), "scanner failed");
    }

    let mut c = schema.client();
    let rows = outbox.list(&outbox::ListQuery::default()).expect("list");
    assert_eq!(rows.len(), ROWS, "nothing lost");
    assert!(
        rows.iter().all(|r| r.status == DispatchStatus::Delivered),
        "every row delivered: {:?}",
        rows.iter()
            .filter(|r| r.status != DispatchStatus::Delivered)
            .collect::<Vec<_>>()
    );
    let dups: i64 = c
        .query_one(
            "SELECT count(*) FROM (SELECT id, attempt FROM transport_log GROUP BY id, attempt HAVING count(*) > 1) d",
            &[],
        )
        .expect("dups")
        .get(0);
    assert_eq!(dups, 0, "the transport ran twice for one attempt");
    for row in &rows {
        // Each attempt number was won exactly once: one claim transition
        // per attempt, and the row's final attempt was sent.
        let claims = outbox
            .history(&row.id)
            .expect("history")
            .iter()
            .filter(|t| t.to_status == "delivering")
            .count();
        assert_eq!(
            claims, row.attempt as usize,
            "{}: claims vs attempt",
            row.id
        );
        let sent: i64 = c
            .query_one(
                "SELECT count(*) FROM transport_log WHERE id = $1 AND attempt = $2",
                &[&row.id, &i64::from(row.attempt)],
            )
            .expect("sent")
            .get(0);
        assert_eq!(sent, 1, "{}: final attempt sent once", row.id);
    }
    // d1's first claim died with its worker: attempt 1 was never sent and
    // the lease gave the row to a live scanner.
    let d1 = rows.iter().find(|r| r.id == "d1").expect("d1");
    assert!(d1.attempt >= 2, "d1 recovered through a new claim: {d1:?}");
    let first: i64 = c
        .query_one(
            "SELECT count(*) FROM transport_log WHERE id = 'd1' AND attempt = 1",
            &[],
        )
        .expect("d1 attempt 1")
        .get(0);
    assert_eq!(first, 0, "the dead claim never sent");
}

fn claim_move(id: &str) -> DispatchMove {
    DispatchMove {
        id: id.into(),
        from: DispatchStatus::Pending,
        to: DispatchStatus::Delivering,
        expected_attempt: 0,
        patch: DispatchPatch {
            attempt: Some(1),
            next_attempt_at: Some(Some(now_micros() + 60_000_000)),
            last_error: None,
        },
        reason: Reason::new(DispatchReasons::DELIVERING_ATTEMPT),
        actor: Actor::new(ActorType::Scheduler, "holder"),
        expires_at: None,
    }
}

#[test]
fn a_sent_row_is_finished_even_while_a_rival_scan_holds_its_lock() {
    let Some(url) = server("finish_lock") else {
        return;
    };
    let schema = Schema::new(&url, "finish_lock");
    let outbox = schema.outbox();
    let id = outbox::enqueue_dispatch(
        &outbox,
        &SystemClock,
        &NewDispatch::new("p"),
        &Actor::new(ActorType::Operator, "t"),
    )
    .expect("enqueue")
    .id;
    assert!(matches!(
        outbox.apply(&claim_move(&id)).expect("claim"),
        outbox::MoveOutcome::Applied { .. }
    ));
    // A rival scan's claim transaction holds the row (it is about to lose
    // the attempt CAS)...
    let mut rival = schema.client();
    let mut rival_tx = rival.transaction().expect("rival tx");
    rival_tx
        .query(
            "SELECT id FROM dispatch_outbox WHERE id = $1 FOR UPDATE",
            &[&id],
        )
        .expect("rival lock");
    // ...when the holder records its successful send.
    let finish = DispatchMove {
        from: DispatchStatus::Delivering,
        to: DispatchStatus::Delivered,
        expected_attempt: 1,
        patch: DispatchPatch::default(),
        reason: Reason::new(DispatchReasons::DELIVERED_TRANSPORT_OK),
        ..claim_move(&id)
    };
    let holder = outbox.clone();
    let done = std::thread::spawn(move || holder.apply(&finish));
    // The finish waits for the row (polled: it shows as a lock wait).
    let mut watcher = schema.client();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let waiting: i64 = watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
                 AND query LIKE '%dispatch_outbox%FOR UPDATE%'",
                &[],
            )
            .expect("activity")
            .get(0);
        if waiting > 0 || done.is_finished() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the finish never reached the row"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    rival_tx.rollback().expect("rival gives up");
    let out = done.join().expect("finish thread").expect("finish");
    assert!(
        matches!(out, outbox::MoveOutcome::Applied { .. }),
        "the sent row is finished, not left delivering: {out:?}"
    );
    let row = outbox.get(&id).expect("get").expect("row");
    assert_eq!(row.status, DispatchStatus::Delivered);
}
