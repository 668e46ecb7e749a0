//! `cargo xtask fixtures [real-cli|lionagi]`: regenerates the fixtures
//! recorded from third-party programs.
//!
//! - `real-cli`: runs lionrt's end-to-end tier (`e2e_real_cli`) with
//!   `LIONRT_E2E_RECORD` set, so the real Claude Code and Codex CLIs
//!   (installed from npm, run in a loopback-only network namespace against
//!   the local API stand-in) write their raw streams to
//!   `fixtures/real-cli/<cli>_<version>_<kind>.jsonl`.
//! - `lionagi`: builds `fixtures/lionagi-import/state.db` with the original
//!   lionagi 0.36.0 (pip, in a venv under the temp dir) by running
//!   `fixtures/lionagi-import/make_state_db.py`.

use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{say, workspace_root};

/// Runs the named fixture generators (all of them with no argument).
pub(crate) fn run(args: &[String]) -> Result<()> {
    let which: Vec<&str> = if args.is_empty() {
        vec!["real-cli", "lionagi"]
    } else {
        args.iter().map(String::as_str).collect()
    };
    for name in which {
        match name {
            "real-cli" => real_cli()?,
            "lionagi" => lionagi()?,
            other => bail!("unknown fixture set {other:?} (real-cli, lionagi)"),
        }
    }
    Ok(())
}

fn real_cli() -> Result<()> {
    let root = workspace_root();
    let dir = root.join("fixtures/real-cli");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let started = std::time::SystemTime::now();
    say("==> recording the real CLIs' streams (e2e_real_cli)");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&root)
        .args([
            "test",
            "-p",
            "lionrt",
            "--test",
            "it",
            "e2e_real_cli",
            "--",
            "--test-threads=1",
            "--nocapture",
        ])
        .env("LIONRT_E2E_RECORD", &dir)
        .status()
        .context("running cargo test")?;
    if !status.success() {
        bail!("the end-to-end tier failed ({status})");
    }
    let written: Vec<String> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= started)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    if written.len() < 2 {
        bail!("no stream was recorded (the tier skipped: see its SKIP line)");
    }
    for name in written {
        say(&format!("    fixtures/real-cli/{name}"));
    }
    Ok(())
}

fn lionagi() -> Result<()> {
    let root = workspace_root();
    let dir = root.join("fixtures/lionagi-import");
    let script = dir.join("make_state_db.py");
    let venv = std::env::temp_dir().join("lionrt-lionagi-0.36.0-venv");
    let python = venv.join("bin/python");
    if !python.is_file() {
        say(&format!("==> python3 -m venv {}", venv.display()));
        check(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    }
    say("==> pip install lionagi==0.36.0");
    check(Command::new(&python).args(["-m", "pip", "install", "-q", "lionagi==0.36.0"]))?;
    let out = dir.join("state.db");
    say(&format!("==> {} {}", script.display(), out.display()));
    check(Command::new(&python).arg(&script).arg(&out))?;
    Ok(())
}

fn check(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed ({status})");
    }
    Ok(())
}
