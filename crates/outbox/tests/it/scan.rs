//! The due-scan's rules, each run against the SQLite store and the memory
//! store with an injected clock.

use std::time::Duration;

use lifecycle_core::reasons::DispatchReasons as codes;
use lifecycle_core::{Actor, ActorType};
use outbox::{
    Backoff, DispatchMove, DispatchPatch, DispatchRow, DispatchStatus, ListQuery, ManualClock,
    MoveOutcome, NewDispatch, OutboxStore, ScanConfig, ScanReport, ack_dispatch, deliver_due,
    enqueue_dispatch, purge_dispatch,
};

use crate::common::{Counting, T0, actor, clock, db};

/// Generates one test per store for a generic scenario.
macro_rules! both {
    ($scenario:ident: $memory:ident, $sqlite:ident) => {
        #[test]
        fn $memory() {
            $scenario(&test_support::MemoryOutbox::default());
        }
        #[test]
        fn $sqlite() {
            let db = db();
            $scenario(&db.store);
        }
    };
}

fn config() -> ScanConfig {
    ScanConfig {
        batch: 100,
        lease: Duration::from_secs(60),
        backoff: Backoff {
            base: Duration::from_secs(10),
            max: Duration::from_secs(100),
        },
        actor: None,
    }
}

fn enqueue<S: OutboxStore>(store: &S, clock: &ManualClock, new: NewDispatch) -> String {
    enqueue_dispatch(store, clock, &new, &actor())
        .expect("enqueue")
        .id
}

fn dispatch(max_attempts: u32, ack_required: bool) -> NewDispatch {
    let mut new = NewDispatch::new("payload");
    new.max_attempts = max_attempts;
    new.ack_required = ack_required;
    new
}

fn scan<S: OutboxStore>(store: &S, t: &Counting, clock: &ManualClock) -> ScanReport {
    deliver_due(store, t, clock, &config()).expect("scan")
}

fn row<S: OutboxStore>(store: &S, id: &str) -> DispatchRow {
    store.get(id).expect("get").expect("row exists")
}

/// Scans `n` times, advancing past any backoff between scans.
fn scan_many<S: OutboxStore>(store: &S, t: &Counting, clock: &ManualClock, n: usize) {
    for _ in 0..n {
        scan(store, t, clock);
        clock.advance(Duration::from_secs(1000));
    }
}

fn last_reason<S: OutboxStore>(store: &S, id: &str) -> String {
    store
        .history(id)
        .expect("history")
        .last()
        .map(|t| t.reason_code.clone())
        .unwrap_or_default()
}

// contract: OBX-002
fn retries_until_success<S: OutboxStore>(store: &S) {
    let clock = clock();
    let t = Counting::failing();
    let id = enqueue(store, &clock, dispatch(5, false));
    scan_many(store, &t, &clock, 2);
    assert_eq!(
        t.count(&id),
        2,
        "the template ran once per scan while failing"
    );
    assert_eq!(row(store, &id).status, DispatchStatus::Pending);
    t.set_fail(false);
    scan_many(store, &t, &clock, 3);
    assert_eq!(t.count(&id), 3, "re-run until success, then never again");
    assert_eq!(row(store, &id).status, DispatchStatus::Delivered);
}
both!(retries_until_success: obx002_memory_scan_reruns_until_success, obx002_sqlite_scan_reruns_until_success);

// contract: OBX-005
fn enqueue_is_idempotent<S: OutboxStore>(store: &S) {
    let clock = clock();
    let mut new = dispatch(3, false);
    new.dedup_key = Some("run:r1:terminal".into());
    let first = enqueue_dispatch(store, &clock, &new, &actor()).expect("first");
    new.payload = "a different payload".into();
    let second = enqueue_dispatch(store, &clock, &new, &actor()).expect("second");
    assert!(first.created);
    assert!(!second.created);
    assert_eq!(first.id, second.id);
    let rows = store.list(&ListQuery::default()).expect("list");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].payload, "payload", "the first row is untouched");
}
both!(enqueue_is_idempotent: obx005_memory_enqueue_idempotent, obx005_sqlite_enqueue_idempotent);

