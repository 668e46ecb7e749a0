//! No secret the runtime hands a child comes back out of it (issue 24):
//! a leg, or an MCP server, that prints its environment and its files
//! everywhere it can (stderr, error events, text, tool calls, its session
//! id) and fails leaves none of those values in state.db (its WAL too),
//! in `lionrt run`'s output, in any reader's output (`--json` or not) or
//! in the trace log. Secrets come from every channel the runtime fills: a
//! `secrets.lookup` value, a lookup-named variable already exported, an
//! inherited variable whose name looks secret, and a forwarded MCP
//! server's env. On PostgreSQL too when `LIONRT_TEST_PG` is set.

use std::path::PathBuf;
use std::process::{Command, Output};

use mcp_test_servers::{BENIGN, HOSTILE, locate};
use proptest::prelude::*;
use serde_json::json;

fn fixture(name: &str) -> String {
    locate(name)
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
        .to_string_lossy()
        .into_owned()
}

/// The secrets of one case.
#[derive(Debug, Clone)]
struct Secrets {
    /// Printed by the `secrets.lookup` store for `LEAK_LOOKED_UP`.
    looked_up: String,
    /// `LEAK_PRESET`: named by the lookup, already exported (never looked up).
    preset: String,
    /// `ACME_API_TOKEN`: inherited, named like a secret.
    inherited: String,
    /// A forwarded MCP server's env value (under an innocent name).
    mcp_env: String,
}

impl Secrets {
    fn all(&self) -> [&str; 4] {
        [
            &self.looked_up,
            &self.preset,
            &self.inherited,
            &self.mcp_env,
        ]
    }
}

/// A stand-in `claude` that echoes its environment and its MCP config file
/// through every channel a Claude Code stream has, then fails.
const LEAKY_CLAUDE: &str = r#"#!/bin/sh
cfg=""; prev=""
for a in "$@"; do [ "$prev" = "--mcp-config" ] && cfg="$a"; prev="$a"; done
M=""
[ -n "$cfg" ] && [ -f "$cfg" ] && M=$(sed -n 's/.*"BENIGN_SETTING":"\([^"]*\)".*/\1/p' "$cfg")
V="$LEAK_LOOKED_UP $LEAK_PRESET $ACME_API_TOKEN $M"
printf '{"type":"system","subtype":"init","session_id":"leak-%s"}\n' "$LEAK_PRESET"
printf '{"type":"assistant","message":{"content":[{"type":"text","text":"my env: %s"},{"type":"thinking","thinking":"%s"},{"type":"tool_use","id":"t-%s","name":"Bash","input":{"command":"echo %s"}}]}}\n' "$V" "$V" "$ACME_API_TOKEN" "$V"
printf '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"%s","is_error":true}]}}\n' "$V"
printf '{"type":"assistant","message":{"content":[]},"error":"%s"}\n' "$V"
printf '{"type":"result","subtype":"error_during_execution","is_error":true,"result":"%s","errors":["%s"],"session_id":"leak-%s","usage":{"input_tokens":1}}\n' "$V" "$V" "$LEAK_PRESET"
env >&2
[ -n "$cfg" ] && cat "$cfg" >&2
echo "fatal: $V" >&2
exit 1
"#;

/// A scripted leg whose tool call dumps the environment on the leg's
/// stderr and then kills the leg: its last stderr line quotes the secrets.
const LEAKY_SCRIPT: &str = r#"[{"type": "tool_call", "name": "run_command", "arguments": {"argv": ["sh", "-c", "env >&2; echo \"fatal: $LEAK_LOOKED_UP $LEAK_PRESET $ACME_API_TOKEN\" >&2; kill -KILL $PPID"]}}]"#;

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    bin: PathBuf,
    db: PathBuf,
    secrets: Secrets,
    /// The PostgreSQL schema the commands use (`LIONRT_PG_SCHEMA`).
    schema: Option<String>,
}

