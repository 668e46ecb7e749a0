//! The scripted provider: argv, the leg file and parsing it back.

use proptest::prelude::*;
use providers_core::{
    AgentRequest, ErrorKind, FinalResult, Provider, StreamEvent, StreamParser, parse_stream,
};
use providers_scripted::{
    Error, Response, ScriptModel, ScriptedParser, ScriptedProvider, response_to_ndjson,
};
use serde_json::json;

/// What `lionrt __scripted-leg --script FILE` prints: every non-empty line.
fn replay(contents: &str) -> String {
    contents
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn legs_replay_the_script_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let script = ScriptModel::from_json(r#"[
        {"type": "stream", "chunks": ["Hel", "lo"]},
        {"type": "tool_call", "id": "c1", "name": "read", "arguments": {"path": "README.md"}, "when": {"has_tool": "read"}},
        {"type": "error", "message": "rate limited", "status": 429}
    ]"#).unwrap();
    let p = ScriptedProvider::new("/usr/bin/lionrt", dir.path(), script)
        .with_leg_args(["__scripted-leg"]);
    assert!(p.streams_first_output_early());

    let inv = p.invocation(&AgentRequest::new("say hello")).unwrap();
    let file = dir.path().join("scripted-leg-1.ndjson");
    assert_eq!(
        inv.argv,
        [
            "/usr/bin/lionrt",
            "__scripted-leg",
            "--script",
            file.to_string_lossy().as_ref()
        ]
    );
    assert_eq!(inv.files.len(), 1);
    inv.files[0].write_owner_only().unwrap();
    let printed = replay(&std::fs::read_to_string(&file).unwrap());
    let mut parser = p.parser();
    let events = parse_stream(&mut parser, &printed);
    assert_eq!(parser.resume_id(), Some("scripted-1"));
    assert_eq!(
        events,
        [
            StreamEvent::SessionId {
                id: "scripted-1".into()
            },
            StreamEvent::Text { text: "Hel".into() },
            StreamEvent::Text { text: "lo".into() },
            StreamEvent::Final(FinalResult {
                is_error: false,
                text: Some("Hello".into()),
                error: None,
                subtype: Some("success".into())
            }),
        ]
    );

    let mut with_tool = AgentRequest::new("look");
    with_tool.kwargs.insert("tools".into(), json!(["read"]));
    with_tool.resume = Some("scripted-1".into());
    let inv = p.invocation(&with_tool).unwrap();
    let events = parse_stream(&mut p.parser(), &inv.files[0].contents);
    assert!(events.contains(&StreamEvent::ToolUse {
        id: "c1".into(),
        name: "read".into(),
        input: json!({"path": "README.md"})
    }));
    assert_eq!(
        events[0],
        StreamEvent::SessionId {
            id: "scripted-1".into()
        },
        "resume keeps the session"
    );

    let inv = p.invocation(&AgentRequest::new("again")).unwrap();
    let events = parse_stream(&mut p.parser(), &inv.files[0].contents);
    assert!(
        matches!(events.last(), Some(StreamEvent::Final(FinalResult { is_error: true, error: Some(e), .. })) if e == "rate limited")
    );

    assert!(matches!(
        p.invocation(&AgentRequest::new("more")),
        Err(Error::ScriptExhausted { calls: 3 })
    ));
    assert_eq!(p.calls().unwrap().len(), 4);

    let mut bad = AgentRequest::new("x");
    bad.kwargs.insert("tool".into(), json!("read"));
    assert!(matches!(p.invocation(&bad), Err(Error::Core(_))));
}

#[test]
fn structured_and_missing_result() {
    let text = response_to_ndjson(
        "s",
        &Response::Structured {
            data: json!({"a": 1}),
        },
    );
    let events = parse_stream(&mut ScriptedParser::default(), &text);
    assert!(events.contains(&StreamEvent::Text {
        text: r#"{"a":1}"#.into()
    }));
    let events = parse_stream(
        &mut ScriptedParser::default(),
        "{\"type\":\"system\",\"session_id\":\"s\"}\nnoise\n",
    );
    assert!(matches!(
        events[1],
        StreamEvent::Error {
            kind: ErrorKind::InvalidJson,
            ..
        }
    ));
    assert!(matches!(
        events[2],
        StreamEvent::Error {
            kind: ErrorKind::Incomplete,
            ..
        }
    ));
}

const DEMO: &str = include_str!("../../../../fixtures/providers/scripted_demo.jsonl");

#[test]
fn parses_the_lionrt_demo_script() {
    let events = parse_stream(&mut ScriptedParser::default(), DEMO);
    assert_eq!(
        events[0],
        StreamEvent::Text {
            text: "Reading the task and planning the change.".into()
        }
    );
    assert_eq!(
        events[1],
        StreamEvent::ToolUse {
            id: "edit".into(),
            name: "edit".into(),
            input: json!({"path": "README.md"})
        }
    );
    assert!(matches!(
        &events[2],
        StreamEvent::ToolResult {
            is_error: false,
            ..
        }
    ));
    assert!(
        matches!(&events[4], StreamEvent::Usage(u) if u.input_tokens == Some(1200) && u.output_tokens == Some(340))
    );
    assert!(matches!(
        &events[5],
        StreamEvent::Final(FinalResult {
            is_error: false,
            ..
        })
    ));
    assert_eq!(events.len(), 6);
}

proptest! {
    #[test]
    fn no_script_or_line_panics(text in ".*", line in ".*") {
        let _ = ScriptModel::from_json(&text);
        let mut p = ScriptedParser::default();
        let _ = p.parse_line(&line);
        let _ = p.finish();
    }
}

#[test]
fn keeps_the_seam_contract() {
    let dir = tempfile::tempdir().unwrap();
    let script =
        ScriptModel::from_json(r#"[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}, {"type": "text", "text": "c"}]"#)
            .unwrap();
    let p = ScriptedProvider::new("lionrt", dir.path(), script);
    let leg = response_to_ndjson("s-1", &Response::Text { text: "x".into() });
    for s in [DEMO, leg.as_str(), ""] {
        assert_eq!(
            providers_core::check_provider_contract(&p, &AgentRequest::new("p"), s),
            Ok(())
        );
    }
}

#[test]
fn a_script_takes_no_effort_and_no_mcp_set() {
    // contract: PRV-093
    let dir = tempfile::tempdir().unwrap();
    let script = ScriptModel::from_json(r#"[{"type": "text", "text": "a"}]"#).unwrap();
    let p = ScriptedProvider::new("lionrt", dir.path(), script);
    for e in providers_core::Effort::ALL {
        assert_eq!(p.clamp_effort(None, e), None);
    }
    assert_eq!(p.mcp_forwarding(), None);
    let mut kwargs = serde_json::Map::new();
    let fwd = providers_core::ForwardedMcp::default();
    assert!(!providers_core::apply_forwarded_mcp_servers(
        &p,
        &mut kwargs,
        &fwd
    ));
    assert!(kwargs.is_empty());
}
