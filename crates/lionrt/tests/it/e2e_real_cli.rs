//! The end-to-end tier: `lionrt run --provider claude|codex` driving the
//! real Claude Code and Codex CLIs, installed from the npm registry, against
//! a local stand-in for the Anthropic Messages API and the OpenAI Responses
//! API (server-sent events), inside a network namespace whose only device is
//! loopback, so nothing can leave the machine.
//!
//! The CLIs are installed once into a cache (`$LIONRT_E2E_CACHE`, default
//! `target/tmp/e2e-cli`). A machine without npm, `unshare` or `ip`, or where
//! the install fails, skips the tier with a printed reason; CI installs npm.
//!
//! Each test re-runs this test binary inside `unshare --net` (as root) or
//! `unshare -rn` (otherwise) as a worker: the worker brings `lo` up, checks
//! that it is the only device, serves the stand-in API on 127.0.0.1 and
//! runs `lionrt run`. The outer test then reads the recorded session,
//! messages, usage and resume id from the state.db. With
//! `LIONRT_E2E_RECORD=DIR` the worker also runs each CLI directly and
//! writes its raw stream to `DIR/<cli>_<version>_<kind>.jsonl`, and copies
//! the transcripts the `lionrt run` left in its `$HOME/.claude/projects` or
//! `$CODEX_HOME/sessions` to `DIR/transcripts/<cli>/` with the work dir's
//! path in `DIR/transcripts/<cli>.workdir` (what `cargo xtask fixtures`
//! uses).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use state_sqlite::{Engine, EngineConfig};

/// Set (to `claude` or `codex`) in the worker's environment.
const WORKER: &str = "LIONRT_E2E_WORKER";
/// The directory the outer test and the worker share.
const WORK_DIR: &str = "LIONRT_E2E_WORK_DIR";
/// Where the CLIs are installed.
const CACHE: &str = "LIONRT_E2E_CACHE";
/// Where the worker writes the CLIs' raw streams, when set.
const RECORD: &str = "LIONRT_E2E_RECORD";

/// The agent's answer, streamed in three deltas.
const ANSWER: [&str; 3] = ["Hello ", "from the ", "mock."];
/// The usage the stand-in reports.
const INPUT_TOKENS: u64 = 12;
const OUTPUT_TOKENS: u64 = 6;

const CLAUDE_BIN: &str = "node_modules/@anthropic-ai/claude-code-linux-x64/claude";
const CODEX_BIN: &str =
    "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex";

