//! `lionrt run` admits the MCP set it forwards to a Claude Code or Codex
//! leg: end to end against the fixture MCP servers, with stand-in `claude`
//! and `codex` programs on `PATH` that record the argv they were given and
//! replay a recorded stream. And GATE-021: `lionrt mcp ls` (native
//! loading) and `lionrt run` (CLI forwarding) pick the same config file for
//! every combination of explicit path, project files, trust flag and home
//! file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mcp_test_servers::{BENIGN, locate};
use serde_json::{Value, json};
use state_sqlite::{Engine, EngineConfig};

fn fixture(name: &str) -> String {
    locate(name)
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
        .to_string_lossy()
        .into_owned()
}

fn stream_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/providers")
        .join(name)
}

/// A stand-in agent CLI named `program` in `bin`: writes its argv,
/// NUL-separated, to `bin/<program>.argv` and prints `stream`.
fn stand_in(bin: &Path, program: &str, stream: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(bin).expect("mkdir bin");
    let argv = bin.join(format!("{program}.argv"));
    let script = format!(
        "#!/bin/sh\nprintf '%s\\0' \"$@\" > '{}'\ncat '{}'\n",
        argv.display(),
        stream.display()
    );
    let path = bin.join(program);
    std::fs::write(&path, script).expect("write stand-in");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    argv
}

fn read_argv(path: &Path) -> Option<Vec<String>> {
    let bytes = std::fs::read(path).ok()?;
    Some(
        bytes
            .split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect(),
    )
}

/// The values after `flag`, up to the next argument starting with `-`.
fn flag_values<'a>(argv: &'a [String], flag: &str) -> Vec<&'a str> {
    let Some(at) = argv.iter().position(|a| a == flag) else {
        return Vec::new();
    };
    argv[at + 1..]
        .iter()
        .take_while(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect()
}

fn path_env(bin: &Path) -> String {
    format!("{}:/usr/bin:/bin", bin.display())
}

fn lionrt_in(cwd: &Path, home: &Path, bin: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env("PATH", path_env(bin))
        .env_remove("LIONRT_DB")
        .env_remove("CODEX_HOME")
        .output()
        .expect("run lionrt")
}

/// `lionrt` as [`lionrt_in`], with `CODEX_HOME` set to `codex_home`.
fn lionrt_codex(cwd: &Path, home: &Path, bin: &Path, codex_home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env("PATH", path_env(bin))
        .env("CODEX_HOME", codex_home)
        .env_remove("LIONRT_DB")
        .output()
        .expect("run lionrt")
}

/// The `admin_events` rows of the forwarding's refusals:
/// (entity_type, entity_id, actor_type, actor_id, detail).
fn refusal_rows(db: &Path) -> Vec<(String, String, String, String, Value)> {
    let engine = Engine::open(db, EngineConfig::default()).expect("open db");
    let conn = engine.conn().expect("conn");
    let mut stmt = conn
        .prepare(
            "SELECT entity_type, entity_id, actor_type, actor_id, detail_json FROM admin_events
             WHERE kind = 'mcp.forward_refused' ORDER BY id",
        )
        .expect("prepare");
    stmt.query_map([], |r| {
        let detail: String = r.get(4)?;
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            serde_json::from_str(&detail).unwrap_or(Value::String(detail)),
        ))
    })
    .expect("query")
    .collect::<Result<_, _>>()
    .expect("rows")
}

/// (server, tool, reason, action) of each refusal row of `session`.
fn row_refusals(db: &Path, session: &str) -> Vec<(String, String, String, String)> {
    let mut out: Vec<_> = refusal_rows(db)
        .into_iter()
        .map(|(entity_type, entity_id, actor_type, actor_id, d)| {
            assert_eq!(
                (entity_type.as_str(), actor_type.as_str(), actor_id.as_str()),
                ("session", "system", "lionrt-mcp-forward")
            );
            assert_eq!(d["session"], entity_id.as_str());
            assert!(d["message"].as_str().is_some_and(|m| !m.is_empty()), "{d}");
            (entity_id, d)
        })
        .filter(|(id, _)| id == session)
        .map(|(_, d)| {
            let s = |k: &str| d[k].as_str().unwrap_or("-").to_owned();
            (s("server"), s("tool"), s("reason"), s("action"))
        })
        .collect();
    out.sort();
    out
}

