//! Parsing agy's JSON result and the Gemini CLI document.

use proptest::prelude::*;
use providers_core::{ErrorKind, FinalResult, StreamEvent, StreamParser, Usage, parse_stream};
use providers_gemini::{
    AgyParser, parse_agy_error_line, parse_gemini_cli_output, parse_with_tool_callbacks,
};
use serde_json::json;

const OUTPUT: &str = include_str!("../../../../fixtures/providers/agy_json_output.json");
const ERROR: &str = include_str!("../../../../fixtures/providers/agy_json_error.json");
const ERROR_STDERR: &str = include_str!("../../../../fixtures/providers/agy_json_error.stderr.txt");
const GEMINI_OUT: &str = include_str!("../../../../fixtures/providers/gemini_json_output.json");
const GEMINI_ERR: &str = include_str!("../../../../fixtures/providers/gemini_json_error.json");

#[test]
fn success_object_is_one_record() {
    // contract: PRV-062, PRV-063
    let mut p = AgyParser::default();
    let events = parse_stream(&mut p, OUTPUT);
    assert_eq!(p.resume_id(), Some("7c1e9a4b-2f58-4d63-b0a1-93e6d5c84f20"));
    assert_eq!(events.len(), 4);
    assert!(
        matches!(&events[1], StreamEvent::Text { text } if text.starts_with("The config loader"))
    );
    assert_eq!(
        events[2],
        StreamEvent::Usage(Usage {
            input_tokens: Some(23517),
            output_tokens: Some(412),
            cached_input_tokens: Some(18240),
            reasoning_tokens: Some(286),
            total_tokens: Some(23929),
            ..Usage::default()
        })
    );
    assert!(matches!(
        &events[3],
        StreamEvent::Final(FinalResult {
            is_error: false,
            ..
        })
    ));
}

#[test]
fn error_object_fails_with_its_error_text() {
    let events = parse_stream(&mut AgyParser::default(), ERROR);
    let StreamEvent::Final(f) = events.last().unwrap() else {
        panic!("final last")
    };
    assert!(f.is_error);
    assert_eq!(f.subtype.as_deref(), Some("ERROR"));
    assert!(
        f.error
            .as_deref()
            .is_some_and(|e| e.starts_with("RESOURCE_EXHAUSTED"))
    );
    let side = parse_agy_error_line(ERROR_STDERR).unwrap();
    assert!(
        side["short_error"]
            .as_str()
            .is_some_and(|s| s.contains("429"))
    );
    assert_eq!(parse_agy_error_line("error: other"), None);
}

#[test]
fn tool_callbacks_are_accepted_but_never_fire() {
    // contract: PRV-068
    let mut uses = 0;
    let mut results = 0;
    let events = parse_with_tool_callbacks(OUTPUT, |_| uses += 1, |_| results += 1);
    assert!(!events.is_empty());
    assert_eq!((uses, results), (0, 0));
    // Nor for output carrying tool-shaped records that would fire them in
    // another provider's stream.
    let tool_shaped = [
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#,
        r#"{"type":"item.completed","item":{"type":"command_execution","command":"ls","aggregated_output":"ok"}}"#,
        r#"{"conversation_id":"c1","status":"SUCCESS","response":"done","tool_calls":[{"name":"read_file","args":{"path":"a"}}],"tool_results":[{"name":"read_file","output":"x"}]}"#,
    ]
    .join("\n");
    let events = parse_with_tool_callbacks(&tool_shaped, |_| uses += 1, |_| results += 1);
    assert!(!events.is_empty());
    assert_eq!((uses, results), (0, 0));
}

#[test]
fn gemini_cli_document_and_stderr_error() {
    let events = parse_gemini_cli_output(GEMINI_OUT, "");
    assert_eq!(
        events[0],
        StreamEvent::SessionId {
            id: "5a0c3e81-9b2d-4f67-a1e4-7d8c2b6f0e93".into()
        }
    );
    assert!(events.iter().any(|e| matches!(e, StreamEvent::Usage(u) if u.input_tokens == Some(17386) && u.model.as_deref() == Some("gemini-2.5-pro"))));
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Final(FinalResult {
            is_error: false,
            ..
        }))
    ));
    let stderr = format!("[ERROR] {GEMINI_ERR}");
    let events = parse_gemini_cli_output("", &stderr);
    let Some(StreamEvent::Final(f)) = events.last() else {
        panic!("final last")
    };
    assert!(f.is_error);
    assert_eq!(f.subtype.as_deref(), Some("FatalTurnLimitedError"));
    assert!(matches!(
        parse_gemini_cli_output("", "")[..],
        [StreamEvent::Error {
            kind: ErrorKind::Incomplete,
            ..
        }]
    ));
}

#[test]
fn empty_stdout_is_incomplete_and_junk_is_typed() {
    let events = parse_stream(&mut AgyParser::default(), "");
    assert!(matches!(
        events[..],
        [StreamEvent::Error {
            kind: ErrorKind::Incomplete,
            ..
        }]
    ));
    let events = parse_stream(&mut AgyParser::default(), "[agy] print timeout\n");
    assert!(matches!(
        events[0],
        StreamEvent::Error {
            kind: ErrorKind::InvalidJson,
            ..
        }
    ));
    let mut p = AgyParser::default();
    assert!(matches!(
        p.parse_value(&json!([1]))[..],
        [StreamEvent::Error {
            kind: ErrorKind::BadShape,
            ..
        }]
    ));
    // Print-timeout partial output is a success.
    let ev = p.parse_value(&json!({"status": "success", "response": "partial"}));
    assert!(matches!(
        ev.last(),
        Some(StreamEvent::Final(FinalResult {
            is_error: false,
            ..
        }))
    ));
}

proptest! {
    #[test]
    fn no_input_panics(line in ".*", stderr in ".*") {
        let mut p = AgyParser::default();
        let _ = p.parse_line(&line);
        let _ = p.finish();
        let _ = parse_gemini_cli_output(&line, &stderr);
        let _ = parse_agy_error_line(&line);
    }
}

#[test]
fn keeps_the_seam_contract() {
    let req = providers_core::AgentRequest::new("p");
    let p = providers_gemini::GeminiProvider::default();
    for s in [OUTPUT, ERROR, ""] {
        assert_eq!(providers_core::check_provider_contract(&p, &req, s), Ok(()));
    }
}
