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

/// The last usage event of a stream: the run's total.
fn last_usage(events: &[StreamEvent]) -> Option<&Usage> {
    events.iter().rev().find_map(|e| match e {
        StreamEvent::Usage(u) => Some(u),
        _ => None,
    })
}

/// One assistant message of a pi run, as pi repeats it: in the
/// message-level `done`, in `message_end` and in `turn_end`.
fn message_lines(model: &str, input: u64, output: u64, cost: f64, with_end: bool) -> Vec<String> {
    let m = json!({"role": "assistant", "content": [{"type": "text", "text": "t"}], "model": model,
                   "usage": {"input": input, "output": output, "totalTokens": input + output,
                             "cost": {"total": cost}}});
    let mut lines = vec![
        json!({"type": "message_update", "assistantMessageEvent": {"type": "done", "reason": "toolUse", "message": m}}),
    ];
    if with_end {
        lines.push(json!({"type": "message_end", "message": m}));
    }
    lines.push(json!({"type": "turn_end", "message": m, "toolResults": []}));
    lines.into_iter().map(|v| v.to_string()).collect()
}

/// pi reports usage per message: a run of two requests records the sum of
/// both, and the model of the latest turn (the bug was 12/6 and half the
/// cost: the last message won).
#[test]
fn usage_is_summed_over_the_messages_of_a_run() {
    let mut lines = message_lines("m-one", 12, 6, 0.25, true);
    lines.extend(message_lines("m-two", 12, 6, 0.25, true));
    let all = json!({"role": "assistant", "model": "m-two", "usage": {"input": 12, "output": 6}});
    lines.push(json!({"type": "agent_end", "messages": [all, all]}).to_string());
    let events = parse_stream(&mut PiParser::default(), &lines.join("\n"));
    let u = last_usage(&events).expect("usage");
    assert_eq!((u.input_tokens, u.output_tokens), (Some(24), Some(12)));
    assert_eq!(u.total_tokens, Some(36));
    assert_eq!(u.cost_usd, Some(0.5));
    assert_eq!(u.model.as_deref(), Some("m-two"));
    // Each turn's usage event names that turn's model.
    let models: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Usage(u) => u.model.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(models, ["m-one", "m-two"]);
}

proptest! {
    /// Whatever the number of messages and however pi repeats them, the
    /// run's usage is the sum over its assistant messages, each counted
    /// once; a stream without `message_end` sums the end event's messages.
    #[test]
    fn usage_counts_each_message_once(
        msgs in proptest::collection::vec((0u64..10_000, 0u64..10_000, 0u32..1000), 1..8),
        with_end in any::<bool>(),
        end_lists_messages in any::<bool>(),
    ) {
        let mut lines = Vec::new();
        let mut listed = Vec::new();
        for (i, (input, output, cents)) in msgs.iter().enumerate() {
            let cost = f64::from(*cents) / 100.0;
            lines.extend(message_lines(&format!("m{i}"), *input, *output, cost, with_end));
            listed.push(json!({"role": "assistant", "model": format!("m{i}"),
                               "usage": {"input": input, "output": output, "cost": {"total": cost}}}));
            listed.push(json!({"role": "user", "usage": {"input": 1_000_000}}));
        }
        let end = if end_lists_messages {
            json!({"type": "agent_end", "messages": listed})
        } else {
            json!({"type": "agent_end"})
        };
        lines.push(end.to_string());
        let events = parse_stream(&mut PiParser::default(), &lines.join("\n"));
        let u = last_usage(&events).expect("usage");
        let input: u64 = msgs.iter().map(|m| m.0).sum();
        let output: u64 = msgs.iter().map(|m| m.1).sum();
        if with_end || end_lists_messages {
            prop_assert_eq!(u.input_tokens, Some(input));
            prop_assert_eq!(u.output_tokens, Some(output));
            let cost: f64 = msgs.iter().map(|m| f64::from(m.2) / 100.0).sum();
            prop_assert!((u.cost_usd.unwrap_or(-1.0) - cost).abs() < 1e-9);
        } else {
            // Only the last finished message is known: never more than it.
            let last = msgs.last().map(|m| m.0);
            prop_assert_eq!(u.input_tokens, last);
        }
        prop_assert_eq!(u.model.clone(), Some(format!("m{}", msgs.len() - 1)));
        prop_assert_eq!(events.iter().filter(|e| e.is_terminal()).count(), 1);
    }

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
