//! Triggers: cron with optional seconds in an explicit zone, intervals,
//! one-shots.

use scheduler::{ScheduleSpec, Trigger};

use crate::common::{cron, interval};

fn at(s: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(s)
        .expect("instant")
        .timestamp_micros()
}

fn ws() -> std::path::PathBuf {
    std::env::temp_dir()
}

#[test]
fn cron_is_evaluated_in_its_zone() {
    let utc = cron("u", "0 3 * * *", "UTC", &ws());
    let plus2 = cron("p", "0 3 * * *", "+02:00", &ws());
    let now = at("2026-12-01T12:00:00Z");
    assert_eq!(
        utc.next_after(now, now).expect("next"),
        Some(at("2026-12-02T03:00:00Z"))
    );
    assert_eq!(
        plus2.next_after(now, now).expect("next"),
        Some(at("2026-12-02T01:00:00Z"))
    );
}

#[test]
fn cron_seconds_are_optional() {
    let six = cron("s", "*/15 * * * * *", "UTC", &ws());
    six.validate().expect("6 fields");
    let now = at("2026-12-01T12:00:01Z");
    assert_eq!(
        six.next_after(now, now).expect("next"),
        Some(at("2026-12-01T12:00:15Z"))
    );
    let five = cron("f", "*/15 * * * *", "UTC", &ws());
    assert_eq!(
        five.next_after(now, now).expect("next"),
        Some(at("2026-12-01T12:15:00Z"))
    );
}

#[test]
fn interval_keeps_its_phase_and_one_shot_fires_once() {
    let i = interval("i", 60, &ws());
    assert_eq!(
        i.next_after(0, 150_000_000).expect("next"),
        Some(180_000_000)
    );
    let mut once: ScheduleSpec = interval("o", 1, &ws());
    once.trigger = Trigger::Once {
        at: "2026-12-01T12:00:00+01:00".into(),
    };
    once.validate().expect("valid");
    let t = at("2026-12-01T11:00:00Z");
    assert_eq!(once.first_due(0).expect("first"), Some(t));
    assert_eq!(once.next_after(t, t).expect("after"), None);
}

#[test]
fn invalid_definitions_name_the_problem() {
    for (spec, needle) in [
        (cron("c", "not cron", "UTC", &ws()), "cron expression"),
        (cron("c", "* * * * *", "+25:00", &ws()), "time zone"),
        (cron("bad name", "* * * * *", "UTC", &ws()), "name"),
        (interval("i", 0, &ws()), "interval"),
    ] {
        let err = spec.validate().expect_err("invalid").to_string();
        assert!(err.contains(needle), "{err}");
    }
}
