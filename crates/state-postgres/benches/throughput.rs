//! Guarded transitions/s and outbox claims/s on PostgreSQL with 1, 4 and 8
//! workers, each beside its floor measured in the same run (the same
//! statements, sent raw on the same pool: no decide(), no statement
//! building, no JSON), and beside SQLite's store on a file.
//!
//! Needs a server: `eval "$(.ci/pg-cluster start)"` then
//! `cargo bench -p state-postgres --bench throughput`. Without
//! `LIONRT_TEST_PG` it prints why and measures nothing. At the end it
//! prints the service/floor ratios from criterion's estimates.
#![allow(clippy::print_stderr, reason = "the bench reports its ratios")]
#![allow(missing_docs, reason = "criterion's generated entry points")]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use lifecycle_core::reasons::DispatchReasons;
use lifecycle_core::{Actor, ActorType, InitialCommand, Reason, TransitionCommand};
use outbox::{DispatchMove, DispatchPatch, DispatchStatus, NewDispatch, OutboxStore};
use postgres::types::Type;
use state_postgres::{PgConfig, PgEngine, PgOutbox, PgStore, now_micros};

const WORKERS: [usize; 3] = [1, 4, 8];

fn actor() -> Actor {
    Actor::new(ActorType::Executor, "bench")
}

fn heartbeat(id: &str) -> TransitionCommand {
    TransitionCommand::new(
        "session",
        id,
        "running",
        Reason::new("run.started.ok"),
        actor(),
    )
    .expecting("running")
}

fn setup_sessions<E: std::fmt::Debug>(
    create: impl Fn(&InitialCommand) -> Result<lifecycle_core::Outcome, E>,
) {
    for w in 0..8 {
        create(&InitialCommand {
            entity_type: "session".into(),
            entity_id: format!("s{w}"),
            status: "running".into(),
            reason: Reason::new("run.started.ok"),
            actor: actor(),
            patch: Default::default(),
        })
        .expect("create");
    }
}

/// Runs `op(worker)` `iters` times in total over `workers` threads.
fn parallel(workers: usize, iters: u64, op: impl Fn(usize) + Sync) -> Duration {
    let per = (iters / workers as u64).max(1);
    let start = Instant::now();
    std::thread::scope(|s| {
        for w in 0..workers {
            let op = &op;
            s.spawn(move || {
                for _ in 0..per {
                    op(w);
                }
            });
        }
    });
    start.elapsed()
}

/// The service's transition, raw: read, CAS update with the history append
/// in one statement, commit.
fn floor_transition(engine: &PgEngine, id: &str) {
    let mut conn = engine.conn().expect("conn");
    let mut tx = conn.transaction().expect("begin");
    let row = tx
        .query_typed_one(
            "SELECT status, updated_at FROM sessions WHERE id = $1",
            &[(&id, Type::TEXT)],
        )
        .expect("read");
    let (status, version): (String, i64) = (row.get(0), row.get(1));
    let next = now_micros().max(version + 1);
    let expected = vec![status.clone()];
    let rows = tx
        .query_typed(
            "WITH w AS (UPDATE sessions SET status = $1, updated_at = $2, status_reason_code = $3,
                status_reason_summary = $4, status_reason_json = $5
                WHERE id = $6 AND status = ANY($7) AND updated_at = $8 RETURNING id)
             INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status,
                reason_code, reason_summary, reason_json, actor_type, actor_id, override_json, created_at)
             SELECT $9, w.id, $10, $1, $3, $4, $5, $11, $12, $13, $2 FROM w RETURNING id",
            &[
                (&"running", Type::TEXT),
                (&next, Type::INT8),
                (&"run.started.ok", Type::TEXT),
                (&"", Type::TEXT),
                (&r#"{"evidence_refs":[],"metadata":{}}"#, Type::TEXT),
                (&id, Type::TEXT),
                (&expected, Type::TEXT_ARRAY),
                (&version, Type::INT8),
                (&"session", Type::TEXT),
                (&status, Type::TEXT),
                (&"executor", Type::TEXT),
                (&"bench", Type::TEXT),
                (&None::<String>, Type::TEXT),
            ],
        )
        .expect("write");
    assert_eq!(rows.len(), 1);
    tx.commit().expect("commit");
}

fn claim(id: &str, attempt: u32) -> DispatchMove {
    DispatchMove {
        id: id.to_owned(),
        from: DispatchStatus::Delivering,
        to: DispatchStatus::Delivering,
        expected_attempt: attempt,
        patch: DispatchPatch {
            attempt: Some(attempt + 1),
            next_attempt_at: Some(Some(now_micros() + 60_000_000)),
            last_error: None,
        },
        reason: Reason::new(DispatchReasons::DELIVERING_ATTEMPT),
        actor: Actor::new(ActorType::Scheduler, "bench"),
        expires_at: None,
    }
}

