//! Purges, the retention sweep and revival, through the library calls.

use std::time::Duration;

use outbox::{
    DispatchStatus, ListQuery, ManualClock, NewDispatch, OutboxError, OutboxStore, ReviveOptions,
    ReviveSelection, ScanConfig, deliver_due, enqueue_dispatch, purge_dispatch, purge_dispatches,
    retention_sweep, revive_dispatches,
};

use crate::common::{Counting, T0, actor, clock, db, operator};

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

/// Enqueues one row per status: pending, delivering (a crashed claim),
/// delivered, acked, dead_letter, expired. Returns ids in that order.
fn one_of_each<S: OutboxStore>(store: &S, clock: &ManualClock) -> Vec<String> {
    let mk = |max: u32, ack: bool, expires: Option<i64>, not_before: Option<i64>| {
        let mut new = NewDispatch::new("p");
        new.max_attempts = max;
        new.ack_required = ack;
        new.expires_at = expires;
        new.not_before = not_before;
        enqueue_dispatch(store, clock, &new, &actor())
            .expect("enqueue")
            .id
    };
    let row = |id: &str| store.get(id).expect("get").expect("row");
    let cfg = ScanConfig::default();
    let delivered = mk(1, false, None, None);
    let acked = mk(3, true, None, None);
    let expired = mk(3, false, Some(T0 + 1), None);
    clock.advance(Duration::from_micros(2));
    deliver_due(store, &Counting::default(), clock, &cfg).expect("scan");
    outbox::ack_dispatch(store, &acked, &actor()).expect("ack");
    let dead = mk(1, false, None, None);
    deliver_due(store, &Counting::failing(), clock, &cfg).expect("scan");
    let never = Some(i64::MAX / 4);
    let pending = mk(3, false, None, never);
    let delivering = mk(3, false, None, None);
    let claim = outbox::DispatchMove {
        id: delivering.clone(),
        from: DispatchStatus::Pending,
        to: DispatchStatus::Delivering,
        expected_attempt: 0,
        patch: outbox::DispatchPatch {
            attempt: Some(1),
            next_attempt_at: Some(never),
            last_error: None,
        },
        reason: lifecycle_core::Reason::new("dispatch.delivering.attempt"),
        actor: actor(),
        expires_at: None,
    };
    assert!(store.apply(&claim).expect("claim").is_applied());
    let ids = vec![pending, delivering, delivered, acked, dead, expired];
    let statuses: Vec<DispatchStatus> = ids.iter().map(|id| row(id).status).collect();
    assert_eq!(statuses, DispatchStatus::ALL);
    ids
}

fn sorted(ids: &[String]) -> Vec<String> {
    let mut v = ids.to_vec();
    v.sort();
    v
}

fn audit_count<S: OutboxStore>(store: &S) -> usize {
    store.audit().expect("audit").len()
}

fn present<S: OutboxStore>(store: &S) -> Vec<String> {
    let ids: Vec<String> = store
        .list(&ListQuery::default())
        .expect("list")
        .into_iter()
        .map(|r| r.id)
        .collect();
    sorted(&ids)
}

// contract: OBX-016
// contract: OBX-017
fn purge_one_deletes_any_status<S: OutboxStore>(store: &S) {
    let clock = clock();
    let ids = one_of_each(store, &clock);
    for (i, id) in ids.iter().enumerate() {
        let before = audit_count(store);
        let was = purge_dispatch(store, id, &operator()).expect("purge");
        assert_eq!(was, DispatchStatus::ALL[i]);
        assert!(store.get(id).expect("get").is_none(), "{was} row deleted");
        assert_eq!(audit_count(store), before + 1, "exactly one audit row");
        let last = store.audit().expect("audit").pop().expect("row");
        assert_eq!(
            (last.kind.as_str(), last.entity_id.as_deref()),
            ("dispatch.purge", Some(id.as_str()))
        );
        assert_eq!(last.actor, operator());
    }
    let before = audit_count(store);
    assert!(matches!(
        purge_dispatch(store, &ids[0], &operator()),
        Err(OutboxError::NotFound(_))
    ));
    assert_eq!(audit_count(store), before, "a failed purge audits nothing");
}
both!(purge_one_deletes_any_status: obx016_memory_purge_one, obx016_sqlite_purge_one);

// contract: OBX-018
fn bulk_purge_needs_a_selection<S: OutboxStore>(store: &S) {
    let clock = clock();
    one_of_each(store, &clock);
    let before = audit_count(store);
    let err = purge_dispatches(store, None, None, false, &operator()).expect_err("bare call");
    assert!(matches!(err, OutboxError::EmptyPurgeSelection), "{err}");
    assert_eq!(present(store).len(), 6, "nothing deleted");
    assert_eq!(audit_count(store), before);
}
both!(bulk_purge_needs_a_selection: obx018_memory_bare_purge, obx018_sqlite_bare_purge);

// contract: OBX-019
fn explicit_status_is_exact<S: OutboxStore>(store: &S) {
    let clock = clock();
    let ids = one_of_each(store, &clock);
    let out = purge_dispatches(
        store,
        Some(DispatchStatus::Pending),
        None,
        false,
        &operator(),
    )
    .expect("purge pending");
    assert_eq!(out.ids, [ids[0].clone()]);
    let out = purge_dispatches(
        store,
        Some(DispatchStatus::Delivering),
        Some(i64::MAX),
        false,
        &operator(),
    )
    .expect("purge delivering");
    assert_eq!(out.ids, [ids[1].clone()]);
    assert_eq!(present(store), sorted(&ids[2..]));
}
both!(explicit_status_is_exact: obx019_memory_exact_status, obx019_sqlite_exact_status);

