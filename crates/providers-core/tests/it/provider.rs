//! The seam types: parsing helpers, redacting Debug, owner-only files.

use std::collections::BTreeMap;

use providers_core::{
    ErrorKind, Invocation, PrivateFile, Stdin, StreamEvent, StreamParser, parse_stream,
};

/// A parser that yields one Text event per `{"t": ...}` value.
#[derive(Default)]
struct Echo {
    done: bool,
}

impl StreamParser for Echo {
    fn parse_value(&mut self, v: &serde_json::Value) -> Vec<StreamEvent> {
        match v.get("t").and_then(|t| t.as_str()) {
            Some("end") => {
                self.done = true;
                vec![StreamEvent::BenignEnd]
            }
            Some(t) => vec![StreamEvent::Text { text: t.into() }],
            None => vec![StreamEvent::error(ErrorKind::BadShape, "no t")],
        }
    }
    fn finish(&mut self) -> Vec<StreamEvent> {
        if self.done {
            vec![]
        } else {
            vec![StreamEvent::error(ErrorKind::Incomplete, "no end")]
        }
    }
    fn resume_id(&self) -> Option<&str> {
        None
    }
}

#[test]
fn malformed_lines_become_error_events_and_parsing_continues() {
    let text = "{\"t\":\"a\"}\n\nBANNER secret-ish text\n{\"t\":\"b\"}\n{\"t\":\"end\"}\n";
    let events = parse_stream(&mut Echo::default(), text);
    assert_eq!(events.len(), 4);
    assert!(
        matches!(&events[1], StreamEvent::Error { kind: ErrorKind::InvalidJson, message, .. } if !message.contains("BANNER"))
    );
    assert_eq!(events[2], StreamEvent::Text { text: "b".into() });
    assert!(events[3].is_terminal());
    let events = parse_stream(&mut Echo::default(), "{\"t\":\"a\"}");
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Error {
            kind: ErrorKind::Incomplete,
            ..
        })
    ));
}

#[test]
fn invocation_debug_redacts_env_and_files() {
    let inv = Invocation {
        argv: vec!["x".into()],
        env: BTreeMap::from([("TOKEN".to_owned(), "s3cr3t-value".to_owned())]),
        files: vec![PrivateFile {
            path: "/tmp/p".into(),
            contents: "s3cr3t-value".into(),
        }],
        stdin: Stdin::Bytes(b"s3cr3t-value".to_vec()),
        cwd: None,
    };
    let dbg = format!("{inv:?}");
    assert!(!dbg.contains("s3cr3t"), "{dbg}");
    assert!(dbg.contains("<env: 1 variable(s)>"));
}

#[cfg(unix)]
#[test]
fn private_files_are_owner_only() {
    // contract: PRV-094
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.toml");
    std::fs::write(&path, "old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let f = PrivateFile {
        path: path.clone(),
        contents: "K = \"v\"\n".into(),
    };
    f.write_owner_only().unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "K = \"v\"\n");
}