impl World {
    fn new(secrets: Secrets) -> Self {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        let (home, bin) = (root.join("home"), root.join("bin"));
        std::fs::create_dir_all(home.join(".lionagi")).expect("mkdir home");
        std::fs::create_dir_all(&bin).expect("mkdir bin");
        let store = root.join("store.sh");
        // The store holds the value itself: no variable of lionrt's own
        // environment carries it.
        std::fs::write(
            &store,
            format!(
                "#!/bin/sh\n[ \"$1\" = LEAK_LOOKED_UP ] && printf '%s\\n' '{}'\n",
                secrets.looked_up
            ),
        )
        .expect("store");
        std::fs::write(
            home.join(".lionagi/settings.yaml"),
            format!(
                "secrets:\n  lookup:\n    argv: [/bin/sh, {:?}, \"{{name}}\"]\n    names: [LEAK_LOOKED_UP, LEAK_PRESET]\n",
                store.to_string_lossy()
            ),
        )
        .expect("settings");
        let claude = bin.join("claude");
        std::fs::write(&claude, LEAKY_CLAUDE).expect("claude");
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::write(root.join("script.json"), LEAKY_SCRIPT).expect("script");
        std::fs::write(
            root.join("forward.json"),
            json!({"mcpServers": {
                "benign": {"command": fixture(BENIGN), "args": ["benign"],
                           "env": {"BENIGN_SETTING": secrets.mcp_env}},
                "dying": {"command": fixture(HOSTILE), "args": ["env-dump-crash"],
                          "env": {"DYING_SETTING": secrets.mcp_env}},
            }})
            .to_string(),
        )
        .expect("forward config");
        std::fs::write(
            root.join("dying.json"),
            json!({"mcpServers": {
                "dying": {"command": fixture(HOSTILE), "args": ["env-dump-crash"],
                          "env": {"DYING_SETTING": secrets.mcp_env, "SERVICE_TOKEN": secrets.preset}},
            }})
            .to_string(),
        )
        .expect("dying config");
        Self {
            db: root.join("state.db"),
            _dir: dir,
            root,
            home,
            bin,
            secrets,
            schema: None,
        }
    }

    /// `lionrt --db DB ARGS` in the world's environment, traced.
    fn lionrt(&self, db: &str, args: &[&str]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lionrt"));
        if let Some(schema) = &self.schema {
            command.env("LIONRT_PG_SCHEMA", schema);
        }
        command
            .arg("--db")
            .arg(db)
            .args(args)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin.display()))
            .env("RUST_LOG", "trace")
            .env("LEAK_PRESET", &self.secrets.preset)
            .env("ACME_API_TOKEN", &self.secrets.inherited)
            .env_remove("LIONRT_DB")
            .env_remove("LEAK_LOOKED_UP")
            .env_remove("LIONAGI_SETTINGS_FILE")
            .output()
            .expect("run lionrt")
    }

    fn path(&self, name: &str) -> String {
        self.root.join(name).to_string_lossy().into_owned()
    }

    /// Both runs (a Claude leg with a forwarded MCP set, `--json`; a
    /// scripted leg, plain) and every reader of what they left, plain and
    /// `--json`: every output, labelled.
    fn runs_and_reads(&self, db: &str) -> Vec<(String, Vec<u8>)> {
        let mut outputs = Vec::new();
        let mut keep = |label: String, out: Output| {
            outputs.push((format!("{label} (stdout)"), out.stdout));
            outputs.push((format!("{label} (stderr)"), out.stderr));
        };
        let forward = self.path("forward.json");
        let script = self.path("script.json");
        let claude = self.lionrt(
            db,
            &[
                "--json",
                "run",
                "--provider",
                "claude",
                "--prompt",
                "print your environment",
                "--session",
                "leak-claude",
                "--mcp-config",
                &forward,
                "--mcp-init-timeout",
                "60",
            ],
        );
        assert_eq!(claude.status.code(), Some(1), "{}", text(&claude));
        keep("run --provider claude --json".into(), claude);
        let scripted = self.lionrt(
            db,
            &["run", "--script", &script, "--session", "leak-scripted"],
        );
        assert_eq!(scripted.status.code(), Some(1), "{}", text(&scripted));
        let shown = text(&scripted);
        assert!(
            shown.contains("fatal: "),
            "the last stderr line is the report: {shown}"
        );
        keep("run --script".into(), scripted);
        for session in ["leak-claude", "leak-scripted"] {
            for json in [false, true] {
                let flag: &[&str] = if json { &["--json"] } else { &[] };
                for args in [
                    &["sessions", "show", session][..],
                    &["sessions", "messages", session],
                    &["sessions", "ls"],
                    &["state", "history", "session", session],
                    &["lifecycle", session],
                ] {
                    let all: Vec<&str> = flag.iter().chain(args).copied().collect();
                    let out = self.lionrt(db, &all);
                    assert!(out.status.success(), "{all:?}: {}", text(&out));
                    keep(all.join(" "), out);
                }
            }
        }
        outputs
    }

    /// `lionrt mcp audit|ls|call` against a server that dies printing its
    /// environment: every output, labelled.
    fn mcp_reads(&self) -> Vec<(String, Vec<u8>)> {
        let db = self.db.to_string_lossy().into_owned();
        let config = self.path("dying.json");
        let mut outputs = Vec::new();
        for args in [
            &["mcp", "audit", "--config", &config][..],
            &["mcp", "audit", "--config", &config, "--format", "jsonl"],
            &["mcp", "audit", "--config", &config, "--format", "sarif"],
            &["mcp", "ls", "--config", &config],
            &["--json", "mcp", "ls", "--config", &config],
            &["mcp", "call", "dying", "anything", "--config", &config],
            &[
                "--json", "mcp", "call", "dying", "anything", "--config", &config,
            ],
        ] {
            let out = self.lionrt(&db, args);
            let label = args.join(" ");
            assert!(!out.status.success(), "{label}: the server dies");
            let shown = text(&out);
            assert!(
                shown.contains("DYING_SETTING=") || shown.contains("DYING_SETTING"),
                "{label}: the server's last words are quoted: {shown}"
            );
            outputs.push((format!("{label} (stdout)"), out.stdout));
            outputs.push((format!("{label} (stderr)"), out.stderr));
        }
        outputs
    }

    /// Every file of the SQLite store (the database, its WAL and shm).
    fn db_files(&self) -> Vec<(String, Vec<u8>)> {
        std::fs::read_dir(&self.root)
            .expect("read dir")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("state.db"))
            .map(|e| {
                (
                    e.path().display().to_string(),
                    std::fs::read(e.path()).expect("read db file"),
                )
            })
            .collect()
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Where any secret occurs in any of `places`.
fn leaks(secrets: &Secrets, places: &[(String, Vec<u8>)]) -> Vec<String> {
    let mut found = Vec::new();
    for (label, bytes) in places {
        for secret in secrets.all() {
            if bytes.windows(secret.len()).any(|w| w == secret.as_bytes()) {
                found.push(format!("{secret:?} in {label}"));
            }
        }
    }
    found
}

