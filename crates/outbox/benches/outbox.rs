//! Outbox throughput against floors measured in the same run:
//! - `enqueue`: `enqueue_dispatch` vs one bare autocommit INSERT of the same
//!   row (bar: ratio >= 0.6);
//!   Before it, the WAL frames (pages) per commit of both sides are counted
//!   and printed on stderr with the bound their ratio sets (see
//!   `wal_frames_per_commit`);
//! - `enqueue_same_sql` (a reference, not the bar): `enqueue_dispatch` vs
//!   the bare SQL an enqueue must write, on a held connection with
//!   prepared statements: `BEGIN IMMEDIATE`, the row's INSERT, its history
//!   row's INSERT, `COMMIT`. It tells what the code costs beyond the
//!   storage work (ratio near 1: nothing) from what the extra history row
//!   costs (the gap between this pair and `enqueue`);
//! - `deliver_noop`: a due-scan of 100 rows with an in-process no-op
//!   transport vs the bare SQL of the same claim and finish (one snapshot
//!   SELECT, then per row two transactions, each a guarded UPDATE plus its
//!   history INSERT) (bar: >= 0.6);
//! - `deliver_exec`: a due-scan of 20 rows running `/bin/true` by the exec
//!   transport vs 20 bare spawn+wait of `/bin/true` (bar: >= 0.8), with one
//!   row in flight (`deliver_exec_x1`, the sequential scan) and two
//!   (`deliver_exec_x2`, `deliver_due_concurrent`).
//!
//! Each pair runs interleaved (see `interleaved`), because the machine is
//! shared and its load moves more than the differences measured.
//!
//! Ratio = floor time / outbox time for the same work; read both from
//! `target/criterion/<group>/*/new/estimates.json` (mean point estimates),
//! and the paired ratio (see `interleaved`) from stderr or
//! `target/criterion/<group>/paired.json`.

use std::hint::black_box;
use std::num::NonZeroUsize;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lifecycle_core::{Actor, ActorType};
use outbox::{
    ExecTransport, FnTransport, NewDispatch, ScanConfig, SystemClock, Template, deliver_due,
    deliver_due_concurrent, enqueue_dispatch,
};
use rusqlite::{TransactionBehavior, params};
use state_sqlite::{Engine, EngineConfig, SqliteOutbox, Store, now_micros};

static SEQ: AtomicU64 = AtomicU64::new(0);

fn seq() -> u64 {
    SEQ.fetch_add(1, Ordering::Relaxed)
}

fn store(dir: &Path, name: &str) -> SqliteOutbox {
    let engine = Engine::create(dir.join(name), EngineConfig::default()).expect("engine");
    SqliteOutbox::new(Store::new(engine))
}

fn actor() -> Actor {
    Actor::new(ActorType::Executor, "bench")
}

fn fill(store: &SqliteOutbox, n: usize, template: Option<&Template>) {
    for _ in 0..n {
        let mut new = NewDispatch::new("bench payload");
        new.dedup_key = Some(format!("k{}", seq()));
        new.template = template.cloned();
        enqueue_dispatch(store, &SystemClock, &new, &actor()).expect("enqueue");
    }
}

