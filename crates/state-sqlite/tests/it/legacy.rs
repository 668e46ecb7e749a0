//! The legacy dispatch/schedule_run transition surface.

use std::collections::BTreeMap;

use lifecycle_core::{ActorType, CoreError, Reason};
use serde_json::{Value, json};
use state_sqlite::{LegacyTransitionRequest, StoreError};

use crate::common::{actor, count, create, db};

fn req(entity: &str, id: &str, from: &str, to: &str, code: &str) -> LegacyTransitionRequest {
    LegacyTransitionRequest {
        entity_type: entity.into(),
        entity_id: id.into(),
        from_status: from.into(),
        to_status: to.into(),
        reason: Reason::new(code),
        actor: actor(ActorType::Executor),
        guard: BTreeMap::new(),
        patch: BTreeMap::new(),
    }
}

fn map(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

// contract: SQL-013
#[test]
fn only_dispatch_and_schedule_run_are_served() {
    let db = db();
    create(&db.store, "session", "s1", "running", "run.started.ok", &[]);
    let err = db
        .store
        .legacy_transition(&req(
            "session",
            "s1",
            "running",
            "completed",
            "run.completed.ok",
        ))
        .expect_err("refused");
    assert!(
        matches!(err, StoreError::UnsupportedEntity(ref e) if e == "session"),
        "{err}"
    );
    assert_eq!(
        count(&db.store, "SELECT count(*) FROM status_transitions"),
        1
    );
}

// contract: SQL-014, SQL-015, SQL-018
#[test]
fn a_schedule_run_without_schedule_moves_with_one_history_row_each() {
    let db = db();
    create(
        &db.store,
        "schedule_run",
        "r1",
        "queued",
        "schedule.queued.created",
        &[],
    );
    let null: Option<String> = db
        .store
        .engine()
        .conn()
        .expect("conn")
        .query_row(
            "SELECT schedule_id FROM schedule_runs WHERE id = 'r1'",
            [],
            |r| r.get(0),
        )
        .expect("row");
    assert_eq!(null, None);
    for (from, to, code) in [
        ("queued", "running", "schedule.fired.due"),
        ("running", "completed", "run.completed.ok"),
    ] {
        let out = db
            .store
            .legacy_transition(&req("schedule_run", "r1", from, to, code))
            .expect("applied");
        assert!(out.ok);
        assert!(out.transition_id.is_some());
    }
    let history = db.store.history("schedule_run", "r1").expect("history");
    let moves: Vec<_> = history
        .iter()
        .map(|h| (h.from_status.clone(), h.to_status.clone()))
        .collect();
    assert_eq!(
        moves,
        vec![
            (None, "queued".to_owned()),
            (Some("queued".to_owned()), "running".to_owned()),
            (Some("running".to_owned()), "completed".to_owned()),
        ]
    );
}

// contract: SQL-016
#[test]
fn column_names_outside_the_allowlist_are_refused_before_sql() {
    let db = db();
    create(
        &db.store,
        "dispatch",
        "d1",
        "pending",
        "dispatch.pending.enqueued",
        &[],
    );
    for bad in [
        "status = 'x'; --",
        "status",
        "payload",
        "id",
        "status_reason_code",
    ] {
        let mut r = req(
            "dispatch",
            "d1",
            "pending",
            "delivering",
            "dispatch.delivering.attempt",
        );
        r.guard = map(&[(bad, json!(1))]);
        assert!(
            matches!(
                db.store.legacy_transition(&r),
                Err(StoreError::ColumnNotAllowed { .. })
            ),
            "guard {bad}"
        );
        let mut r = req(
            "dispatch",
            "d1",
            "pending",
            "delivering",
            "dispatch.delivering.attempt",
        );
        r.patch = map(&[(bad, json!(1))]);
        assert!(
            matches!(
                db.store.legacy_transition(&r),
                Err(StoreError::ColumnNotAllowed { .. })
            ),
            "patch {bad}"
        );
    }
    assert_eq!(
        count(&db.store, "SELECT count(*) FROM status_transitions"),
        1
    );
    assert_eq!(
        db.store
            .status_of("dispatch", "d1")
            .expect("s")
            .map(|s| s.0)
            .as_deref(),
        Some("pending")
    );
}

// contract: SQL-017
#[test]
fn values_are_bound_never_spliced() {
    let db = db();
    create(
        &db.store,
        "dispatch",
        "d1",
        "pending",
        "dispatch.pending.enqueued",
        &[],
    );
    let hostile = "'); DROP TABLE dispatch_outbox; --";
    let mut r = req(
        "dispatch",
        "d1",
        "pending",
        "delivering",
        "dispatch.delivering.attempt",
    );
    r.patch = map(&[("last_error", json!(hostile)), ("attempt", json!(1))]);
    assert!(db.store.legacy_transition(&r).expect("applied").ok);
    let stored: String = db
        .store
        .engine()
        .conn()
        .expect("conn")
        .query_row(
            "SELECT last_error FROM dispatch_outbox WHERE id = 'd1'",
            [],
            |r| r.get(0),
        )
        .expect("row");
    assert_eq!(stored, hostile);
    let mut r = req(
        "dispatch",
        "d1",
        "delivering",
        "delivering",
        "dispatch.delivering.attempt",
    );
    r.guard = map(&[("attempt", json!(1))]);
    r.patch = map(&[("attempt", json!(2))]);
    assert!(db.store.legacy_transition(&r).expect("claim").ok);
    let mut r = req(
        "dispatch",
        "d1",
        "delivering",
        "pending",
        "dispatch.pending.retry_backoff",
    );
    r.guard = map(&[("attempt", json!(2))]);
    r.patch = map(&[("last_error", json!("x' OR '1'='1"))]);
    assert!(db.store.legacy_transition(&r).expect("applied").ok);
    let stored: String = db
        .store
        .engine()
        .conn()
        .expect("conn")
        .query_row(
            "SELECT last_error FROM dispatch_outbox WHERE id = 'd1'",
            [],
            |r| r.get(0),
        )
        .expect("row");
    assert_eq!(stored, "x' OR '1'='1");
    // Guard values are compared literally: a tautology spliced into the
    // WHERE clause would match; bound, it is just a different string.
    let mut r = req(
        "dispatch",
        "d1",
        "pending",
        "delivering",
        "dispatch.delivering.attempt",
    );
    r.guard = map(&[("last_error", json!("nope' OR '1'='1"))]);
    r.patch = map(&[("attempt", json!(3))]);
    assert!(!db.store.legacy_transition(&r).expect("conflict").ok);
    r.guard = map(&[("last_error", json!("x' OR '1'='1"))]);
    assert!(db.store.legacy_transition(&r).expect("literal match").ok);
}

// contract: SQL-019
#[test]
fn a_stale_from_status_is_a_conflict_that_writes_nothing() {
    let db = db();
    create(
        &db.store,
        "dispatch",
        "d1",
        "pending",
        "dispatch.pending.enqueued",
        &[],
    );
    let mut r = req(
        "dispatch",
        "d1",
        "delivering",
        "delivered",
        "dispatch.delivered.transport_ok",
    );
    r.patch = map(&[("last_error", json!("should not land"))]);
    let out = db.store.legacy_transition(&r).expect("conflict");
    assert!(!out.ok);
    assert_eq!(out.current_status.as_deref(), Some("pending"));
    assert_eq!(
        count(&db.store, "SELECT count(*) FROM status_transitions"),
        1
    );
    assert_eq!(
        count(
            &db.store,
            "SELECT count(*) FROM dispatch_outbox WHERE last_error IS NULL"
        ),
        1
    );
}

// contract: SQL-020, SQL-021, LC-027, LC-028
#[test]
fn undeclared_edges_raise_even_from_terminal() {
    let db = db();
    create(
        &db.store,
        "schedule_run",
        "r1",
        "queued",
        "schedule.queued.created",
        &[],
    );
    create(
        &db.store,
        "dispatch",
        "d1",
        "pending",
        "dispatch.pending.enqueued",
        &[],
    );
    db.store
        .legacy_transition(&req(
            "dispatch",
            "d1",
            "pending",
            "acked",
            "dispatch.acked.consumer",
        ))
        .expect("acked");
    for r in [
        req(
            "schedule_run",
            "r1",
            "queued",
            "completed",
            "run.completed.ok",
        ),
        req(
            "dispatch",
            "d1",
            "acked",
            "pending",
            "dispatch.pending.enqueued",
        ),
    ] {
        let err = db.store.legacy_transition(&r).expect_err("raises");
        assert!(
            matches!(err, StoreError::Rule(CoreError::UndeclaredEdge { .. })),
            "{err}"
        );
    }
    assert_eq!(
        count(&db.store, "SELECT count(*) FROM admin_events"),
        0,
        "no rejection rows: it raised"
    );
    assert_eq!(
        count(&db.store, "SELECT count(*) FROM status_transitions"),
        3
    );
}

// contract: SQL-022, SQL-024
#[test]
fn guards_and_patches_apply_together_or_not_at_all() {
    let db = db();
    create(
        &db.store,
        "dispatch",
        "d1",
        "pending",
        "dispatch.pending.enqueued",
        &[],
    );
    db.store
        .legacy_transition(&req(
            "dispatch",
            "d1",
            "pending",
            "delivering",
            "dispatch.delivering.attempt",
        ))
        .expect("delivering");
    let mut stale = req(
        "dispatch",
        "d1",
        "delivering",
        "delivering",
        "dispatch.delivering.attempt",
    );
    stale.guard = map(&[("attempt", json!(5))]);
    stale.patch = map(&[("attempt", json!(6)), ("last_error", json!("x"))]);
    assert!(!db.store.legacy_transition(&stale).expect("conflict").ok);
    let (attempt, err): (i64, Option<String>) = db
        .store
        .engine()
        .conn()
        .expect("conn")
        .query_row(
            "SELECT attempt, last_error FROM dispatch_outbox WHERE id = 'd1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("row");
    assert_eq!((attempt, err), (0, None));
    let mut fresh = stale.clone();
    fresh.guard = map(&[("attempt", json!(0))]);
    assert!(db.store.legacy_transition(&fresh).expect("claim").ok);
    let (attempt, err): (i64, Option<String>) = db
        .store
        .engine()
        .conn()
        .expect("conn")
        .query_row(
            "SELECT attempt, last_error FROM dispatch_outbox WHERE id = 'd1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("row");
    assert_eq!((attempt, err.as_deref()), (6, Some("x")));
}

// contract: SQL-025
#[test]
fn a_vanished_row_is_not_found_not_a_conflict() {
    let db = db();
    let err = db
        .store
        .legacy_transition(&req(
            "dispatch",
            "gone",
            "pending",
            "delivering",
            "dispatch.delivering.attempt",
        ))
        .expect_err("not found");
    assert!(
        matches!(err, StoreError::Rule(CoreError::NotFound { .. })),
        "{err}"
    );
}

// contract: SQL-031
#[test]
fn the_legacy_surface_never_writes_reason_columns() {
    let db = db();
    create(
        &db.store,
        "schedule_run",
        "r1",
        "queued",
        "schedule.queued.created",
        &[],
    );
    db.store
        .legacy_transition(&req(
            "schedule_run",
            "r1",
            "queued",
            "running",
            "schedule.fired.due",
        ))
        .expect("applied");
    let code: Option<String> = db
        .store
        .engine()
        .conn()
        .expect("conn")
        .query_row(
            "SELECT status_reason_code FROM schedule_runs WHERE id = 'r1'",
            [],
            |r| r.get(0),
        )
        .expect("row");
    assert_eq!(
        code.as_deref(),
        Some("schedule.queued.created"),
        "only the create wrote it"
    );
    // dispatch_outbox has no reason columns at all, and transitions fine.
    create(
        &db.store,
        "dispatch",
        "d1",
        "pending",
        "dispatch.pending.enqueued",
        &[],
    );
    assert!(
        db.store
            .legacy_transition(&req(
                "dispatch",
                "d1",
                "pending",
                "delivering",
                "dispatch.delivering.attempt"
            ))
            .expect("ok")
            .ok
    );
}
