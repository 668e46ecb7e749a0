//! Hostile servers: each gets a clear typed error and leaves no process of
//! its group behind (checked in /proc).

use std::time::{Duration, Instant};

use mcp_pool::{Error, McpPool};
use mcp_test_servers::{BENIGN, HOSTILE};
use serde_json::json;

use crate::{config, entry, live_with_tag, settle, tag};

async fn list_hostile(mode: &str, pool: &McpPool, tag: &str) -> Error {
    pool.add_server("hostile", entry(HOSTILE, mode, tag));
    let error = pool.list_tools("hostile").await.unwrap_err();
    let left = settle(tag).await;
    assert!(left.is_empty(), "{mode}: processes left behind: {left:?}");
    error
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_hangs_on_initialize_times_out_and_its_group_is_killed() {
    let tag = tag();
    let pool = McpPool::new(config());
    pool.add_server("hostile", entry(HOSTILE, "hang-init", &tag));
    let started = Instant::now();
    let error = pool.list_tools("hostile").await.unwrap_err();
    assert!(
        matches!(
            &error,
            Error::Timeout {
                phase: "initialize",
                ..
            }
        ),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("did not answer initialize within"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    // The server ignores SIGTERM and has a sleeping grandchild in its group:
    // both are gone.
    let left = settle(&tag).await;
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_mid_list_is_a_disconnect() {
    let tag = tag();
    let pool = McpPool::new(config());
    let error = list_hostile("crash-mid-list", &pool, &tag).await;
    assert!(
        matches!(
            &error,
            Error::Disconnected {
                phase: "tools/list",
                ..
            }
        ),
        "{error}"
    );
    // Nothing of the first page was registered.
    pool.add_server("hostile", entry(HOSTILE, "crash-mid-list", &tag));
    let again = pool
        .call_tool("hostile", "echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(again.is_server_failure(), "{again}");
    assert!(settle(&tag).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_megabyte_tool_list_exceeds_the_message_limit() {
    let tag = tag();
    let pool = McpPool::new(config());
    let error = list_hostile("huge-list", &pool, &tag).await;
    let Error::Protocol { phase, detail, .. } = &error else {
        panic!("expected a protocol error, got {error}");
    };
    assert_eq!(*phase, "tools/list");
    assert!(
        detail.contains("exceeds the 8388608-byte limit"),
        "{detail}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_json_rpc_on_stdout_ends_the_connection() {
    for (mode, needle) in [
        ("invalid-jsonrpc", "is not a JSON-RPC message"),
        ("not-json", "is not JSON"),
    ] {
        let tag = tag();
        let pool = McpPool::new(config());
        let error = list_hostile(mode, &pool, &tag).await;
        assert!(
            matches!(
                &error,
                Error::Protocol {
                    phase: "tools/list",
                    ..
                }
            ),
            "{mode}: {error}"
        );
        assert!(error.to_string().contains(needle), "{mode}: {error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_command_is_a_spawn_error() {
    let pool = McpPool::new(config());
    pool.add_server("ghost", json!({"command": "/nonexistent/mcp-server"}));
    let error = pool.list_tools("ghost").await.unwrap_err();
    assert!(matches!(&error, Error::Spawn { .. }), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_pool_without_shutdown_leaves_no_process() {
    let tag = tag();
    {
        let pool = McpPool::new(config());
        pool.add_server("benign", entry(BENIGN, "benign", &tag));
        pool.list_tools("benign").await.expect("list");
        assert_eq!(live_with_tag(&tag).len(), 1);
    }
    let left = settle(&tag).await;
    assert!(left.is_empty(), "processes left behind: {left:?}");
}
