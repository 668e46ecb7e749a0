//! Model copies, the MCP-forwarding copy, and the manager's shutdown,
//! through the model's public call path.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use providers_core::{
    AgentRequest, Endpoint, EndpointConfig, ForwardedMcp, Invocation, KwargValue, McpForwarding,
    Provider, RetryConfig, StreamEvent, StreamParser,
};
use providers_openai::{CircuitBreaker, Close, Error, Model, ModelConfig, ModelManager};
use serde_json::json;

use crate::{
    Fake, NoSleep, api_model, block_on, block_on_within, limited, status, user, wait_until,
};

#[test]
fn a_copy_has_a_fresh_id_and_its_own_config() {
    // contract: PRV-023
    let m = api_model("gpt-5", ModelConfig::default());
    m.configure(|c| c.update("temperature", KwargValue::Json(json!(0.2))));
    let c = m.copy(false, false).unwrap();
    assert_ne!(c.id(), m.id());
    assert_eq!(c.to_dict(), m.to_dict(), "equal config");

    c.configure(|cfg| {
        cfg.model = Some("gpt-4o".into());
        cfg.update("temperature", KwargValue::Json(json!(1.5)));
    });
    let (mut to, mut tc) = (Fake::ok(), Fake::ok());
    block_on(m.chat(&mut to, &mut NoSleep, &user("x"))).unwrap();
    block_on(c.chat(&mut tc, &mut NoSleep, &user("x"))).unwrap();
    assert_eq!(to.sent_json[0]["model"], "gpt-5");
    assert_eq!(to.sent_json[0]["temperature"], json!(0.2));
    assert_eq!(tc.sent_json[0]["model"], "gpt-4o");
    assert_eq!(tc.sent_json[0]["temperature"], json!(1.5));
    assert_eq!(m.config().model.as_deref(), Some("gpt-5"));
}

#[test]
fn share_executor_shares_the_very_executor_and_the_default_does_not() {
    // contract: PRV-025
    let m = api_model("gpt-5", limited(1));
    let shared = m.copy(false, true).unwrap();
    let own = m.copy(false, false).unwrap();
    assert!(shared.executor().same_as(m.executor()));
    assert!(!own.executor().same_as(m.executor()));
    assert_eq!(own.executor().rate_limit(), m.executor().rate_limit());

    // The original spends the one-call budget...
    let mut t = Fake::ok();
    block_on(m.chat(&mut t, &mut NoSleep, &user("a"))).unwrap();
    // ...so the copy with its own executor goes straight through...
    let mut t = Fake::ok();
    block_on(own.chat(&mut t, &mut NoSleep, &user("b"))).unwrap();
    assert_eq!(t.sent_json.len(), 1);
    // ...and the sharing copy waits on the same budget until a tick.
    let ex = m.executor().clone();
    let mut t = Fake::ok();
    let (r, ()) = block_on_within(async {
        tokio::join!(
            async { shared.chat(&mut t, &mut NoSleep, &user("c")).await },
            async {
                wait_until("the shared budget to defer the copy", || {
                    ex.stats().queued == 1
                })
                .await;
                ex.tick();
            }
        )
    });
    r.unwrap();

    // The default carries no session; share_session does (agentic).
    let cli = Model::new(
        Endpoint::agentic(&EndpointConfig::new("claude")).unwrap(),
        ModelConfig::default(),
    )
    .unwrap();
    cli.set_session_id(Some("s-1".into()));
    assert_eq!(cli.copy(false, false).unwrap().session_id(), None);
    assert_eq!(
        cli.copy(true, false).unwrap().session_id().as_deref(),
        Some("s-1")
    );
}

fn retry_everything(_: &providers_core::Error) -> bool {
    true
}

