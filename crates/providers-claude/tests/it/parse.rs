//! Parsing the recorded stream-json streams.

use proptest::prelude::*;
use providers_claude::ClaudeParser;
use providers_core::{ErrorKind, FinalResult, StreamEvent, StreamParser, Usage, parse_stream};
use serde_json::json;

const SUCCESS: &str =
    include_str!("../../../../fixtures/providers/claude_stream_json_success.jsonl");
const ERROR: &str = include_str!("../../../../fixtures/providers/claude_stream_json_error.jsonl");
const API_ERROR: &str =
    include_str!("../../../../fixtures/providers/claude_stream_json_api_error.jsonl");

fn final_of(events: &[StreamEvent]) -> &FinalResult {
    events
        .iter()
        .find_map(|e| match e {
            StreamEvent::Final(f) => Some(f),
            _ => None,
        })
        .expect("a final result")
}

#[test]
fn success_stream() {
    let mut p = ClaudeParser::default();
    let events = parse_stream(&mut p, SUCCESS);
    assert_eq!(
        events[0],
        StreamEvent::SessionId {
            id: "3f6c2a8e-5b71-4d0c-9e2a-8c41d7b09f15".into()
        }
    );
    assert_eq!(p.resume_id(), Some("3f6c2a8e-5b71-4d0c-9e2a-8c41d7b09f15"));
    assert_eq!(
        events[1],
        StreamEvent::Text {
            text: "I'll count the TODO comments under `src/`.".into()
        }
    );
    assert_eq!(
        events[2],
        StreamEvent::ToolUse {
            id: "toolu_01Q8vJt3mXc5RzK2hW7nLp4D".into(),
            name: "Bash".into(),
            input: json!({"command": "grep -rn \"TODO\" src | wc -l", "description": "Count TODO comments in src"}),
        }
    );
    assert_eq!(
        events[3],
        StreamEvent::ToolResult {
            id: "toolu_01Q8vJt3mXc5RzK2hW7nLp4D".into(),
            content: json!("3"),
            is_error: false
        }
    );
    assert!(
        matches!(&events[4], StreamEvent::Text { text } if text.starts_with("There are 3 TODO"))
    );
    assert_eq!(
        events[5],
        StreamEvent::Usage(Usage {
            input_tokens: Some(8),
            output_tokens: Some(187),
            cached_input_tokens: Some(30266),
            cache_write_tokens: Some(2101),
            cost_usd: Some(0.02030455),
            model: Some("claude-sonnet-4-5-20250929".into()),
            num_turns: Some(2),
            duration_ms: Some(8412),
            ..Usage::default()
        })
    );
    let f = final_of(&events);
    assert!(!f.is_error);
    assert_eq!(f.subtype.as_deref(), Some("success"));
    assert!(
        f.text
            .as_deref()
            .is_some_and(|t| t.starts_with("There are 3"))
    );
    assert_eq!(events.len(), 7);
}

#[test]
fn max_turns_error_stream() {
    let events = parse_stream(&mut ClaudeParser::default(), ERROR);
    let f = final_of(&events);
    assert!(f.is_error);
    assert_eq!(f.subtype.as_deref(), Some("error_max_turns"));
    assert_eq!(f.text, None, "error results carry no result key");
    assert_eq!(
        f.error.as_deref(),
        Some("Reached maximum number of turns (1)")
    );
    assert!(events.iter().any(|e| matches!(e, StreamEvent::ToolResult { id, .. } if id == "toolu_01Kd7RwP3nFq9XzM2bL6vTjY")));
}

#[test]
fn api_error_is_read_from_is_error_not_subtype() {
    let events = parse_stream(&mut ClaudeParser::default(), API_ERROR);
    // The API error is one typed event with its class and status; its
    // synthetic "API Error" text is never assistant text.
    let api: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ApiError {
                class,
                status,
                message,
            } => Some((class.as_deref(), *status, message.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(api.len(), 1, "{events:?}");
    assert_eq!(api[0].0, Some("authentication_failed"));
    assert_eq!(api[0].1, Some(401));
    assert!(api[0].2.starts_with("API Error: 401"));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::Text { text } if text.contains("API Error"))),
        "{events:?}"
    );
    // A synthetic message names no model: the run's model is init's.
    let usage = events.iter().find_map(|e| match e {
        StreamEvent::Usage(u) => Some(u),
        _ => None,
    });
    assert_eq!(
        usage.and_then(|u| u.model.as_deref()),
        Some("claude-sonnet-4-5-20250929")
    );
    let f = final_of(&events);
    assert_eq!(f.subtype.as_deref(), Some("success"));
    assert!(f.is_error);
    assert!(
        f.error
            .as_deref()
            .is_some_and(|e| e.contains("API Error: 401"))
    );
}

#[test]
fn truncated_and_noisy_streams_keep_parsing() {
    let mut noisy = String::from("Warning: something on stdout\n");
    noisy.push_str(SUCCESS.lines().next().unwrap_or_default());
    noisy.push_str("\n{\"no_type\":1}\n[1,2]\n{\"type\":\"stream_event\",\"event\":{}}\n");
    let events = parse_stream(&mut ClaudeParser::default(), &noisy);
    assert!(matches!(
        events[0],
        StreamEvent::Error {
            kind: ErrorKind::InvalidJson,
            ..
        }
    ));
    assert!(matches!(events[1], StreamEvent::SessionId { .. }));
    assert!(matches!(
        events[2],
        StreamEvent::Error {
            kind: ErrorKind::BadShape,
            ..
        }
    ));
    assert!(matches!(
        events[3],
        StreamEvent::Error {
            kind: ErrorKind::BadShape,
            ..
        }
    ));
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Error {
            kind: ErrorKind::Incomplete,
            ..
        })
    ));
}

