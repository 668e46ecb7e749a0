//! `lionrt run` while it runs and how it drives agents, end to end with
//! stand-in agent CLIs on PATH: live progress (status line on a pty, plain
//! lines, NDJSON, quiet, NO_COLOR), exit status on signals, `--resume`,
//! `--effort`, `--set` and the watchdog flags.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::stdout_json;

/// A stand-in `claude`: records its argv, then streams an init, a text, a
/// tool call and a result with usage, pausing between them.
const CLAUDE: &str = r#"#!/bin/sh
printf '%s\n' "$@" > "$ARGV_OUT"
cat > /dev/null
echo '{"type":"system","subtype":"init","session_id":"sess-42"}'
sleep "${PAUSE:-0}"
echo '{"type":"assistant","message":{"content":[{"type":"text","text":"Hello from the stub."}]}}'
sleep "${PAUSE:-0}"
echo '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}'
sleep "${PAUSE:-0}"
echo '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"sess-42","usage":{"input_tokens":12,"output_tokens":7}}'
"#;

/// A stand-in for any other CLI: records its argv and prints nothing.
const SILENT: &str = "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$ARGV_OUT\"\ncat > /dev/null\n";

struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin");
        for (name, text) in [("claude", CLAUDE), ("codex", SILENT), ("pi", SILENT)] {
            let path = bin.join(name);
            std::fs::write(&path, text).expect("stub");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        std::fs::create_dir(dir.path().join("ws")).expect("ws");
        Self { dir }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("state.db")
    }

    fn argv_file(&self) -> PathBuf {
        self.dir.path().join("argv")
    }

    fn argv(&self) -> Vec<String> {
        std::fs::read_to_string(self.argv_file())
            .expect("the stub ran")
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lionrt"));
        cmd.arg("--db")
            .arg(self.db())
            .args(args)
            .arg("--workspace")
            .arg(self.dir.path().join("ws"))
            .env_remove("LIONRT_DB")
            .env_remove("NO_COLOR")
            .env("HOME", self.dir.path())
            .env("ARGV_OUT", self.argv_file())
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", self.dir.path().join("bin").display()),
            )
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("lionrt")
    }
}

fn has_pair(argv: &[String], flag: &str, value: &str) -> bool {
    argv.windows(2).any(|w| w[0] == flag && w[1] == value)
}

