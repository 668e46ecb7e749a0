//! The first-output watchdog gate: agy buffers its whole answer.

use providers_core::{AgentRequest, Provider};
use providers_gemini::GeminiProvider;

#[test]
fn buffered_json_print_mode_does_not_declare_early_first_output() {
    // contract: SUP-062
    let p = GeminiProvider::default();
    // The transport is json print mode (one object once the whole result
    // exists), not a stream: nothing is printed right after spawn.
    let argv = p.invocation(&AgentRequest::new("hi")).expect("argv").argv;
    assert_eq!(argv[1..3], ["--output-format", "json"], "{argv:?}");
    assert!(!argv.iter().any(|a| a == "stream-json"), "{argv:?}");
    assert!(!p.streams_first_output_early());
}