fn cache_dir() -> PathBuf {
    std::env::var_os(CACHE).map_or_else(
        || Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-cli"),
        PathBuf::from,
    )
}

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Installs (or finds) both CLIs; `Err` is the reason to skip.
fn install() -> Result<PathBuf, String> {
    let cache = cache_dir();
    std::fs::create_dir_all(&cache).map_err(|e| format!("creating {}: {e}", cache.display()))?;
    // One installer at a time, across test threads and processes.
    let lock = std::fs::File::create(cache.join(".install.lock"))
        .map_err(|e| format!("creating the install lock: {e}"))?;
    lock.lock()
        .map_err(|e| format!("taking the install lock: {e}"))?;
    if cache.join(CLAUDE_BIN).is_file() && cache.join(CODEX_BIN).is_file() {
        return Ok(cache);
    }
    if !on_path("npm") {
        return Err("npm is not installed".into());
    }
    // The platform packages carry the native binaries; no install script
    // is needed (or run).
    let out = Command::new("npm")
        .arg("install")
        .arg("--prefix")
        .arg(&cache)
        .args([
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "@anthropic-ai/claude-code",
            "@openai/codex",
        ])
        .output()
        .map_err(|e| format!("running npm: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "npm install failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    for bin in [CLAUDE_BIN, CODEX_BIN] {
        if !cache.join(bin).is_file() {
            return Err(format!(
                "npm installed no {bin} (platform not x86_64 linux?)"
            ));
        }
    }
    Ok(cache)
}

/// `unshare` arguments for a new network namespace.
fn unshare_args() -> &'static [&'static str] {
    if rustix::process::geteuid().is_root() {
        &["--net"]
    } else {
        &["-rn"]
    }
}

/// Whether a loopback-only namespace can be made here; `Err` is the reason.
fn namespace_usable() -> Result<(), String> {
    for tool in ["unshare", "ip"] {
        if !on_path(tool) {
            return Err(format!("{tool} is not installed"));
        }
    }
    let out = Command::new("unshare")
        .args(unshare_args())
        .args(["--", "sh", "-c", "ip link set lo up"])
        .output()
        .map_err(|e| format!("running unshare: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cannot make a network namespace: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

#[allow(
    clippy::print_stderr,
    reason = "the skip reason is for the person running the tier"
)]
fn skip(cli: &str, reason: &str) {
    eprintln!("SKIP e2e_real_cli::{cli}: {reason}");
}

/// Runs the worker for `cli` in a fresh namespace; returns the work dir.
fn run_in_namespace(cli: &str) -> Option<(tempfile::TempDir, Output)> {
    let cache = match install().and_then(|c| namespace_usable().map(|()| c)) {
        Ok(cache) => cache,
        Err(reason) => {
            skip(cli, &reason);
            return None;
        }
    };
    let work = tempfile::tempdir().expect("work dir");
    let out = Command::new("unshare")
        .args(unshare_args())
        .args(["--", "sh", "-c", "ip link set lo up && exec \"$0\" \"$@\""])
        .arg(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "e2e_real_cli::worker",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WORKER, cli)
        .env(WORK_DIR, work.path())
        .env(CACHE, &cache)
        .output()
        .expect("run the worker");
    Some((work, out))
}

fn db_i64(db: &Path, sql: &str, arg: &str) -> Option<i64> {
    let engine = Engine::open(db, EngineConfig::default()).expect("open state.db");
    let conn = engine.conn().expect("conn");
    conn.query_row(sql, [arg], |r| r.get::<_, Option<i64>>(0))
        .expect("query")
}

fn db_strings(db: &Path, sql: &str, arg: &str) -> Vec<String> {
    let engine = Engine::open(db, EngineConfig::default()).expect("open state.db");
    let conn = engine.conn().expect("conn");
    let mut stmt = conn.prepare(sql).expect("prepare");
    stmt.query_map([arg], |r| r.get::<_, String>(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

/// The outer half: the worker ran `lionrt run`; check what it recorded.
fn check_recorded(cli: &str, resume_looks_right: impl Fn(&str) -> bool) {
    let Some((work, out)) = run_in_namespace(cli) else {
        return;
    };
    let log = |name: &str| std::fs::read_to_string(work.path().join(name)).unwrap_or_default();
    assert!(
        out.status.success(),
        "worker failed: {}\n{}\nlionrt stdout: {}\nlionrt stderr: {}\nrequests: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        log("lionrt.out"),
        log("lionrt.err"),
        log("requests.log"),
    );
    let report: serde_json::Value =
        // `--json` streams NDJSON events first; the report is the last line.
        serde_json::from_str(log("lionrt.out").trim().lines().last().unwrap_or_default())
            .expect("lionrt --json report");
    let session = format!("e2e-{cli}");
    let db = work.path().join("state.db");
    assert_eq!(report["session"], session.as_str());
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["status"], "completed", "{report}");
    assert_eq!(
        report["text"].as_str().map(str::trim),
        Some(ANSWER.concat().as_str())
    );
    let resume = report["resume_id"].as_str().expect("a resume id");
    assert!(resume_looks_right(resume), "resume id {resume:?}");

    // The session row: completed, with the stand-in's usage.
    let status = db_strings(&db, "SELECT status FROM sessions WHERE id = ?1", &session);
    assert_eq!(status, ["completed"]);
    let tokens = |col: &str| {
        db_i64(
            &db,
            &format!("SELECT {col} FROM sessions WHERE id = ?1"),
            &session,
        )
    };
    assert_eq!(tokens("input_tokens"), Some(INPUT_TOKENS as i64));
    assert_eq!(tokens("output_tokens"), Some(OUTPUT_TOKENS as i64));
    let provider = db_strings(&db, "SELECT provider FROM sessions WHERE id = ?1", &session);
    assert_eq!(provider, [cli]);
    // The history: running, then completed.
    let history = db_strings(
        &db,
        "SELECT to_status FROM status_transitions WHERE entity_type = 'session' AND entity_id = ?1 ORDER BY id",
        &session,
    );
    assert_eq!(history, ["running", "completed"], "history");
    // The messages: the answer and the provider's resume id are recorded.
    let messages = db_strings(
        &db,
        "SELECT content FROM messages WHERE session_id = ?1 ORDER BY created_at, id",
        &session,
    );
    assert_eq!(
        report["messages"].as_u64(),
        Some(messages.len() as u64),
        "{report}"
    );
    let all = messages.join("\n");
    assert!(all.contains("mock."), "answer recorded: {all}");
    assert!(all.contains(resume), "resume id recorded: {all}");
    // The CLI really talked to the stand-in.
    let requests = log("requests.log");
    let wanted = if cli == "claude" {
        "POST /v1/messages"
    } else {
        "POST /v1/responses"
    };
    assert!(requests.contains(wanted), "{requests}");
}

fn is_uuid_like(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[test]
fn claude_code_runs_through_lionrt_against_a_local_messages_api() {
    if std::env::var_os(WORKER).is_some() {
        return;
    }
    check_recorded("claude", is_uuid_like);
}

#[test]
fn codex_runs_through_lionrt_against_a_local_responses_api() {
    if std::env::var_os(WORKER).is_some() {
        return;
    }
    check_recorded("codex", is_uuid_like);
}

/// Issue 14: `lionrt run` forwards the admitted set to the real codex as
/// the whole set. Codex's own servers (in `$CODEX_HOME/config.toml` and a
/// trusted project's `.codex/config.toml`) never start, the forwarded one
/// does (its tools reach the model), and codex accepts the disabling of a
/// server declared in a layer it does not load. A control run of codex by
/// hand in the same setup starts its own servers, so the check can fail.
#[test]
fn codex_runs_only_the_admitted_mcp_set_and_never_starts_its_own_servers() {
    // contract: PRV-095
    if std::env::var_os(WORKER).is_some() {
        return;
    }
    let Some((work, out)) = run_in_namespace(CODEX_MCP) else {
        return;
    };
    let log = |name: &str| std::fs::read_to_string(work.path().join(name)).unwrap_or_default();
    assert!(
        out.status.success(),
        "worker failed: {}\n{}\nlionrt stdout: {}\nlionrt stderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        log("lionrt.out"),
        log("lionrt.err"),
    );
    let lines: Vec<serde_json::Value> = log("lionrt.out")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let report = lines.last().expect("a report");
    assert_eq!(report["status"], "completed", "{report}");
    let event = lines
        .iter()
        .find(|v| v["event"]["type"] == "mcp_admission")
        .map(|v| v["event"].clone())
        .expect("the admission event");
    let disabled: Vec<&str> = event["disabled"]
        .as_array()
        .expect("disabled")
        .iter()
        .filter_map(|d| d["server"].as_str())
        .collect();
    assert_eq!(disabled, ["far", "own", "proj"], "{event}");
    assert_eq!(event["forwarded"][0]["server"], "fwd", "{event}");

    // The forwarded server started: codex listed its tools to the model.
    let requests = log("requests.lionrt.log");
    assert!(requests.contains("POST /v1/responses"), "{requests}");
    assert!(
        requests.contains("search_code") && requests.contains("fwd"),
        "the forwarded server's tools reach the model: {requests}"
    );
    // Codex's own never did; by hand, in the same setup, they do.
    let markers: serde_json::Value =
        serde_json::from_str(&log("markers.json")).expect("markers.json");
    assert_eq!(markers["after_lionrt"], serde_json::json!([]), "{markers}");
    assert_eq!(
        markers["after_control"],
        serde_json::json!(OWN_MARKERS),
        "control: {markers}\n{}\n{}",
        log("control.out"),
        log("control.err")
    );
    assert!(
        !work.path().join("far.marker").exists(),
        "the untrusted layer is not loaded"
    );
}

// ---------------------------------------------------------------- worker

/// The worker half; does nothing unless started by [`run_in_namespace`].
#[test]
fn worker() {
    let Some(worker) = std::env::var_os(WORKER) else {
        return;
    };
    let worker = worker.to_string_lossy().into_owned();
    // `codex-mcp`: codex, with a forwarded MCP set and servers of its own.
    let forwarding = worker == CODEX_MCP;
    let cli = if forwarding {
        "codex".to_owned()
    } else {
        worker.clone()
    };
    let work = PathBuf::from(std::env::var_os(WORK_DIR).expect("work dir"));
    let cache = PathBuf::from(std::env::var_os(CACHE).expect("cache dir"));

    // Nothing can leave: loopback is the only device, and it is up.
    let devices = std::fs::read_to_string("/proc/net/dev").expect("/proc/net/dev");
    let names: Vec<&str> = devices
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next().map(str::trim))
        .collect();
    assert_eq!(names, ["lo"], "only loopback in the namespace");

    let requests = Arc::new(Mutex::new(
        std::fs::File::create(work.join("requests.log")).expect("log"),
    ));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().expect("addr").port();
    {
        let requests = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let requests = Arc::clone(&requests);
                std::thread::spawn(move || serve(stream, &requests));
            }
        });
    }

    let home = work.join("home");
    let ws = work.join("ws");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&ws).expect("ws");
    // Codex works in a git repository (lionrt passes no skip flag).
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .expect("git init");
    assert!(git.success());
    let bin = work.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink(cache.join(CLAUDE_BIN), bin.join("claude")).expect("link");
    std::os::unix::fs::symlink(cache.join(CODEX_BIN), bin.join("codex")).expect("link");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).expect("codex home");
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"gpt-5.1-codex\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\n\
             name = \"mock\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n\
             env_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n"
        ),
    )
    .expect("codex config");
    let env: Vec<(&str, String)> = vec![
        ("PATH", path),
        ("HOME", home.to_string_lossy().into_owned()),
        ("CODEX_HOME", codex_home.to_string_lossy().into_owned()),
        ("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}")),
        ("ANTHROPIC_API_KEY", "sk-ant-e2e-local".into()),
        ("OPENAI_API_KEY", "sk-e2e-local".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_TELEMETRY", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("NO_COLOR", "1".into()),
    ];

    let mcp_args = if forwarding {
        own_mcp_servers(&work, &ws, &codex_home)
    } else {
        Vec::new()
    };

    let prompt = "Say hello.";
    let out = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(work.join("state.db"))
        .args(["--json", "run", "--provider", &cli, "--prompt", prompt])
        .arg("--workspace")
        .arg(&ws)
        .args(["--session", &format!("e2e-{worker}")])
        .args(&mcp_args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env_remove("LIONRT_DB")
        .env_remove("LIONAGI_HOME")
        .stdin(Stdio::null())
        .output()
        .expect("run lionrt");
    std::fs::write(work.join("lionrt.out"), &out.stdout).expect("write");
    std::fs::write(work.join("lionrt.err"), &out.stderr).expect("write");
    if forwarding {
        control_run(&work, &ws, &env, prompt);
    }

    if let Some(dir) = std::env::var_os(RECORD) {
        // The transcripts of the `lionrt run` above, before the direct run
        // adds its own: `cargo xtask fixtures` lays them out and normalises
        // the work dir (written next to them) to a fixed path.
        let to = Path::new(&dir).join("transcripts");
        let from = if cli == "claude" {
            home.join(".claude/projects")
        } else {
            codex_home.join("sessions")
        };
        std::fs::create_dir_all(&to).expect("transcripts dir");
        if from.is_dir() {
            copy_tree(&from, &to.join(&cli));
        }
        std::fs::write(
            to.join(format!("{cli}.workdir")),
            work.to_string_lossy().as_bytes(),
        )
        .expect("write the work dir");
        record(&cli, Path::new(&dir), &ws, &env, prompt);
    }
    assert!(out.status.success(), "lionrt run failed: {out:?}");
}

