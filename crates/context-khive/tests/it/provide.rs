//! Recall: one round trip over the pool, compose on demand, feedback
//! attributed to the policy's profile, namespaces on writes only, and
//! failures that never reach the turn.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use context_khive::{Error, KhiveInjectionPolicy, KhiveProvider};
use mcp_pool::{GateDecision, GateRequest, McpPool};
use serde_json::{Value, json};

use crate::{Daemon, config, fixture, policy, settle, tag, verbs};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_goes_through_the_pools_mcp_connection_admission_and_gate() {
    // contract: CTX-001
    let seen: Arc<Mutex<Vec<(String, String, Value)>>> = Arc::default();
    let mut config = config();
    let record = Arc::clone(&seen);
    config.gate = Some(Arc::new(move |r: &GateRequest<'_>| {
        record.lock().expect("gate log").push((
            r.server.to_owned(),
            r.tool.to_owned(),
            Value::Object(r.arguments.clone()),
        ));
        GateDecision::Allow
    }));
    let daemon = Daemon::with_config("ok", config);
    let provider = daemon.provider(policy());
    let context = provider.provide("outbox retries").await;
    assert_eq!(context.memories.len(), 5, "{context:?}");
    // The daemon is a pooled MCP server like any tool server: listed and
    // admitted by the pool, its process the pool's connection, and every
    // call passed through the pool's call gate.
    let listing = daemon.pool.list_tools("khive").await.expect("listing");
    assert_eq!(listing.admitted.len(), 1);
    assert_eq!(listing.admitted[0].name, "request");
    assert!(daemon.pool.server_pid("khive").await.is_some());
    let seen = seen.lock().expect("gate log").clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        (seen[0].0.as_str(), seen[0].1.as_str()),
        ("khive", "request")
    );
    assert_eq!(seen[0].2, daemon.calls()[0]["arguments"]);
    daemon.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_refusal_is_a_transport_failure_the_turn_survives() {
    // contract: CTX-001
    let mut config = config();
    config.gate = Some(Arc::new(|_: &GateRequest<'_>| GateDecision::Deny {
        reason: "memory is off for this run".into(),
    }));
    let daemon = Daemon::with_config("ok", config);
    let provider = daemon.provider(policy());
    let e = provider.try_provide("anything").await.unwrap_err();
    assert!(
        matches!(
            &e,
            Error::Transport {
                source: mcp_pool::Error::GateDenied { .. },
                ..
            }
        ),
        "{e}"
    );
    assert!(
        daemon.calls().is_empty(),
        "a refused call never reaches khive"
    );
    daemon.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn building_a_provider_touches_no_transport_until_it_is_used() {
    // contract: CTX-002
    let daemon = Daemon::start("ok");
    let provider = daemon.provider(policy());
    // A blank query recalls nothing and connects nothing either.
    assert!(provider.provide("   ").await.is_empty());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(daemon.pool.server_pid("khive").await, None);
    assert!(crate::live_with_tag(&daemon.tag).is_empty());
    assert!(!daemon.log_path().exists());
    assert!(!provider.provide("now").await.is_empty());
    assert!(daemon.pool.server_pid("khive").await.is_some());
    daemon.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compose_is_sent_only_when_the_policy_asks_for_it() {
    // contract: CTX-003
    let daemon = Daemon::start("ok");
    let plain = daemon.provider(policy());
    let context = plain.provide("sandbox merge").await;
    assert_eq!(context.composed, None);
    assert_eq!(context.render().lines().count(), 5);
    assert_eq!(
        verbs(&daemon.ops()),
        ["memory.recall", "brain.auto_feedback"]
    );

    let mut composing = policy();
    composing.compose = true;
    let context = daemon.provider(composing).provide("sandbox merge").await;
    assert_eq!(
        context.composed.as_deref(),
        Some("composed context for sandbox merge")
    );
    assert_eq!(context.render(), "composed context for sandbox merge");
    let calls = daemon.calls();
    assert_eq!(calls.len(), 2);
    let second: Vec<Value> = calls[1]["arguments"]["ops"]
        .as_array()
        .expect("ops")
        .clone();
    assert_eq!(
        verbs(&second),
        ["memory.recall", "memory.compose", "brain.auto_feedback"]
    );
    daemon.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_recall_carries_feedback_for_the_explicit_profile_in_the_same_call() {
    // contract: CTX-004
    let daemon = Daemon::start("ok");
    let provider =
        daemon.provider(KhiveInjectionPolicy::new("khive", "profile-7").expect("policy"));
    for query in ["first", "second", "third"] {
        assert!(!provider.provide(query).await.is_empty());
    }
    let calls = daemon.calls();
    assert_eq!(calls.len(), 3, "one round trip per recall");
    for (call, query) in calls.iter().zip(["first", "second", "third"]) {
        let ops = call["arguments"]["ops"].as_array().expect("ops");
        assert_eq!(verbs(ops), ["memory.recall", "brain.auto_feedback"]);
        assert_eq!(ops[1]["params"]["profile_id"], "profile-7");
        assert_eq!(ops[1]["params"]["query"], query);
    }
    // There is no implicit profile to fall back on.
    for blank in ["", "   "] {
        assert!(matches!(
            KhiveInjectionPolicy::new("khive", blank),
            Err(Error::MissingProfile)
        ));
    }
    daemon.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provide_never_issues_remember_even_with_writeback_enabled() {
    // contract: CTX-005
    let daemon = Daemon::start("ok");
    let mut p = policy();
    p.writeback = true;
    p.compose = true;
    let provider = daemon.provider(p);
    for query in ["a", "b"] {
        provider.provide(query).await;
    }
    let verbs = verbs(&daemon.ops());
    assert_eq!(verbs.len(), 6);
    assert!(!verbs.iter().any(|v| v == "memory.remember"), "{verbs:?}");
    daemon.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provide_swallows_every_transport_failure() {
    // contract: CTX-008
    // The daemon answers with a tool error.
    let daemon = Daemon::start("fail");
    let provider = daemon.provider(policy());
    assert!(provider.provide("q").await.is_empty());
    assert_eq!(daemon.calls().len(), 1, "the recall was attempted");
    assert!(matches!(
        provider.try_provide("q").await,
        Err(Error::Refused { .. })
    ));
    daemon.finish().await;

    // The daemon dies mid-call.
    let daemon = Daemon::start("crash");
    let provider = daemon.provider(policy());
    assert!(provider.provide("q").await.is_empty());
    assert_eq!(daemon.calls().len(), 1);
    // Still nothing the next time (a fresh process that dies again).
    assert!(provider.provide("q").await.is_empty());
    daemon.finish().await;

    // No such server in the pool.
    let pool = Arc::new(McpPool::new(config()));
    let provider = KhiveProvider::new(pool, policy());
    assert!(provider.provide("q").await.is_empty());
    assert!(matches!(
        provider.try_provide("q").await,
        Err(Error::Transport {
            source: mcp_pool::Error::UnknownServer { .. },
            ..
        })
    ));

    // A daemon that never finishes the handshake.
    let tag = tag();
    let pool = Arc::new(McpPool::new(config()));
    pool.add_server(
        "khive",
        json!({
            "command": fixture(mcp_test_servers::HOSTILE).to_string_lossy(),
            "args": ["hang-init", tag],
        }),
    );
    let provider = KhiveProvider::new(Arc::clone(&pool), policy());
    assert!(provider.provide("q").await.is_empty());
    pool.shutdown().await;
    assert!(settle(&tag).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_rides_on_feedback_and_a_blank_one_is_refused() {
    // contract: CTX-010
    let daemon = Daemon::start("ok");
    let mut p = policy();
    p.namespace = Some("project-a".into());
    p.compose = true;
    daemon.provider(p).provide("q").await;
    let ops = daemon.ops();
    let feedback: Vec<&Value> = ops
        .iter()
        .filter(|op| op["verb"] == "brain.auto_feedback")
        .collect();
    assert_eq!(feedback.len(), 1);
    assert_eq!(feedback[0]["params"]["namespace"], "project-a");

    // A blank namespace would silently write the shared store: refused,
    // and nothing is sent.
    let mut blank = policy();
    blank.namespace = Some(" ".into());
    let provider = daemon.provider(blank);
    assert!(matches!(
        provider.try_provide("q").await,
        Err(Error::InvalidPolicy { .. })
    ));
    assert!(provider.provide("q").await.is_empty());
    assert_eq!(daemon.calls().len(), 1);
    daemon.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_namespace_recall_still_writes_unscoped_feedback() {
    // contract: CTX-011
    let daemon = Daemon::start("ok");
    daemon.provider(policy()).provide("q").await;
    let ops = daemon.ops();
    let feedback: Vec<&Value> = ops
        .iter()
        .filter(|op| op["verb"] == "brain.auto_feedback")
        .collect();
    assert_eq!(feedback.len(), 1, "the recall wrote feedback: {ops:?}");
    let params = feedback[0]["params"].as_object().expect("params");
    assert!(!params.contains_key("namespace"), "{params:?}");
    assert_eq!(params["profile_id"], "profile-reviewer");
    daemon.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespaced_policy_still_recalls_and_composes() {
    // contract: CTX-012
    // The fake daemon refuses a namespace on its read verbs, as the real
    // one refuses unknown parameters: the recall succeeds only because the
    // provider keeps reads unscoped.
    let daemon = Daemon::start("ok");
    let mut p = policy();
    p.namespace = Some("project-a".into());
    p.compose = true;
    let provider = daemon.provider(p);
    let context = provider.try_provide("q").await.expect("recall");
    assert_eq!(context.memories.len(), 5);
    assert!(context.composed.is_some());
    for op in daemon.ops() {
        if op["verb"] == "memory.recall" || op["verb"] == "memory.compose" {
            assert!(op["params"].get("namespace").is_none(), "{op}");
        }
    }
    daemon.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_daemon_is_abandoned_at_the_policy_timeout() {
    // contract: CTX-008
    let daemon = Daemon::start("slow");
    let mut p = policy();
    p.timeout = Duration::from_millis(500);
    let provider = daemon.provider(p);
    assert!(provider.provide("q").await.is_empty());
    assert!(matches!(
        provider.try_provide("q").await,
        Err(Error::TimedOut { .. })
    ));
    assert_eq!(daemon.calls().len(), 2, "both recalls reached the daemon");
    daemon.finish().await;
}