// contract: OBX-006
fn max_attempts_bounds_every_tier<S: OutboxStore>(store: &S) {
    let clock = clock();
    let failing = Counting::failing();
    let plain = enqueue(store, &clock, dispatch(3, false));
    scan_many(store, &failing, &clock, 10);
    assert_eq!(failing.count(&plain), 3);
    let ok = Counting::default();
    let acked = enqueue(store, &clock, dispatch(4, true));
    scan_many(store, &ok, &clock, 10);
    assert_eq!(ok.count(&acked), 4, "ack-required rows are bounded too");
    for id in [&plain, &acked] {
        assert_eq!(row(store, id).status, DispatchStatus::DeadLetter);
    }
}
both!(max_attempts_bounds_every_tier: obx006_memory_max_attempts, obx006_sqlite_max_attempts);

// contract: OBX-007
fn unacked_rows_dead_letter<S: OutboxStore>(store: &S) {
    let clock = clock();
    let t = Counting::default();
    let id = enqueue(store, &clock, dispatch(2, true));
    scan_many(store, &t, &clock, 2);
    assert_eq!(t.count(&id), 2);
    assert_eq!(
        row(store, &id).status,
        DispatchStatus::Pending,
        "still waiting for the ack"
    );
    scan_many(store, &t, &clock, 5);
    let r = row(store, &id);
    assert_eq!(r.status, DispatchStatus::DeadLetter);
    assert_eq!(last_reason(store, &id), codes::DEAD_LETTER_ACK_TIMEOUT);
    assert_eq!(t.count(&id), 2, "not sent again");
}
both!(unacked_rows_dead_letter: obx007_memory_ack_timeout, obx007_sqlite_ack_timeout);

// contract: OBX-008
fn expiry_is_an_extra_bound<S: OutboxStore>(store: &S) {
    let clock = clock();
    let t = Counting::failing();
    let mut new = dispatch(10, false);
    new.expires_at = Some(T0 + 15_000_000);
    let bounded = enqueue(store, &clock, new);
    let unbounded = enqueue(store, &clock, dispatch(4, false));
    scan(store, &t, &clock);
    clock.advance(Duration::from_secs(20));
    scan(store, &t, &clock);
    let r = row(store, &bounded);
    assert_eq!(
        r.status,
        DispatchStatus::Expired,
        "past expires_at with attempts left"
    );
    assert_eq!(last_reason(store, &bounded), codes::EXPIRED_DEADLINE);
    assert_eq!(t.count(&bounded), 1, "not sent after its deadline");
    // Without a deadline, only max_attempts stops it, however late.
    clock.advance(Duration::from_secs(10 * 365 * 86_400));
    scan_many(store, &t, &clock, 10);
    assert_eq!(t.count(&unbounded), 4);
    assert_eq!(row(store, &unbounded).status, DispatchStatus::DeadLetter);
    assert_eq!(t.count(&bounded), 1);
}
both!(expiry_is_an_extra_bound: obx008_memory_expiry, obx008_sqlite_expiry);

// contract: OBX-009
fn default_tier_delivers_once<S: OutboxStore>(store: &S) {
    let clock = clock();
    let t = Counting::default();
    let id = enqueue(store, &clock, dispatch(5, false));
    let report = scan(store, &t, &clock);
    assert_eq!((report.claimed, report.delivered), (1, 1));
    assert_eq!(row(store, &id).status, DispatchStatus::Delivered);
    scan_many(store, &t, &clock, 5);
    assert_eq!(t.count(&id), 1);
    assert_eq!(last_reason(store, &id), codes::DELIVERED_TRANSPORT_OK);
}
both!(default_tier_delivers_once: obx009_memory_default_tier, obx009_sqlite_default_tier);