/// Benches `floor` and `ours` as a pair: every timed run of one is preceded
/// by an untimed run of the other, so both see the same machine load (the
/// build machine is shared and noisy). Each closure times its own critical
/// section and leaves setup out.
///
/// Criterion times the floor and the outbox in two separate windows, and
/// the load moves between them. So every back-to-back pair (both bench
/// functions run both closures) is also summed, and the *paired* ratio,
/// floor total / outbox total over the same pairs, is printed on stderr and
/// written to `target/criterion/<group>/paired.json`: its two sides always
/// ran within microseconds of each other.
fn interleaved(
    c: &mut Criterion,
    group: &str,
    elements: u64,
    (floor_name, mut floor): (&str, impl FnMut() -> Duration),
    (ours_name, mut ours): (&str, impl FnMut() -> Duration),
) {
    let (mut floor_total, mut ours_total, mut pairs) = (Duration::ZERO, Duration::ZERO, 0u64);
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(elements));
    g.sample_size(20);
    g.bench_function(floor_name, |b| {
        b.iter_custom(|iters| {
            (0..iters).fold(Duration::ZERO, |t, _| {
                let o = ours();
                let f = floor();
                (floor_total, ours_total, pairs) = (floor_total + f, ours_total + o, pairs + 1);
                t + f
            })
        });
    });
    g.bench_function(ours_name, |b| {
        b.iter_custom(|iters| {
            (0..iters).fold(Duration::ZERO, |t, _| {
                let f = floor();
                let o = ours();
                (floor_total, ours_total, pairs) = (floor_total + f, ours_total + o, pairs + 1);
                t + o
            })
        });
    });
    g.finish();
    if pairs == 0 {
        return; // filtered out
    }
    let ratio = floor_total.as_secs_f64() / ours_total.as_secs_f64().max(f64::MIN_POSITIVE);
    let per = |d: Duration| d.as_secs_f64() * 1e6 / pairs.max(1) as f64;
    let report = serde_json::json!({
        "group": group,
        "pairs": pairs,
        "floor_us_per_run": per(floor_total),
        "ours_us_per_run": per(ours_total),
        "paired_ratio": ratio,
    });
    #[allow(clippy::print_stderr, reason = "the bench reports its paired ratio")]
    {
        eprintln!(
            "{group}: paired ratio {ratio:.3} over {pairs} pairs (floor {:.1} µs, outbox {:.1} µs per run)",
            per(floor_total),
            per(ours_total)
        );
    }
    // Beside criterion's own output: <target>/criterion/<group>/.
    let exe = std::env::current_exe().ok();
    let target = exe.as_deref().and_then(|e| e.parent()?.parent()?.parent());
    if let Some(dir) = target.map(|t| t.join("criterion").join(group))
        && std::fs::create_dir_all(&dir).is_ok()
    {
        let _ = std::fs::write(dir.join("paired.json"), report.to_string());
    }
}

fn timed(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

/// WAL frames (pages) one commit of `write` appends, averaged over 2,000
/// commits after 1,000 to reach a steady state, on `store`'s file (opened
/// with automatic checkpoints off): the storage work a commit costs, which
/// the timings follow (a `pwrite` per frame, two `fsync`s per checkpoint).
fn wal_frames_per_commit(store: &SqliteOutbox, mut write: impl FnMut()) -> f64 {
    const WARM: usize = 1000;
    const COUNTED: usize = 2000;
    let conn = store.store().engine().conn().expect("conn");
    let page: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .expect("page size");
    let page = u64::try_from(page).expect("a page size");
    (0..WARM).for_each(|_| write());
    let frames = || {
        let wal = store.store().engine().path().with_extension("db-wal");
        let len = std::fs::metadata(wal).map_or(0, |m| m.len());
        len.saturating_sub(32) / (page + 24)
    };
    let done = state_sqlite::overview::checkpoint(&conn).expect("checkpoint");
    assert!(!done.busy, "nothing holds the WAL");
    let before = frames();
    (0..COUNTED).for_each(|_| write());
    (frames() - before) as f64 / COUNTED as f64
}

/// Prints the WAL frames per commit of the `enqueue` pair's two sides and
/// the bound their ratio puts on its timings.
fn enqueue_frames() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = EngineConfig {
        wal_autocheckpoint: 0,
        ..EngineConfig::default()
    };
    let open = |name: &str| {
        let engine = Engine::create(dir.path().join(name), config.clone()).expect("engine");
        SqliteOutbox::new(Store::new(engine))
    };
    let (ours, floor) = (open("ours.db"), open("floor.db"));
    let conn = floor.store().engine().conn().expect("conn");
    let mut insert = conn.prepare(FLOOR_INSERT).expect("prepare");
    let floor_frames = wal_frames_per_commit(&floor, || {
        let n = seq();
        insert
            .execute(params![
                format!("f{n}"),
                now_micros(),
                format!("k{n}"),
                "bench payload"
            ])
            .expect("insert");
    });
    let ours_frames = wal_frames_per_commit(&ours, || {
        let mut new = NewDispatch::new("bench payload");
        new.dedup_key = Some(format!("k{}", seq()));
        enqueue_dispatch(&ours, &SystemClock, &new, &actor()).expect("enqueue");
    });
    #[allow(clippy::print_stderr, reason = "the bench reports its page counts")]
    {
        eprintln!(
            "enqueue: WAL frames per commit: floor {floor_frames:.2}, enqueue {ours_frames:.2} \
             (bound {:.3})",
            floor_frames / ours_frames
        );
    }
}

