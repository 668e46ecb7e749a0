//! NDJSON streaming: one event per line, bounded lines, invalid JSON, stderr tail.

use cli_supervisor::{Event, Leg, LegSpec};

use crate::support::{fixture, next_json};

#[tokio::test]
async fn each_line_is_one_event_in_order() {
    // contract: SUP-024
    let mut leg = Leg::spawn(LegSpec::new([fixture(), "lines", "50", "0", "10"]))
        .await
        .expect("spawn");
    for i in 0..50u64 {
        match leg.next_event().await.expect("read") {
            Some(Event::Json { line, value }) => {
                assert_eq!(line, i + 1);
                assert_eq!(value["i"], i);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(leg.next_event().await.expect("read").is_none());
    let exit = leg.wait().await.expect("wait");
    assert!(exit.status.success());
    // After a normal drain and exit no SIGTERM (nor SIGKILL) goes to the group.
    assert!(exit.teardown.term.is_none() && exit.teardown.kill.is_none());
}

#[tokio::test]
async fn a_line_over_the_limit_is_a_typed_event_and_streaming_goes_on() {
    let mut spec = LegSpec::new([fixture(), "big", "10000000"]);
    spec.max_line_len = 1024 * 1024;
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    match leg.next_event().await.expect("read") {
        Some(Event::LineTooLong { line: 1, len }) => assert_eq!(len, 10_000_000),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(next_json(&mut leg).await["after"], true);
    assert!(leg.next_event().await.expect("read").is_none());
    leg.wait().await.expect("wait");
}

#[tokio::test]
async fn invalid_json_is_a_typed_event() {
    let mut leg = Leg::spawn(LegSpec::new([fixture(), "invalid"]))
        .await
        .expect("spawn");
    match leg.next_event().await.expect("read") {
        Some(Event::InvalidJson { line: 1, error }) => {
            assert!(
                !error.contains("not json"),
                "error does not quote the line: {error}"
            )
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(next_json(&mut leg).await["ok"], 1);
    leg.wait().await.expect("wait");
}

#[tokio::test]
async fn nonzero_exit_keeps_a_bounded_stderr_tail() {
    let mut spec = LegSpec::new([fixture(), "fail", "3"]);
    spec.stderr_tail_len = 10;
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    assert_eq!(next_json(&mut leg).await["started"], true);
    assert!(leg.next_event().await.expect("read").is_none());
    let exit = leg.wait().await.expect("wait");
    assert_eq!(exit.status.code(), Some(3));
    assert_eq!(exit.stderr_tail, b"n purpose\n");

    let mut leg = Leg::spawn(LegSpec::new([fixture(), "fail", "4"]))
        .await
        .expect("spawn");
    while leg.next_event().await.expect("read").is_some() {}
    let exit = leg.wait().await.expect("wait");
    assert_eq!(exit.status.code(), Some(4));
    assert_eq!(exit.stderr_tail, b"fixture failing on purpose\n");
}

#[tokio::test]
async fn raw_format_delivers_validated_text() {
    let mut spec = LegSpec::new([fixture(), "invalid"]);
    spec.line_format = cli_supervisor::LineFormat::Raw;
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    assert!(matches!(
        leg.next_event().await.expect("read"),
        Some(Event::InvalidJson { line: 1, .. })
    ));
    match leg.next_event().await.expect("read") {
        Some(Event::RawJson { line: 2, json }) => {
            let typed: std::collections::BTreeMap<String, u32> =
                serde_json::from_str(&json).expect("consumer parses its own types");
            assert_eq!(typed["ok"], 1);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(leg.next_event().await.expect("read").is_none());
    leg.wait().await.expect("wait");
}
