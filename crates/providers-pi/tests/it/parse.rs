//! Parsing the recorded pi stream and the two meanings of "done".

use proptest::prelude::*;
use providers_core::{ErrorKind, FinalResult, StreamEvent, StreamParser, Usage, parse_stream};
use providers_pi::PiParser;
use serde_json::json;

const EVENTS: &str = include_str!("../../../../fixtures/providers/pi_cli_events.jsonl");

#[test]
fn recorded_stream() {
    let events = parse_stream(&mut PiParser::default(), EVENTS);
    assert_eq!(
        events[0],
        StreamEvent::Text {
            text: "Hello ".into()
        }
    );
    assert_eq!(
        events[1],
        StreamEvent::Thinking {
            text: "consider".into()
        }
    );
    assert_eq!(
        events[2],
        StreamEvent::ToolUse {
            id: "call_1".into(),
            name: "read".into(),
            input: json!({"path": "README.md"})
        }
    );
    assert!(
        matches!(&events[3], StreamEvent::ToolResult { id, is_error: false, .. } if id == "call_1")
    );
    assert_eq!(
        events[4],
        StreamEvent::Usage(Usage {
            input_tokens: Some(10),
            output_tokens: Some(5),
            total_tokens: Some(15),
            model: Some("gemini-2.5-flash".into()),
            ..Usage::default()
        })
    );
    assert!(
        matches!(&events[5], StreamEvent::Final(FinalResult { is_error: false, text: Some(t), .. }) if t == "Hello world")
    );
    assert_eq!(events.len(), 6);
}

#[test]
fn lifecycle_events_yield_nothing_until_content() {
    // contract: PRV-089
    let mut p = PiParser::default();
    for line in EVENTS.lines().take(4) {
        assert!(p.parse_line(line).is_empty(), "{line}");
    }
    assert!(matches!(
        p.parse_line(EVENTS.lines().nth(4).unwrap_or_default())[..],
        [StreamEvent::Text { .. }]
    ));
}

#[test]
fn both_meanings_of_done_are_handled() {
    // contract: PRV-088
    // Message-level done carries the usage; top-level done ends the stream
    // without a message.
    let text = [
        json!({"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "delta": "hi"}}),
        json!({"type": "message_update", "assistantMessageEvent": {"type": "done", "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "model": "m-one", "usage": {"input": 3, "output": 1}}}}),
        json!({"type": "done"}),
    ]
    .map(|v| v.to_string())
    .join("\n");
    let events = parse_stream(&mut PiParser::default(), &text);
    assert!(events.iter().any(|e| matches!(e, StreamEvent::Usage(u) if u.model.as_deref() == Some("m-one") && u.input_tokens == Some(3))));
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Final(FinalResult {
            is_error: false,
            ..
        }))
    ));
    assert_eq!(events.iter().filter(|e| e.is_terminal()).count(), 1);

    // Top-level done carrying the final message: captured from there.
    let text = [
        json!({"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "delta": "x"}}),
        json!({"type": "done", "message": {"role": "assistant", "content": [], "model": "m-two", "usage": {"input": 9, "output": 2}}}),
    ]
    .map(|v| v.to_string())
    .join("\n");
    let events = parse_stream(&mut PiParser::default(), &text);
    assert!(events.iter().any(|e| matches!(e, StreamEvent::Usage(u) if u.model.as_deref() == Some("m-two") && u.output_tokens == Some(2))));
    // A message-level done alone does not end the stream.
    let mut p = PiParser::default();
    p.parse_value(&json!({"type": "message_update", "assistantMessageEvent": {"type": "done", "message": {"role": "assistant"}}}));
    assert!(matches!(
        p.finish()[..],
        [StreamEvent::Error {
            kind: ErrorKind::Incomplete,
            ..
        }]
    ));
}

#[test]
fn error_stop_reason_fails_the_run() {
    let text = json!({"type": "agent_end", "messages": [{"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "quota"}]}).to_string();
    let events = parse_stream(&mut PiParser::default(), &text);
    assert!(
        matches!(events.last(), Some(StreamEvent::Final(FinalResult { is_error: true, error: Some(e), .. })) if e == "quota")
    );
}

proptest! {
    #[test]
    fn no_line_panics(line in ".*", ev in prop_oneof![Just(json!("s")), Just(json!(1)), Just(json!({"type": "done"})), Just(json!({"type": "toolcall_end", "toolCall": 5}))]) {
        let mut p = PiParser::default();
        let _ = p.parse_line(&line);
        let _ = p.parse_value(&json!({"type": "message_update", "assistantMessageEvent": ev}));
        let _ = p.parse_value(&json!({"type": "agent_end", "messages": ev}));
        let _ = p.finish();
    }
}

#[test]
fn keeps_the_seam_contract() {
    let req = providers_core::AgentRequest::new("p");
    let p = providers_pi::PiProvider::default();
    for s in [EVENTS, ""] {
        assert_eq!(providers_core::check_provider_contract(&p, &req, s), Ok(()));
    }
}
