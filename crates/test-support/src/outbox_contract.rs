//! The behaviour every `OutboxStore` must show.

use lifecycle_core::reasons::DispatchReasons as codes;
use lifecycle_core::{Actor, ActorType, Reason};
use outbox::{
    DispatchMove, DispatchPatch, DispatchStatus, ListQuery, MoveOutcome, NewDispatch, OutboxStore,
    PurgeSelection,
};

const NOW: i64 = 1_000_000_000;

fn actor() -> Actor {
    Actor::new(ActorType::Scheduler, "contract")
}

fn ok<T, E: std::fmt::Display>(r: Result<T, E>, what: &str) -> T {
    r.unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn enqueue<S: OutboxStore>(store: &S, id: &str, key: Option<&str>, at: i64) -> String {
    let mut new = NewDispatch::new(format!("payload of {id}"));
    new.dedup_key = key.map(str::to_owned);
    new.max_attempts = 3;
    ok(store.enqueue(id, &new, &actor(), at), "enqueue").id
}

fn mv(
    id: &str,
    from: DispatchStatus,
    to: DispatchStatus,
    attempt: u32,
    code: &str,
) -> DispatchMove {
    DispatchMove {
        id: id.to_owned(),
        from,
        to,
        expected_attempt: attempt,
        patch: DispatchPatch::default(),
        reason: Reason::new(code),
        actor: actor(),
        expires_at: None,
    }
}

fn claim(id: &str, from: DispatchStatus, attempt: u32, lease_until: i64) -> DispatchMove {
    let mut m = mv(
        id,
        from,
        DispatchStatus::Delivering,
        attempt,
        codes::DELIVERING_ATTEMPT,
    );
    m.patch = DispatchPatch {
        attempt: Some(attempt + 1),
        next_attempt_at: Some(Some(lease_until)),
        last_error: None,
    };
    m
}

fn status<S: OutboxStore>(store: &S, id: &str) -> Option<DispatchStatus> {
    ok(store.get(id), "get").map(|r| r.status)
}

fn ids<S: OutboxStore>(store: &S, now: i64) -> Vec<String> {
    ok(store.due(now, 100), "due")
        .into_iter()
        .map(|r| r.id)
        .collect()
}

/// Moves `id` (pending, attempt 0) to `to` through declared edges.
fn drive<S: OutboxStore>(store: &S, id: &str, to: DispatchStatus) {
    if to == DispatchStatus::Pending {
        return;
    }
    assert!(
        ok(
            store.apply(&claim(id, DispatchStatus::Pending, 0, NOW + 10)),
            "claim"
        )
        .is_applied()
    );
    let code = match to {
        DispatchStatus::Delivered => codes::DELIVERED_TRANSPORT_OK,
        DispatchStatus::Acked => codes::ACKED_CONSUMER,
        DispatchStatus::DeadLetter => codes::DEAD_LETTER_MAX_ATTEMPTS,
        DispatchStatus::Expired => codes::EXPIRED_DEADLINE,
        _ => return,
    };
    let out = ok(
        store.apply(&mv(id, DispatchStatus::Delivering, to, 1, code)),
        "finish",
    );
    assert!(out.is_applied(), "{id} -> {to}: {out:?}");
}

/// Runs the outbox store contract against fresh stores from `make`; panics
/// (with the rule that broke) on the first violation. For use in tests.
pub fn outbox_store_contract<S: OutboxStore>(make: impl Fn() -> S) {
    // Enqueue: a pending row due at `now`, attempt 0, one history row with
    // the enqueuer as actor.
    let store = make();
    let mut new = NewDispatch::new("p; $(id)");
    new.deliver_to = Some("chan".into());
    new.ack_required = true;
    new.max_attempts = 2;
    new.expires_at = Some(NOW + 50);
    let out = ok(store.enqueue("a", &new, &actor(), NOW), "enqueue");
    assert!(out.created && out.id == "a");
    let row = ok(store.get("a"), "get").expect("enqueued row exists");
    assert_eq!(
        (
            row.status,
            row.attempt,
            row.max_attempts,
            row.next_attempt_at
        ),
        (DispatchStatus::Pending, 0, 2, Some(NOW))
    );
    assert_eq!(
        (
            row.payload.as_str(),
            row.deliver_to.as_deref(),
            row.ack_required,
            row.expires_at
        ),
        ("p; $(id)", Some("chan"), true, Some(NOW + 50))
    );
    let history = ok(store.history("a"), "history");
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].from_status, None);
    assert_eq!(history[0].to_status, "pending");
    assert_eq!(history[0].actor_id, "contract");

    // Dedup: the same key returns the first id and writes nothing.
    let store = make();
    enqueue(&store, "k1", Some("key"), NOW);
    let plain = ok(
        store.enqueue("k2", &NewDispatch::new("other"), &actor(), NOW),
        "plain enqueue",
    );
    assert!(plain.created, "rows without a key never collide");
    let mut dup = NewDispatch::new("different payload");
    dup.dedup_key = Some("key".into());
    let out = ok(store.enqueue("k3", &dup, &actor(), NOW), "dup enqueue");
    assert_eq!((out.id.as_str(), out.created), ("k1", false));
    assert!(
        ok(store.get("k3"), "get").is_none(),
        "no row for a duplicate key"
    );
    assert!(ok(store.history("k3"), "history").is_empty());

    // Due: pending rows whose time (or deadline) has come, delivering rows
    // whose lease ran out; nothing else; oldest first; limit honoured.
    let store = make();
    enqueue(&store, "now", None, NOW);
    enqueue(&store, "later", None, NOW + 100);
    let mut expiring = NewDispatch::new("x");
    expiring.not_before = Some(NOW + 100);
    expiring.expires_at = Some(NOW + 5);
    ok(
        store.enqueue("expiring", &expiring, &actor(), NOW),
        "enqueue",
    );
    enqueue(&store, "leased", None, NOW - 1);
    assert!(
        ok(
            store.apply(&claim("leased", DispatchStatus::Pending, 0, NOW + 20)),
            "claim"
        )
        .is_applied()
    );
    enqueue(&store, "done", None, NOW - 2);
    drive(&store, "done", DispatchStatus::Delivered);
    assert_eq!(ids(&store, NOW), ["now"]);
    assert_eq!(ids(&store, NOW + 5), ["now", "expiring"]);
    assert_eq!(
        ids(&store, NOW + 20),
        ["now", "leased", "expiring"],
        "oldest next_attempt_at first"
    );
    assert_eq!(ok(store.due(NOW + 200, 2), "due").len(), 2);

    // A claim is a compare-and-swap on (status, attempt): of two callers
    // holding the same snapshot exactly one wins; the loser sees the winner's
    // attempt. A recovery claim on a delivering row is guarded the same way.
    let store = make();
    enqueue(&store, "c", None, NOW);
    let first = ok(
        store.apply(&claim("c", DispatchStatus::Pending, 0, NOW + 10)),
        "claim",
    );
    let second = ok(
        store.apply(&claim("c", DispatchStatus::Pending, 0, NOW + 10)),
        "claim",
    );
    assert!(first.is_applied());
    assert_eq!(
        second,
        MoveOutcome::Conflict {
            current: DispatchStatus::Delivering,
            attempt: 1
        }
    );
    let r1 = ok(
        store.apply(&claim("c", DispatchStatus::Delivering, 1, NOW + 30)),
        "recover",
    );
    let r2 = ok(
        store.apply(&claim("c", DispatchStatus::Delivering, 1, NOW + 30)),
        "recover",
    );
    assert!(r1.is_applied());
    assert!(
        matches!(r2, MoveOutcome::Conflict { attempt: 2, .. }),
        "{r2:?}"
    );
    let row = ok(store.get("c"), "get").expect("row");
    assert_eq!((row.attempt, row.next_attempt_at), (2, Some(NOW + 30)));
    let history = ok(store.history("c"), "history");
    assert_eq!(history.len(), 3, "conflicts write no history");
    assert!(
        history
            .iter()
            .all(|t| t.actor_type == "scheduler" && t.actor_id == "contract")
    );

    // A move on a missing row is NotFound, not an error.
    assert_eq!(
        ok(
            store.apply(&claim("ghost", DispatchStatus::Pending, 0, NOW)),
            "ghost"
        ),
        MoveOutcome::NotFound
    );

    // Undeclared edges are refused and audited; the recovery edge is for
    // operators only and may set a new deadline in the same write.
    let store = make();
    enqueue(&store, "u", None, NOW);
    let out = ok(
        store.apply(&mv(
            "u",
            DispatchStatus::Pending,
            DispatchStatus::DeadLetter,
            0,
            codes::DEAD_LETTER_MAX_ATTEMPTS,
        )),
        "undeclared",
    );
    assert_eq!(
        out,
        MoveOutcome::Rejected {
            current: DispatchStatus::Pending
        }
    );
    assert_eq!(status(&store, "u"), Some(DispatchStatus::Pending));
    let audit = ok(store.audit(), "audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].kind, "transition.rejected");
    drive(&store, "u", DispatchStatus::DeadLetter);
    let mut revive = mv(
        "u",
        DispatchStatus::DeadLetter,
        DispatchStatus::Pending,
        1,
        codes::PENDING_RETRY_BACKOFF,
    );
    revive.patch = DispatchPatch {
        attempt: Some(0),
        next_attempt_at: Some(Some(NOW)),
        last_error: Some(None),
    };
    revive.expires_at = Some(Some(NOW + 999));
    assert!(matches!(
        ok(store.apply(&revive), "revive"),
        MoveOutcome::Rejected { .. }
    ));
    revive.actor = Actor::new(ActorType::Operator, "op");
    assert!(ok(store.apply(&revive), "revive").is_applied());
    let row = ok(store.get("u"), "get").expect("row");
    assert_eq!(
        (row.status, row.attempt, row.expires_at),
        (DispatchStatus::Pending, 0, Some(NOW + 999))
    );

    // purge: any status; exactly one audit row; history kept; a missing id
    // writes nothing.
    let store = make();
    enqueue(&store, "p1", None, NOW);
    enqueue(&store, "p2", None, NOW);
    assert!(
        ok(
            store.apply(&claim("p2", DispatchStatus::Pending, 0, NOW + 10)),
            "claim"
        )
        .is_applied()
    );
    assert_eq!(
        ok(store.purge("p1", &actor()), "purge"),
        Some(DispatchStatus::Pending)
    );
    assert_eq!(
        ok(store.purge("p2", &actor()), "purge"),
        Some(DispatchStatus::Delivering)
    );
    assert_eq!(ok(store.purge("p2", &actor()), "purge"), None);
    let audit = ok(store.audit(), "audit");
    assert_eq!(audit.len(), 2);
    assert!(audit.iter().all(|a| a.kind == "dispatch.purge"));
    assert_eq!(audit[1].entity_id.as_deref(), Some("p2"));
    assert!(ok(store.get("p1"), "get").is_none());
    assert_eq!(ok(store.history("p2"), "history").len(), 2);

    // purge_many: an explicit status is exact (in-flight ones too); without
    // one only terminal rows go; dry runs delete nothing; every call audits.
    let store = make();
    for (id, to) in [
        ("s-pending", DispatchStatus::Pending),
        ("s-delivered", DispatchStatus::Delivered),
        ("s-acked", DispatchStatus::Acked),
        ("s-dead", DispatchStatus::DeadLetter),
        ("s-expired", DispatchStatus::Expired),
    ] {
        enqueue(&store, id, None, NOW);
        drive(&store, id, to);
    }
    enqueue(&store, "s-delivering", None, NOW);
    assert!(
        ok(
            store.apply(&claim("s-delivering", DispatchStatus::Pending, 0, NOW + 10)),
            "claim"
        )
        .is_applied()
    );
    let after_all = ok(store.list(&ListQuery::default()), "list")
        .iter()
        .map(|r| r.updated_at)
        .max()
        .unwrap_or_default()
        + 1;
    let terminal_only = ok(PurgeSelection::new(None, Some(after_all)), "selection");
    let dry = ok(store.purge_many(&terminal_only, true, &actor()), "dry run");
    assert_eq!(dry.ids, ["s-acked", "s-dead", "s-delivered", "s-expired"]);
    assert_eq!(ok(store.list(&ListQuery::default()), "list").len(), 6);
    let sel = ok(
        PurgeSelection::new(Some(DispatchStatus::Delivering), None),
        "selection",
    );
    assert_eq!(
        ok(store.purge_many(&sel, false, &actor()), "purge").ids,
        ["s-delivering"]
    );
    let done = ok(store.purge_many(&terminal_only, false, &actor()), "purge");
    assert_eq!(done.ids.len(), 4);
    let left: Vec<String> = ok(store.list(&ListQuery::default()), "list")
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(left, ["s-pending"]);
    let audit = ok(store.audit(), "audit");
    assert_eq!(
        audit
            .iter()
            .filter(|a| a.kind == "dispatch.purge_bulk")
            .count(),
        3,
        "dry runs audit too"
    );
    assert_eq!(ok(store.history("s-delivered"), "history").len(), 3);

    // The retention sweep: terminal rows written before the bound only.
    let store = make();
    enqueue(&store, "w-pending", None, NOW);
    enqueue(&store, "w-old", None, NOW);
    drive(&store, "w-old", DispatchStatus::Delivered);
    let bound = ok(store.get("w-old"), "get")
        .map(|r| r.updated_at + 1)
        .unwrap_or_default();
    std::thread::sleep(std::time::Duration::from_millis(2));
    enqueue(&store, "w-new", None, NOW);
    drive(&store, "w-new", DispatchStatus::DeadLetter);
    assert_eq!(ok(store.sweep_terminal(bound), "sweep"), 1);
    assert!(ok(store.get("w-old"), "get").is_none());
    assert!(ok(store.get("w-new"), "get").is_some());
    assert_eq!(ok(store.sweep_terminal(i64::MAX), "sweep"), 1);
    assert_eq!(status(&store, "w-pending"), Some(DispatchStatus::Pending));

    // Listing: insertion order, status filter, limit.
    let store = make();
    for id in ["l1", "l2", "l3"] {
        enqueue(&store, id, None, NOW);
    }
    drive(&store, "l2", DispatchStatus::Delivered);
    let all: Vec<String> = ok(store.list(&ListQuery::default()), "list")
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(all, ["l1", "l2", "l3"]);
    let pending = ListQuery {
        status: Some(DispatchStatus::Pending),
        limit: Some(1),
    };
    let first: Vec<String> = ok(store.list(&pending), "list")
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(first, ["l1"]);
}
