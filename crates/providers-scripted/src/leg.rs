//! The scripted leg: the "agent CLI" a scripted invocation runs. It prints
//! the script file's non-empty lines on stdout and, like a real agent,
//! acts on some `tool_use` lines before printing them:
//!
//! - `write_file` `{"path", "content"}`: writes the file (a relative path
//!   that stays inside the working directory only);
//! - `sleep` `{"ms"}`: waits that long (at most ten minutes), for slow legs;
//! - `run_command` `{"argv": [...]}`: runs the program (no shell) in the
//!   leg's own process group and waits for it, as an agent's tool call does.
//!
//! [`run_leg`] is the entry point: the crate's `scripted-leg` binary calls
//! it, and so can any host binary (`lionrt __scripted-leg`).

use std::io::Write;
use std::path::{Component, Path};
use std::time::Duration;

use serde_json::Value;

use crate::error::Error;

/// The longest `sleep` a script may ask for.
const MAX_SLEEP: Duration = Duration::from_secs(600);

/// Replays the leg file at `script` onto `out`, acting on the tool lines.
pub fn run_leg(script: &Path, out: &mut dyn Write) -> Result<(), Error> {
    let text = std::fs::read_to_string(script).map_err(|source| Error::LegIo {
        what: format!("reading {}", script.display()),
        source,
    })?;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Ok(value) = serde_json::from_str::<Value>(line)
            && value.get("type").and_then(Value::as_str) == Some("tool_use")
        {
            let input = value.get("input").unwrap_or(&Value::Null);
            match value.get("name").and_then(Value::as_str) {
                Some("write_file") => write_file(input)?,
                Some("sleep") => sleep(input)?,
                Some("run_command") => run_command(input)?,
                _ => {}
            }
        }
        let written = out
            .write_all(line.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        written.map_err(|source| Error::LegIo {
            what: "writing stdout".into(),
            source,
        })?;
    }
    Ok(())
}

fn bad(tool: &'static str, problem: &'static str) -> Error {
    Error::LegTool { tool, problem }
}

fn write_file(input: &Value) -> Result<(), Error> {
    let path = input
        .get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("write_file", "needs a string path"))?;
    let content = input
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let rel = Path::new(path);
    let inside = rel.components().all(|c| matches!(c, Component::Normal(_)));
    if !inside || path.is_empty() {
        return Err(bad(
            "write_file",
            "path must be relative and stay inside the working directory",
        ));
    }
    if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| Error::LegIo {
            what: format!("creating {}", parent.display()),
            source,
        })?;
    }
    std::fs::write(rel, content).map_err(|source| Error::LegIo {
        what: format!("writing {path}"),
        source,
    })
}

fn sleep(input: &Value) -> Result<(), Error> {
    let ms = input
        .get("ms")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("sleep", "needs a whole number of milliseconds `ms`"))?;
    std::thread::sleep(Duration::from_millis(ms).min(MAX_SLEEP));
    Ok(())
}

fn run_command(input: &Value) -> Result<(), Error> {
    let argv: Vec<&str> = input
        .get("argv")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some((program, args)) = argv.split_first() else {
        return Err(bad("run_command", "needs a non-empty string array `argv`"));
    };
    let status = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|source| Error::LegIo {
            what: format!("running {program}"),
            source,
        })?;
    // A command's exit status is the agent's business, not the leg's: the
    // leg goes on printing (a real agent reports a failure in-band).
    let _ = status;
    Ok(())
}