// contract: OBX-010
fn ack_required_loops_back<S: OutboxStore>(store: &S) {
    let clock = clock();
    let t = Counting::default();
    let id = enqueue(store, &clock, dispatch(5, true));
    scan(store, &t, &clock);
    let r = row(store, &id);
    assert_eq!(
        r.status,
        DispatchStatus::Pending,
        "not delivered: waits for its ack"
    );
    assert_eq!(r.next_attempt_at, Some(T0 + 10_000_000), "with backoff");
    clock.advance(Duration::from_secs(9));
    scan(store, &t, &clock);
    assert_eq!(t.count(&id), 1, "not before the backoff");
    clock.advance(Duration::from_secs(1));
    scan(store, &t, &clock);
    assert_eq!(t.count(&id), 2, "sent again after it");
    assert_eq!(
        row(store, &id).next_attempt_at,
        Some(T0 + 30_000_000),
        "doubling"
    );
    ack_dispatch(store, &id, &Actor::new(ActorType::Webhook, "consumer")).expect("ack");
    scan_many(store, &t, &clock, 5);
    assert_eq!(t.count(&id), 2);
    assert_eq!(row(store, &id).status, DispatchStatus::Acked);
    assert_eq!(last_reason(store, &id), codes::ACKED_CONSUMER);
}
both!(ack_required_loops_back: obx010_memory_ack_loop, obx010_sqlite_ack_loop);

// contract: OBX-011
fn failures_back_off_then_stop<S: OutboxStore>(store: &S) {
    let clock = clock();
    let t = Counting::failing();
    let id = enqueue(store, &clock, dispatch(3, false));
    let mut waits = Vec::new();
    for _ in 0..3 {
        scan(store, &t, &clock);
        let r = row(store, &id);
        if let Some(next) = r.next_attempt_at {
            waits.push(next - clock_now(&clock));
            clock.set(next);
        }
    }
    assert_eq!(
        waits,
        [10_000_000, 20_000_000],
        "exponential backoff between attempts"
    );
    let r = row(store, &id);
    assert_eq!(
        r.status,
        DispatchStatus::DeadLetter,
        "terminal once exhausted"
    );
    assert_eq!(r.last_error.as_deref(), Some("refused by test transport"));
    assert_eq!(last_reason(store, &id), codes::DEAD_LETTER_MAX_ATTEMPTS);
    scan_many(store, &t, &clock, 3);
    assert_eq!(t.count(&id), 3, "no attempt after exhaustion");
}
both!(failures_back_off_then_stop: obx011_memory_backoff, obx011_sqlite_backoff);

fn clock_now(clock: &ManualClock) -> i64 {
    use outbox::Clock;
    clock.now_micros()
}

// contract: OBX-012
fn live_leases_are_not_taken_over<S: OutboxStore>(store: &S) {
    let clock = clock();
    let t = Counting::default();
    let id = enqueue(store, &clock, dispatch(3, false));
    // A scanner claims the row and dies before sending.
    let claim = DispatchMove {
        id: id.clone(),
        from: DispatchStatus::Pending,
        to: DispatchStatus::Delivering,
        expected_attempt: 0,
        patch: DispatchPatch {
            attempt: Some(1),
            next_attempt_at: Some(Some(T0 + 60_000_000)),
            last_error: None,
        },
        reason: lifecycle_core::Reason::new(codes::DELIVERING_ATTEMPT),
        actor: actor(),
        expires_at: None,
    };
    assert!(store.apply(&claim).expect("claim").is_applied());
    clock.advance(Duration::from_secs(59));
    let report = scan(store, &t, &clock);
    assert_eq!((report.examined, t.count(&id)), (0, 0), "inside its lease");
    clock.advance(Duration::from_secs(1));
    scan(store, &t, &clock);
    assert_eq!(t.count(&id), 1, "recovered once the lease ran out");
    let r = row(store, &id);
    assert_eq!((r.status, r.attempt), (DispatchStatus::Delivered, 2));
}
both!(live_leases_are_not_taken_over: obx012_memory_lease, obx012_sqlite_lease);

