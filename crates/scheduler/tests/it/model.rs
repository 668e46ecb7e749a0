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

/// Every next instant of `spec` from `from`, `n` of them, as RFC 3339 UTC.
fn series(spec: &ScheduleSpec, from: &str, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut now = at(from);
    for _ in 0..n {
        let next = spec.next_after(now, now).expect("next").expect("some");
        out.push(
            chrono::DateTime::from_timestamp_micros(next)
                .expect("instant")
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string(),
        );
        now = next;
    }
    out
}

#[test]
fn a_named_zone_follows_its_daylight_saving_time() {
    let berlin = cron("b", "0 9 * * *", "Europe/Berlin", &ws());
    berlin.validate().expect("an IANA name is a zone");
    // 09:00 in Berlin is 08:00 UTC in winter (CET) and 07:00 in summer.
    assert_eq!(
        series(&berlin, "2026-01-15T12:00:00Z", 1),
        ["2026-01-16T08:00:00Z"]
    );
    assert_eq!(
        series(&berlin, "2026-07-15T12:00:00Z", 1),
        ["2026-07-16T07:00:00Z"]
    );
    let err = cron("m", "0 9 * * *", "Mars/Olympus_Mons", &ws())
        .validate()
        .expect_err("unknown zone")
        .to_string();
    assert!(err.contains("IANA"), "{err}");
}

#[test]
fn a_fixed_time_in_the_spring_gap_fires_once_right_after_it() {
    // Europe/Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC),
    // so 02:30 does not exist that day. It fires once at 03:00 CEST, then
    // at 02:30 CEST on the following days.
    let s = cron("g", "30 2 * * *", "Europe/Berlin", &ws());
    assert_eq!(
        series(&s, "2026-03-28T12:00:00Z", 3),
        [
            "2026-03-29T01:00:00Z",
            "2026-03-30T00:30:00Z",
            "2026-03-31T00:30:00Z"
        ]
    );
}

#[test]
fn a_step_field_skips_the_instants_inside_the_spring_gap() {
    // */30 at 01:30 CET (00:30 UTC), then the gap: 02:00 and 02:30 never
    // happen; the next is 03:00 CEST (01:00 UTC), half an hour of real time
    // later, then every 30 minutes again.
    let s = cron("w", "*/30 * * * *", "Europe/Berlin", &ws());
    assert_eq!(
        series(&s, "2026-03-29T00:15:00Z", 3),
        [
            "2026-03-29T00:30:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-29T01:30:00Z"
        ]
    );
}

#[test]
fn a_fixed_time_in_the_autumn_overlap_fires_once_in_the_first_pass() {
    // Europe/Berlin, 2026-10-25: 03:00 CEST goes back to 02:00 CET (01:00
    // UTC), so 02:30 happens twice (00:30 and 01:30 UTC). It fires once, at
    // the first; the next fire is the following day's 02:30 CET.
    let s = cron("o", "30 2 * * *", "Europe/Berlin", &ws());
    assert_eq!(
        series(&s, "2026-10-24T12:00:00Z", 2),
        ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]
    );
    // Started inside the overlap's second pass, it waits for the next day.
    assert_eq!(
        series(&s, "2026-10-25T01:10:00Z", 1),
        ["2026-10-26T01:30:00Z"]
    );
}

