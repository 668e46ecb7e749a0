//! End-to-end tests of the `lionrt` binary against temp databases.

mod admission;
mod cancel;
mod crash;
mod e2e_real_cli;
mod import;
mod mirror;
mod outbox;
mod plugin;
mod plugin_settings;
mod postgres;
mod run;
mod sandbox;
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

pub(crate) fn stdout_json(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}