#[test]
fn retry_config_and_breaker_are_shared_by_reference() {
    // contract: PRV-026
    let breaker = Arc::new(CircuitBreaker::new(2, Duration::from_secs(3600)));
    let rc = Arc::new(RetryConfig {
        max_retries: 2,
        backoff: providers_core::Backoff::default(),
        retry_on: retry_everything,
    });
    let m = api_model(
        "gpt-5",
        ModelConfig {
            retry_config: Some(Arc::clone(&rc)),
            circuit_breaker: Some(Arc::clone(&breaker)),
            ..ModelConfig::default()
        },
    );
    for (share_session, share_executor) in [(false, false), (true, true)] {
        let c = m.copy(share_session, share_executor).unwrap();
        assert!(Arc::ptr_eq(c.retry_config().unwrap(), &rc));
        assert!(Arc::ptr_eq(c.circuit_breaker().unwrap(), &breaker));
    }

    // The copy retries under the shared layer (3 attempts) and its
    // failures open the shared breaker...
    let c = m.copy(false, false).unwrap();
    for _ in 0..2 {
        let mut t = Fake::new(vec![Err(status(500))]);
        assert!(block_on(c.chat(&mut t, &mut NoSleep, &user("x"))).is_err());
        assert_eq!(t.sent_json.len(), 3);
    }
    assert!(breaker.is_open());
    // ...so the original fails fast without sending.
    let mut t = Fake::ok();
    let r = block_on(m.chat(&mut t, &mut NoSleep, &user("x")));
    assert!(matches!(r, Err(Error::CircuitOpen)), "{r:?}");
    assert!(t.sent_json.is_empty());
    // A caller's 4xx says nothing about the endpoint's health.
    breaker.record_success();
    for _ in 0..3 {
        let mut t = Fake::new(vec![Err(status(400))]);
        assert!(block_on(c.chat(&mut t, &mut NoSleep, &user("x"))).is_err());
    }
    assert!(!breaker.is_open());
}

#[test]
fn shutdown_closes_every_model_so_no_replenisher_remains() {
    // contract: PRV-027
    let mut manager = ModelManager::new();
    let models: Vec<_> = (0..3)
        .map(|_| manager.register(api_model("gpt-5", limited(5))))
        .collect();
    let copy = manager.register(models[0].copy(false, false).unwrap());
    let all: Vec<_> = models.iter().chain([&copy]).cloned().collect();
    block_on(async {
        let tasks: Vec<_> = all
            .iter()
            .map(|m| {
                tokio::spawn(
                    m.executor()
                        .replenisher(Duration::from_secs(3600), tokio::time::sleep),
                )
            })
            .collect();
        wait_until("every replenisher to run", || {
            all.iter().all(|m| m.executor().stats().replenishers == 1)
        })
        .await;
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(manager.shutdown().is_empty());
        for t in tasks {
            tokio::time::timeout(Duration::from_secs(60), t)
                .await
                .expect("a replenisher outlived shutdown")
                .expect("replenisher ended normally");
        }
    });
    for m in &all {
        let s = m.executor().stats();
        assert!(s.stopped && s.replenishers == 0, "{s:?}");
    }
}

/// A model stand-in that counts closes and can fail or panic.
struct Counted {
    closes: AtomicUsize,
    fail: Option<&'static str>,
}

impl Counted {
    fn new(fail: Option<&'static str>) -> Self {
        Self {
            closes: AtomicUsize::new(0),
            fail,
        }
    }
}

impl Close for Counted {
    fn close(&self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.closes.fetch_add(1, Ordering::SeqCst);
        match self.fail {
            None => Ok(()),
            Some("panic") => panic!("close blew up"),
            Some(e) => Err(e.into()),
        }
    }
}

#[test]
fn shutdown_is_idempotent() {
    // contract: PRV-028
    let mut manager = ModelManager::new();
    let a = manager.register(Counted::new(None));
    let b = manager.register(Counted::new(None));
    assert!(manager.shutdown().is_empty());
    assert!(manager.shutdown().is_empty(), "the second call succeeds");
    assert_eq!(a.closes.load(Ordering::SeqCst), 1, "and does nothing");
    assert_eq!(b.closes.load(Ordering::SeqCst), 1);

    let mut manager = ModelManager::new();
    let m = manager.register(api_model("gpt-5", limited(1)));
    assert!(manager.shutdown().is_empty());
    assert!(manager.shutdown().is_empty());
    assert!(m.executor().stats().stopped);
}

