//! Writeback: opt-in, post-turn, `memory.remember` only, capped salience,
//! namespaced when asked, and failures that never reach the turn.

use context_khive::{
    Error, ToolEvent, WRITEBACK_MAX_CONTENT_BYTES, WRITEBACK_PROVENANCE, WRITEBACK_SALIENCE_CAP,
    WritebackOutcome, resolution_pairs,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::{Daemon, policy, verbs};

fn turn() -> Vec<ToolEvent> {
    vec![
        ToolEvent::failed("cargo_test", json!({"package": "outbox"}), "lock poisoned"),
        ToolEvent::ok("read_file", json!({"path": "src/lib.rs"})),
        ToolEvent::ok(
            "cargo_test",
            json!({"package": "outbox", "test_threads": 1}),
        ),
        ToolEvent::failed("git_push", json!({}), "remote rejected"),
        ToolEvent::failed("grep", json!({"pattern": "("}), "unclosed group"),
        ToolEvent::ok("grep", json!({"pattern": "\\("})),
    ]
}

fn remembered(daemon: &Daemon) -> Vec<Value> {
    daemon
        .ops()
        .into_iter()
        .filter(|op| op["verb"] == "memory.remember")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writeback_is_opt_in_and_separate_from_provide() {
    // contract: CTX-005
    let daemon = Daemon::start("ok");
    let off = daemon.provider(policy());
    assert_eq!(off.writeback(&turn()).await, WritebackOutcome::Disabled);
    assert!(
        daemon.calls().is_empty(),
        "an opted-out writeback sends nothing"
    );
    let mut p = policy();
    p.writeback = true;
    let on = daemon.provider(p);
    assert_eq!(
        on.writeback(&turn()).await,
        WritebackOutcome::Written { items: 2 }
    );
    assert_eq!(remembered(&daemon).len(), 2);
    assert_eq!(
        on.writeback(&[ToolEvent::ok("x", json!({}))]).await,
        WritebackOutcome::NothingToWrite
    );
    assert_eq!(daemon.calls().len(), 1);
    daemon.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writeback_stores_resolution_pairs_at_capped_low_provenance_salience() {
    // contract: CTX-006
    let daemon = Daemon::start("ok");
    let mut p = policy();
    p.writeback = true;
    p.writeback_salience = 0.95;
    let long_error = "é".repeat(10_000);
    let mut events = turn();
    events.push(ToolEvent::failed("fmt", json!({}), long_error.clone()));
    events.push(ToolEvent::ok("fmt", json!({"check": true})));
    let outcome = daemon.provider(p).writeback(&events).await;
    assert_eq!(outcome, WritebackOutcome::Written { items: 3 });
    let items = remembered(&daemon);
    assert_eq!(items.len(), 3);
    for item in &items {
        let params = &item["params"];
        let salience = params["salience"].as_f64().expect("salience");
        assert!(salience <= WRITEBACK_SALIENCE_CAP, "{params}");
        assert_eq!(salience, WRITEBACK_SALIENCE_CAP);
        assert_eq!(params["provenance"], WRITEBACK_PROVENANCE);
        let content = params["content"].as_str().expect("content");
        assert!(
            content.len() <= WRITEBACK_MAX_CONTENT_BYTES,
            "{}",
            content.len()
        );
    }
    let contents: Vec<&str> = items
        .iter()
        .map(|i| i["params"]["content"].as_str().expect("content"))
        .collect();
    assert!(contents[0].contains("cargo_test failed: lock poisoned"));
    assert!(contents[0].contains("test_threads"));
    assert!(contents[1].contains("grep failed: unclosed group"));
    assert!(
        contents.iter().all(|c| !c.contains("remote rejected")),
        "unresolved errors are not stored"
    );
    daemon.finish().await;

    // Salience asked below the cap is kept; nonsense is floored.
    for (asked, stored) in [
        (0.1, 0.1),
        (-3.0, 0.0),
        (f64::NAN, 0.0),
        (f64::INFINITY, WRITEBACK_SALIENCE_CAP),
    ] {
        let mut p = policy();
        p.writeback_salience = asked;
        assert_eq!(p.effective_writeback_salience(), stored, "{asked}");
    }
}

#[test]
fn resolution_pairs_follow_the_rule() {
    // contract: CTX-006
    let pairs = resolution_pairs(&turn());
    assert_eq!(pairs.len(), 2);
    // A success before the failure resolves nothing; a repeated pair is
    // kept once.
    let events = [
        ToolEvent::ok("a", json!({})),
        ToolEvent::failed("a", json!({}), "boom"),
        ToolEvent::failed("a", json!({}), "boom"),
        ToolEvent::ok("b", json!({})),
    ];
    assert!(resolution_pairs(&events).is_empty());
    let events = [
        ToolEvent::failed("a", json!({}), "boom"),
        ToolEvent::failed("a", json!({}), "boom"),
        ToolEvent::ok("a", json!({"fixed": true})),
    ];
    assert_eq!(resolution_pairs(&events).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writeback_emits_remember_and_nothing_else() {
    // contract: CTX-007
    let daemon = Daemon::start("ok");
    let mut p = policy();
    p.writeback = true;
    p.compose = true;
    let outcome = daemon.provider(p).writeback(&turn()).await;
    assert_eq!(outcome, WritebackOutcome::Written { items: 2 });
    let verbs = verbs(&daemon.ops());
    assert_eq!(verbs, ["memory.remember", "memory.remember"]);
    assert!(
        !verbs
            .iter()
            .any(|v| v.contains("nudge") || v.contains("feedback"))
    );
    daemon.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writeback_swallows_every_transport_failure() {
    // contract: CTX-009
    for mode in ["fail", "crash"] {
        let daemon = Daemon::start(mode);
        let mut p = policy();
        p.writeback = true;
        let provider = daemon.provider(p);
        assert_eq!(
            provider.writeback(&turn()).await,
            WritebackOutcome::Failed,
            "{mode}"
        );
        assert_eq!(daemon.calls().len(), 1, "{mode}: the write was attempted");
        let e = provider.try_writeback(&turn()).await.unwrap_err();
        assert!(
            matches!(e, Error::Refused { .. } | Error::Transport { .. }),
            "{mode}: {e}"
        );
        daemon.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remembered_items_carry_the_namespace() {
    // contract: CTX-010
    let daemon = Daemon::start("ok");
    let mut p = policy();
    p.writeback = true;
    p.namespace = Some("project-a".into());
    daemon.provider(p.clone()).writeback(&turn()).await;
    let items = remembered(&daemon);
    assert_eq!(items.len(), 2);
    for item in &items {
        assert_eq!(item["params"]["namespace"], "project-a");
    }
    p.namespace = Some(String::new());
    assert_eq!(
        daemon.provider(p).writeback(&turn()).await,
        WritebackOutcome::Failed
    );
    assert_eq!(daemon.calls().len(), 1, "a blank namespace sends nothing");
    daemon.finish().await;
}

#[test]
fn sensitive_argument_values_never_reach_memory() {
    // contract: CTX-006
    let events = [
        ToolEvent::failed("deploy", json!({}), "unauthorized"),
        ToolEvent::ok(
            "deploy",
            json!({"env": "staging", "API_TOKEN": "tok-123", "nested": [{"db_password": "hunter2"}]}),
        ),
    ];
    let pairs = resolution_pairs(&events);
    assert_eq!(pairs.len(), 1);
    assert!(pairs[0].contains("staging"), "{}", pairs[0]);
    assert!(
        !pairs[0].contains("tok-123") && !pairs[0].contains("hunter2"),
        "{}",
        pairs[0]
    );
    assert_eq!(pairs[0].matches(context_khive::REDACTED).count(), 2);
}

fn event() -> impl Strategy<Value = ToolEvent> {
    (
        prop::sample::select(vec!["a", "b", "c"]),
        ".{0,3000}",
        prop::option::of(".{0,3000}"),
    )
        .prop_map(|(tool, arg, error)| match error {
            Some(e) => ToolEvent::failed(tool, json!({"x": arg}), e),
            None => ToolEvent::ok(tool, json!({"x": arg})),
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_written_item_exceeds_the_caps(
        events in prop::collection::vec(event(), 0..8),
        salience in prop::num::f64::ANY,
    ) {
        // contract: CTX-006
        for text in resolution_pairs(&events) {
            prop_assert!(text.len() <= WRITEBACK_MAX_CONTENT_BYTES);
        }
        let mut p = policy();
        p.writeback_salience = salience;
        let s = p.effective_writeback_salience();
        prop_assert!((0.0..=WRITEBACK_SALIENCE_CAP).contains(&s), "{salience} -> {s}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_daemon_fails_the_writeback_not_the_turn() {
    // contract: CTX-009
    let daemon = Daemon::start("slow");
    let mut p = policy();
    p.writeback = true;
    p.timeout = std::time::Duration::from_millis(500);
    let provider = daemon.provider(p);
    assert_eq!(provider.writeback(&turn()).await, WritebackOutcome::Failed);
    assert!(matches!(
        provider.try_writeback(&turn()).await,
        Err(Error::TimedOut { .. })
    ));
    daemon.finish().await;
}
