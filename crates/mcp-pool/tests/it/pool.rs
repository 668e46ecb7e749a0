//! Listing with admission, calls with validation and the gate, list
//! changes, and the admin_events record, against real servers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_pool::{DenialReason, Error, GateDecision, GateRequest, McpPool, TOOL_DENIED_KIND};
use mcp_test_servers::BENIGN;
use serde_json::json;

use crate::{config, entry, pool, settle, tag};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_benign_server_is_listed_admitted_and_called_over_one_connection() {
    let tag = tag();
    let pool = pool();
    pool.add_server("benign", entry(BENIGN, "benign", &tag));
    let listing = pool.list_tools("benign").await.expect("list");
    let names: Vec<&str> = listing.admitted.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["add", "echo", "search_code"]);
    assert!(listing.denied.is_empty());
    let pid = pool.server_pid("benign").await.expect("pid");
    let sum = pool
        .call_tool("benign", "add", json!({"a": 2, "b": 40}))
        .await
        .expect("add");
    assert!(!sum.is_error);
    assert_eq!(sum.result["content"][0]["text"], "42");
    // Still the same process: the connection is pooled.
    assert_eq!(pool.server_pid("benign").await, Some(pid));
    let unknown = pool
        .call_tool("benign", "nope", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(unknown, Error::UnknownTool { .. }), "{unknown}");
    pool.shutdown().await;
    assert!(settle(&tag).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_arguments_name_the_json_path_and_never_reach_the_server() {
    let tag = tag();
    let pool = pool();
    pool.add_server("benign", entry(BENIGN, "benign", &tag));
    let e = pool
        .call_tool("benign", "add", json!({"a": 1, "b": "two"}))
        .await
        .unwrap_err();
    let Error::InvalidArguments { path, detail, .. } = &e else {
        panic!("expected invalid arguments, got {e}");
    };
    assert_eq!(path, "/b");
    assert!(
        !detail.contains("two"),
        "the value is never quoted: {detail}"
    );
    assert!(e.to_string().contains("at '/b'"), "{e}");
    let e = pool
        .call_tool("benign", "echo", json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArguments { path, .. } if path.is_empty()),
        "{e}"
    );
    let e = pool
        .call_tool("benign", "echo", json!({"text": "x", "extra": 1}))
        .await
        .unwrap_err();
    assert!(matches!(&e, Error::InvalidArguments { .. }), "{e}");
    let e = pool
        .call_tool("benign", "echo", json!(["text"]))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("must be a JSON object"), "{e}");
    // The connection survives argument errors.
    let ok = pool
        .call_tool("benign", "echo", json!({"text": "fine"}))
        .await
        .expect("echo");
    assert_eq!(ok.result["content"][0]["text"], "fine");
    pool.shutdown().await;
    assert!(settle(&tag).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_runs_before_every_call_and_fails_closed() {
    let tag = tag();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let mut config = config();
    config.gate = Some(Arc::new(move |request: &GateRequest<'_>| {
        counter.fetch_add(1, Ordering::SeqCst);
        match request.arguments.get("text").and_then(|t| t.as_str()) {
            Some("deny") => GateDecision::Deny {
                reason: "policy says no".into(),
            },
            Some("unavailable") => GateDecision::Unavailable {
                reason: "policy store down".into(),
            },
            Some("panic") => panic!("gate bug"),
            Some("rewrite") => {
                let mut args = request.arguments.clone();
                args.insert("text".into(), json!("rewritten"));
                GateDecision::Rewrite(args)
            }
            Some("bad-rewrite") => {
                let mut args = request.arguments.clone();
                args.insert("text".into(), json!(7));
                GateDecision::Rewrite(args)
            }
            _ => GateDecision::Allow,
        }
    }));
    let pool = McpPool::new(config);
    pool.add_server("benign", entry(BENIGN, "benign", &tag));
    let call = |text: &'static str| pool.call_tool("benign", "echo", json!({"text": text}));
    assert_eq!(
        call("ok").await.expect("allowed").result["content"][0]["text"],
        "ok"
    );
    let denied = call("deny").await.unwrap_err();
    assert!(
        matches!(&denied, Error::GateDenied { errored: false, .. }),
        "{denied}"
    );
    assert!(
        denied.to_string().contains("denied: policy says no"),
        "{denied}"
    );
    let unavailable = call("unavailable").await.unwrap_err();
    assert!(
        matches!(&unavailable, Error::GateDenied { errored: true, .. }),
        "{unavailable}"
    );
    assert!(
        unavailable.to_string().contains("could not answer"),
        "{unavailable}"
    );
    let panicked = call("panic").await.unwrap_err();
    assert!(
        matches!(&panicked, Error::GateDenied { errored: true, .. }),
        "{panicked}"
    );
    assert_eq!(
        call("rewrite").await.expect("rewritten").result["content"][0]["text"],
        "rewritten"
    );
    let bad = call("bad-rewrite").await.unwrap_err();
    assert!(
        matches!(&bad, Error::InvalidArguments { path, .. } if path == "/text"),
        "{bad}"
    );
    // Validation runs before the gate: invalid arguments never reach it.
    let before = seen.load(Ordering::SeqCst);
    let _ = pool
        .call_tool("benign", "echo", json!({"text": 1}))
        .await
        .unwrap_err();
    assert_eq!(seen.load(Ordering::SeqCst), before);
    pool.shutdown().await;
    assert!(settle(&tag).await.is_empty());
}

