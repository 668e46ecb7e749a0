//! Watchdogs: applied by default only for early-streaming transports.

use std::ffi::OsString;
use std::time::Duration;

use cli_supervisor::{Error, Event, Leg, LegSpec, Watchdogs};

use crate::support::{assert_all_gone, fixture, marker, next_json};

fn short(first_output: u64, idle: u64) -> Watchdogs {
    Watchdogs {
        first_output: Some(Duration::from_millis(first_output)),
        idle: Some(Duration::from_millis(idle)),
        total: None,
    }
}

#[tokio::test]
async fn early_streaming_leg_without_first_output_is_treated_as_dead() {
    // contract: SUP-063
    let marker = marker();
    let mut spec = LegSpec::new([fixture(), "silent", "600000", marker.as_str()]);
    spec.streams_first_output_early = true;
    spec.default_watchdogs = short(300, 60_000);
    spec.grace = Duration::from_millis(100);
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    let pgid = leg.record().pgid;
    let error = leg
        .next_event()
        .await
        .expect_err("first-output watchdog fires");
    assert!(
        matches!(error, Error::FirstOutputTimeout { .. }),
        "{error:?}"
    );
    assert_all_gone(&marker, Some(pgid));
}

#[tokio::test]
async fn early_streaming_leg_going_quiet_hits_the_idle_watchdog() {
    // contract: SUP-063
    let marker = marker();
    let mut spec = LegSpec::new([fixture(), "hang", marker.as_str()]);
    spec.streams_first_output_early = true;
    spec.default_watchdogs = short(60_000, 300);
    spec.grace = Duration::from_millis(100);
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    assert_eq!(next_json(&mut leg).await["hanging"], true);
    let error = leg.next_event().await.expect_err("idle watchdog fires");
    assert!(matches!(error, Error::IdleTimeout { .. }), "{error:?}");
    assert_all_gone(&marker, Some(leg.record().pgid));
}

#[tokio::test]
async fn buffered_leg_is_not_killed_by_default_watchdogs() {
    // contract: SUP-064
    let mut spec = LegSpec::new([fixture(), "silent", "1000"]);
    spec.streams_first_output_early = false;
    spec.default_watchdogs = short(100, 100);
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    assert_eq!(leg.watchdogs(), Watchdogs::NONE);
    match leg.next_event().await.expect("no watchdog") {
        Some(Event::Json { value, .. }) => assert_eq!(value["woke"], true),
        other => panic!("unexpected {other:?}"),
    }
    assert!(leg.wait().await.expect("wait").status.success());
}

#[tokio::test]
async fn explicit_watchdog_applies_to_a_buffered_leg() {
    let marker = marker();
    let mut spec = LegSpec::new([fixture(), "silent", "600000", marker.as_str()]);
    spec.explicit_watchdogs = Watchdogs {
        first_output: Some(Duration::from_millis(200)),
        idle: None,
        total: None,
    };
    spec.grace = Duration::from_millis(100);
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    let error = leg.next_event().await.expect_err("explicit watchdog fires");
    assert!(
        matches!(error, Error::FirstOutputTimeout { .. }),
        "{error:?}"
    );
    assert_all_gone(&marker, Some(leg.record().pgid));
}

#[test]
fn watchdog_defaults_come_from_the_worker_variables() {
    let from = |liveness: Option<&str>, idle: Option<&str>| {
        Watchdogs::from_lookup(|name| match name {
            Watchdogs::LIVENESS_VAR => liveness.map(OsString::from),
            Watchdogs::IDLE_VAR => idle.map(OsString::from),
            _ => None,
        })
    };
    assert_eq!(from(None, None).expect("defaults"), Watchdogs::default());
    let set = from(Some("2.5"), Some("0")).expect("valid");
    assert_eq!(set.first_output, Some(Duration::from_millis(2500)));
    assert_eq!(set.idle, None);
    assert!(matches!(
        from(Some("soon"), None),
        Err(Error::InvalidWatchdogSetting {
            var: Watchdogs::LIVENESS_VAR
        })
    ));
    assert!(from(None, Some("-1")).is_err());
}

#[test]
fn effective_watchdogs_follow_the_transport_flag() {
    let mut spec = LegSpec::new(["x"]);
    spec.default_watchdogs = short(1, 2);
    spec.streams_first_output_early = true;
    assert_eq!(spec.effective_watchdogs(), short(1, 2));
    spec.streams_first_output_early = false;
    assert_eq!(spec.effective_watchdogs(), Watchdogs::NONE);
    spec.explicit_watchdogs.idle = Some(Duration::from_millis(9));
    assert_eq!(
        spec.effective_watchdogs().idle,
        Some(Duration::from_millis(9))
    );
    assert_eq!(spec.effective_watchdogs().first_output, None);
}

/// The total deadline fires on a leg that never goes quiet (the idle and
/// first-output watchdogs never would), on a buffered transport too, and
/// ends the leg's group.
#[tokio::test]
async fn a_chatty_leg_is_ended_at_its_total_deadline() {
    let marker = marker();
    // 100,000 lines 20 ms apart: half an hour of steady output.
    let mut spec = LegSpec::new([fixture(), "lines", "100000", "20", "0", marker.as_str()]);
    spec.streams_first_output_early = false;
    spec.explicit_watchdogs = Watchdogs {
        first_output: Some(Duration::from_secs(60)),
        idle: Some(Duration::from_secs(60)),
        total: Some(Duration::from_millis(600)),
    };
    spec.grace = Duration::from_millis(100);
    let started = std::time::Instant::now();
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    let pgid = leg.record().pgid;
    let mut lines = 0u32;
    let error = loop {
        match leg.next_event().await {
            Ok(Some(_)) => lines += 1,
            Ok(None) => panic!("the leg ended on its own after {lines} lines"),
            Err(e) => break e,
        }
    };
    assert!(
        matches!(error, Error::DeadlineExceeded { after } if after == Duration::from_millis(600)),
        "{error:?}"
    );
    assert!(lines > 1, "the leg was printing until its deadline");
    assert!(started.elapsed() >= Duration::from_millis(600));
    assert_all_gone(&marker, Some(pgid));
}

/// A default total deadline holds for buffered transports, where default
/// liveness watchdogs do not.
#[test]
fn a_default_total_deadline_applies_to_every_transport() {
    let mut spec = LegSpec::new(["true"]);
    spec.streams_first_output_early = false;
    spec.default_watchdogs = Watchdogs {
        total: Some(Duration::from_secs(5)),
        ..Watchdogs::default()
    };
    assert_eq!(
        spec.effective_watchdogs(),
        Watchdogs {
            total: Some(Duration::from_secs(5)),
            ..Watchdogs::NONE
        }
    );
}
