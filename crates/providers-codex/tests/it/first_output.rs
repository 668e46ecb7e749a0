//! The first-output watchdog gate: `codex exec --json` streams early.

use providers_codex::CodexProvider;
use providers_core::{AgentRequest, Provider, StreamEvent, StreamParser};

#[test]
fn exec_json_declares_early_first_output() {
    // contract: SUP-062
    let p = CodexProvider::default();
    // The transport is `exec --json`, whose first line (`thread.started`)
    // is printed right after spawn and already yields an event.
    let argv = p.invocation(&AgentRequest::new("hi")).expect("argv").argv;
    assert_eq!(argv[1..3], ["exec", "--json"], "{argv:?}");
    let first = r#"{"type":"thread.started","thread_id":"t-1"}"#;
    let events = p.parser().parse_line(first);
    assert!(
        events.contains(&StreamEvent::SessionId { id: "t-1".into() }),
        "{events:?}"
    );
    assert!(p.streams_first_output_early());
}
