//! Declarative sets: apply reconciles in one transaction.

#[allow(unused_imports, reason = "trait methods")]
use scheduler::ScheduleStore;
use scheduler::{Error, parse_set};

use crate::common::{Env, cron, interval};

const T0: i64 = 1_800_000_000_000_000;

fn names(env: &Env) -> Vec<(String, String)> {
    env.schedules()
        .list()
        .expect("list")
        .into_iter()
        .map(|s| {
            (
                s.spec.name,
                serde_json::to_string(&s.spec.trigger).expect("json"),
            )
        })
        .collect()
}

#[test]
fn apply_creates_updates_deletes_and_leaves_unchanged() {
    let env = Env::new();
    let ws = env.dir.path();
    let schedules = env.schedules();
    let a = vec![
        interval("a", 60, ws),
        interval("b", 60, ws),
        interval("c", 60, ws),
    ];
    let r = schedules.apply(&a, T0).expect("apply");
    assert_eq!(r.created, ["a", "b", "c"]);
    let b = vec![
        interval("a", 60, ws),
        interval("b", 120, ws),
        cron("d", "*/5 * * * *", "UTC", ws),
    ];
    let r = schedules.apply(&b, T0 + 1).expect("apply");
    assert_eq!(r.unchanged, ["a"]);
    assert_eq!(r.updated, ["b"]);
    assert_eq!(r.created, ["d"]);
    assert_eq!(r.deleted, ["c"]);
    let b_row = schedules.get("b").expect("get").expect("b");
    assert_eq!(b_row.next_fire_at, Some(T0 + 1 + 120_000_000), "recomputed");
    assert!(schedules.get("c").expect("get").is_none());
    // The deleted schedule keeps its history row.
    let deleted: i64 = env
        .conn()
        .query_row(
            "SELECT count(*) FROM status_transitions WHERE entity_type = 'schedule' AND to_status = 'deleted'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(deleted, 1);
}

#[test]
fn apply_that_fails_midway_writes_nothing() {
    let env = Env::new();
    let ws = env.dir.path();
    let schedules = env.schedules();
    schedules
        .apply(&[interval("a", 60, ws), interval("b", 60, ws)], T0)
        .expect("apply");
    let before = names(&env);
    // A trigger makes the third write of the next apply fail inside the
    // transaction, after the update of `a` and before the delete of `b`.
    env.conn()
        .execute_batch(
            "CREATE TRIGGER boom BEFORE INSERT ON schedules WHEN NEW.name = 'boom'
             BEGIN SELECT RAISE(ABORT, 'boom refused'); END;",
        )
        .expect("trigger");
    let err = schedules
        .apply(&[interval("a", 30, ws), interval("boom", 60, ws)], T0 + 1)
        .expect_err("the insert fails");
    assert!(matches!(err, Error::Sqlite(_)), "{err:?}");
    assert_eq!(names(&env), before, "no part of the set was applied");
    let history: i64 = env
        .conn()
        .query_row(
            "SELECT count(*) FROM status_transitions WHERE entity_type = 'schedule'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(history, 2, "only the two creations");
}

#[test]
fn an_invalid_set_is_refused_before_anything_is_written() {
    let env = Env::new();
    let ws = env.dir.path();
    let schedules = env.schedules();
    let mut bad = cron("x", "61 * * * *", "UTC", ws);
    assert!(
        schedules
            .apply(&[interval("a", 60, ws), bad.clone()], T0)
            .is_err()
    );
    bad.trigger = scheduler::Trigger::Cron {
        expr: "* * * * *".into(),
        tz: "Mars/Olympus".into(),
    };
    assert!(schedules.apply(&[bad], T0).is_err());
    let dup = parse_set(
        r#"[{"name":"a","trigger":{"interval":{"seconds":5}},"run":{"prompt":"p","workspace":"/w"}},
            {"name":"a","trigger":{"interval":{"seconds":6}},"run":{"prompt":"p","workspace":"/w"}}]"#,
    );
    assert!(matches!(dup, Err(Error::Invalid { .. })), "{dup:?}");
    assert!(names(&env).is_empty());
}

#[test]
fn a_one_shot_in_the_past_is_refused_and_a_spent_one_is_not_refired_by_enable() {
    let env = Env::new();
    let schedules = env.schedules();
    let mut once = interval("once", 1, env.dir.path());
    once.trigger = scheduler::Trigger::Once {
        at: "2027-01-15T08:00:00Z".into(),
    };
    let at = chrono::DateTime::parse_from_rfc3339("2027-01-15T08:00:00Z")
        .expect("instant")
        .timestamp_micros();
    let err = schedules.create(&once, at + 1).expect_err("in the past");
    assert!(err.to_string().contains("in the past"), "{err}");
    let s = schedules.create(&once, at - 1).expect("create");
    assert_eq!(s.next_fire_at, Some(at));
    schedules
        .set_enabled("once", false, at + 5)
        .expect("disable");
    let s = schedules
        .set_enabled("once", true, at + 10)
        .expect("enable");
    assert_eq!(s.next_fire_at, None, "its instant passed");
}

/// A file of the wrong shape is refused with what it holds and what was
/// expected, and a bad schedule inside a set is named by its place and name
/// (not "untagged enum").
#[test]
fn a_set_of_the_wrong_shape_says_what_it_holds() {
    let cases = [
        (
            "{\"foo\": 1}",
            "without a \"schedules\" member (its keys: foo)",
        ),
        (
            "{\"schedules\": {}}",
            "\"schedules\" is an object, not an array",
        ),
        ("42", "the file holds a number"),
        ("not json", "the file is not JSON"),
        (
            r#"[{"name":"a","trigger":{"interval":{"seconds":5}},"run":{"prompt":"p","workspace":"/w"}},
                {"name":"b","trigger":{"weekly":1},"run":{"prompt":"p","workspace":"/w"}}]"#,
            "schedule #2 (\"b\"):",
        ),
    ];
    for (text, expected) in cases {
        let err = parse_set(text).expect_err(text);
        assert!(matches!(err, Error::BadSet(_)), "{err:?}");
        let message = err.to_string();
        assert!(message.contains(expected), "{text}: {message}");
        assert!(!message.contains("untagged"), "{message}");
    }
}