#[test]
fn a_step_field_fires_in_both_passes_of_the_autumn_overlap() {
    // */30 from 02:15 CEST: 02:30 CEST, 02:00 CET, 02:30 CET, 03:00 CET,
    // every 30 minutes of real time, never going back.
    let s = cron("w", "*/30 * * * *", "Europe/Berlin", &ws());
    assert_eq!(
        series(&s, "2026-10-25T00:15:00Z", 4),
        [
            "2026-10-25T00:30:00Z",
            "2026-10-25T01:00:00Z",
            "2026-10-25T01:30:00Z",
            "2026-10-25T02:00:00Z"
        ]
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

mod props {
    use proptest::prelude::*;

    use crate::common::{cron, interval};

    /// Zones with daylight saving time of several shapes (a 30-minute
    /// shift, a shift at 02:45, one at midnight) and, for each, the UTC
    /// dates of its 2026 transitions (± a day of the local date).
    const ZONES: [(&str, [&str; 2]); 5] = [
        ("Europe/Berlin", ["2026-03-29", "2026-10-25"]),
        ("America/New_York", ["2026-03-08", "2026-11-01"]),
        ("Australia/Lord_Howe", ["2026-04-05", "2026-10-04"]),
        ("Pacific/Chatham", ["2026-04-05", "2026-09-27"]),
        ("America/Santiago", ["2026-04-05", "2026-09-06"]),
    ];

    proptest! {
        /// A fixed-time expression in a named zone: every fire is after
        /// now, at the expression's wall-clock time, or (that time not
        /// existing that day, a spring gap) the first instant after the
        /// gap; never twice on one local date (an autumn overlap fires
        /// once); and the next fire is at most a day and a gap away.
        #[test]
        fn a_fixed_time_in_a_named_zone_fires_once_a_local_day_at_its_time_or_after_the_gap(
            zone in 0usize..ZONES.len(),
            transition in 0usize..2,
            offset in -3 * 86_400i64..2 * 86_400,
            hour in prop_oneof![0u32..24, 0u32..5],
            minute in 0u32..60,
        ) {
            use chrono::{LocalResult, TimeZone, Timelike};
            let (name, dates) = ZONES[zone];
            // From up to three days before a transition to two after it.
            let now = super::at(&format!("{}T00:00:00Z", dates[transition])) + offset * 1_000_000;
            let tz: chrono_tz::Tz = name.parse().expect("zone");
            let spec = cron("z", &format!("{minute} {hour} * * *"), name, &super::ws());
            let mut at = now;
            let mut dates = Vec::new();
            for _ in 0..3 {
                let next = spec.next_after(at, at).expect("next").expect("some");
                prop_assert!(next > at);
                prop_assert!(next - at <= 26 * 3_600_000_000, "{} then {}", at, next);
                let local = tz.timestamp_micros(next).single().expect("an instant");
                let on_time = (local.hour(), local.minute()) == (hour, minute);
                let skipped = matches!(
                    tz.with_ymd_and_hms(
                        chrono::Datelike::year(&local.date_naive()),
                        chrono::Datelike::month(&local.date_naive()),
                        chrono::Datelike::day(&local.date_naive()),
                        hour,
                        minute,
                        0
                    ),
                    LocalResult::None
                );
                prop_assert!(on_time || skipped, "{name} {hour}:{minute} fired at {local}");
                prop_assert!(!dates.contains(&local.date_naive()), "twice on {}", local.date_naive());
                dates.push(local.date_naive());
                at = next;
            }
        }

        #[test]
        fn interval_next_is_the_first_phase_point_after_now(
            last in 0i64..1_000_000_000_000_000,
            seconds in 1u64..1_000_000,
            gap in 0i64..10_000_000_000_000,
        ) {
            let spec = interval("i", seconds, &super::ws());
            let step = i64::try_from(seconds).unwrap_or(i64::MAX) * 1_000_000;
            let now = last + gap;
            let next = spec.next_after(last, now).expect("next").expect("some");
            prop_assert!(next > now);
            prop_assert!(next - step <= now);
            prop_assert_eq!((next - last) % step, 0);
        }

        #[test]
        fn cron_next_is_after_now_on_a_matching_minute_in_its_zone(
            now in 1_600_000_000_000_000i64..2_000_000_000_000_000,
            k in 1u32..30,
            hours in -12i32..14,
            half in proptest::bool::ANY,
        ) {
            let minutes = if half { 30 } else { 0 };
            let sign = if hours < 0 { '-' } else { '+' };
            let tz = format!("{sign}{:02}:{minutes:02}", hours.abs());
            let spec = cron("c", &format!("*/{k} * * * *"), &tz, &super::ws());
            spec.validate().expect("valid");
            let next = spec.next_after(now, now).expect("next").expect("some");
            prop_assert!(next > now);
            prop_assert!(next - now <= 3_600_000_000);
            prop_assert_eq!(next % 60_000_000, 0, "second 0 of a minute");
            // Minutes past the hour in the zone (a whole number of hours
            // plus 0 or 30 minutes from UTC) are a multiple of k.
            let offset_min = i64::from(hours) * 60 + if hours < 0 { -i64::from(minutes) } else { i64::from(minutes) };
            let local_min = (next / 60_000_000 + offset_min).rem_euclid(60);
            prop_assert_eq!(local_min % i64::from(k), 0);
        }

        #[test]
        fn zones_out_of_range_are_refused(h in 24i32..100, m in 0i32..60) {
            let spec = cron("c", "* * * * *", &format!("+{h:02}:{m:02}"), &super::ws());
            prop_assert!(spec.validate().is_err());
        }
    }
}
