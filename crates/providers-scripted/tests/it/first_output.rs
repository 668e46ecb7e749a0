//! The first-output watchdog gate: a scripted leg prints `system/init` first.

use providers_core::{Provider, StreamEvent, StreamParser};
use providers_scripted::{Response, ScriptMode, ScriptModel, ScriptedProvider, response_to_ndjson};

#[test]
fn scripted_legs_declare_early_first_output() {
    // contract: SUP-062
    let dir = tempfile::tempdir().expect("tempdir");
    let p = ScriptedProvider::new(
        "/usr/bin/lionrt",
        dir.path(),
        ScriptModel::new(ScriptMode::default(), Vec::new()),
    );
    // Whatever the response, the first line a leg prints is `system/init`,
    // and that line alone already yields an event.
    for response in [
        Response::Text { text: "hi".into() },
        Response::Stream {
            chunks: vec!["a".into(), "b".into()],
        },
        Response::Error {
            message: "rate limited".into(),
            status: Some(429),
        },
    ] {
        let ndjson = response_to_ndjson("s-1", &response);
        let first = ndjson.lines().next().expect("a first line");
        let events = p.parser().parse_line(first);
        assert_eq!(
            events,
            vec![StreamEvent::SessionId { id: "s-1".into() }],
            "{first}"
        );
    }
    assert!(p.streams_first_output_early());
}
