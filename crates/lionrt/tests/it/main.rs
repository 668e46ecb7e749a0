//! End-to-end tests of the `lionrt` binary against temp databases.

mod admission;
mod bad_input;
mod cancel;
mod crash;
mod doctor;
mod e2e_real_cli;
mod flow;
mod foreign;
mod import;
mod live;
mod mcp;
mod mcp_forward;
mod mcp_serve;
mod mirror;
mod multihost;
mod notify;
mod outbox;
mod output;
mod plugin;
mod plugin_settings;
mod postgres;
mod raw_value;
mod reading;
mod run;
mod sandbox;
mod schedule;
mod secrets;
mod serve;
mod state;

use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::Duration;

pub(crate) fn lionrt(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("LIONRT_DB")
        .output()
        .expect("run lionrt")
}

/// The first line a fixture server prints on stdout, its URL, trimmed:
/// written once its socket listens (empty if the server died first).
/// Generous: a loaded machine may take a while to get to the listener, but
/// a server that never prints is killed and fails the test instead of
/// hanging it.
pub(crate) fn read_url(child: &mut Child) -> String {
    use std::io::BufRead as _;
    let stdout = child.stdout.take().expect("stdout");
    let (sent, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = sent.send(read.map(|_| line));
    });
    match received.recv_timeout(Duration::from_secs(60)) {
        Ok(read) => read.expect("read the url").trim().to_owned(),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server printed no url in time: {e}");
        }
    }
}

/// The JSON on stdout; for `run --json`, which streams NDJSON events
/// first, the last line (the report).
pub(crate) fn stdout_json(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let text = text.trim().lines().last().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A command for a third-party program (lionagi's `li`) in a network
/// namespace with only loopback where `unshare --net` works here, so it
/// cannot reach the network; plainly otherwise.
pub(crate) fn offline(program: &std::ffi::OsStr) -> Command {
    let netns = Command::new("unshare")
        .args(["--net", "true"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if netns {
        let mut c = Command::new("unshare");
        c.arg("--net").arg(program);
        c
    } else {
        Command::new(program)
    }
}
