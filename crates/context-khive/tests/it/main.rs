//! Integration tests for context-khive against a fake khive daemon (the
//! `mcp-khive-server` fixture of mcp-test-servers, spawned over stdio by
//! mcp-pool).

mod feature;
mod provide;
mod writeback;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use context_khive::{KhiveInjectionPolicy, KhiveProvider};
use mcp_pool::{McpPool, PoolConfig, SecurityConfig};
use serde_json::{Value, json};

/// A fixture binary's path (built on first use).
pub(crate) fn fixture(name: &str) -> PathBuf {
    mcp_test_servers::locate(name).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// A tag unique to this test process and call, so the fixture's process
/// can be found in /proc.
pub(crate) fn tag() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "context-khive-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

pub(crate) fn config() -> PoolConfig {
    let mut config = PoolConfig::with_security(SecurityConfig::trusted());
    config.init_timeout = Duration::from_secs(3);
    config.request_timeout = Duration::from_secs(10);
    config.shutdown_grace = Duration::from_millis(300);
    config
}

/// A fake daemon in `mode`, logging to a file in its own temp dir.
pub(crate) struct Daemon {
    pub(crate) pool: Arc<McpPool>,
    pub(crate) tag: String,
    dir: tempfile::TempDir,
}

impl Daemon {
    pub(crate) fn start(mode: &str) -> Self {
        Self::with_config(mode, config())
    }

    pub(crate) fn with_config(mode: &str, config: PoolConfig) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let tag = tag();
        let pool = Arc::new(McpPool::new(config));
        let log = dir.path().join("calls.jsonl");
        pool.add_server(
            "khive",
            json!({
                "command": fixture(mcp_test_servers::KHIVE).to_string_lossy(),
                "args": [mode, log.to_string_lossy(), tag],
            }),
        );
        Self { pool, tag, dir }
    }

    pub(crate) fn log_path(&self) -> PathBuf {
        self.dir.path().join("calls.jsonl")
    }

    /// Every `tools/call` the daemon received: `{"tool", "arguments"}`.
    pub(crate) fn calls(&self) -> Vec<Value> {
        read_log(&self.log_path())
    }

    /// Every op of every call, in order.
    pub(crate) fn ops(&self) -> Vec<Value> {
        self.calls()
            .iter()
            .flat_map(|c| {
                c["arguments"]["ops"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect()
    }

    pub(crate) fn provider(&self, policy: KhiveInjectionPolicy) -> KhiveProvider {
        KhiveProvider::new(Arc::clone(&self.pool), policy)
    }

    /// Shuts the pool down and checks no process of the daemon is left.
    pub(crate) async fn finish(self) {
        self.pool.shutdown().await;
        assert!(
            settle(&self.tag).await.is_empty(),
            "a daemon process is left"
        );
    }
}

pub(crate) fn policy() -> KhiveInjectionPolicy {
    KhiveInjectionPolicy::new("khive", "profile-reviewer").expect("policy")
}

pub(crate) fn verbs(ops: &[Value]) -> Vec<String> {
    ops.iter()
        .map(|op| op["verb"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn read_log(path: &Path) -> Vec<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) => text
            .lines()
            .map(|l| serde_json::from_str(l).expect("log line is JSON"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("read {}: {e}", path.display()),
    }
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
