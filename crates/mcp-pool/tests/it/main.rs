//! Integration tests for mcp-pool against real MCP servers (the fixture
//! binaries of mcp-test-servers, spawned over stdio, or serving streamable
//! HTTP, plain or behind TLS, on loopback).

mod bounds;
mod config;
mod hostile;
mod http;
mod pool;
mod raw_value_http;
mod registry;
mod reserved;
mod security;
mod tls;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_pool::{McpPool, PoolConfig, SecurityConfig};
use serde_json::{Value, json};

/// A fixture binary's path (built on first use).
pub(crate) fn fixture(name: &str) -> PathBuf {
    mcp_test_servers::locate(name).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// A tag unique to this test process and call, passed to a fixture as an
/// extra argument so its processes can be found in /proc.
pub(crate) fn tag() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "mcp-pool-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

/// A stdio entry for `binary` in `mode`, tagged.
pub(crate) fn entry(binary: &str, mode: &str, tag: &str) -> Value {
    json!({"command": fixture(binary).to_string_lossy(), "args": [mode, tag]})
}

/// A pool allowing commands, with short limits for tests.
pub(crate) fn pool() -> McpPool {
    McpPool::new(config())
}

pub(crate) fn config() -> PoolConfig {
    let mut config = PoolConfig::with_security(SecurityConfig::trusted());
    config.init_timeout = Duration::from_secs(3);
    config.request_timeout = Duration::from_secs(10);
    config.shutdown_grace = Duration::from_millis(300);
    config
}

pub(crate) use mcp_test_servers::live_with_tag;

/// Waits (briefly) until no live process carries `tag`; returns what is
/// left.
pub(crate) async fn settle(tag: &str) -> Vec<i32> {
    for _ in 0..100 {
        let live = live_with_tag(tag);
        if live.is_empty() {
            return live;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    live_with_tag(tag)
}
