//! End-to-end tests of the `lionrt` binary against temp databases.

mod admission;
mod cancel;
mod crash;
mod doctor;
mod e2e_real_cli;
mod import;
mod live;
mod mcp;
mod mcp_forward;
mod mirror;
mod multihost;
mod notify;
mod outbox;
mod plugin;
mod plugin_settings;
mod postgres;
mod raw_value;
mod reading;
mod run;
mod sandbox;
mod schedule;
mod state;

use std::path::Path;
use std::process::{Command, Output};

pub(crate) fn lionrt(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("LIONRT_DB")
        .output()
        .expect("run lionrt")
}

/// The JSON on stdout; for `run --json`, which streams NDJSON events
/// first, the last line (the report).
pub(crate) fn stdout_json(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let text = text.trim().lines().last().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}
