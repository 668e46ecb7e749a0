//! Messenger events (GATE-024, GATE-025).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tool_gate::{Event, Message, Messenger};

use crate::capture_logs;

/// A worker's `request_help` tool: emits help and returns its own result.
fn request_help_tool(messenger: &Messenger, question: &str) -> Result<Value, tool_gate::Error> {
    messenger.fire(
        &Event::Help,
        &Message {
            sender: "worker-1".into(),
            payload: json!({"question": question}),
        },
    )?;
    Ok(json!({"status": "help requested"}))
}

#[test]
fn a_failing_help_callback_is_logged_and_the_turn_completes() {
    // contract: GATE-024
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let mut messenger = Messenger::new();
    messenger.on(Event::Help, move |_, m| {
        seen.fetch_add(1, Ordering::SeqCst);
        Err(format!("coordinator offline for {}", m.sender).into())
    });
    let (result, logs) = capture_logs(|| request_help_tool(&messenger, "where is the schema?"));
    assert_eq!(
        result.expect("turn completes"),
        json!({"status": "help requested"})
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(
        logs.contains("WARN") && logs.contains("coordinator offline for worker-1"),
        "{logs}"
    );
    let mut panicking = Messenger::new();
    panicking.on(Event::Help, |_, _| panic!("coordinator bug"));
    assert!(request_help_tool(&panicking, "q").is_ok());
}

#[test]
fn other_events_report_their_callback_failure() {
    let mut messenger = Messenger::new();
    messenger.on(Event::Done, |_, _| Err("store down".into()));
    messenger.on(Event::Progress, |_, _| panic!("bug"));
    let msg = Message {
        sender: "w".into(),
        payload: Value::Null,
    };
    let err = messenger.fire(&Event::Done, &msg).unwrap_err();
    assert!(
        matches!(&err, tool_gate::Error::Callback { event, .. } if event == "done"),
        "{err}"
    );
    assert!(messenger.fire(&Event::Progress, &msg).is_err());
}

#[test]
fn an_event_with_no_callback_logs_at_debug_not_warn() {
    // contract: GATE-025
    let messenger = Messenger::new();
    let msg = Message {
        sender: "w".into(),
        payload: Value::Null,
    };
    let (result, logs) = capture_logs(|| messenger.fire(&Event::Other("custom".into()), &msg));
    assert!(result.is_ok());
    let lines: Vec<&str> = logs.lines().collect();
    assert_eq!(lines.len(), 1, "{logs}");
    assert!(
        lines[0].contains("DEBUG") && lines[0].contains("custom"),
        "{logs}"
    );
    assert!(!logs.contains("WARN") && !logs.contains("ERROR"));
}