// contract: OBX-020
fn status_less_purge_is_terminal_only<S: OutboxStore>(store: &S) {
    let clock = clock();
    let ids = one_of_each(store, &clock);
    let out = purge_dispatches(store, None, Some(i64::MAX), false, &operator()).expect("purge");
    assert_eq!(out.ids, sorted(&ids[2..]));
    assert_eq!(
        present(store),
        sorted(&ids[..2]),
        "pending and delivering kept"
    );
}
both!(status_less_purge_is_terminal_only: obx020_memory_terminal_only, obx020_sqlite_terminal_only);

// contract: OBX-021
fn bulk_purge_always_audits<S: OutboxStore>(store: &S) {
    let clock = clock();
    one_of_each(store, &clock);
    let before = audit_count(store);
    let dry = purge_dispatches(store, None, Some(i64::MAX), true, &operator()).expect("dry");
    assert!(dry.dry_run);
    assert_eq!(dry.ids.len(), 4);
    assert_eq!(present(store).len(), 6, "a dry run deletes nothing");
    assert_eq!(audit_count(store), before + 1);
    let empty = purge_dispatches(
        store,
        Some(DispatchStatus::Acked),
        Some(0),
        false,
        &operator(),
    )
    .expect("empty selection");
    assert!(empty.ids.is_empty());
    assert_eq!(audit_count(store), before + 2, "an empty purge audits too");
    let last = store.audit().expect("audit").pop().expect("row");
    assert_eq!(last.kind, "dispatch.purge_bulk");
    assert_eq!(last.detail["dry_run"], false);
}
both!(bulk_purge_always_audits: obx021_memory_audit, obx021_sqlite_audit);

// contract: OBX-022
fn purges_keep_history<S: OutboxStore>(store: &S) {
    let clock = clock();
    let ids = one_of_each(store, &clock);
    let histories: Vec<usize> = ids
        .iter()
        .map(|id| store.history(id).expect("h").len())
        .collect();
    purge_dispatch(store, &ids[0], &operator()).expect("purge");
    purge_dispatches(store, None, Some(i64::MAX), false, &operator()).expect("purge");
    purge_dispatches(
        store,
        Some(DispatchStatus::Delivering),
        None,
        false,
        &operator(),
    )
    .expect("purge");
    assert!(present(store).is_empty());
    for (id, n) in ids.iter().zip(histories) {
        assert!(n >= 1);
        assert_eq!(
            store.history(id).expect("history").len(),
            n,
            "{id} history kept"
        );
    }
}
both!(purges_keep_history: obx022_memory_history_kept, obx022_sqlite_history_kept);

// contract: OBX-023
fn retention_sweep_is_terminal_only<S: OutboxStore>(store: &S) {
    let clock = clock();
    let ids = one_of_each(store, &clock);
    let audits = audit_count(store);
    // Far in the future every row is old; only terminal ones may go.
    let far = ManualClock::new(i64::MAX / 2);
    let n = retention_sweep(store, &far, Duration::from_secs(86_400)).expect("sweep");
    assert_eq!(n, 4);
    assert_eq!(present(store), sorted(&ids[..2]));
    assert_eq!(
        audit_count(store),
        audits,
        "the sweep is not a purge: no audit row"
    );
    // Recent terminal rows stay.
    let fresh = enqueue_dispatch(store, &clock, &NewDispatch::new("x"), &actor()).expect("enqueue");
    deliver_due(store, &Counting::default(), &clock, &ScanConfig::default()).expect("scan");
    let now = outbox::SystemClock;
    assert_eq!(
        retention_sweep(store, &now, Duration::from_secs(3600)).expect("sweep"),
        0
    );
    assert!(store.get(&fresh.id).expect("get").is_some());
}
both!(retention_sweep_is_terminal_only: obx023_memory_sweep, obx023_sqlite_sweep);

// contract: OBX-024
fn revival_is_a_plain_call<S: OutboxStore>(store: &S) {
    let clock = clock();
    let ids = one_of_each(store, &clock);
    let (dead, expired) = (&ids[4], &ids[5]);
    // Called directly: no schedule, no action kind, no runtime around it.
    let out = revive_dispatches(
        store,
        &clock,
        &ReviveSelection::All(None),
        &ReviveOptions::default(),
        &operator(),
    )
    .expect("revive");
    assert!(out.iter().all(|r| r.revived), "{out:?}");
    assert_eq!(out.len(), 2);
    for id in [dead, expired] {
        let r = store.get(id).expect("get").expect("row");
        assert_eq!(
            (r.status, r.attempt, r.expires_at),
            (DispatchStatus::Pending, 0, None)
        );
    }
    let t = Counting::default();
    deliver_due(store, &t, &clock, &ScanConfig::default()).expect("scan");
    for id in [dead, expired] {
        assert_eq!(t.count(id), 1, "revived rows are delivered again");
    }
    // Only operators take the recovery edge; a refusal is reported, audited,
    // and changes nothing.
    let again = enqueue_dispatch(
        store,
        &clock,
        &{
            let mut n = NewDispatch::new("x");
            n.max_attempts = 1;
            n
        },
        &actor(),
    )
    .expect("enqueue");
    deliver_due(store, &Counting::failing(), &clock, &ScanConfig::default()).expect("scan");
    let refused = revive_dispatches(
        store,
        &clock,
        &ReviveSelection::Ids(vec![again.id.clone(), "missing".into(), ids[0].clone()]),
        &ReviveOptions::default(),
        &actor(),
    )
    .expect("revive");
    assert!(refused.iter().all(|r| !r.revived), "{refused:?}");
    assert_eq!(
        store.get(&again.id).expect("get").expect("row").status,
        DispatchStatus::DeadLetter
    );
}
both!(revival_is_a_plain_call: obx024_memory_revival, obx024_sqlite_revival);