/// The outbox claim, raw: `FOR UPDATE SKIP LOCKED` read, the CAS on status,
/// version and attempt with the history append, commit.
fn floor_claim(engine: &PgEngine, id: &str) {
    let mut conn = engine.conn().expect("conn");
    let mut tx = conn.transaction().expect("begin");
    let row = tx
        .query_typed_one(
            "SELECT status, updated_at, attempt FROM dispatch_outbox WHERE id = $1 FOR UPDATE SKIP LOCKED",
            &[(&id, Type::TEXT)],
        )
        .expect("read");
    let (status, version, attempt): (String, i64, i64) = (row.get(0), row.get(1), row.get(2));
    let next = now_micros().max(version + 1);
    let lease = now_micros() + 60_000_000;
    let expected = vec![status.clone()];
    let rows = tx
        .query_typed(
            "WITH w AS (UPDATE dispatch_outbox SET status = $1, updated_at = $2, attempt = $3,
                next_attempt_at = $4 WHERE id = $5 AND status = ANY($6) AND updated_at = $7
                AND attempt IS NOT DISTINCT FROM $8 RETURNING id)
             INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status,
                reason_code, reason_summary, reason_json, actor_type, actor_id, override_json, created_at)
             SELECT $9, w.id, $10, $1, $11, $12, $13, $14, $15, $16, $2 FROM w RETURNING id",
            &[
                (&"delivering", Type::TEXT),
                (&next, Type::INT8),
                (&(attempt + 1), Type::INT8),
                (&lease, Type::INT8),
                (&id, Type::TEXT),
                (&expected, Type::TEXT_ARRAY),
                (&version, Type::INT8),
                (&attempt, Type::INT8),
                (&"dispatch", Type::TEXT),
                (&status, Type::TEXT),
                (&DispatchReasons::DELIVERING_ATTEMPT, Type::TEXT),
                (&"", Type::TEXT),
                (&r#"{"evidence_refs":[],"metadata":{}}"#, Type::TEXT),
                (&"scheduler", Type::TEXT),
                (&"bench", Type::TEXT),
                (&None::<String>, Type::TEXT),
            ],
        )
        .expect("write");
    assert_eq!(rows.len(), 1);
    tx.commit().expect("commit");
}

/// Enqueues d0..d7 and claims each once, so every bench claim is the
/// guarded `delivering -> delivering` reclaim on the attempt counter.
fn setup_claims<S: OutboxStore>(outbox: &S) {
    for w in 0..8 {
        let id = format!("d{w}");
        outbox
            .enqueue(&id, &NewDispatch::new("p"), &actor(), now_micros())
            .expect("enqueue");
        let mut first = claim(&id, 0);
        first.from = DispatchStatus::Pending;
        assert!(outbox.apply(&first).expect("claim").is_applied());
    }
}

fn attempt_of<S: OutboxStore>(outbox: &S, id: &str) -> u32 {
    outbox.get(id).expect("get").expect("row").attempt
}

/// The workers' current attempt counters, read before the timed part:
/// each worker owns its row, so it knows the attempt it will claim from,
/// as a scan knows it from its due snapshot.
fn attempts<S: OutboxStore>(outbox: &S) -> Vec<AtomicU32> {
    (0..8)
        .map(|w| AtomicU32::new(attempt_of(outbox, &format!("d{w}"))))
        .collect()
}

fn service_claim<S: OutboxStore>(outbox: &S, attempts: &[AtomicU32], w: usize) {
    let attempt = attempts[w].fetch_add(1, Ordering::Relaxed);
    let id = format!("d{w}");
    assert!(
        outbox
            .apply(&claim(&id, attempt))
            .expect("claim")
            .is_applied()
    );
}

/// floor time / service time with the two run in alternating batches (the
/// order flipped every round), so both see the same load from whatever
/// else runs on the machine: the ratio the acceptance bar (>= 0.8) reads.
fn interleaved_ratio(
    workers: usize,
    service: impl Fn(usize) + Sync,
    floor: impl Fn(usize) + Sync,
) -> f64 {
    const ROUNDS: usize = 16;
    let batch = 48u64;
    let (mut s_total, mut f_total) = (Duration::ZERO, Duration::ZERO);
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            s_total += parallel(workers, batch, &service);
            f_total += parallel(workers, batch, &floor);
        } else {
            f_total += parallel(workers, batch, &floor);
            s_total += parallel(workers, batch, &service);
        }
    }
    f_total.as_secs_f64() / s_total.as_secs_f64()
}

fn criterion_dir() -> PathBuf {
    // target/<profile>/deps/<bench> -> target/criterion
    std::env::current_exe()
        .ok()
        .and_then(|p| p.ancestors().nth(3).map(|t| t.join("criterion")))
        .unwrap_or_else(|| PathBuf::from("target/criterion"))
}

fn median_ns(dir: &std::path::Path, group: &str, name: &str, workers: usize) -> Option<f64> {
    let text = std::fs::read_to_string(
        dir.join(group)
            .join(name)
            .join(workers.to_string())
            .join("new/estimates.json"),
    )
    .ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["median"]["point_estimate"].as_f64()
}