#[test]
fn plain_lines_on_a_pipe_and_nothing_when_quiet() {
    let b = Bench::new();
    let out = b.run(&[
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "claude",
        "--session",
        "plain",
    ]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[plain] claude started, pid "), "{err}");
    assert!(err.contains("agent Hello from the stub."), "{err}");
    assert!(err.contains(r#"tool Bash {"command":"ls"}"#), "{err}");
    assert!(!err.contains('\x1b'), "no escape codes into a pipe: {err}");
    // Stdout still carries the report alone.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("session plain (claude)"), "{text}");

    let out = b.run(&[
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "claude",
        "--session",
        "hush",
        "--quiet",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
}

#[test]
fn json_streams_ndjson_events_then_the_summary() {
    let b = Bench::new();
    let out = b.run(&[
        "--json",
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "claude",
        "--session",
        "nd",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let (summary, events) = lines.split_last().expect("lines");
    assert_eq!(summary["session"], "nd");
    assert_eq!(summary["ok"], true);
    assert_eq!(events[0]["event"]["type"], "spawned");
    let kinds: Vec<&str> = events[1..]
        .iter()
        .map(|e| e["event"]["type"].as_str().expect("type"))
        .collect();
    assert_eq!(kinds.first(), Some(&"session_id"), "{kinds:?}");
    assert!(
        kinds.contains(&"text") && kinds.contains(&"tool_use") && kinds.contains(&"final"),
        "{kinds:?}"
    );
    assert_eq!(
        u64::try_from(kinds.len()).ok(),
        summary["messages"].as_u64(),
        "every recorded event was streamed once"
    );
    assert!(events.iter().all(|e| e["session"] == "nd"));
}

/// Runs `lionrt run` on a pseudo-terminal (util-linux `script`), returning
/// what the terminal showed.
fn on_a_pty(b: &Bench, session: &str, no_color: bool) -> String {
    let lionrt = env!("CARGO_BIN_EXE_lionrt");
    let line = format!(
        "{lionrt} --db {} run --provider claude --prompt task --session {session} --workspace {}",
        b.db().display(),
        b.dir.path().join("ws").display()
    );
    let cmd = b.cmd(&[]);
    // `script` runs the line on a fresh pty; its own argv replaces ours.
    let mut script = Command::new("script");
    script
        .args(["-qec", &line, "/dev/null"])
        .envs(
            cmd.get_envs()
                .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))),
        )
        .env("PAUSE", "0.5")
        .env("TERM", "xterm-256color")
        .stdin(Stdio::null());
    if no_color {
        script.env("NO_COLOR", "1");
    }
    let out = script.output().expect("script");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_terminal_gets_a_status_line_and_colour_unless_no_color() {
    if Command::new("script").arg("--version").output().is_err() {
        // util-linux `script` provides the pty; without it there is no
        // terminal to test on.
        return;
    }
    let b = Bench::new();
    let shown = on_a_pty(&b, "tty", false);
    assert!(
        shown.contains("tty · claude · pid "),
        "the status line: {shown:?}"
    );
    assert!(
        shown.contains("tokens 12/7"),
        "tokens on the status line: {shown:?}"
    );
    assert!(shown.contains("Hello from the stub."), "{shown:?}");
    assert!(
        shown.contains("\x1b[36m"),
        "tool calls in colour: {shown:?}"
    );
    assert!(
        shown.contains("session tty (claude)"),
        "the report: {shown:?}"
    );

    let plain = on_a_pty(&b, "tty2", true);
    assert!(plain.contains("tty2 · claude · pid "), "{plain:?}");
    for sgr in ["\x1b[1m", "\x1b[36m", "\x1b[32m", "\x1b[31m"] {
        assert!(!plain.contains(sgr), "NO_COLOR: {sgr:?} in {plain:?}");
    }
}

#[test]
fn resume_takes_a_recorded_session_or_the_providers_id() {
    let b = Bench::new();
    assert!(
        b.run(&[
            "run",
            "--prompt",
            "Update the README with a short usage note.",
            "--provider",
            "claude",
            "--session",
            "first-run"
        ])
        .status
        .success()
    );
    // A lionrt session prefix: its recorded provider resume id is used.
    let out = b.run(&[
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "claude",
        "--session",
        "second",
        "--resume",
        "first-",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(has_pair(&b.argv(), "--resume", "sess-42"), "{:?}", b.argv());
    // Anything else is the provider's own id.
    let out = b.run(&[
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "claude",
        "--session",
        "third",
        "--resume",
        "prov-77",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(has_pair(&b.argv(), "--resume", "prov-77"), "{:?}", b.argv());
    // A recorded session of another provider is refused before anything starts.
    let out = b.run(&[
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "codex",
        "--session",
        "fourth",
        "--resume",
        "first-run",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ran on claude"),
        "{out:?}"
    );
    let ls = stdout_json(&crate::lionrt(&b.db(), &["--json", "sessions", "ls"]));
    assert!(
        ls.as_array()
            .expect("ls")
            .iter()
            .all(|s| s["id"] != "fourth")
    );
}

#[test]
fn effort_reaches_every_cli_that_has_it() {
    let b = Bench::new();
    let out = b.run(&[
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "claude",
        "--session",
        "e1",
        "--effort",
        "high",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        has_pair(&b.argv(), "--effort", "high"),
        "claude: {:?}",
        b.argv()
    );
    // Codex and pi stand-ins print nothing (the runs fail); their argv counts.
    let _ = b.run(&[
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "codex",
        "--session",
        "e2",
        "--effort",
        "high",
    ]);
    assert!(
        b.argv()
            .iter()
            .any(|a| a.contains("model_reasoning_effort") && a.contains("high")),
        "codex: {:?}",
        b.argv()
    );
    let _ = b.run(&[
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "pi",
        "--session",
        "e3",
        "--effort",
        "high",
    ]);
    assert!(
        has_pair(&b.argv(), "--thinking", "high"),
        "pi: {:?}",
        b.argv()
    );
}

#[test]
fn provider_options_are_checked_against_the_flag_metadata() {
    let b = Bench::new();
    let out = b.run(&[
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "claude",
        "--session",
        "o1",
        "--set",
        "permission_mode=plan",
        "--set",
        "allowed_tools=Read,Bash",
        "--set",
        "max_turns=3",
    ]);
    assert!(out.status.success(), "{out:?}");
    let argv = b.argv();
    assert!(has_pair(&argv, "--permission-mode", "plan"), "{argv:?}");
    assert!(has_pair(&argv, "--max-turns", "3"), "{argv:?}");
    let at = argv
        .iter()
        .position(|a| a == "--allowedTools")
        .expect("--allowedTools");
    assert_eq!(argv[at + 1..at + 3], ["Read".to_owned(), "Bash".to_owned()]);

    for (set, needle) in [
        ("colour=blue", "not an option of the claude provider"),
        ("strict_mcp_config=maybe", "true or false"),
        ("model=opus", "use --model"),
        // The provider's own request check, before the session starts.
        ("session_id=not-a-uuid", "request is refused"),
    ] {
        let out = b.run(&[
            "run",
            "--prompt",
            "Update the README with a short usage note.",
            "--provider",
            "claude",
            "--session",
            "refused",
            "--set",
            set,
        ]);
        assert_eq!(out.status.code(), Some(1), "{set}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{set}: {err}");
    }
    let ls = stdout_json(&crate::lionrt(&b.db(), &["--json", "sessions", "ls"]));
    assert!(
        ls.as_array()
            .expect("ls")
            .iter()
            .all(|s| s["id"] != "refused"),
        "a refused request leaves no session"
    );
}

#[test]
fn the_watchdog_flags_end_a_silent_agent() {
    let b = Bench::new();
    let slow = b.dir.path().join("bin/claude");
    std::fs::write(&slow, "#!/bin/sh\nexec sleep 30\n").expect("stub");
    let started = std::time::Instant::now();
    let out = b.run(&[
        "--json",
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "claude",
        "--session",
        "w1",
        "--first-output-timeout",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "the watchdog fired"
    );
    let v = stdout_json(&out);
    assert_eq!(v["ok"], false);
    assert!(
        v["reason"].as_str().is_some_and(|r| r.contains("timed_out")
            || r.contains("watchdog")
            || r.contains("liveness")),
        "{v}"
    );
    let bad = b.run(&[
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "claude",
        "--idle-timeout",
        "soon",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
}

#[test]
fn a_signal_ends_the_run_with_128_plus_its_number() {
    let b = Bench::new();
    let slow = b.dir.path().join("bin/claude");
    std::fs::write(
        &slow,
        "#!/bin/sh\necho '{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}'\nexec sleep 30\n",
    )
    .expect("stub");
    for (signal, code) in [
        (rustix::process::Signal::INT, 130),
        (rustix::process::Signal::TERM, 143),
    ] {
        let mut child = b
            .cmd(&[
                "--json",
                "run",
                "--prompt",
                "Update the README with a short usage note.",
                "--provider",
                "claude",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        // Wait for the spawned event: the handlers are in place by then.
        let mut reader = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut first = String::new();
        std::io::BufRead::read_line(&mut reader, &mut first).expect("line");
        assert!(first.contains("spawned"), "{first}");
        let pid =
            rustix::process::Pid::from_raw(i32::try_from(child.id()).expect("pid")).expect("pid");
        rustix::process::kill_process(pid, signal).expect("signal");
        let status = child.wait().expect("wait");
        assert_eq!(status.code(), Some(code), "{signal:?}");
    }
}
