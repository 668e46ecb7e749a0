//! The scripted leg as its own binary: the provider works without lionrt.

use providers_core::{AgentRequest, Provider, StreamEvent, parse_stream};
use providers_scripted::{ScriptModel, ScriptedProvider, run_leg};

fn leg_binary() -> &'static str {
    env!("CARGO_BIN_EXE_scripted-leg")
}

#[test]
fn the_scripted_leg_binary_replays_an_invocation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let work = tempfile::tempdir().expect("workdir");
    let script = ScriptModel::from_json(
        r#"[{"type": "tool_call", "id": "c1", "name": "write_file",
             "arguments": {"path": "notes/a.txt", "content": "hello"}}]"#,
    )
    .expect("script");
    let p = ScriptedProvider::new(leg_binary(), dir.path(), script);
    let mut request = AgentRequest::new("write it");
    request.workspace = Some(work.path().to_owned());
    let inv = p.invocation(&request).expect("invocation");
    assert_eq!(inv.argv[0], leg_binary());
    assert_eq!(inv.argv[1], "--script");
    for f in &inv.files {
        f.write_owner_only().expect("leg file");
    }
    let out = std::process::Command::new(&inv.argv[0])
        .args(&inv.argv[1..])
        .current_dir(work.path())
        .output()
        .expect("run the leg");
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    let events = parse_stream(&mut p.parser(), &stdout);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::ToolUse { name, .. } if name == "write_file"))
    );
    assert!(matches!(events.last(), Some(StreamEvent::Final(f)) if !f.is_error));
    // Like an agent, the leg acted on the tool call in its working directory.
    assert_eq!(
        std::fs::read_to_string(work.path().join("notes/a.txt")).expect("written"),
        "hello"
    );
}

#[test]
fn bad_tool_input_and_a_missing_file_fail_the_leg() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope.ndjson");
    let out = std::process::Command::new(leg_binary())
        .args(["--script", missing.to_str().expect("utf-8")])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let usage = std::process::Command::new(leg_binary())
        .output()
        .expect("run");
    assert_eq!(usage.status.code(), Some(2));

    for line in [
        r#"{"type":"tool_use","name":"write_file","input":{"path":"../escape","content":"x"}}"#,
        r#"{"type":"tool_use","name":"write_file","input":{"path":"/etc/x","content":"x"}}"#,
        r#"{"type":"tool_use","name":"sleep","input":{"ms":"soon"}}"#,
        r#"{"type":"tool_use","name":"run_command","input":{"argv":[]}}"#,
    ] {
        let file = dir.path().join("leg.ndjson");
        std::fs::write(&file, format!("{line}\n")).expect("write");
        let mut out = Vec::new();
        assert!(run_leg(&file, &mut out).is_err(), "{line}");
        assert!(out.is_empty(), "nothing printed before the refusal: {line}");
    }
}

#[test]
fn sleep_and_run_command_act_before_the_line_is_printed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flag = dir.path().join("ran");
    let file = dir.path().join("leg.ndjson");
    let lines = [
        serde_json::json!({"type":"tool_use","name":"sleep","input":{"ms":50}}),
        serde_json::json!({"type":"tool_use","name":"run_command",
            "input":{"argv":["touch", flag.to_str().expect("utf-8")]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, text).expect("write");
    let started = std::time::Instant::now();
    let mut out = Vec::new();
    run_leg(&file, &mut out).expect("leg");
    assert!(started.elapsed() >= std::time::Duration::from_millis(50));
    assert!(flag.exists(), "run_command ran and was waited for");
    assert_eq!(String::from_utf8(out).expect("utf-8").lines().count(), 2);
}