/// The worker's [`WORKER`] value for the forwarding test.
const CODEX_MCP: &str = "codex-mcp";
/// The markers codex's own servers create when started, under the work dir.
const OWN_MARKERS: [&str; 2] = ["own.marker", "proj.marker"];

/// Codex's own servers (each touches a marker when started: one in
/// `$CODEX_HOME/config.toml`, one in the trusted workspace's
/// `.codex/config.toml`, one in the untrusted parent's, which codex does
/// not load), and the `.mcp.json` lionrt forwards (the benign fixture
/// server); returns the `lionrt run` arguments.
fn own_mcp_servers(work: &Path, ws: &Path, codex_home: &Path) -> Vec<String> {
    let server = |marker: &str| {
        format!(
            "command = \"sh\"\nargs = [\"-c\", \"touch '{}'; exec cat >/dev/null\"]\n",
            work.join(marker).display()
        )
    };
    let mut config = std::fs::OpenOptions::new()
        .append(true)
        .open(codex_home.join("config.toml"))
        .expect("codex config");
    write!(
        config,
        "\n[mcp_servers.own]\n{}\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        server(OWN_MARKERS[0]),
        ws.display()
    )
    .expect("append");
    std::fs::create_dir_all(ws.join(".codex")).expect("mkdir");
    std::fs::write(
        ws.join(".codex/config.toml"),
        format!("[mcp_servers.proj]\n{}", server(OWN_MARKERS[1])),
    )
    .expect("project config");
    std::fs::create_dir_all(work.join(".codex")).expect("mkdir");
    std::fs::write(
        work.join(".codex/config.toml"),
        format!("[mcp_servers.far]\n{}", server("far.marker")),
    )
    .expect("untrusted config");
    let benign = mcp_test_servers::locate(mcp_test_servers::BENIGN).expect("fixture server");
    let forwarded = serde_json::json!({"mcpServers": {
        "fwd": {"command": benign.to_string_lossy(), "args": ["benign", "e2e-fwd"]},
    }});
    let file = work.join("mcp.json");
    std::fs::write(&file, forwarded.to_string()).expect("mcp.json");
    vec![
        "--mcp-config".into(),
        file.to_string_lossy().into_owned(),
        "--mcp-init-timeout".into(),
        "60".into(),
    ]
}

