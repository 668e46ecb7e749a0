//! Integration tests of providers-openai: request shaping, and every API
//! call through the model layer over scripted in-memory transports.

mod executor;
mod model;
mod spawn;

use std::io::{Cursor, Read, Seek, SeekFrom};
use std::time::{Duration, Instant};

use providers_core::{BodySource, Endpoint, EndpointConfig, HttpError, TransportFailure};
use providers_openai::{
    ChatMessage, ChatRequest, Error, Executor, Model, ModelConfig, RateLimit, Role, Sleeper,
    Transport, UploadEndpoint, shape_chat_request, uses_developer_messages,
};
use serde_json::{Value, json};

/// A current-thread runtime with timers.
pub(crate) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// Runs `f` on a current-thread runtime, failing (not hanging) if it has
/// not finished at a generous deadline.
pub(crate) fn block_on_within<F: std::future::Future>(f: F) -> F::Output {
    block_on(async {
        tokio::time::timeout(Duration::from_secs(60), f)
            .await
            .expect("finished before the deadline")
    })
}

/// Yields until `cond` holds; panics only at a generous deadline.
pub(crate) async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::task::yield_now().await;
    }
}

/// Answers from a queue (the last answer repeats) and records bodies.
pub(crate) struct Fake {
    answers: Vec<Result<Value, TransportFailure>>,
    pub(crate) sent_json: Vec<Value>,
    pub(crate) sent_files: Vec<(String, Vec<u8>)>,
    /// When set, the in-flight count seen at each send.
    pub(crate) probe: Option<Executor>,
    pub(crate) in_flight_at_send: Vec<usize>,
}

impl Fake {
    pub(crate) fn new(answers: Vec<Result<Value, TransportFailure>>) -> Self {
        Self {
            answers,
            sent_json: vec![],
            sent_files: vec![],
            probe: None,
            in_flight_at_send: vec![],
        }
    }
    pub(crate) fn ok() -> Self {
        Self::new(vec![Ok(json!({"id": "c"}))])
    }
    fn answer(&mut self, n: usize) -> Result<Value, TransportFailure> {
        if let Some(e) = &self.probe {
            self.in_flight_at_send.push(e.stats().in_flight);
        }
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

pub(crate) struct NoSleep;
impl Sleeper for NoSleep {
    async fn sleep(&mut self, _d: Duration) {}
}

pub(crate) fn status(s: u16) -> TransportFailure {
    TransportFailure::Status(HttpError {
        status: s,
        body: String::new(),
    })
}

/// A model over a plain (API) endpoint for `model`.
pub(crate) fn api_model(model: &str, config: ModelConfig) -> Model {
    let mut c = EndpointConfig::new("openai");
    c.model = Some(model.to_owned());
    Model::new(Endpoint::plain(&c), config).expect("valid model config")
}

pub(crate) fn limited(requests: u32) -> ModelConfig {
    ModelConfig {
        rate_limit: RateLimit {
            requests,
            queue_capacity: 16,
        },
        ..ModelConfig::default()
    }
}

pub(crate) fn user(text: &str) -> ChatRequest {
    ChatRequest {
        model: None,
        messages: vec![ChatMessage {
            role: Role::User,
            content: text.into(),
        }],
        ..Default::default()
    }
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
    let req = user("x");
    let m = api_model(
        "gpt-5",
        ModelConfig {
            max_retries: 4,
            ..ModelConfig::default()
        },
    );
    let mut t = Fake::new(vec![Err(status(401))]);
    let r = block_on(m.chat(&mut t, &mut NoSleep, &req));
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
        block_on(m.chat(&mut t, &mut NoSleep, &req)).unwrap(),
        json!({"id": "c"})
    );
    assert_eq!(t.sent_json.len(), 3);
}

#[test]
fn all_upload_endpoints_share_replay_behaviour() {
    // contract: PRV-078, PRV-074, PRV-075, PRV-076
    let m = api_model(
        "whisper-1",
        ModelConfig {
            max_retries: 3,
            ..ModelConfig::default()
        },
    );
    let single = api_model(
        "whisper-1",
        ModelConfig {
            max_retries: 1,
            ..ModelConfig::default()
        },
    );
    for ep in UploadEndpoint::ALL {
        // Bytes: every attempt sends the full snapshot.
        let mut t = Fake::new(vec![Err(status(503)), Ok(json!({"text": "ok"}))]);
        let bytes = b"RIFFaudio".to_vec();
        block_on(m.upload(
            ep,
            &mut t,
            &mut NoSleep,
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
        block_on(m.upload(
            ep,
            &mut t,
            &mut NoSleep,
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
        let r = block_on(m.upload(
            ep,
            &mut t,
            &mut NoSleep,
            &json!({}),
            BodySource::OneShot(Box::new(Cursor::new(b"x".to_vec()))),
        ));
        assert!(
            matches!(r, Err(Error::Core(providers_core::Error::NotReplayable))),
            "{ep:?}"
        );
        assert!(t.sent_files.is_empty());

        // Single-shot endpoint: the stream is handed through once.
        let mut t = Fake::new(vec![Ok(json!({}))]);
        block_on(single.upload(
            ep,
            &mut t,
            &mut NoSleep,
            &json!({}),
            BodySource::OneShot(Box::new(Cursor::new(b"once".to_vec()))),
        ))
        .unwrap();
        assert_eq!(t.sent_files[0].1, b"once");
    }
}

#[test]
fn the_model_fills_the_body_from_its_config_and_never_sends_an_mcp_set() {
    let m = api_model("openai/gpt-5", ModelConfig::default());
    m.configure(|c| {
        c.update("temperature", providers_core::KwargValue::Json(json!(0.1)));
        c.update("top_p", providers_core::KwargValue::Json(json!(0.5)));
        c.update(
            "mcp_servers",
            providers_core::KwargValue::Json(json!({"gh": {"env": {"T": "secret"}}})),
        );
    });
    let mut req = user("hi");
    req.messages.insert(
        0,
        ChatMessage {
            role: Role::System,
            content: "rules".into(),
        },
    );
    req.extra.insert("temperature".into(), json!(0.9));
    let mut t = Fake::ok();
    block_on(m.chat(&mut t, &mut NoSleep, &req)).unwrap();
    assert_eq!(
        t.sent_json[0],
        json!({"model": "gpt-5", "temperature": 0.9, "top_p": 0.5, "messages": [
            {"role": "developer", "content": "rules"}, {"role": "user", "content": "hi"}]}),
        "request fields win, the config fills the rest, no mcp set"
    );

    let mut t = Fake::ok();
    block_on(m.upload(
        UploadEndpoint::OpenAiAudio,
        &mut t,
        &mut NoSleep,
        &json!({"language": "en"}),
        BodySource::Bytes(b"x"),
    ))
    .unwrap();
    assert_eq!(t.sent_files.len(), 1);

    let cli = Model::new(
        Endpoint::agentic(&EndpointConfig::new("claude")).unwrap(),
        ModelConfig::default(),
    )
    .unwrap();
    let mut t = Fake::ok();
    assert!(matches!(
        block_on(cli.chat(&mut t, &mut NoSleep, &user("x"))),
        Err(Error::NotAnApiEndpoint(p)) if p == "claude"
    ));
    assert!(t.sent_json.is_empty());
}
