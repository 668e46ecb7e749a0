//! Integration tests of providers-openai.

use std::io::{Cursor, Read, Seek, SeekFrom};
use std::time::Duration;

use providers_core::{BodySource, EndpointRetry, HttpError, TransportFailure};
use providers_openai::{
    ChatMessage, ChatRequest, Error, Role, Sleeper, Transport, UploadEndpoint, chat,
    shape_chat_request, upload, uses_developer_messages,
};
use serde_json::{Value, json};

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// Answers from a queue (the last answer repeats) and records bodies.
struct Fake {
    answers: Vec<Result<Value, TransportFailure>>,
    sent_json: Vec<Value>,
    sent_files: Vec<(String, Vec<u8>)>,
}

impl Fake {
    fn new(answers: Vec<Result<Value, TransportFailure>>) -> Self {
        Self {
            answers,
            sent_json: vec![],
            sent_files: vec![],
        }
    }
    fn answer(&self, n: usize) -> Result<Value, TransportFailure> {
        self.answers[n.min(self.answers.len() - 1)].clone()
    }
}

impl Transport for Fake {
    async fn post_json(&mut self, _path: &str, body: &Value) -> Result<Value, TransportFailure> {
        self.sent_json.push(body.clone());
        self.answer(self.sent_json.len() - 1)
    }
    async fn post_file(
        &mut self,
        path: &str,
        _fields: &Value,
        mut file: Box<dyn Read + Send>,
    ) -> Result<Value, TransportFailure> {
        let mut buf = Vec::new();
        file.read_to_end(&mut buf)
            .map_err(|e| TransportFailure::Other(e.to_string()))?;
        self.sent_files.push((path.to_owned(), buf));
        self.answer(self.sent_files.len() - 1)
    }
}

struct NoSleep;
impl Sleeper for NoSleep {
    async fn sleep(&mut self, _d: Duration) {}
}

fn status(s: u16) -> TransportFailure {
    TransportFailure::Status(HttpError {
        status: s,
        body: String::new(),
    })
}

#[test]
fn developer_gate_matches_families_by_prefix() {
    // contract: PRV-072
    for m in [
        "o1",
        "o1-mini",
        "o3-2025-04-16",
        "o4-mini",
        "gpt-5",
        "gpt-5-2025-08-07",
        "openai/gpt-5-2025-08-07",
        "gpt-5.1-codex",
        "openrouter/openai/o3",
    ] {
        assert!(uses_developer_messages(Some(m)), "{m}");
    }
}

#[test]
fn unknown_or_missing_models_keep_system() {
    // contract: PRV-073
    for m in [
        "gpt-4o",
        "gpt-4.1",
        "claude-sonnet",
        "o10-preview",
        "gpt-50",
        "",
        "llama-3",
    ] {
        assert!(!uses_developer_messages(Some(m)), "{m}");
    }
    assert!(!uses_developer_messages(None));
    let req = ChatRequest {
        model: None,
        messages: vec![ChatMessage {
            role: Role::System,
            content: "be brief".into(),
        }],
        ..Default::default()
    };
    assert_eq!(
        shape_chat_request(&req).unwrap()["messages"][0]["role"],
        "system"
    );
}

#[test]
fn shaping_rewrites_system_for_gated_models() {
    let mut req = ChatRequest {
        model: Some("openai/gpt-5".into()),
        messages: vec![
            ChatMessage {
                role: Role::System,
                content: "rules".into(),
            },
            ChatMessage {
                role: Role::User,
                content: "hi".into(),
            },
        ],
        ..Default::default()
    };
    req.extra.insert("temperature".into(), json!(0.2));
    let body = shape_chat_request(&req).unwrap();
    assert_eq!(
        body,
        json!({"model": "gpt-5", "temperature": 0.2, "messages": [
            {"role": "developer", "content": "rules"}, {"role": "user", "content": "hi"}]})
    );
    assert!(matches!(
        shape_chat_request(&ChatRequest::default()),
        Err(Error::NoMessages)
    ));
}

#[test]
fn chat_calls_follow_the_retry_contract() {
    // contract: PRV-045, PRV-046
    let req = ChatRequest {
        model: Some("gpt-5".into()),
        messages: vec![ChatMessage {
            role: Role::User,
            content: "x".into(),
        }],
        ..Default::default()
    };
    let retry = EndpointRetry {
        max_retries: 4,
        ..Default::default()
    };
    let mut t = Fake::new(vec![Err(status(401))]);
    let r = block_on(chat(&mut t, &mut NoSleep, &retry, &req));
    assert!(matches!(
        r,
        Err(Error::Core(providers_core::Error::NonRetryableClient(_)))
    ));
    assert_eq!(t.sent_json.len(), 1);
    let mut t = Fake::new(vec![
        Err(status(429)),
        Err(status(502)),
        Ok(json!({"id": "c"})),
    ]);
    assert_eq!(
        block_on(chat(&mut t, &mut NoSleep, &retry, &req)).unwrap(),
        json!({"id": "c"})
    );
    assert_eq!(t.sent_json.len(), 3);
}

#[test]
fn all_upload_endpoints_share_replay_behaviour() {
    // contract: PRV-078, PRV-074, PRV-075, PRV-076
    let retry = EndpointRetry {
        max_retries: 3,
        ..Default::default()
    };
    for ep in UploadEndpoint::ALL {
        // Bytes: every attempt sends the full snapshot.
        let mut t = Fake::new(vec![Err(status(503)), Ok(json!({"text": "ok"}))]);
        let bytes = b"RIFFaudio".to_vec();
        block_on(upload(
            ep,
            &mut t,
            &mut NoSleep,
            &retry,
            &json!({}),
            BodySource::Bytes(&bytes),
        ))
        .unwrap();
        assert_eq!(
            t.sent_files,
            vec![
                (ep.path().to_owned(), bytes.clone()),
                (ep.path().to_owned(), bytes.clone())
            ],
            "{ep:?}"
        );

        // Seekable: every attempt starts at the original position.
        let mut s = Cursor::new(b"XXhead+body".to_vec());
        s.seek(SeekFrom::Start(2)).unwrap();
        let mut t = Fake::new(vec![Err(status(500)), Ok(json!({}))]);
        block_on(upload(
            ep,
            &mut t,
            &mut NoSleep,
            &retry,
            &json!({}),
            BodySource::Seekable(&mut s),
        ))
        .unwrap();
        assert_eq!(t.sent_files.len(), 2, "both attempts sent: {ep:?}");
        assert!(
            t.sent_files.iter().all(|(_, b)| b == b"head+body"),
            "{ep:?}"
        );

        // One-shot with retries possible: refused before any send.
        let mut t = Fake::new(vec![Ok(json!({}))]);
        let r = block_on(upload(
            ep,
            &mut t,
            &mut NoSleep,
            &retry,
            &json!({}),
            BodySource::OneShot(Box::new(Cursor::new(b"x".to_vec()))),
        ));
        assert!(
            matches!(r, Err(Error::Core(providers_core::Error::NotReplayable))),
            "{ep:?}"
        );
        assert!(t.sent_files.is_empty());

        // Single-shot endpoint: the stream is handed through once.
        let single = EndpointRetry {
            max_retries: 1,
            ..Default::default()
        };
        let mut t = Fake::new(vec![Ok(json!({}))]);
        block_on(upload(
            ep,
            &mut t,
            &mut NoSleep,
            &single,
            &json!({}),
            BodySource::OneShot(Box::new(Cursor::new(b"once".to_vec()))),
        ))
        .unwrap();
        assert_eq!(t.sent_files[0].1, b"once");
    }
}