/// Which of `names` exist under `work`.
fn markers(work: &Path, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .filter(|n| work.join(n).exists())
        .map(|n| (*n).to_owned())
        .collect()
}

/// Keeps what the `lionrt run` left, then runs codex by hand in the same
/// setup: its own servers start there, so the markers the lionrt run did
/// not leave are ones it would have left had it started them.
fn control_run(work: &Path, ws: &Path, env: &[(&str, String)], prompt: &str) {
    let after_lionrt = markers(work, &OWN_MARKERS);
    std::fs::copy(work.join("requests.log"), work.join("requests.lionrt.log")).expect("copy");
    let out = Command::new("codex")
        .args(["exec", "--json", "-C"])
        .arg(ws)
        .args(["--", prompt])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .output()
        .expect("run codex by hand");
    std::fs::write(work.join("control.out"), &out.stdout).expect("write");
    std::fs::write(work.join("control.err"), &out.stderr).expect("write");
    let result = serde_json::json!({
        "after_lionrt": after_lionrt,
        "after_control": markers(work, &OWN_MARKERS),
        "control_ok": out.status.success(),
    });
    std::fs::write(work.join("markers.json"), result.to_string()).expect("write");
}

/// Copies the tree under `from` to `to` (files and directories).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for entry in std::fs::read_dir(from).expect("read a transcript dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a transcript");
        }
    }
}