fn messages(db: &Path, session: &str) -> Vec<(String, String, Value)> {
    let engine = Engine::open(db, EngineConfig::default()).expect("open db");
    let conn = engine.conn().expect("conn");
    let mut stmt = conn
        .prepare("SELECT id, role, content FROM messages WHERE session_id = ?1 ORDER BY rowid")
        .expect("prepare");
    stmt.query_map([session], |r| {
        let content: String = r.get(2)?;
        Ok((
            r.get(0)?,
            r.get(1)?,
            serde_json::from_str(&content).unwrap_or(Value::String(content)),
        ))
    })
    .expect("query")
    .collect::<Result<_, _>>()
    .expect("rows")
}

/// Whether any live process has `tag` in its command line.
fn tagged_processes(tag: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(tag))
        })
        .collect()
}

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    workspace: PathBuf,
    home: PathBuf,
    bin: PathBuf,
    db: PathBuf,
    config: PathBuf,
    tag: String,
}

/// A workspace, an empty home and an `.mcp.json` naming a benign server,
/// an executor-shaped one and one that cannot be started.
fn setup(name: &str) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let (workspace, home, bin) = (root.join("ws"), root.join("home"), root.join("bin"));
    for d in [&workspace, &home, &bin] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let tag = format!("fwd-{name}-{}", std::process::id());
    let config = root.join("mcp.json");
    let servers = json!({"mcpServers": {
        "benign": {"command": fixture(BENIGN), "args": ["benign", &tag]},
        "exec": {"command": fixture(BENIGN), "args": ["executor", &tag]},
        "broken": {"command": root.join("no-such-server").to_string_lossy()},
    }});
    std::fs::write(&config, servers.to_string()).expect("write config");
    Setup {
        db: root.join("state.db"),
        _dir: dir,
        root,
        workspace,
        home,
        bin,
        config,
        tag,
    }
}

fn run_with(s: &Setup, provider: &str, session: &str) -> Output {
    lionrt_in(
        &s.root,
        &s.home,
        &s.bin,
        &[
            "--json",
            "--db",
            &s.db.to_string_lossy(),
            "run",
            "--prompt",
            "Update the README with a short usage note.",
            "--provider",
            provider,
            "--session",
            session,
            "--workspace",
            &s.workspace.to_string_lossy(),
            "--mcp-config",
            &s.config.to_string_lossy(),
            // Generous under load: a slow handshake is not what is tested.
            "--mcp-init-timeout",
            "60",
        ],
    )
}

/// A codex stand-in on `s.bin` and an empty `CODEX_HOME` for it: the
/// stand-in's argv file and the home.
fn codex_stand_in(s: &Setup) -> (PathBuf, PathBuf) {
    let argv_file = stand_in(
        &s.bin,
        "codex",
        &stream_fixture("codex_exec_json_success.jsonl"),
    );
    let codex_home = s.root.join("codex-home");
    std::fs::create_dir_all(&codex_home).expect("mkdir");
    (argv_file, codex_home)
}

/// `[first..] --db DB run --provider codex` on the forwarded set of `s`,
/// then `last`.
fn codex_run_args(s: &Setup, first: &[&str], last: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = first.iter().map(|a| (*a).to_owned()).collect();
    args.extend(
        [
            "--db",
            &s.db.to_string_lossy(),
            "run",
            "--prompt",
            "Update the README with a short usage note.",
            "--provider",
            "codex",
            "--workspace",
            &s.workspace.to_string_lossy(),
            "--mcp-config",
            &s.config.to_string_lossy(),
            // Generous under load: a slow handshake is not what is tested.
            "--mcp-init-timeout",
            "60",
        ]
        .map(str::to_owned),
    );
    args.extend(last.iter().map(|a| (*a).to_owned()));
    args
}

/// `lionrt` as [`lionrt_codex`] runs it, with `args` as owned strings.
fn run_codex(s: &Setup, codex_home: &Path, args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    lionrt_codex(&s.root, &s.home, &s.bin, codex_home, &args)
}

/// The admission event line of a `run --json`.
fn admission_event(out: &Output) -> Value {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"]["type"] == "mcp_admission")
        .map(|v| v["event"].clone())
        .unwrap_or_else(|| panic!("no admission event: {out:?}"))
}

fn refusals(event: &Value) -> Vec<(String, String, String, String)> {
    event["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or("-").to_owned();
            (s("server"), s("tool"), s("reason"), s("action"))
        })
        .collect()
}