#[test]
fn a_failing_close_is_reported_and_the_rest_still_close() {
    // contract: PRV-029
    let mut manager: ModelManager<Counted> = ModelManager::new();
    let first = manager.register(Counted::new(None));
    let failing = manager.register(Counted::new(Some("endpoint close refused")));
    let panicking = manager.register(Counted::new(Some("panic")));
    let last = manager.register(Counted::new(None));
    let failures = manager.shutdown();
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert_eq!(failures[0].index, 1);
    assert_eq!(failures[0].reason, "endpoint close refused");
    assert_eq!(failures[1].index, 2);
    assert_eq!(failures[1].reason, "close panicked");
    for m in [&first, &failing, &panicking, &last] {
        assert_eq!(m.closes.load(Ordering::SeqCst), 1);
    }
}

/// A CLI provider that takes a forwarded MCP set (or not).
struct Cli {
    takes_mcp: bool,
}

struct NoParser;
impl StreamParser for NoParser {
    fn parse_value(&mut self, _value: &serde_json::Value) -> Vec<StreamEvent> {
        Vec::new()
    }
    fn finish(&mut self) -> Vec<StreamEvent> {
        Vec::new()
    }
    fn resume_id(&self) -> Option<&str> {
        None
    }
}

impl Provider for Cli {
    type Parser = NoParser;
    type Error = std::io::Error;
    fn name(&self) -> &'static str {
        "cli"
    }
    fn invocation(&self, _request: &AgentRequest) -> Result<Invocation, Self::Error> {
        Ok(Invocation::default())
    }
    fn parser(&self) -> NoParser {
        NoParser
    }
    fn streams_first_output_early(&self) -> bool {
        true
    }
    fn mcp_forwarding(&self) -> Option<McpForwarding> {
        self.takes_mcp
            .then_some(McpForwarding::new("strict_mcp_config"))
    }
}

#[test]
fn forwarding_copies_the_model_before_changing_it() {
    // contract: PRV-096
    let mut cfg = EndpointConfig::new("claude");
    cfg.update("permission_mode", KwargValue::Json(json!("plan")));
    let original =
        Arc::new(Model::new(Endpoint::agentic(&cfg).unwrap(), ModelConfig::default()).unwrap());
    original.set_session_id(Some("sess-7".into()));
    // Another branch holds the same model.
    let other_branch = Arc::clone(&original);
    let before = original.to_dict();

    let forwarded = ForwardedMcp {
        servers: json!({"gh": {"command": "gh-mcp"}})
            .as_object()
            .cloned()
            .unwrap(),
        exclusive: true,
    };
    let copy = original
        .with_forwarded_mcp(&Cli { takes_mcp: true }, &forwarded)
        .unwrap()
        .expect("a provider that takes a set gets a copy");
    assert_ne!(copy.id(), original.id());
    let dict = copy.to_dict();
    assert_eq!(
        dict["endpoint"]["kwargs"]["mcp_servers"],
        json!({"gh": {"command": "gh-mcp"}})
    );
    assert_eq!(dict["endpoint"]["kwargs"]["strict_mcp_config"], json!(true));
    assert_eq!(dict["endpoint"]["kwargs"]["permission_mode"], json!("plan"));
    assert_eq!(
        other_branch.to_dict(),
        before,
        "the shared original is unchanged"
    );
    assert!(
        copy.executor().same_as(original.executor()),
        "executor shared"
    );
    assert_eq!(
        copy.session_id().as_deref(),
        Some("sess-7"),
        "session shared"
    );

    // Nothing to forward: no copy, nothing changed.
    assert!(
        original
            .with_forwarded_mcp(&Cli { takes_mcp: false }, &forwarded)
            .unwrap()
            .is_none()
    );
    let api = api_model("gpt-5", ModelConfig::default());
    let api_before = api.to_dict();
    assert!(
        api.with_forwarded_mcp(&Cli { takes_mcp: true }, &forwarded)
            .unwrap()
            .is_none()
    );
    assert_eq!(api.to_dict(), api_before);
    assert_eq!(other_branch.to_dict(), before);
}