/// Runs the CLI directly and keeps its raw stream as a fixture.
fn record(cli: &str, dir: &Path, ws: &Path, env: &[(&str, String)], prompt: &str) {
    let version = Command::new(cli)
        .arg("--version")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("version");
    let version = String::from_utf8_lossy(&version.stdout)
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or("unknown")
        .to_owned();
    let (args, kind): (Vec<&str>, &str) = if cli == "claude" {
        (
            vec![
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--",
                prompt,
            ],
            "stream_json",
        )
    } else {
        (vec!["exec", "--json", "--", prompt], "exec_json")
    };
    let out = Command::new(cli)
        .args(&args)
        .current_dir(ws)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .output()
        .expect("run the cli");
    assert!(out.status.success(), "{cli} direct run: {out:?}");
    // The temp paths differ per run: recorded under a fixed name instead.
    let work = ws.parent().unwrap_or(ws).to_string_lossy().into_owned();
    let stream = String::from_utf8_lossy(&out.stdout).replace(&work, "/srv");
    std::fs::create_dir_all(dir).expect("record dir");
    std::fs::write(dir.join(format!("{cli}_{version}_{kind}.jsonl")), stream)
        .expect("write fixture");
}

// ------------------------------------------------------------- stand-in

/// One HTTP/1.1 exchange; every reply closes the connection.
fn serve(stream: TcpStream, log: &Mutex<std::fs::File>) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut head = String::new();
    let mut content_length = 0usize;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line == "\r\n" || line == "\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            content_length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
        head.push_str(&line);
    }
    let body = if chunked {
        read_chunked(&mut reader)
    } else {
        let mut body = vec![0; content_length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        body
    };
    let request_line = head.lines().next().unwrap_or_default().to_owned();
    if let Ok(mut f) = log.lock() {
        let _ = writeln!(f, "{request_line} ({} byte body)", body.len());
        // The bodies, for what the CLI told the model (its tools).
        let _ = writeln!(f, "BODY {}", String::from_utf8_lossy(&body));
    }
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let streaming = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("stream").and_then(serde_json::Value::as_bool))
        .unwrap_or(false);
    let (status, content_type, reply) = match (method, path.split('?').next().unwrap_or("")) {
        ("HEAD", _) => ("200 OK", "text/plain", String::new()),
        ("POST", "/v1/messages") if streaming => ("200 OK", "text/event-stream", anthropic_sse()),
        ("POST", "/v1/messages") => ("200 OK", "application/json", anthropic_json()),
        ("POST", "/v1/responses") => ("200 OK", "text/event-stream", responses_sse()),
        ("GET", p) if p.ends_with("/models") => (
            "200 OK",
            "application/json",
            r#"{"object":"list","data":[],"models":[]}"#.into(),
        ),
        _ => (
            "404 Not Found",
            "application/json",
            r#"{"error":"not here"}"#.into(),
        ),
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{}",
        reply.len(),
        if method == "HEAD" { "" } else { &reply }
    );
    let _ = stream.flush();
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        if reader.read_line(&mut size).unwrap_or(0) == 0 {
            return body;
        }
        let n =
            usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        let mut chunk = vec![0; n + 2];
        if n == 0 || reader.read_exact(&mut chunk).is_err() {
            let mut trailer = String::new();
            let _ = reader.read_line(&mut trailer);
            return body;
        }
        body.extend_from_slice(&chunk[..n]);
    }
}

