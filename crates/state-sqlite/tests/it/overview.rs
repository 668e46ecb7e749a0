//! The read side (`overview`): id-prefix resolution against a model, and
//! prune's retention rules on a real file.

use lifecycle_core::{Actor, ActorType, InitialCommand, Reason, TransitionCommand};
use proptest::prelude::*;
use state_sqlite::StoreError;
use state_sqlite::overview::{self, SessionFilter};

use crate::common::db;

fn start(store: &state_sqlite::Store, id: &str) {
    store
        .create(&InitialCommand {
            entity_type: "session".into(),
            entity_id: id.into(),
            status: "running".into(),
            reason: Reason::new("run.started.ok"),
            actor: Actor::new(ActorType::Executor, "t"),
            patch: Default::default(),
        })
        .expect("create");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// An exact id wins; otherwise exactly one id with the prefix resolves,
    /// none is NoSuchId and several are AmbiguousId naming only matches.
    /// The alphabet includes the characters around the range bound (é,
    /// U+10FFFF) so the scan's upper bound is exercised.
    #[test]
    fn prefixes_resolve_like_the_model(
        ids in proptest::collection::btree_set("[ab\u{e9}\u{10FFFF}]{1,3}", 1..7),
        prefix in "[ab\u{e9}\u{10FFFF}]{0,2}",
    ) {
        let d = db();
        for id in &ids {
            start(&d.store, id);
        }
        let conn = d.store.engine().conn().expect("conn");
        let matching: Vec<&String> = ids.iter().filter(|id| id.starts_with(&prefix)).collect();
        let got = overview::resolve_id(&conn, "session", &prefix);
        if ids.contains(&prefix) {
            prop_assert_eq!(got.expect("exact"), prefix);
        } else {
            match (matching.as_slice(), got) {
                ([one], Ok(id)) => prop_assert_eq!(&id, *one),
                ([], Err(StoreError::NoSuchId { .. })) => {}
                (many, Err(StoreError::AmbiguousId { candidates, .. })) if many.len() > 1 => {
                    prop_assert!(candidates.len() >= 2);
                    prop_assert!(candidates.iter().all(|c| c.starts_with(&prefix)));
                }
                (m, other) => prop_assert!(false, "{m:?} but {other:?}"),
            }
        }
    }
}

#[test]
fn an_unknown_entity_type_is_a_rule_error() {
    let d = db();
    let conn = d.store.engine().conn().expect("conn");
    assert!(matches!(
        overview::resolve_id(&conn, "spaceship", "x"),
        Err(StoreError::Rule(_))
    ));
}

#[test]
fn prune_takes_only_ended_sessions_and_keeps_history() {
    let d = db();
    for id in ["done", "open"] {
        start(&d.store, id);
    }
    let actor = Actor::new(ActorType::Executor, "t");
    d.store
        .transition(
            &TransitionCommand::new(
                "session",
                "done",
                "completed",
                Reason::new("run.completed.ok"),
                actor,
            )
            .expecting("running"),
        )
        .expect("end");
    let mut conn = d.store.engine().conn().expect("conn");
    // Nothing ended before the epoch.
    let r = overview::prune(&mut conn, 0, false, ("operator", "t")).expect("prune");
    assert_eq!(r.sessions, 0);
    let r = overview::prune(&mut conn, i64::MAX, false, ("operator", "t")).expect("prune");
    assert_eq!(r.sessions, 1);
    let left: Vec<String> = overview::sessions(&conn, &SessionFilter::all())
        .expect("ls")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(left, ["open"]);
    assert_eq!(
        state_sqlite::query::history(&conn, "session", "done")
            .expect("h")
            .len(),
        2
    );
    let audits: i64 = conn
        .query_row(
            "SELECT count(*) FROM admin_events WHERE kind = 'state.prune'",
            [],
            |r| r.get(0),
        )
        .expect("audits");
    assert_eq!(audits, 2);
}