fn main() {
    let Ok(url) = std::env::var("LIONRT_TEST_PG") else {
        eprintln!(
            "state-postgres benches skipped: LIONRT_TEST_PG is unset (start a server with `eval \"$(.ci/pg-cluster start)\"`)"
        );
        return;
    };
    let dir = criterion_dir();
    let mut c = Criterion::default()
        .output_directory(&dir)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();

    let schema = format!("bench_{}", std::process::id());
    let engine = PgEngine::open(
        &PgConfig::new(url.as_str())
            .with_schema(schema.clone())
            .with_pool_size(8),
    )
    .expect("engine");
    let store = PgStore::new(engine.clone());
    setup_sessions(|cmd| store.create(cmd));
    let pg_outbox = PgOutbox::new(store.clone());
    setup_claims(&pg_outbox);

    let tmp = tempfile::tempdir().expect("tempdir");
    let sqlite = state_sqlite::Store::new(
        state_sqlite::Engine::create(
            tmp.path().join("bench.db"),
            state_sqlite::EngineConfig::default(),
        )
        .expect("sqlite"),
    );
    setup_sessions(|cmd| sqlite.create(cmd));
    let sqlite_outbox = state_sqlite::SqliteOutbox::new(sqlite.clone());
    setup_claims(&sqlite_outbox);

    {
        let mut g = c.benchmark_group("transitions");
        for w in WORKERS {
            g.throughput(Throughput::Elements(1));
            g.bench_function(BenchmarkId::new("pg_service", w), |b| {
                b.iter_custom(|n| {
                    parallel(w, n, |i| {
                        store
                            .transition(&heartbeat(&format!("s{i}")))
                            .expect("transition");
                    })
                })
            });
            g.bench_function(BenchmarkId::new("pg_floor", w), |b| {
                b.iter_custom(|n| parallel(w, n, |i| floor_transition(&engine, &format!("s{i}"))))
            });
            g.bench_function(BenchmarkId::new("sqlite_service", w), |b| {
                b.iter_custom(|n| {
                    parallel(w, n, |i| {
                        sqlite
                            .transition(&heartbeat(&format!("s{i}")))
                            .expect("transition");
                    })
                })
            });
        }
        g.finish();
    }
    {
        let mut g = c.benchmark_group("claims");
        for w in WORKERS {
            g.throughput(Throughput::Elements(1));
            g.bench_function(BenchmarkId::new("pg_service", w), |b| {
                b.iter_custom(|n| {
                    let at = attempts(&pg_outbox);
                    parallel(w, n, |i| service_claim(&pg_outbox, &at, i))
                })
            });
            g.bench_function(BenchmarkId::new("pg_floor", w), |b| {
                b.iter_custom(|n| parallel(w, n, |i| floor_claim(&engine, &format!("d{i}"))))
            });
            g.bench_function(BenchmarkId::new("sqlite_service", w), |b| {
                b.iter_custom(|n| {
                    let at = attempts(&sqlite_outbox);
                    parallel(w, n, |i| service_claim(&sqlite_outbox, &at, i))
                })
            });
        }
        g.finish();
    }
    c.final_summary();

    for group in ["transitions", "claims"] {
        for w in WORKERS {
            let service = median_ns(&dir, group, "pg_service", w);
            let floor = median_ns(&dir, group, "pg_floor", w);
            let sqlite = median_ns(&dir, group, "sqlite_service", w);
            let interleaved = if group == "transitions" {
                interleaved_ratio(
                    w,
                    |i| {
                        store
                            .transition(&heartbeat(&format!("s{i}")))
                            .expect("transition");
                    },
                    |i| floor_transition(&engine, &format!("s{i}")),
                )
            } else {
                let at = attempts(&pg_outbox);
                interleaved_ratio(
                    w,
                    |i| service_claim(&pg_outbox, &at, i),
                    // The floor claims the same rows: keep the counters
                    // in step with it.
                    |i| {
                        floor_claim(&engine, &format!("d{i}"));
                        at[i].fetch_add(1, Ordering::Relaxed);
                    },
                )
            };
            if let (Some(s), Some(f)) = (service, floor) {
                // Criterion's median is the time per operation over all
                // workers (iter_custom spreads the n operations over them):
                // ops/s = 1e9 / ns.
                let per_s = |ns: f64| 1e9 / ns;
                eprintln!(
                    "{group} workers={w}: postgres {:.0}/s, floor {:.0}/s (criterion ratio {:.2}); interleaved ratio {interleaved:.2}; sqlite {}",
                    per_s(s),
                    per_s(f),
                    f / s,
                    sqlite.map_or_else(|| "-".to_owned(), |q| format!("{:.0}/s", per_s(q)))
                );
            }
        }
    }
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("cleanup");
    let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
}
