//! Parsing the recorded exec --json streams and the error envelope rules.

use proptest::prelude::*;
use providers_codex::{CodexParser, error_text};
use providers_core::{ErrorKind, FinalResult, StreamEvent, StreamParser, Usage, parse_stream};
use serde_json::json;

const SUCCESS: &str = include_str!("../../../../fixtures/providers/codex_exec_json_success.jsonl");
const FAILED: &str = include_str!("../../../../fixtures/providers/codex_exec_json_failed.jsonl");
const BENIGN: &str =
    include_str!("../../../../fixtures/providers/codex_exec_json_benign_eos.jsonl");

fn finals(events: &[StreamEvent]) -> Vec<&FinalResult> {
    events
        .iter()
        .filter_map(|e| {
            if let StreamEvent::Final(f) = e {
                Some(f)
            } else {
                None
            }
        })
        .collect()
}

fn one(line: serde_json::Value) -> Vec<StreamEvent> {
    let mut p = CodexParser::default();
    let mut ev = p.parse_value(&line);
    ev.extend(p.finish());
    ev
}

#[test]
fn success_stream() {
    let mut p = CodexParser::default();
    let events = parse_stream(&mut p, SUCCESS);
    assert_eq!(p.resume_id(), Some("019a4c2e-7d31-7b90-a6f2-5c83e1d40b27"));
    assert!(matches!(&events[1], StreamEvent::Thinking { .. }));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::ToolUse { name, .. } if name == "github.get_issue"))
    );
    assert!(events.iter().any(
        |e| matches!(e, StreamEvent::ToolResult { id, is_error: true, .. } if id == "item_4")
    ));
    assert!(events.iter().any(
        |e| matches!(e, StreamEvent::ToolResult { id, is_error: false, .. } if id == "item_7")
    ));
    assert!(events.contains(&StreamEvent::Usage(Usage {
        input_tokens: Some(48213),
        output_tokens: Some(1462),
        cached_input_tokens: Some(31744),
        cache_write_tokens: Some(9216),
        reasoning_tokens: Some(704),
        ..Usage::default()
    })));
    let f = finals(&events);
    assert_eq!(f.len(), 1);
    assert!(!f[0].is_error);
    assert!(
        f[0].text
            .as_deref()
            .is_some_and(|t| t.starts_with("Fixed issue #42")),
        "last agent_message"
    );
    assert!(matches!(events.last(), Some(StreamEvent::Final(_))));
}

#[test]
fn failed_stream_reads_both_error_shapes() {
    // contract: PRV-080
    let events = parse_stream(&mut CodexParser::default(), FAILED);
    let reconnects = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Error { kind: ErrorKind::Failed, message, .. } if message.starts_with("Reconnecting")))
        .count();
    assert_eq!(reconnects, 5, "top-level message of error events");
    assert!(events.iter().any(|e| matches!(e, StreamEvent::Error { kind: ErrorKind::Warning, message, .. } if message.starts_with("Falling back"))));
    let f = finals(&events);
    assert_eq!(f.len(), 1);
    assert!(f[0].is_error);
    assert_eq!(
        f[0].error.as_deref(),
        Some(
            "stream disconnected before completion: error sending request for url (https://api.openai.com/v1/responses)"
        )
    );
    assert_eq!(
        error_text(&json!({"type": "error", "message": "top"})).as_deref(),
        Some("top")
    );
    assert_eq!(
        error_text(&json!({"type": "turn.failed", "error": {"message": "nested"}})).as_deref(),
        Some("nested")
    );
}

#[test]
fn benign_end_of_stream_is_clean() {
    // contract: PRV-081
    let mut p = CodexParser::default();
    let events = parse_stream(&mut p, BENIGN);
    let f = finals(&events);
    assert_eq!(f.len(), 1);
    assert!(
        !f[0].is_error,
        "the trailing sentinel does not fail the run"
    );
    assert!(
        matches!(events.last(), Some(StreamEvent::Final(_))),
        "and adds no second terminal"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::Error { .. }))
    );
    // On its own (a resumed session ending with only the sentinel).
    let ev = one(json!({"type": "error", "error": {}}));
    assert_eq!(ev, [StreamEvent::BenignEnd]);
}