#[test]
fn claude_gets_the_admitted_set_with_the_refused_tools_disallowed_and_the_session_says_why() {
    let s = setup("claude");
    let argv_file = stand_in(
        &s.bin,
        "claude",
        &stream_fixture("claude_stream_json_success.jsonl"),
    );
    let out = run_with(&s, "claude", "fc");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(crate::stdout_json(&out)["status"], "completed");

    // What the CLI was given.
    let argv = read_argv(&argv_file).expect("the stand-in ran");
    let config = flag_values(&argv, "--mcp-config");
    assert_eq!(config.len(), 1, "{argv:?}");
    let forwarded: Value = serde_json::from_str(config[0]).expect("inline mcp config");
    let names: Vec<&String> = forwarded["mcpServers"]
        .as_object()
        .expect("mcpServers")
        .keys()
        .collect();
    assert_eq!(names, ["benign", "exec"], "the unaudited server is dropped");
    assert_eq!(
        forwarded["mcpServers"]["exec"]["args"][0], "executor",
        "forwarded as written"
    );
    assert!(argv.iter().any(|a| a == "--strict-mcp-config"), "{argv:?}");
    let mut disallowed = flag_values(&argv, "--disallowedTools");
    disallowed.sort_unstable();
    assert_eq!(disallowed, ["mcp__exec__bash", "mcp__exec__run_script"]);

    // What the run printed.
    let event = admission_event(&out);
    assert_eq!(event["source"], "explicit");
    let refused = refusals(&event);
    let want = |server: &str, tool: &str, reason: &str, action: &str| {
        (
            server.to_owned(),
            tool.to_owned(),
            reason.to_owned(),
            action.to_owned(),
        )
    };
    assert!(refused.contains(&want(
        "exec",
        "bash",
        "unbounded-command-input",
        "disallowed"
    )));
    assert!(refused.contains(&want(
        "exec",
        "run_script",
        "unbounded-script-payload",
        "disallowed"
    )));
    assert!(refused.contains(&want(
        "broken",
        "-",
        "server-not-audited",
        "server_not_forwarded"
    )));
    assert_eq!(refused.len(), 3, "{refused:?}");

    // Each refusal is an admin_events row on the session, with its action.
    let mut printed = refused.clone();
    printed.sort();
    assert_eq!(row_refusals(&s.db, "fc"), printed);

    // What the session records: the decision, before the leg's output.
    let rows = messages(&s.db, "fc");
    assert_eq!(rows[0].0, "fc:note:0");
    assert_eq!(rows[0].1, "mcp_admission");
    assert_eq!(rows[0].2, event);
    assert!(rows.len() > 1, "the leg's messages follow");

    // Admission left no server running.
    assert_eq!(tagged_processes(&s.tag), Vec::<i32>::new());
}

#[test]
fn codex_is_not_given_a_server_with_a_refused_tool() {
    let s = setup("codex");
    let argv_file = stand_in(
        &s.bin,
        "codex",
        &stream_fixture("codex_exec_json_success.jsonl"),
    );
    let out = run_with(&s, "codex", "fx");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let argv = read_argv(&argv_file).expect("the stand-in ran");
    let overrides: Vec<&String> = argv
        .iter()
        .filter(|a| a.starts_with("mcp_servers."))
        .collect();
    assert!(
        overrides
            .iter()
            .any(|a| a.starts_with("mcp_servers.benign.command=")),
        "{argv:?}"
    );
    assert!(
        !overrides
            .iter()
            .any(|a| a.starts_with("mcp_servers.exec.") || a.starts_with("mcp_servers.broken.")),
        "{argv:?}"
    );
    let refused = refusals(&admission_event(&out));
    assert!(refused.contains(&(
        "exec".into(),
        "bash".into(),
        "unbounded-command-input".into(),
        "server_not_forwarded".into()
    )));
    let mut printed = refused.clone();
    printed.sort();
    assert_eq!(
        row_refusals(&s.db, "fx"),
        printed,
        "one admin_events row per refusal"
    );
    assert_eq!(printed.len(), 3, "{printed:?}");
    assert!(
        printed
            .iter()
            .all(|(_, _, _, action)| action == "server_not_forwarded")
    );
    let rows = messages(&s.db, "fx");
    assert_eq!(rows[0].1, "mcp_admission");
    assert!(
        rows[0].2["forwarded"][0]["server"] == "benign",
        "{:?}",
        rows[0]
    );
    assert_eq!(tagged_processes(&s.tag), Vec::<i32>::new());
}

