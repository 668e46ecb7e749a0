//! The first-output watchdog gate: pi's first observable output may lag.

use providers_core::{AgentRequest, Provider, StreamParser};
use providers_pi::PiProvider;

#[test]
fn pi_does_not_declare_early_first_output() {
    // contract: SUP-062
    let p = PiProvider::default();
    assert!(p.invocation(&AgentRequest::new("hi")).is_ok());
    // pi prints `agent_start` at once, but that lifecycle line yields no
    // event: the first output a caller observes is the first content, which
    // may come after the model's whole thinking time. So the flag is false
    // (the spec's reading of pi, not an NDJSON-line count).
    for lifecycle in [r#"{"type":"agent_start"}"#, r#"{"type":"turn_start"}"#] {
        let events = p.parser().parse_line(lifecycle);
        assert!(events.is_empty(), "{lifecycle}: {events:?}");
    }
    assert!(!p.streams_first_output_early());
}