fn sse(events: &[(&str, serde_json::Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

fn anthropic_sse() -> String {
    use serde_json::json;
    let mut events = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": "msg_e2e_1", "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
                "stop_sequence": null,
                "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": 1,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}}),
        ),
    ];
    for delta in ANSWER {
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": delta}}),
        ));
    }
    events.extend([
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                   "usage": {"output_tokens": OUTPUT_TOKENS}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    sse(&events)
}

fn anthropic_json() -> String {
    serde_json::json!({
        "id": "msg_e2e_0", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": ANSWER.concat()}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS}
    })
    .to_string()
}

fn responses_sse() -> String {
    use serde_json::json;
    let text = ANSWER.concat();
    let mut events = vec![
        (
            "response.created",
            json!({"type": "response.created", "response": {
                "id": "resp_e2e_1", "object": "response", "created_at": 0,
                "status": "in_progress", "model": "gpt-5.1-codex", "output": []}}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"type": "message", "id": "msg_e2e_1", "role": "assistant",
                            "status": "in_progress", "content": []}}),
        ),
    ];
    for delta in ANSWER {
        events.push((
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "item_id": "msg_e2e_1",
                   "output_index": 0, "content_index": 0, "delta": delta}),
        ));
    }
    events.extend([
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"type": "message", "id": "msg_e2e_1", "role": "assistant",
                            "status": "completed",
                            "content": [{"type": "output_text", "text": text, "annotations": []}]}}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": {
                "id": "resp_e2e_1", "object": "response", "created_at": 0,
                "status": "completed", "model": "gpt-5.1-codex", "output": [],
                "usage": {"input_tokens": INPUT_TOKENS,
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": OUTPUT_TOKENS,
                          "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS}}}),
        ),
    ]);
    sse(&events)
}

