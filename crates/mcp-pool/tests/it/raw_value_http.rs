//! The raw-value quirk over streamable HTTP, where the reserved-key scan
//! does not run: rmcp's reqwest client parses each response into a
//! `serde_json::Value` itself. A server whose `exec` tool has a property
//! schema keyed `$serde_json::private::RawValue` (wrapping a bounded
//! schema in a string) is judged as written, an open command, so the tool
//! is refused, recorded and never called; that holds only because
//! serde_json's `raw_value` feature is off in the build (with it on, the
//! client would hand the gate the bounded schema and `exec` would be
//! admitted). The lookalike listing stays admitted.

use std::process::Stdio;
use std::sync::Arc;

use mcp_pool::{DenialReason, Error, McpPool, TOOL_DENIED_KIND};
use mcp_test_servers::HOSTILE;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::http::{http_config, read_url};
use crate::{fixture, settle, tag};

/// `mcp-hostile-server MODE --http [--sse]` on loopback: the child (killed
/// on drop) and the URL it printed.
async fn hostile_http(mode: &str, sse: bool, tag: &str) -> (Child, String) {
    let mut args = vec![mode, "--http", tag];
    if sse {
        args.push("--sse");
    }
    let mut child = Command::new(fixture(HOSTILE))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the hostile http server");
    let url = read_url(&mut child).await;
    assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
    (child, url)
}

/// The serde_json in this test binary reads the token's object as
/// written: the precondition of everything below (and what the lionrt
/// guard test checks for the binary).
fn raw_value_is_off() {
    let parsed: Value =
        serde_json::from_str(r#"{"$serde_json::private::RawValue":"{\"a\":1}"}"#).expect("json");
    assert_eq!(
        parsed,
        json!({"$serde_json::private::RawValue": "{\"a\":1}"}),
        "serde_json's raw_value feature is on in this build"
    );
}

async fn exec_is_refused_over_http(sse: bool) {
    raw_value_is_off();
    let tag = tag();
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = state_sqlite::Engine::create(
        dir.path().join("state.db"),
        state_sqlite::EngineConfig::default(),
    )
    .expect("open store");
    let (mut quirk, quirk_url) = hostile_http("raw-value-quirk", sse, &tag).await;
    let (mut escaped, escaped_url) = hostile_http("raw-value-quirk-escaped", sse, &tag).await;
    let (mut lookalike, lookalike_url) = hostile_http("raw-value-lookalike", sse, &tag).await;
    let mut config = http_config();
    config.denial_sink = Some(Arc::new(engine.clone()));
    let pool = McpPool::new(config);
    pool.add_server("quirk", json!({"url": quirk_url}));
    pool.add_server("escaped", json!({"url": escaped_url}));
    pool.add_server("lookalike", json!({"url": lookalike_url}));

    for server in ["quirk", "escaped"] {
        let listing = pool.list_tools(server).await.expect("listed over http");
        let admitted: Vec<&str> = listing.admitted.iter().map(|t| t.name.as_str()).collect();
        assert!(admitted.is_empty(), "{server}: admitted {admitted:?}");
        let denied: Vec<&str> = listing.denied.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(denied, ["exec"], "{server}");
        assert!(
            matches!(listing.denied[0].reason, DenialReason::Admission(_)),
            "{server}: {:?}",
            listing.denied[0].reason
        );
        // Refused before anything is sent: the server, which answers every
        // call with a success, never sees it.
        let call = pool
            .call_tool(server, "exec", json!({"command": "ls"}))
            .await
            .unwrap_err();
        assert!(
            matches!(call, Error::ToolNotAdmitted { .. }),
            "{server}: {call}"
        );
    }
    // Recorded as any refused tool is: one admin_events row each.
    let conn = engine.conn().expect("conn");
    let rows = state_sqlite::admin::admin_events_of_kind(&conn, TOOL_DENIED_KIND).expect("rows");
    let ids: Vec<Option<String>> = rows.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(
        ids,
        [
            Some("quirk/exec".to_owned()),
            Some("escaped/exec".to_owned())
        ]
    );
    assert_eq!(rows[0].1["reason"], "unbounded-command-input", "{rows:?}");

    let listing = pool
        .list_tools("lookalike")
        .await
        .expect("listed over http");
    let admitted: Vec<&str> = listing.admitted.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(admitted, ["lookalike"], "{:?}", listing.denied);
    let called = pool
        .call_tool("lookalike", "lookalike", json!({"note": "hi"}))
        .await
        .expect("an admitted tool is called");
    assert_eq!(
        called.result["content"][0]["text"], "the hostile server ran the call",
        "{:?}",
        called.result
    );

    pool.shutdown().await;
    for child in [&mut quirk, &mut escaped, &mut lookalike] {
        child.kill().await.expect("kill the http fixture server");
    }
    assert!(settle(&tag).await.is_empty(), "processes left behind");
}

// contract: ADM-002
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_value_keyed_schema_in_a_json_response_is_judged_as_written() {
    exec_is_refused_over_http(false).await;
}

// contract: ADM-002
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_value_keyed_schema_in_an_sse_response_is_judged_as_written() {
    exec_is_refused_over_http(true).await;
}