#[test]
fn a_forwarded_set_outside_admission_is_refused_before_any_session() {
    let s = setup("bypass");
    stand_in(
        &s.bin,
        "claude",
        &stream_fixture("claude_stream_json_success.jsonl"),
    );
    let db = s.db.to_string_lossy().into_owned();
    let bypass = lionrt_in(
        &s.root,
        &s.home,
        &s.bin,
        &[
            "--db",
            &db,
            "run",
            "--prompt",
            "Update the README with a short usage note.",
            "--provider",
            "claude",
            "--set",
            r#"mcp_servers={"x":{"command":"sh"}}"#,
        ],
    );
    assert_eq!(bypass.status.code(), Some(1), "{bypass:?}");
    assert!(String::from_utf8_lossy(&bypass.stderr).contains("--mcp-config"));
    let scripted = lionrt_in(
        &s.root,
        &s.home,
        &s.bin,
        &[
            "--db",
            &db,
            "run",
            "--mcp-config",
            &s.config.to_string_lossy(),
        ],
    );
    assert_eq!(scripted.status.code(), Some(1), "{scripted:?}");
    assert!(String::from_utf8_lossy(&scripted.stderr).contains("no forwarded MCP servers"));
    assert_eq!(sessions(&s.db), 0, "refused before any session");
}

fn sessions(db: &Path) -> i64 {
    if !db.exists() {
        return 0;
    }
    let engine = Engine::open(db, EngineConfig::default()).expect("open db");
    let conn = engine.conn().expect("conn");
    conn.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
        .expect("count")
}

/// Which config file an entry point picked, named by the one server each
/// candidate file declares.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Picked {
    File(String),
    Nothing,
    ConfigError,
}

#[derive(Debug, Clone, Copy)]
enum Explicit {
    Absent,
    Absolute,
    Relative,
    Missing,
}

#[derive(Debug, Clone, Copy)]
struct Case {
    explicit: Explicit,
    project_lionagi: bool,
    project: bool,
    trust: bool,
    home: bool,
}

struct Tree {
    _dir: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
    bin: PathBuf,
    db: PathBuf,
    argv: PathBuf,
    explicit: Option<String>,
}

fn write_candidate(path: &Path, server: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let doc = json!({"mcpServers": {server: {"command": fixture(BENIGN), "args": ["benign"]}}});
    std::fs::write(path, doc.to_string()).expect("write candidate");
}

fn tree(case: Case) -> Tree {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let (project, home, bin) = (root.join("project"), root.join("home"), root.join("bin"));
    for d in [&project, &home] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    write_candidate(&root.join("explicit.json"), "from_explicit");
    if case.project_lionagi {
        write_candidate(&project.join(".lionagi/.mcp.json"), "from_project_lionagi");
    }
    if case.project {
        write_candidate(&project.join(".mcp.json"), "from_project");
    }
    if case.home {
        write_candidate(&home.join(".lionagi/.mcp.json"), "from_home");
    }
    let explicit = match case.explicit {
        Explicit::Absent => None,
        Explicit::Absolute => Some(root.join("explicit.json").to_string_lossy().into_owned()),
        Explicit::Relative => Some("../explicit.json".to_owned()),
        Explicit::Missing => Some(root.join("missing.json").to_string_lossy().into_owned()),
    };
    let argv = stand_in(
        &bin,
        "claude",
        &stream_fixture("claude_stream_json_success.jsonl"),
    );
    Tree {
        db: root.join("state.db"),
        _dir: dir,
        project,
        home,
        bin,
        argv,
        explicit,
    }
}

fn config_flags<'a>(t: &'a Tree, case: Case, flag: &'static str) -> Vec<&'a str> {
    let mut args = Vec::new();
    if let Some(e) = &t.explicit {
        args.extend([flag, e.as_str()]);
    }
    if case.trust {
        args.push("--trust-project");
    }
    args
}