// contract: OBX-012
fn the_scan_itself_writes_the_lease_and_a_second_scan_respects_it<S: OutboxStore>(store: &S) {
    let clock = clock();
    let id = enqueue(store, &clock, dispatch(3, false));
    let lease = config().lease;
    let lease_micros = i64::try_from(lease.as_micros()).expect("lease fits");
    let rival = Counting::default();
    let seen = std::cell::RefCell::new(Vec::new());
    // While the first scan's send is in flight, look at the claim it wrote
    // and let a second scanner run just inside and just past the lease.
    let in_flight = outbox::FnTransport(|d: &outbox::Delivery<'_>| {
        let r = row(store, d.id);
        let inside = ManualClock::new(T0 + lease_micros - 1_000_000);
        let report = deliver_due(store, &rival, &inside, &config()).expect("rival scan");
        seen.borrow_mut().push((
            r.status,
            r.next_attempt_at,
            report.examined,
            rival.count(d.id),
        ));
        Ok(())
    });
    let report = deliver_due(store, &in_flight, &clock, &config()).expect("scan");
    assert_eq!(report.examined, 1);
    assert_eq!(
        seen.into_inner(),
        [(DispatchStatus::Delivering, Some(T0 + lease_micros), 0, 0)],
        "the claim carries a lease of config.lease and a scan inside it sends nothing"
    );
    let r = row(store, &id);
    assert_eq!((r.status, r.attempt), (DispatchStatus::Delivered, 1));
}
both!(
    the_scan_itself_writes_the_lease_and_a_second_scan_respects_it:
        obx012_memory_scan_lease,
    obx012_sqlite_scan_lease
);

/// A store whose snapshot is frozen: every scan sees the rows as they were
/// when the wrapper was built, as two overlapping scans would.
struct Frozen<'a, S> {
    inner: &'a S,
    snapshot: Vec<DispatchRow>,
    before_moves: Box<dyn Fn() + 'a>,
}

impl<S: OutboxStore> OutboxStore for Frozen<'_, S> {
    type Error = S::Error;
    fn enqueue(
        &self,
        id: &str,
        new: &NewDispatch,
        actor: &Actor,
        now: i64,
    ) -> Result<outbox::Enqueued, S::Error> {
        self.inner.enqueue(id, new, actor, now)
    }
    fn get(&self, id: &str) -> Result<Option<DispatchRow>, S::Error> {
        self.inner.get(id)
    }
    fn list(&self, q: &ListQuery) -> Result<Vec<DispatchRow>, S::Error> {
        self.inner.list(q)
    }
    fn due(&self, _now: i64, _limit: usize) -> Result<Vec<DispatchRow>, S::Error> {
        (self.before_moves)();
        Ok(self.snapshot.clone())
    }
    fn apply(&self, mv: &DispatchMove) -> Result<MoveOutcome, S::Error> {
        self.inner.apply(mv)
    }
    fn purge(&self, id: &str, a: &Actor) -> Result<Option<DispatchStatus>, S::Error> {
        self.inner.purge(id, a)
    }
    fn purge_many(
        &self,
        s: &outbox::PurgeSelection,
        d: bool,
        a: &Actor,
    ) -> Result<outbox::PurgeReport, S::Error> {
        self.inner.purge_many(s, d, a)
    }
    fn sweep_terminal(&self, b: i64) -> Result<u64, S::Error> {
        self.inner.sweep_terminal(b)
    }
    fn history(&self, id: &str) -> Result<Vec<lifecycle_core::TransitionRecord>, S::Error> {
        self.inner.history(id)
    }
    fn audit(&self) -> Result<Vec<outbox::AuditRecord>, S::Error> {
        self.inner.audit()
    }
}