/// The floor of the `enqueue` pair: one bare autocommit INSERT of the row.
const FLOOR_INSERT: &str =
    "INSERT INTO dispatch_outbox (id, status, created_at, updated_at, attempt,
        next_attempt_at, dedup_key, payload, max_attempts, ack_required)
     VALUES (?1, 'pending', ?2, ?2, 0, ?2, ?3, ?4, 5, 0)";

fn enqueue(c: &mut Criterion) {
    enqueue_frames();
    let dir = tempfile::tempdir().expect("tempdir");
    let ours = store(dir.path(), "ours.db");
    let floor = store(dir.path(), "floor.db");
    let conn = floor.store().engine().conn().expect("conn");
    let mut insert = conn.prepare(FLOOR_INSERT).expect("prepare");
    interleaved(
        c,
        "enqueue",
        1,
        ("floor_bare_insert", || {
            let n = seq();
            let (id, key) = (format!("f{n}"), format!("k{n}"));
            timed(|| {
                insert
                    .execute(params![id, now_micros(), key, "bench payload"])
                    .expect("insert");
            })
        }),
        ("enqueue_dispatch", || {
            let mut new = NewDispatch::new("bench payload");
            new.dedup_key = Some(format!("k{}", seq()));
            timed(|| {
                black_box(enqueue_dispatch(&ours, &SystemClock, &new, &actor()).expect("enqueue"));
            })
        }),
    );
}

/// The reference pair: the same two rows an enqueue writes, as bare SQL in
/// one IMMEDIATE transaction on a held connection.
fn enqueue_same_sql(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ours = store(dir.path(), "ours.db");
    let floor = store(dir.path(), "floor.db");
    let mut conn = floor.store().engine().conn().expect("conn");
    interleaved(
        c,
        "enqueue_same_sql",
        1,
        ("floor_row_and_history_sql", || {
            let n = seq();
            let (id, key) = (format!("dsp-sql-{n:x}"), format!("k{n}"));
            timed(|| {
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .expect("tx");
                let at = now_micros();
                tx.prepare_cached(
                    "INSERT INTO dispatch_outbox (id, status, created_at, updated_at, attempt,
                        next_attempt_at, dedup_key, payload, deliver_to, template_json,
                        max_attempts, ack_required, expires_at)
                     VALUES (?1, 'pending', ?2, ?2, 0, ?2, ?3, ?4, NULL, NULL, 5, 0, NULL)
                     ON CONFLICT (dedup_key) DO NOTHING",
                )
                .expect("prepare")
                .execute(params![id, at, key, "bench payload"])
                .expect("insert");
                tx.prepare_cached(
                    "INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status,
                        reason_code, reason_summary, reason_json, actor_type, actor_id,
                        override_json, created_at)
                     VALUES ('dispatch', ?1, NULL, 'pending', 'dispatch.pending.enqueued', '',
                        '{\"evidence_refs\":[],\"metadata\":{}}', 'executor', 'bench', NULL, ?2)",
                )
                .expect("prepare")
                .execute(params![id, at])
                .expect("history");
                tx.commit().expect("commit");
            })
        }),
        ("enqueue_dispatch", || {
            let mut new = NewDispatch::new("bench payload");
            new.dedup_key = Some(format!("k{}", seq()));
            timed(|| {
                black_box(enqueue_dispatch(&ours, &SystemClock, &new, &actor()).expect("enqueue"));
            })
        }),
    );
}