proptest! {
    #[test]
    fn no_line_panics(line in ".*", v in prop_oneof![Just(json!({"type":"result","usage":"x","errors":[1]})), Just(json!({"type":"assistant","message":{"content":[{"type":"tool_use"}]}})), Just(json!({"type":"user","message":{"content":"s"}}))]) {
        let mut p = ClaudeParser::default();
        let _ = p.parse_line(&line);
        let _ = p.parse_value(&v);
        let _ = p.finish();
    }
}

#[test]
fn keeps_the_seam_contract() {
    let mut req = providers_core::AgentRequest::new("p");
    req.workspace = Some("/repo".into());
    let p = providers_claude::ClaudeProvider::default();
    for s in [SUCCESS, ERROR, API_ERROR, ""] {
        assert_eq!(providers_core::check_provider_contract(&p, &req, s), Ok(()));
    }
}

#[test]
fn a_second_result_is_not_a_second_verdict() {
    let last = SUCCESS.lines().last().unwrap_or_default();
    let doubled = format!("{SUCCESS}{last}\n");
    let events = parse_stream(&mut ClaudeParser::default(), &doubled);
    assert_eq!(events.iter().filter(|e| e.is_terminal()).count(), 1);
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Error {
            kind: ErrorKind::BadShape,
            ..
        })
    ));
}

/// Recorded from the real Claude Code 2.1.197 (`cargo xtask fixtures
/// real-cli`: installed from npm, loopback-only namespace, local API).
const REAL_2_1: &str =
    include_str!("../../../../fixtures/real-cli/claude_2.1.197_stream_json.jsonl");

#[test]
fn the_real_cli_stream_parses() {
    let mut p = ClaudeParser::default();
    let events = parse_stream(&mut p, REAL_2_1);
    let Some(StreamEvent::SessionId { id }) = events.first() else {
        panic!("the session id comes first: {events:?}");
    };
    assert_eq!(p.resume_id(), Some(id.as_str()));
    assert!(events.contains(&StreamEvent::Text {
        text: "Hello from the mock.".into()
    }));
    let f = final_of(&events);
    assert!(!f.is_error);
    assert_eq!(f.text.as_deref(), Some("Hello from the mock."));
    let usage = events.iter().find_map(|e| match e {
        StreamEvent::Usage(u) => Some(u),
        _ => None,
    });
    let usage = usage.expect("usage");
    assert_eq!(
        (usage.input_tokens, usage.output_tokens),
        (Some(12), Some(6))
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::Error { .. }))
    );
}

/// The stream the real Claude Code 2.1.197 printed against a local API
/// stand-in: the model that answered the turn (the API's own word, here
/// the stand-in's `claude-sonnet-4-5`, not the requested
/// `claude-opus-4-8[1m]`), the turns and the duration are recorded.
#[test]
fn real_cli_stream_records_model_turns_and_duration() {
    let events = parse_stream(&mut ClaudeParser::default(), REAL_2_1);
    let usage = events
        .iter()
        .find_map(|e| match e {
            StreamEvent::Usage(u) => Some(u.clone()),
            _ => None,
        })
        .expect("a usage event");
    assert_eq!(usage.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(usage.num_turns, Some(1));
    assert_eq!(usage.duration_ms, Some(260));
    assert_eq!(usage.input_tokens, Some(12));
    assert_eq!(usage.output_tokens, Some(6));
    assert_eq!(usage.cost_usd, Some(0.00021));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::ApiError { .. }))
    );
}

/// Without an assistant turn naming it, the model comes from `modelUsage`
/// (the one with the most output), then from `init`; a context suffix is
/// cut and `<synthetic>` is never a model.
#[test]
fn run_model_falls_back_through_model_usage_then_init() {
    let init =
        json!({"type":"system","subtype":"init","session_id":"s","model":"claude-haiku-9[1m]"});
    let result = |model_usage: serde_json::Value| {
        json!({"type":"result","subtype":"success","is_error":false,"session_id":"s",
               "usage":{"input_tokens":1,"output_tokens":2},"modelUsage":model_usage})
    };
    let model_of = |lines: &[serde_json::Value]| {
        let mut p = ClaudeParser::default();
        lines
            .iter()
            .flat_map(|l| p.parse_value(l))
            .find_map(|e| match e {
                StreamEvent::Usage(u) => Some(u.model),
                _ => None,
            })
            .flatten()
    };
    let two = json!({"claude-a[1m]":{"outputTokens":3},"claude-b":{"outputTokens":9}});
    assert_eq!(
        model_of(&[init.clone(), result(two)]).as_deref(),
        Some("claude-b")
    );
    assert_eq!(
        model_of(&[init.clone(), result(json!({}))]).as_deref(),
        Some("claude-haiku-9")
    );
    let synthetic = json!({"type":"assistant","session_id":"s",
        "message":{"model":"<synthetic>","content":[{"type":"text","text":"x"}]}});
    assert_eq!(
        model_of(&[synthetic, result(json!({"<synthetic>":{"outputTokens":1}}))]),
        None
    );
}