// contract: OBX-013
fn overlapping_scans_send_once_per_attempt<S: OutboxStore + Sync>(store: &S) {
    let clock = clock();
    let t = Counting::default();
    let id = enqueue(store, &clock, dispatch(3, true));
    let other = enqueue(store, &clock, dispatch(3, false));
    let snapshot = store.due(T0, 10).expect("due");
    assert_eq!(snapshot.len(), 2);
    // Both scans hold the same snapshot, run one after the other and then
    // concurrently: each attempt's claim is won once.
    for _ in 0..2 {
        let frozen = Frozen {
            inner: store,
            snapshot: snapshot.clone(),
            before_moves: Box::new(|| {}),
        };
        deliver_due(&frozen, &t, &clock, &config()).expect("scan");
    }
    assert_eq!((t.count(&id), t.count(&other)), (1, 1));
    // The ack-required row is pending again with attempt 1: a stale
    // snapshot of it (attempt 0, also pending) must not win a second claim
    // although the status matches.
    assert_eq!(row(store, &id).status, DispatchStatus::Pending);
    clock.advance(Duration::from_secs(1000));
    let fresh = store.due(clock_now(&clock), 10).expect("due");
    std::thread::scope(|s| {
        for _ in 0..4 {
            let snap = fresh.clone();
            let (t, clock) = (&t, &clock);
            s.spawn(move || {
                let frozen = Frozen {
                    inner: store,
                    snapshot: snap,
                    before_moves: Box::new(|| {}),
                };
                deliver_due(&frozen, t, clock, &config()).expect("scan");
            });
        }
    });
    let attempts = t
        .sends
        .lock()
        .expect("lock")
        .get(&id)
        .cloned()
        .unwrap_or_default();
    assert_eq!(attempts, [1, 2], "one transport run per attempt");
}
both!(overlapping_scans_send_once_per_attempt: obx013_memory_overlap, obx013_sqlite_overlap);

// contract: OBX-014
fn purged_rows_are_skipped<S: OutboxStore>(store: &S) {
    let clock = clock();
    let t = Counting::default();
    let ids: Vec<String> = (0..3)
        .map(|_| enqueue(store, &clock, dispatch(3, false)))
        .collect();
    let snapshot = store.due(T0, 10).expect("due");
    let victim = ids[1].clone();
    let frozen = Frozen {
        inner: store,
        snapshot,
        before_moves: Box::new(|| {
            purge_dispatch(store, &victim, &actor()).expect("purge");
        }),
    };
    let report = deliver_due(&frozen, &t, &clock, &config()).expect("the scan does not fail");
    assert_eq!(
        (report.examined, report.missing, report.delivered),
        (3, 1, 2)
    );
    assert_eq!(t.count(&ids[1]), 0);
    for id in [&ids[0], &ids[2]] {
        assert_eq!(row(store, id).status, DispatchStatus::Delivered);
    }
    assert!(store.get(&ids[1]).expect("get").is_none());
}
both!(purged_rows_are_skipped: obx014_memory_purged_mid_scan, obx014_sqlite_purged_mid_scan);

// contract: OBX-015
fn scans_record_the_callers_actor<S: OutboxStore>(store: &S) {
    let clock = clock();
    let t = Counting::failing();
    let a = enqueue(store, &clock, dispatch(1, false));
    scan(store, &t, &clock);
    let moves = store.history(&a).expect("history");
    assert_eq!(moves.len(), 3);
    for m in &moves[1..] {
        assert_eq!(
            (m.actor_type.as_str(), m.actor_id.as_str()),
            ("scheduler", "scheduler-tick")
        );
    }
    let b = enqueue(store, &clock, dispatch(1, false));
    let mut custom = config();
    custom.actor = Some(Actor::new(ActorType::System, "studio-daemon"));
    deliver_due(store, &t, &clock, &custom).expect("scan");
    let moves = store.history(&b).expect("history");
    assert_eq!(moves.len(), 3);
    for m in &moves[1..] {
        assert_eq!(
            (m.actor_type.as_str(), m.actor_id.as_str()),
            ("system", "studio-daemon")
        );
    }
}
both!(scans_record_the_callers_actor: obx015_memory_actor, obx015_sqlite_actor);

#[test]
fn a_zero_lease_is_refused() {
    let store = test_support::MemoryOutbox::default();
    let mut c = config();
    c.lease = Duration::ZERO;
    let err = deliver_due(&store, &Counting::default(), &clock(), &c).expect_err("zero lease");
    assert!(err.to_string().contains("lease"), "{err}");
}