// contract: ADM-003
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_and_call_permission_are_independent() {
    let tag = tag();
    let mut config = config();
    // A permission policy that allows `bash` by name and refuses `echo`.
    config.gate = Some(Arc::new(|request: &GateRequest<'_>| match request.tool {
        "bash" => GateDecision::Allow,
        _ => GateDecision::Deny {
            reason: "not on the allow list".into(),
        },
    }));
    let pool = McpPool::new(config);
    pool.add_server("exec", entry(BENIGN, "executor", &tag));
    // The executor-shaped tool is refused although the policy allows it...
    let bash = pool
        .call_tool("exec", "bash", json!({"command": "id"}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &bash,
            Error::ToolNotAdmitted {
                reason: DenialReason::Admission(_),
                ..
            }
        ),
        "{bash}"
    );
    // ...and an admitted tool gets no permission the policy refuses.
    let echo = pool
        .call_tool("exec", "echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&echo, Error::GateDenied { errored: false, .. }),
        "{echo}"
    );
    pool.shutdown().await;
    assert!(settle(&tag).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_change_between_list_and_call_is_re_admitted_before_the_call() {
    let tag = tag();
    let pool = pool();
    pool.add_server("changing", entry(BENIGN, "list-changes", &tag));
    // Connecting lists the tools once: the fixture answers that first
    // `tools/list` with a narrow `lookup` (admitted) and announces, before
    // the answer, that its list changed: `lookup` now takes a free-form
    // command. The call re-lists, re-admits and refuses it without sending
    // tools/call.
    pool.list_tools("changing").await.expect("connect and list");
    // rmcp hands each notification to the client handler on a task of its
    // own; give that task a moment to run, as a real client's next turn
    // would.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let e = pool
        .call_tool("changing", "lookup", json!({"record_id": "r1"}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &e,
            Error::ToolNotAdmitted {
                reason: DenialReason::Admission(mcp_admission::Reason::UnboundedCommandInput),
                ..
            }
        ),
        "{e}"
    );
    let now = pool.list_tools("changing").await.expect("relisted");
    assert!(now.admitted.is_empty());
    assert_eq!(now.denied.len(), 1);
    // The server is still the one connected first: a re-list, not a reconnect.
    assert!(pool.server_pid("changing").await.is_some());
    pool.shutdown().await;
    assert!(settle(&tag).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_denial_is_recorded_as_an_admin_events_row() {
    let tag = tag();
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = state_sqlite::Engine::create(
        dir.path().join("state.db"),
        state_sqlite::EngineConfig::default(),
    )
    .expect("open store");
    let mut config = config();
    config.denial_sink = Some(Arc::new(engine.clone()));
    let pool = McpPool::new(config);
    pool.add_server("exec", entry(BENIGN, "executor", &tag));
    let listing = pool.list_tools("exec").await.expect("list");
    assert_eq!(listing.denied.len(), 2);
    let conn = engine.conn().expect("conn");
    let rows = state_sqlite::admin::admin_events_of_kind(&conn, TOOL_DENIED_KIND).expect("rows");
    let ids: Vec<Option<String>> = rows.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(
        ids,
        [
            Some("exec/bash".to_owned()),
            Some("exec/run_script".to_owned())
        ]
    );
    assert_eq!(rows[0].1["reason"], "unbounded-command-input");
    assert_eq!(rows[0].1["server"], "exec");
    assert!(
        rows[0].1["message"]
            .as_str()
            .is_some_and(|m| m.contains("was not registered"))
    );
    pool.shutdown().await;
    assert!(settle(&tag).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_gate_crate_guards_tools_call() {
    let tag = tag();
    let gate = tool_gate::Gate::builder()
        .security(tool_gate::DestructiveGuard::default())
        .build();
    let mut config = config();
    config.gate = Some(Arc::new(gate));
    let pool = McpPool::new(config);
    pool.add_server("benign", entry(BENIGN, "benign", &tag));
    let ok = pool
        .call_tool("benign", "echo", json!({"text": "ls -la"}))
        .await
        .expect("harmless");
    assert_eq!(ok.result["content"][0]["text"], "ls -la");
    let refused = pool
        .call_tool("benign", "echo", json!({"text": "rm -rf /"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, Error::GateDenied { errored: false, .. }),
        "{refused}"
    );
    pool.shutdown().await;
    assert!(settle(&tag).await.is_empty());
}