/// The bare SQL of one scan: the snapshot, then per row a claim and a finish,
/// each its own IMMEDIATE transaction with its guarded UPDATE and history row.
fn bare_claim_and_finish(store: &SqliteOutbox, n: usize) {
    let mut conn = store.store().engine().conn().expect("conn");
    let now = now_micros();
    let ids: Vec<String> = conn
        .prepare_cached(
            "SELECT id FROM dispatch_outbox WHERE status = 'pending' AND next_attempt_at <= ?1
             ORDER BY next_attempt_at LIMIT ?2",
        )
        .expect("prepare")
        .query_map(params![now, i64::try_from(n).expect("small")], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let history = "INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status,
        reason_code, actor_type, actor_id, created_at) VALUES ('dispatch', ?1, ?2, ?3, ?4, 'scheduler', 'bench', ?5)";
    for id in ids {
        for (from, to, attempt, code) in [
            ("pending", "delivering", 0, "dispatch.delivering.attempt"),
            (
                "delivering",
                "delivered",
                1,
                "dispatch.delivered.transport_ok",
            ),
        ] {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .expect("tx");
            let at = now_micros();
            let changed = tx
                .prepare_cached(
                    "UPDATE dispatch_outbox SET status = ?1, attempt = 1, updated_at = ?2
                     WHERE id = ?3 AND status = ?4 AND attempt = ?5",
                )
                .expect("prepare")
                .execute(params![to, at, id, from, attempt])
                .expect("update");
            assert_eq!(changed, 1);
            tx.prepare_cached(history)
                .expect("prepare")
                .execute(params![id, from, to, code, at])
                .expect("history");
            tx.commit().expect("commit");
        }
    }
}

fn deliver_noop(c: &mut Criterion) {
    const ROWS: usize = 100;
    let dir = tempfile::tempdir().expect("tempdir");
    let ours = store(dir.path(), "ours.db");
    let floor = store(dir.path(), "floor.db");
    let noop = FnTransport(|_: &outbox::Delivery<'_>| Ok(()));
    let config = ScanConfig {
        batch: ROWS,
        ..ScanConfig::default()
    };
    interleaved(
        c,
        "deliver_noop",
        ROWS as u64,
        ("floor_bare_claim_finish", || {
            fill(&floor, ROWS, None);
            timed(|| bare_claim_and_finish(&floor, ROWS))
        }),
        ("deliver_due", || {
            fill(&ours, ROWS, None);
            timed(|| {
                let report = deliver_due(&ours, &noop, &SystemClock, &config).expect("scan");
                assert_eq!(report.delivered, ROWS);
            })
        }),
    );
}

fn deliver_exec(c: &mut Criterion) {
    const ROWS: usize = 20;
    let dir = tempfile::tempdir().expect("tempdir");
    let ours = store(dir.path(), "ours.db");
    let template = Template::new(vec!["/bin/true".into(), "{payload}".into()]).expect("template");
    let exec = ExecTransport {
        default_template: None,
        timeout: Some(Duration::from_secs(60)),
        live: None,
    };
    let config = ScanConfig {
        batch: ROWS,
        ..ScanConfig::default()
    };
    let floor = || {
        timed(|| {
            for _ in 0..ROWS {
                let status = Command::new("/bin/true")
                    .arg("bench payload")
                    .status()
                    .expect("spawn");
                assert!(status.success());
            }
        })
    };
    for workers in [1, 2] {
        let n = NonZeroUsize::new(workers).expect("workers");
        interleaved(
            c,
            &format!("deliver_exec_x{workers}"),
            ROWS as u64,
            ("floor_spawn_wait_true", floor),
            ("deliver_due_exec", || {
                fill(&ours, ROWS, Some(&template));
                timed(|| {
                    let report = deliver_due_concurrent(&ours, &exec, &SystemClock, &config, n)
                        .expect("scan");
                    assert_eq!(report.delivered, ROWS);
                })
            }),
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    targets = enqueue, enqueue_same_sql, deliver_noop, deliver_exec
}
criterion_main!(benches);