#[test]
fn acking_a_terminal_row_is_an_error() {
    let store = test_support::MemoryOutbox::default();
    let clock = clock();
    let id = enqueue(&store, &clock, dispatch(1, false));
    scan(&store, &Counting::default(), &clock);
    let err = ack_dispatch(&store, &id, &actor()).expect_err("delivered rows cannot be acked");
    assert!(err.to_string().contains("delivered"), "{err}");
    assert!(ack_dispatch(&store, "nope", &actor()).is_err());
}

/// Runs one workload through plain `deliver_due` (`None`) or with
/// `workers` rows in flight, and returns each row's (status, attempt,
/// sends), in enqueue order.
fn workload<S: OutboxStore + Sync>(
    store: &S,
    workers: Option<usize>,
) -> Vec<(DispatchStatus, u32, usize)> {
    let clock = clock();
    let t = Counting::default();
    let ids: Vec<String> = (0..40u32)
        .map(|i| enqueue(store, &clock, dispatch(1 + i % 3, i % 4 == 0)))
        .collect();
    for round in 0..6 {
        t.set_fail(round % 2 == 1);
        match workers.and_then(std::num::NonZeroUsize::new) {
            Some(n) => outbox::deliver_due_concurrent(store, &t, &clock, &config(), n),
            None => deliver_due(store, &t, &clock, &config()),
        }
        .expect("scan");
        clock.advance(Duration::from_secs(1000));
    }
    ids.iter()
        .map(|id| {
            let r = row(store, id);
            (r.status, r.attempt, t.count(id))
        })
        .collect()
}

// contract: OBX-013
#[test]
fn concurrent_and_pipelined_scans_follow_the_sequential_rules() {
    let sequential = workload(&db().store, None);
    for workers in [1, 2, 4] {
        let db = db();
        assert_eq!(
            workload(&db.store, Some(workers)),
            sequential,
            "{workers} workers"
        );
    }
    for workers in [1, 4] {
        let memory = test_support::MemoryOutbox::default();
        assert_eq!(
            workload(&memory, Some(workers)),
            sequential,
            "{workers} workers"
        );
    }
    assert!(
        sequential
            .iter()
            .all(|(s, a, n)| s.is_terminal() && *a as usize == *n)
    );
}

/// `deliver_ids` acts on the named rows only: a due row it is not given is
/// neither claimed nor sent, a named row that is not due is left as is, and
/// a named id that does not exist counts as missing.
fn deliver_ids_touches_only_the_named_rows<S: OutboxStore>(store: &S) {
    let clock = clock();
    let t = Counting::default();
    let mine = enqueue(store, &clock, dispatch(3, false));
    let other = enqueue(store, &clock, dispatch(3, false));
    let mut later = dispatch(3, false);
    later.not_before = Some(T0 + 60_000_000);
    let later = enqueue(store, &clock, later);
    let ids = vec![mine.clone(), later.clone(), "dsp-never-enqueued".to_owned()];
    let report = outbox::deliver_ids(store, &t, &clock, &config(), &ids).expect("deliver");
    assert_eq!(
        (
            report.examined,
            report.claimed,
            report.delivered,
            report.missing
        ),
        (2, 1, 1, 1),
        "{report:?}"
    );
    assert_eq!(row(store, &mine).status, DispatchStatus::Delivered);
    assert_eq!(t.count(&mine), 1);
    let untouched = row(store, &other);
    assert_eq!(
        (untouched.status, untouched.attempt, t.count(&other)),
        (DispatchStatus::Pending, 0, 0),
        "a due row not named is left to the regular scans"
    );
    assert_eq!(row(store, &later).attempt, 0, "not due yet: not sent");
    assert_eq!(store.history(&other).expect("history").len(), 1);
    // The regular scan still finds the other row.
    assert_eq!(scan(store, &t, &clock).delivered, 1);
    assert_eq!(t.count(&other), 1);
}
both!(deliver_ids_touches_only_the_named_rows: deliver_ids_memory, deliver_ids_sqlite);