/// The drift that made forwarded MCP secrets vanish: codex 0.171 reads
/// `--profile NAME` from `$CODEX_HOME/NAME.config.toml` with top-level
/// server tables. The real codex is asked what it loaded from the files and
/// overrides lionrt's codex provider produces.
#[test]
fn codex_loads_the_forwarded_mcp_secrets_from_the_profile_written_for_it() {
    // contract: PRV-094
    use providers_core::{AgentRequest, ForwardedMcp, Provider as _, apply_forwarded_mcp_servers};
    if std::env::var_os(WORKER).is_some() {
        return;
    }
    let cache = match install().and_then(|c| namespace_usable().map(|()| c)) {
        Ok(cache) => cache,
        Err(reason) => {
            skip("codex-mcp-profile", &reason);
            return;
        }
    };
    let home = tempfile::tempdir().expect("home");
    let codex_home = home.path().join(".codex");
    std::fs::create_dir_all(&codex_home).expect("codex home");
    let mut request = AgentRequest::new("p");
    let servers = serde_json::json!({
        "github": {"command": "gh-mcp", "args": ["--stdio"], "env": {"GH_TOKEN": "ghp_e2e_SECRET"}},
        "docs": {"url": "http://127.0.0.1:9/mcp", "http_headers": {"Authorization": "Bearer e2e_HDR"}}
    });
    let forwarded = ForwardedMcp {
        servers: servers.as_object().cloned().unwrap_or_default(),
        exclusive: false,
    };
    let provider = providers_codex::CodexProvider {
        program: cache.join(CODEX_BIN),
    };
    assert!(apply_forwarded_mcp_servers(
        &provider,
        &mut request.kwargs,
        &forwarded
    ));
    request.kwargs.insert(
        "mcp_profile_dir".into(),
        serde_json::json!(codex_home.to_string_lossy()),
    );
    let inv = provider.invocation(&request).expect("invocation");
    assert!(!inv.argv.join(" ").contains("SECRET") && !inv.argv.join(" ").contains("e2e_HDR"));
    for file in &inv.files {
        file.write_owner_only().expect("write profile");
    }
    // The overrides and the profile, as global options of `codex mcp list`.
    let mut options = Vec::new();
    let mut it = inv.argv.iter();
    while let Some(arg) = it.next() {
        if arg == "-c" || arg == "--profile" {
            options.push(arg.clone());
            options.push(it.next().expect("a value").clone());
        }
    }
    let out = Command::new("unshare")
        .args(unshare_args())
        .arg("--")
        .arg(cache.join(CODEX_BIN))
        .args(&options)
        .args(["mcp", "list", "--json"])
        .envs(inv.env.iter())
        .env("HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .expect("codex mcp list");
    assert!(out.status.success(), "{out:?}");
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let server = |name: &str| {
        listed
            .as_array()
            .and_then(|a| a.iter().find(|s| s["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("{name} listed: {listed}"))
    };
    assert_eq!(
        server("github")["transport"]["env"]["GH_TOKEN"],
        "ghp_e2e_SECRET",
        "{listed}"
    );
    assert!(
        server("docs").to_string().contains("Bearer e2e_HDR"),
        "{listed}"
    );
}