/// Native loading: `lionrt mcp ls --json` in the project.
fn native(t: &Tree, case: Case) -> Picked {
    let db = t.db.to_string_lossy();
    let mut args = vec!["--json", "--db", &db, "mcp", "ls", "--init-timeout", "60"];
    args.extend(config_flags(t, case, "--config"));
    let out = lionrt_in(&t.project, &t.home, &t.bin, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(0) {
        let rows = crate::stdout_json(&out);
        let names: Vec<String> = rows
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r["server"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(names.len(), 1, "{rows}");
        Picked::File(names[0].clone())
    } else if stderr.contains("no mcp config found") {
        Picked::Nothing
    } else if stderr.contains("mcp_config_path") {
        Picked::ConfigError
    } else {
        panic!("native loading failed otherwise: {out:?}")
    }
}

/// CLI forwarding: `lionrt run --provider claude` in the project, read
/// from the argv the stand-in `claude` received.
fn forwarding(t: &Tree, case: Case) -> Picked {
    let db = t.db.to_string_lossy();
    let ws = t.project.to_string_lossy();
    let mut args = vec![
        "--json",
        "--db",
        &db,
        "run",
        "--prompt",
        "Update the README with a short usage note.",
        "--provider",
        "claude",
        "--workspace",
        &ws,
        "--mcp-init-timeout",
        "60",
    ];
    args.extend(config_flags(t, case, "--mcp-config"));
    let _ = std::fs::remove_file(&t.argv);
    let out = lionrt_in(&t.project, &t.home, &t.bin, &args);
    if out.status.code() != Some(0) {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("mcp_config_path"), "{out:?}");
        assert!(read_argv(&t.argv).is_none(), "no leg after a config error");
        return Picked::ConfigError;
    }
    let argv = read_argv(&t.argv).expect("the stand-in ran");
    let config = flag_values(&argv, "--mcp-config");
    match config.as_slice() {
        [] => Picked::Nothing,
        [inline] => {
            let doc: Value = serde_json::from_str(inline).expect("inline config");
            let names: Vec<&String> = doc["mcpServers"]
                .as_object()
                .expect("servers")
                .keys()
                .collect();
            assert_eq!(names.len(), 1, "{doc}");
            Picked::File(names[0].clone())
        }
        more => panic!("--mcp-config given {} times", more.len()),
    }
}

#[test]
fn native_loading_and_cli_forwarding_pick_the_same_file() {
    // contract: GATE-021
    let mut cases = Vec::new();
    for bits in 0..16u8 {
        let flag = |n: u8| bits & (1 << n) != 0;
        cases.push(Case {
            explicit: Explicit::Absent,
            project_lionagi: flag(0),
            project: flag(1),
            trust: flag(2),
            home: flag(3),
        });
    }
    for explicit in [Explicit::Absolute, Explicit::Relative, Explicit::Missing] {
        for (all, trust) in [(true, true), (true, false), (false, true), (false, false)] {
            cases.push(Case {
                explicit,
                project_lionagi: all,
                project: all,
                trust,
                home: all,
            });
        }
    }
    let mut seen = Vec::new();
    for case in cases {
        let t = tree(case);
        let native = native(&t, case);
        let forwarded = forwarding(&t, case);
        assert_eq!(native, forwarded, "{case:?}");
        if !seen.contains(&native) {
            seen.push(native);
        }
    }
    // The table reaches every outcome (so agreement is not vacuous).
    for want in [
        "from_explicit",
        "from_project_lionagi",
        "from_project",
        "from_home",
    ] {
        assert!(seen.contains(&Picked::File(want.into())), "{seen:?}");
    }
    assert!(seen.contains(&Picked::Nothing) && seen.contains(&Picked::ConfigError));
}

#[test]
fn a_forwarded_server_with_secrets_reaches_claude_by_an_owner_only_file_never_argv() {
    let s = setup("secret");
    let secret = "s3cret-forwarded-token";
    let servers = json!({"mcpServers": {
        "benign": {"command": fixture(BENIGN), "args": ["benign", &s.tag], "env": {"API_TOKEN": secret}},
    }});
    std::fs::write(&s.config, servers.to_string()).expect("write config");
    // The stand-in also copies the file --mcp-config names, while it exists.
    let argv_file = s.bin.join("claude.argv");
    let copy = s.bin.join("claude.mcp.json");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\0' \"$@\" > '{}'\nwhile [ \"$#\" -gt 0 ]; do if [ \"$1\" = --mcp-config ]; then cp \"$2\" '{}'; fi; shift; done\ncat '{}'\n",
        argv_file.display(),
        copy.display(),
        stream_fixture("claude_stream_json_success.jsonl").display()
    );
    std::fs::create_dir_all(&s.bin).expect("mkdir");
    let path = s.bin.join("claude");
    std::fs::write(&path, script).expect("write stand-in");
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let out = run_with(&s, "claude", "fs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let argv = read_argv(&argv_file).expect("the stand-in ran");
    assert!(!argv.iter().any(|a| a.contains(secret)), "{argv:?}");
    let file = PathBuf::from(flag_values(&argv, "--mcp-config")[0]);
    assert!(file.ends_with("lionrt-mcp.json"), "{argv:?}");
    let given: Value =
        serde_json::from_str(&std::fs::read_to_string(&copy).expect("copied")).expect("json");
    assert_eq!(given["mcpServers"]["benign"]["env"]["API_TOKEN"], secret);
    assert!(
        !file.exists() && file.parent().is_some_and(|d| !d.exists()),
        "the file and its directory are gone after the run"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains(secret));
    let rows = messages(&s.db, "fs");
    assert_eq!(rows[0].1, "mcp_admission");
    assert!(!rows.iter().any(|r| r.2.to_string().contains(secret)));
}

/// The `mcp_servers.*` overrides of an argv, in order.
fn mcp_overrides(argv: &[String]) -> Vec<&str> {
    argv.windows(2)
        .filter(|w| w[0] == "-c" && w[1].starts_with("mcp_servers."))
        .map(|w| w[1].as_str())
        .collect()
}

#[test]
fn codex_gets_its_own_servers_disabled_so_the_forwarded_set_is_the_whole_set() {
    // contract: PRV-095
    let s = setup("own");
    // Two admitted servers; codex's own config declares one of the names.
    let servers = json!({"mcpServers": {
        "benign": {"command": fixture(BENIGN), "args": ["benign", &s.tag]},
        "twin": {"command": fixture(BENIGN), "args": ["benign", &s.tag]},
    }});
    std::fs::write(&s.config, servers.to_string()).expect("write config");
    let (argv_file, codex_home) = codex_stand_in(&s);
    // The user's own servers, one of them named like a forwarded one, and
    // a project layer in the workspace.
    std::fs::write(
        codex_home.join("config.toml"),
        "model = \"m\"\n[mcp_servers.mine]\ncommand = \"sh\"\nargs = [\"-c\", \"exit 0\"]\n\
         [mcp_servers.twin]\ncommand = \"sh\"\n",
    )
    .expect("write config.toml");
    std::fs::create_dir_all(s.workspace.join(".codex")).expect("mkdir");
    std::fs::write(
        s.workspace.join(".codex/config.toml"),
        "[mcp_servers.proj]\nurl = \"http://127.0.0.1:9/mcp\"\n",
    )
    .expect("write project config");
    let args = codex_run_args(&s, &["--json"], &["--session", "fo"]);
    let out = run_codex(&s, &codex_home, &args);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let argv = read_argv(&argv_file).expect("the stand-in ran");
    let overrides = mcp_overrides(&argv);
    // The admitted server is forwarded...
    assert!(
        overrides
            .iter()
            .any(|o| o.starts_with("mcp_servers.benign.command=")),
        "{argv:?}"
    );
    // ...and every one of codex's own is disabled: by name where codex
    // always loads it, with a placeholder transport where only a project
    // layer declares it.
    assert_eq!(
        overrides
            .iter()
            .filter(|o| !o.starts_with("mcp_servers.benign."))
            .copied()
            .collect::<Vec<_>>(),
        [
            "mcp_servers.mine.enabled=false",
            "mcp_servers.twin.enabled=false",
            "mcp_servers.proj.enabled=false",
            "mcp_servers.proj.url=\"http://127.0.0.1/lionrt-disabled\"",
        ],
        "{argv:?}"
    );
    let event = admission_event(&out);
    let disabled: Vec<(&str, &str)> = event["disabled"]
        .as_array()
        .expect("disabled")
        .iter()
        .map(|d| {
            (
                d["server"].as_str().unwrap_or_default(),
                d["config"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let user = codex_home.join("config.toml");
    let project = std::fs::canonicalize(&s.workspace)
        .expect("canonical")
        .join(".codex/config.toml");
    assert_eq!(
        disabled,
        [
            ("mine", user.to_str().expect("utf-8")),
            ("proj", project.to_str().expect("utf-8")),
            ("twin", user.to_str().expect("utf-8")),
        ]
    );
    let forwarded: Vec<&str> = event["forwarded"]
        .as_array()
        .expect("forwarded")
        .iter()
        .filter_map(|f| f["server"].as_str())
        .collect();
    assert_eq!(forwarded, ["benign"]);
    // The admitted server that shares a name with one of codex's own is
    // not forwarded (codex would merge the two entries): a refusal, printed
    // and recorded.
    let twin = (
        "twin".to_owned(),
        "-".to_owned(),
        "name-in-codex-config".to_owned(),
        "server_not_forwarded".to_owned(),
    );
    assert_eq!(refusals(&event), std::slice::from_ref(&twin));
    assert_eq!(row_refusals(&s.db, "fo"), [twin]);
    assert_eq!(tagged_processes(&s.tag), Vec::<i32>::new());
}

#[test]
fn a_codex_config_that_cannot_be_parsed_refuses_the_run_before_any_session() {
    let s = setup("unparsable");
    let (argv_file, codex_home) = codex_stand_in(&s);
    let args = codex_run_args(&s, &[], &[]);
    for (text, wants) in [
        ("[mcp_servers.mine\ncommand = \"sh\"\n", "cannot be parsed"),
        ("mcp_servers = 1\n", "cannot be parsed"),
        (
            "[mcp_servers.\"my server\"]\ncommand = \"sh\"\n",
            "not a bare toml key",
        ),
    ] {
        std::fs::write(codex_home.join("config.toml"), text).expect("write");
        let out = run_codex(&s, &codex_home, &args);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(wants), "{stderr}");
        assert!(
            stderr.contains(&codex_home.join("config.toml").display().to_string()),
            "the file is named: {stderr}"
        );
        assert!(read_argv(&argv_file).is_none(), "no leg started");
        assert_eq!(sessions(&s.db), 0, "refused before any session");
    }
    // No server of the forwarded set was started either.
    assert_eq!(tagged_processes(&s.tag), Vec::<i32>::new());
    // The same file, valid: the run goes ahead.
    std::fs::write(
        codex_home.join("config.toml"),
        "[mcp_servers.mine]\ncommand = \"sh\"\n",
    )
    .expect("write");
    let out = run_codex(&s, &codex_home, &args);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let argv = read_argv(&argv_file).expect("the stand-in ran");
    assert!(mcp_overrides(&argv).contains(&"mcp_servers.mine.enabled=false"));
}

#[test]
fn a_codex_config_override_of_an_mcp_server_is_refused() {
    let s = setup("override");
    let argv_file = stand_in(
        &s.bin,
        "codex",
        &stream_fixture("codex_exec_json_success.jsonl"),
    );
    let db = s.db.to_string_lossy().into_owned();
    for set in [
        "config=mcp_servers.x.command=sh",
        r#"config=["model=m", " mcp_servers.x.url=u"]"#,
        r#"config="mcp_servers".y.command=sh"#,
        "config=profile=work",
    ] {
        let out = lionrt_in(
            &s.root,
            &s.home,
            &s.bin,
            &[
                "--db",
                &db,
                "run",
                "--prompt",
                "Update the README with a short usage note.",
                "--provider",
                "codex",
                "--set",
                set,
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{set}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--mcp-config FILE"),
            "{set}: {out:?}"
        );
    }
    assert!(read_argv(&argv_file).is_none(), "no leg started");
    assert_eq!(sessions(&s.db), 0);
}

#[test]
fn the_refusals_are_admin_events_on_postgres_too() {
    let Ok(url) = std::env::var("LIONRT_TEST_PG") else {
        #[allow(clippy::print_stderr, reason = "a skipped test says why")]
        {
            eprintln!(
                "skipped: LIONRT_TEST_PG is unset (start a server with `eval \"$(.ci/pg-cluster start)\"`)"
            );
        }
        return;
    };
    let s = setup("pg");
    stand_in(
        &s.bin,
        "codex",
        &stream_fixture("codex_exec_json_success.jsonl"),
    );
    let schema = format!("lionrt_fwd_{}", std::process::id());
    let out = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .args([
            "--json",
            "--db",
            &url,
            "run",
            "--prompt",
            "Update the README with a short usage note.",
            "--provider",
            "codex",
            "--session",
            "fpg",
            "--workspace",
            &s.workspace.to_string_lossy(),
            "--mcp-config",
            &s.config.to_string_lossy(),
            "--mcp-init-timeout",
            "60",
        ])
        .current_dir(&s.root)
        .env("HOME", &s.home)
        .env("PATH", path_env(&s.bin))
        .env("LIONRT_PG_SCHEMA", &schema)
        .env_remove("LIONRT_DB")
        .env_remove("CODEX_HOME")
        .output()
        .expect("run lionrt");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let mut printed = refusals(&admission_event(&out));
    printed.sort();
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let rows = c
        .query(
            &format!(
                "SELECT entity_type, entity_id, actor_type, actor_id, detail_json
                 FROM {schema}.admin_events WHERE kind = 'mcp.forward_refused' ORDER BY id"
            ),
            &[],
        )
        .expect("rows");
    let mut stored: Vec<(String, String, String, String)> = rows
        .iter()
        .map(|r| {
            assert_eq!(r.get::<_, String>(0), "session");
            assert_eq!(r.get::<_, String>(1), "fpg");
            assert_eq!(r.get::<_, String>(2), "system");
            assert_eq!(r.get::<_, String>(3), "lionrt-mcp-forward");
            let d: Value = serde_json::from_str(&r.get::<_, String>(4)).expect("detail");
            assert_eq!(d["session"], "fpg");
            let s = |k: &str| d[k].as_str().unwrap_or("-").to_owned();
            (s("server"), s("tool"), s("reason"), s("action"))
        })
        .collect();
    stored.sort();
    c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .expect("drop");
    assert_eq!(stored, printed);
    assert_eq!(stored.len(), 3, "{stored:?}");
}

fn git(repo: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(repo)
        .args([
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.invalid",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[test]
fn with_a_sandbox_codex_also_gets_the_committed_project_servers_disabled() {
    // contract: PRV-095
    let s = setup("sandbox");
    let (argv_file, codex_home) = codex_stand_in(&s);
    // The worktree codex will work in holds the committed file; the one on
    // disk was changed since.
    std::fs::create_dir_all(s.workspace.join(".codex")).expect("mkdir");
    let layer = s.workspace.join(".codex/config.toml");
    std::fs::write(
        &layer,
        "[mcp_servers.committed]\nurl = \"http://127.0.0.1:9/\"\n",
    )
    .expect("write");
    git(&s.workspace, &["init", "-q"]);
    git(&s.workspace, &["add", ".codex/config.toml"]);
    git(&s.workspace, &["commit", "-qm", "init"]);
    std::fs::write(&layer, "[mcp_servers.local]\ncommand = \"sh\"\n").expect("write");
    let run = |extra: &[&str]| {
        let _ = std::fs::remove_file(&argv_file);
        let out = run_codex(&s, &codex_home, &codex_run_args(&s, &["--json"], extra));
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let argv = read_argv(&argv_file).expect("the stand-in ran");
        let own: Vec<String> = mcp_overrides(&argv)
            .into_iter()
            .filter(|o| {
                o.starts_with("mcp_servers.committed.") || o.starts_with("mcp_servers.local.")
            })
            .map(str::to_owned)
            .collect();
        (admission_event(&out), own)
    };
    let (event, own) = run(&["--sandbox"]);
    assert_eq!(
        own,
        [
            "mcp_servers.committed.enabled=false",
            "mcp_servers.committed.url=\"http://127.0.0.1/lionrt-disabled\"",
            "mcp_servers.local.enabled=false",
            "mcp_servers.local.command=\"false\"",
        ]
    );
    let committed = event["disabled"]
        .as_array()
        .expect("disabled")
        .iter()
        .find(|d| d["server"] == "committed")
        .cloned()
        .unwrap_or_default();
    assert!(
        committed["config"]
            .as_str()
            .is_some_and(|c| c.ends_with(".codex/config.toml@HEAD")),
        "{event}"
    );
    // Without a sandbox codex works in the workspace: the file on disk.
    let (_, own) = run(&[]);
    assert_eq!(
        own,
        [
            "mcp_servers.local.enabled=false",
            "mcp_servers.local.command=\"false\"",
        ]
    );
}

#[test]
fn with_a_sandbox_a_committed_codex_config_that_cannot_be_read_as_a_file_refuses_the_run() {
    // HEAD's `.codex/config.toml` is a symlink: what codex would load in
    // the worktree is not the blob, so the servers it declares cannot be
    // known and the run is refused before any session (never treated as
    // "no such file").
    let s = setup("sandbox-symlink");
    let (argv_file, codex_home) = codex_stand_in(&s);
    std::fs::create_dir_all(s.workspace.join(".codex")).expect("mkdir");
    // The link's target text is itself valid TOML declaring nothing, so a
    // reader that took the blob as the file would see no servers, while
    // codex follows the link to the file that declares one.
    std::fs::write(
        s.workspace.join(".codex/x = 1"),
        "[mcp_servers.hidden]\ncommand = \"sh\"\n",
    )
    .expect("write");
    std::os::unix::fs::symlink("x = 1", s.workspace.join(".codex/config.toml")).expect("symlink");
    git(&s.workspace, &["init", "-q"]);
    git(&s.workspace, &["add", ".codex"]);
    git(&s.workspace, &["commit", "-qm", "init"]);
    let out = run_codex(&s, &codex_home, &codex_run_args(&s, &[], &["--sandbox"]));
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not a plain file in HEAD"),
        "the reason is given: {stderr}"
    );
    assert!(read_argv(&argv_file).is_none(), "no leg started");
    assert_eq!(sessions(&s.db), 0, "refused before any session");
}
