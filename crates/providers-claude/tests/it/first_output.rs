//! The first-output watchdog gate: Claude Code streams early.

use providers_claude::ClaudeProvider;
use providers_core::{AgentRequest, Provider, StreamEvent, StreamParser};

#[test]
fn stream_json_declares_early_first_output() {
    // contract: SUP-062
    let p = ClaudeProvider::default();
    // The transport is stream-json, whose first line (`system/init`) is
    // printed right after spawn and already yields an event.
    let argv = p.invocation(&AgentRequest::new("hi")).expect("argv").argv;
    assert!(
        argv.windows(2)
            .any(|w| w == ["--output-format", "stream-json"]),
        "{argv:?}"
    );
    let first = r#"{"type":"system","subtype":"init","session_id":"s-1","model":"sonnet"}"#;
    let events = p.parser().parse_line(first);
    assert!(
        events.contains(&StreamEvent::SessionId { id: "s-1".into() }),
        "{events:?}"
    );
    assert!(p.streams_first_output_early());
}