fn check_sqlite(secrets: &Secrets) {
    let world = World::new(secrets.clone());
    let mut places = world.runs_and_reads(&world.db.to_string_lossy());
    places.extend(world.mcp_reads());
    places.extend(world.db_files());
    let found = leaks(secrets, &places);
    assert!(found.is_empty(), "{found:#?}");
    // The redaction shows where the values were.
    let report = &places[0].1;
    assert!(
        String::from_utf8_lossy(report).contains(cli_supervisor::REDACTED),
        "{}",
        String::from_utf8_lossy(report)
    );
}

fn check_postgres(secrets: &Secrets, url: &str) {
    let world = World::new(secrets.clone());
    let schema = format!("lionrt_secrets_{}", std::process::id());
    let mut world = world;
    world.schema = Some(schema.clone());
    let mut places = world.runs_and_reads(url);
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    let tables: Vec<String> = client
        .query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
            &[&schema],
        )
        .expect("tables")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(!tables.is_empty(), "the run wrote to {schema}");
    for table in tables {
        let rows = client
            .query(&format!("SELECT t::text FROM {schema}.{table} t"), &[])
            .expect("rows");
        let dump: Vec<u8> = rows
            .iter()
            .flat_map(|r| r.get::<_, String>(0).into_bytes())
            .collect();
        places.push((format!("postgres table {table}"), dump));
    }
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .expect("drop");
    let found = leaks(secrets, &places);
    assert!(found.is_empty(), "{found:#?}");
}

/// A secret: letters and digits first (so it is never a common word),
/// then characters that are safe inside a JSON string and a shell word.
fn secret() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9]{5}[A-Za-z0-9._:+=/-]{2,18}"
}

fn secrets() -> impl Strategy<Value = Secrets> {
    (secret(), secret(), secret(), secret()).prop_map(|(a, b, c, d)| Secrets {
        looked_up: format!("lk{a}"),
        preset: format!("pr{b}"),
        inherited: format!("in{c}"),
        mcp_env: format!("mc{d}"),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3))]

    /// No secret in any record, output or log, for random secrets.
    #[test]
    fn no_secret_the_runtime_hands_a_child_reaches_any_record(secrets in secrets()) {
        check_sqlite(&secrets);
        // PostgreSQL is slower per command: its first case only.
        static PG_DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if let Ok(url) = std::env::var("LIONRT_TEST_PG")
            && !PG_DONE.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            check_postgres(&secrets, &url);
        }
    }
}

#[test]
fn a_failing_legs_last_stderr_line_is_reported_with_its_secrets_redacted() {
    // contract: NTF-028
    // Not a scanner: the rest of the stderr line survives around them.
    let world = World::new(Secrets {
        looked_up: "lkFixedValue1".into(),
        preset: "prFixedValue2".into(),
        inherited: "inFixedValue3".into(),
        mcp_env: "mcFixedValue4".into(),
    });
    let db = world.db.to_string_lossy().into_owned();
    let script = world.path("script.json");
    let out = world.lionrt(
        &db,
        &["--json", "run", "--script", &script, "--session", "plain"],
    );
    let report = crate::stdout_json(&out);
    assert_eq!(report["error"], "fatal: *** *** ***", "{report}");
}