#[test]
fn explicit_null_error_is_a_real_failure() {
    // contract: PRV-082
    let ev = one(json!({"type": "error", "error": null}));
    assert!(matches!(
        &ev[..],
        [StreamEvent::Final(FinalResult { is_error: true, .. })]
    ));
}

#[test]
fn turn_failed_is_never_benign() {
    // contract: PRV-083
    let ev = one(json!({"type": "turn.failed", "error": {}}));
    assert!(matches!(
        &ev[..],
        [StreamEvent::Final(FinalResult { is_error: true, .. })]
    ));
}

#[test]
fn empty_payload_with_outer_failure_keys_is_real() {
    // contract: PRV-084
    for key in ["code", "message", "status"] {
        let mut v = json!({"type": "error", "error": {}});
        v[key] = json!("x");
        let ev = one(v);
        assert!(
            matches!(
                &ev[..],
                [StreamEvent::Final(FinalResult { is_error: true, .. })]
            ),
            "{key}"
        );
    }
    // A non-empty payload is not the sentinel either.
    let ev = one(json!({"type": "error", "error": {"message": "boom"}}));
    assert!(ev.iter().all(|e| *e != StreamEvent::BenignEnd));
}

#[test]
fn legacy_aliases_and_missing_terminal() {
    let text = "{\"type\":\"session.created\",\"session_id\":\"s1\"}\n{\"type\":\"item.completed\",\"item\":{\"id\":\"itm_1\",\"item_type\":\"assistant_message\",\"text\":\"hi\"}}\nnot json\n";
    let mut p = CodexParser::default();
    let ev = parse_stream(&mut p, text);
    assert_eq!(p.resume_id(), Some("s1"));
    assert!(ev.contains(&StreamEvent::Text { text: "hi".into() }));
    assert!(matches!(
        ev[2],
        StreamEvent::Error {
            kind: ErrorKind::InvalidJson,
            ..
        }
    ));
    assert!(matches!(
        ev.last(),
        Some(StreamEvent::Error {
            kind: ErrorKind::Incomplete,
            ..
        })
    ));
}

proptest! {
    #[test]
    fn no_line_panics(line in ".*", kind in prop_oneof![Just("error"), Just("turn.failed"), Just("item.completed"), Just("turn.completed")], payload in prop_oneof![Just(json!(null)), Just(json!({})), Just(json!(3)), Just(json!("s")), Just(json!([1]))]) {
        let mut p = CodexParser::default();
        let _ = p.parse_line(&line);
        let _ = p.parse_value(&json!({"type": kind, "error": payload, "item": payload, "usage": payload}));
        let _ = p.finish();
    }
}

#[test]
fn keeps_the_seam_contract() {
    let req = providers_core::AgentRequest::new("p");
    let p = providers_codex::CodexProvider::default();
    for s in [SUCCESS, FAILED, BENIGN, ""] {
        assert_eq!(providers_core::check_provider_contract(&p, &req, s), Ok(()));
    }
}

/// Recorded from the real codex 0.171.0 (`cargo xtask fixtures real-cli`:
/// installed from npm, loopback-only namespace, local Responses API).
const REAL_0_171: &str =
    include_str!("../../../../fixtures/real-cli/codex_0.171.0_exec_json.jsonl");

#[test]
fn the_real_cli_stream_parses() {
    let mut p = CodexParser::default();
    let events = parse_stream(&mut p, REAL_0_171);
    let thread = REAL_0_171
        .lines()
        .next()
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .and_then(|v| v["thread_id"].as_str().map(str::to_owned))
        .expect("thread.started first");
    assert_eq!(p.resume_id(), Some(thread.as_str()));
    assert!(events.contains(&StreamEvent::Text {
        text: "Hello from the mock.".into()
    }));
    // 0.171 reports unknown model metadata as an error item: a warning.
    assert!(events.iter().any(|e| matches!(
        e,
        StreamEvent::Error { kind: ErrorKind::Warning, message, .. } if message.contains("metadata")
    )));
    assert!(events.iter().any(|e| matches!(
        e,
        StreamEvent::Usage(u) if u.input_tokens == Some(12) && u.output_tokens == Some(6)
    )));
    let f = finals(&events);
    assert_eq!(f.len(), 1);
    assert!(!f[0].is_error);
}
