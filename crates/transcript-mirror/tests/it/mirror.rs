//! End-to-end passes over the fixture transcripts.

use std::time::SystemTime;

use transcript_mirror::{Mirror, branch_id, progression_id};

use crate::common::{CODEX, Env, S1, S2};

// contract: SQL-052
#[test]
fn re_reading_the_same_transcripts_adds_no_rows() {
    let env = Env::new();
    env.copy_fixtures();
    let first = env.mirror().pass(SystemTime::now()).expect("pass");
    assert_eq!(first.messages_added, 9 + 4 + 6, "{first:#?}");
    let counts = env.row_counts();
    let ids = |env: &Env| {
        let conn = env.store.engine().conn().expect("conn");
        let mut stmt = conn
            .prepare("SELECT id FROM messages ORDER BY id")
            .expect("prepare");
        stmt.query_map([], |r| r.get::<_, String>(0))
            .expect("query")
            .collect::<Result<Vec<_>, _>>()
            .expect("rows")
    };
    let before = ids(&env);
    // Forget every cursor and start a fresh mirror (as another process
    // would): everything is read again, and nothing is added.
    env.exec("DELETE FROM mirror_cursors");
    let again = Mirror::new(env.store.clone(), env.config())
        .pass(SystemTime::now())
        .expect("second pass");
    assert!(again.stats.lines > 0, "the files were really read again");
    assert_eq!(again.messages_added, 0);
    assert_eq!(env.row_counts(), counts);
    assert_eq!(ids(&env), before, "ids are derived, not generated");
}

// contract: SQL-054
#[test]
fn each_event_becomes_messages_under_the_session_branch_and_progression() {
    let env = Env::new();
    env.copy_fixtures();
    env.mirror().pass(SystemTime::now()).expect("pass");
    let conn = env.store.engine().conn().expect("conn");
    let mut stmt = conn
        .prepare(
            "SELECT m.role, m.content, m.branch_id FROM progression_items p
             JOIN messages m ON m.id = p.message_id
             WHERE p.progression_id = ?1 ORDER BY p.position",
        )
        .expect("prepare");
    let rows: Vec<(String, String, String)> = stmt
        .query_map([progression_id(S1)], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let roles: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "action",
            "action",
            "assistant",
            "user",
            "action",
            "assistant",
            "action"
        ]
    );
    assert!(rows.iter().all(|r| r.2 == branch_id(S1)));
    // One assistant event (text + tool_use) became two messages.
    let text: serde_json::Value = serde_json::from_str(&rows[1].1).expect("json");
    assert_eq!(text["assistant_response"], "Let me read the test first.");
    let call: serde_json::Value = serde_json::from_str(&rows[2].1).expect("json");
    assert_eq!(call["function"], "Read");
    assert_eq!(
        call["arguments"]["file_path"],
        "/home/dev/acme/tests/test_login.py"
    );
    let result: serde_json::Value = serde_json::from_str(&rows[3].1).expect("json");
    assert_eq!(result["function"], "Read");
    assert!(
        result["output"]
            .as_str()
            .expect("output")
            .contains("def test_login")
    );
    assert_eq!(
        env.count(&format!(
            "SELECT count(*) FROM messages WHERE session_id = '{S1}'"
        )),
        9
    );
    assert_eq!(
        env.count(&format!(
            "SELECT count(*) FROM messages WHERE session_id = '{S2}'"
        )),
        4
    );
}

// contract: SQL-055
#[test]
fn the_first_mirror_creates_a_rich_session_row_and_its_branch() {
    let env = Env::new();
    env.copy_fixtures();
    env.mirror().pass(SystemTime::now()).expect("pass");
    let q =
        |col: &str, id: &str| env.text(&format!("SELECT {col} FROM sessions WHERE id = ?1"), id);
    assert_eq!(q("project", S1).as_deref(), Some("acme"));
    assert_eq!(
        q("model", S1).as_deref(),
        Some("claude-sonnet-4-5-20250929")
    );
    assert_eq!(q("agent_name", S1).as_deref(), Some("claude-code"));
    assert_eq!(q("kind", S1).as_deref(), Some("mirrored"));
    assert_eq!(q("project", CODEX).as_deref(), Some("widgets"));
    assert_eq!(q("model", CODEX).as_deref(), Some("gpt-5-codex"));
    assert_eq!(q("agent_name", CODEX).as_deref(), Some("codex"));
    for id in [S1, S2, CODEX] {
        assert_eq!(
            env.text(
                "SELECT session_id FROM branches WHERE id = ?1",
                &branch_id(id)
            )
            .as_deref(),
            Some(id)
        );
        let history = env.store.history("session", id).expect("history");
        assert_eq!(history[0].from_status, None);
        assert_eq!(history[0].to_status, "running");
        assert_eq!(history[0].actor_id, state_sqlite::MIRROR_WRITER_ID);
    }
}

#[test]
fn codex_rollouts_mirror_their_conversation_only() {
    let env = Env::new();
    env.copy_fixtures();
    let report = env.mirror().pass(SystemTime::now()).expect("pass");
    let conn = env.store.engine().conn().expect("conn");
    let mut stmt = conn
        .prepare(
            "SELECT m.role, m.content FROM progression_items p JOIN messages m ON m.id = p.message_id
             WHERE p.progression_id = ?1 ORDER BY p.position",
        )
        .expect("prepare");
    let rows: Vec<(String, serde_json::Value)> = stmt
        .query_map([progression_id(CODEX)], |r| {
            Ok((
                r.get(0)?,
                serde_json::from_str(&r.get::<_, String>(1)?).expect("json"),
            ))
        })
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let roles: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        roles,
        ["user", "action", "action", "assistant", "action", "action"]
    );
    assert_eq!(rows[0].1["instruction"], "list the rust files");
    assert_eq!(rows[1].1["function"], "shell");
    assert_eq!(rows[1].1["arguments"]["command"][2], "ls *.rs");
    assert_eq!(rows[2].1["function"], "shell");
    assert_eq!(rows[5].1["function"], "apply_patch");
    // The echoes and the preamble were counted, not mirrored.
    assert_eq!(report.stats.skipped.get("event_msg"), Some(&3));
    assert_eq!(
        report.stats.skipped.get("response_item/message (preamble)"),
        Some(&1)
    );
}

#[test]
fn a_second_pass_reads_only_what_was_appended() {
    let env = Env::new();
    env.copy_fixtures();
    let mut mirror = env.mirror();
    mirror.pass(SystemTime::now()).expect("pass");
    let idle = mirror.pass(SystemTime::now()).expect("pass");
    assert_eq!(idle.stats.bytes, 0);
    assert!(idle.files.is_empty());
    let line = crate::common::claude_user(
        S1,
        "new-1",
        Some("a1000000-0000-4000-8000-000000000010"),
        1_800_000_000_000_000,
        "more",
    );
    crate::common::append(&env.claude_file(S1), &line);
    let next = mirror.pass(SystemTime::now()).expect("pass");
    assert_eq!(next.stats.bytes, line.len() as u64);
    assert_eq!(next.messages_added, 1);
    // A fresh mirror resumes from the stored cursor too.
    let fresh = env.mirror().pass(SystemTime::now()).expect("pass");
    assert_eq!(fresh.stats.bytes, 0);
}

#[test]
fn since_bounds_the_pass_by_modification_time_and_discovery_follows_the_layouts() {
    let env = Env::new();
    env.copy_fixtures();
    // Make the first session's transcript two days old.
    let old = std::fs::File::options()
        .write(true)
        .open(env.claude_file(S1))
        .expect("open");
    old.set_modified(SystemTime::now() - std::time::Duration::from_secs(2 * 86_400))
        .expect("set mtime");
    drop(old);
    // Files outside the layouts are never read.
    std::fs::write(env.claude_root().join("stray.jsonl"), "{}\n").expect("write");
    std::fs::create_dir_all(
        env.claude_root()
            .join(crate::common::PROJECT_DIR)
            .join("nested"),
    )
    .expect("mkdir");
    std::fs::write(
        env.claude_root()
            .join(crate::common::PROJECT_DIR)
            .join("nested/deep.jsonl"),
        "{}\n",
    )
    .expect("write");
    std::fs::write(env.codex_root().join("notes.jsonl"), "{}\n").expect("write");
    let mut mirror = Mirror::new(
        env.store.clone(),
        transcript_mirror::MirrorConfig {
            since: Some(transcript_mirror::parse_window("1d").expect("window")),
            ..env.config()
        },
    );
    let r = mirror.pass(SystemTime::now()).expect("pass");
    assert_eq!(r.files_seen, 2, "{r:#?}");
    let has = |id: &str| env.count(&format!("SELECT count(*) FROM sessions WHERE id = '{id}'"));
    assert_eq!((has(S1), has(S2), has(CODEX)), (0, 1, 1));
    for (text, secs) in [
        ("90s", 90),
        ("15m", 900),
        ("12h", 43_200),
        ("7d", 604_800),
        ("2w", 1_209_600),
    ] {
        assert_eq!(
            transcript_mirror::parse_window(text).expect(text).as_secs(),
            secs
        );
    }
    for bad in ["", "7", "d", "-1d", "1.5h", "7y", "99999999999999999999w"] {
        assert!(transcript_mirror::parse_window(bad).is_err(), "{bad}");
    }
}

// contract: SQL-052
#[test]
fn ids_do_not_depend_on_where_a_pass_started() {
    let ids = |env: &Env| {
        let conn = env.store.engine().conn().expect("conn");
        let mut stmt = conn
            .prepare("SELECT id FROM messages ORDER BY id")
            .expect("prepare");
        stmt.query_map([], |r| r.get::<_, String>(0))
            .expect("query")
            .collect::<Result<Vec<_>, _>>()
            .expect("rows")
    };
    let first = crate::common::claude_user("w", "w1", None, 1_700_000_000_000_000, "stamped");
    // A line without a timestamp borrows one; its id must not.
    let second = "{\"type\":\"user\",\"uuid\":\"w2\",\"parentUuid\":\"w1\",\"sessionId\":\"w\",\"message\":{\"role\":\"user\",\"content\":\"unstamped\"}}\n";
    let whole = Env::new();
    crate::common::append(&whole.claude_file("w"), &format!("{first}{second}"));
    whole.mirror().pass(SystemTime::now()).expect("pass");
    let split = Env::new();
    let path = split.claude_file("w");
    crate::common::append(&path, &first);
    split.mirror().pass(SystemTime::now()).expect("pass");
    crate::common::append(&path, second);
    // Another process resumes mid-file, with no earlier timestamp in hand.
    split.mirror().pass(SystemTime::now()).expect("pass");
    assert_eq!(ids(&whole).len(), 2);
    assert_eq!(ids(&whole), ids(&split));
}

/// What a recorded transcript says its session holds, read from the file
/// itself (so a new recording needs no edit here).
struct Recorded {
    session: String,
    model: String,
    cwd: String,
    /// (role, content) in transcript order; content `None` for an action.
    conversation: Vec<(String, Option<serde_json::Value>)>,
    /// The time of the first conversation line, microseconds.
    first_at: i64,
    /// Line types other than the conversation's, with their counts.
    other_types: std::collections::BTreeMap<String, u64>,
}

fn only_file(dir: &std::path::Path) -> std::path::PathBuf {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read fixture dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                found.push(p);
            }
        }
    }
    assert_eq!(
        found.len(),
        1,
        "one recorded transcript under {}",
        dir.display()
    );
    found.remove(0)
}

fn lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("read transcript")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a recorded line is JSON"))
        .collect()
}

fn micros(ts: &serde_json::Value) -> i64 {
    transcript_mirror::parse_rfc3339(ts.as_str().expect("timestamp")).expect("rfc3339")
}

/// Claude Code: the session is the file name; user and assistant lines
/// hold the conversation (a string, or text and tool blocks).
fn recorded_claude(path: &std::path::Path) -> Recorded {
    let session = path
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .into_owned();
    let mut r = Recorded {
        session: session.clone(),
        model: String::new(),
        cwd: String::new(),
        conversation: Vec::new(),
        first_at: 0,
        other_types: Default::default(),
    };
    for v in lines(path) {
        let kind = v["type"].as_str().unwrap_or("").to_owned();
        if let Some(id) = v["sessionId"].as_str() {
            assert_eq!(id, session, "the file is named after its session");
        }
        if r.cwd.is_empty()
            && let Some(cwd) = v["cwd"].as_str()
        {
            r.cwd = cwd.to_owned();
        }
        if kind != "user" && kind != "assistant" {
            *r.other_types.entry(kind).or_default() += 1;
            continue;
        }
        if r.conversation.is_empty() {
            r.first_at = micros(&v["timestamp"]);
        }
        let message = &v["message"];
        if r.model.is_empty()
            && let Some(m) = message["model"].as_str()
        {
            r.model = m.to_owned();
        }
        let key = if kind == "user" {
            "instruction"
        } else {
            "assistant_response"
        };
        match &message["content"] {
            serde_json::Value::String(text) => {
                r.conversation
                    .push((kind.clone(), Some(serde_json::json!({ key: text }))));
            }
            serde_json::Value::Array(blocks) => {
                for b in blocks {
                    match b["type"].as_str() {
                        Some("text") => r
                            .conversation
                            .push((kind.clone(), Some(serde_json::json!({ key: b["text"] })))),
                        Some("tool_use" | "tool_result") => {
                            r.conversation.push(("action".into(), None))
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    r
}

/// Codex: the session, cwd and model come from session_meta and
/// turn_context; the prompt is the last user message item (after the
/// injected preambles) and the reply is what task_complete reports.
fn recorded_codex(path: &std::path::Path) -> Recorded {
    let mut r = Recorded {
        session: String::new(),
        model: String::new(),
        cwd: String::new(),
        conversation: Vec::new(),
        first_at: 0,
        other_types: Default::default(),
    };
    let (mut prompt, mut prompt_at, mut reply) = (None, 0, None);
    for v in lines(path) {
        let p = &v["payload"];
        match (v["type"].as_str(), p["type"].as_str()) {
            (Some("session_meta"), _) => {
                r.session = p["id"].as_str().expect("session id").to_owned();
                r.cwd = p["cwd"].as_str().unwrap_or("").to_owned();
            }
            (Some("turn_context"), _) => {
                r.model = p["model"].as_str().expect("model").to_owned();
            }
            (Some("response_item"), Some("message")) if p["role"] == "user" => {
                prompt = p["content"][0]["text"].as_str().map(str::to_owned);
                prompt_at = micros(&v["timestamp"]);
            }
            (Some("event_msg"), Some("task_complete")) => {
                reply = p["last_agent_message"].as_str().map(str::to_owned);
            }
            (Some(kind), _) if kind != "response_item" => {
                *r.other_types.entry(kind.to_owned()).or_default() += 1;
            }
            _ => {}
        }
    }
    r.first_at = prompt_at;
    r.conversation = vec![
        (
            "user".into(),
            Some(serde_json::json!({"instruction": prompt.expect("a user prompt")})),
        ),
        (
            "assistant".into(),
            Some(serde_json::json!({"assistant_response": reply.expect("a reply")})),
        ),
    ];
    r
}

#[test]
fn transcripts_recorded_from_the_real_clis_mirror_their_conversation() {
    // Claude Code and Codex, run by lionrt's e2e tier against its local
    // stand-in APIs and recorded with `cargo xtask fixtures real-cli` (see
    // fixtures/transcript-mirror/README.md). What to expect is read from the
    // recorded files, so a new recording needs no edit here.
    let env = Env::new();
    let real = crate::common::fixtures().join("real-cli");
    crate::common::copy_dir(&real.join("claude"), &env.claude_root());
    crate::common::copy_dir(&real.join("codex"), &env.codex_root());
    let claude = recorded_claude(&only_file(&env.claude_root()));
    let codex = recorded_codex(&only_file(&env.codex_root()));
    assert_ne!(claude.session, codex.session);
    let r = env.mirror().pass(SystemTime::now()).expect("pass");
    let expected_messages = claude.conversation.len() + codex.conversation.len();
    assert_eq!(
        (r.sessions_created, r.messages_added),
        (2, expected_messages),
        "{r:#?}"
    );
    assert_eq!(r.stats.unparseable, 0);
    // Event types the mirror does not turn into messages (newer than the
    // hand-written fixtures among them) are counted, not lost.
    for (kind, n) in claude.other_types.iter().chain(&codex.other_types) {
        assert!(
            r.stats.skipped.get(kind).is_some_and(|c| c >= n),
            "{kind}: {n} skipped lines expected in {:?}",
            r.stats.skipped
        );
    }
    for (rec, source) in [(&claude, "claude"), (&codex, "codex")] {
        let session = rec.session.as_str();
        let conn = env.store.engine().conn().expect("conn");
        let mut stmt = conn
            .prepare(
                "SELECT m.id, m.role, m.content, m.created_at, m.session_id, m.branch_id
                 FROM progression_items p JOIN messages m ON m.id = p.message_id
                 WHERE p.progression_id = ?1 ORDER BY p.position",
            )
            .expect("prepare");
        type Row = (String, String, String, i64, String, Option<String>);
        let rows: Vec<Row> = stmt
            .query_map([progression_id(session)], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        // The conversation, in order, with its roles and text.
        let got: Vec<(String, Option<serde_json::Value>)> = rows
            .iter()
            .zip(&rec.conversation)
            .map(|(row, want)| {
                let content: serde_json::Value =
                    serde_json::from_str(&row.2).expect("content is JSON");
                (row.1.clone(), want.1.as_ref().map(|_| content))
            })
            .collect();
        assert_eq!(rows.len(), rec.conversation.len(), "{session}: {rows:?}");
        assert_eq!(got, rec.conversation, "{session}");
        // Every message belongs to the session and its branch, and the first
        // carries its line's time.
        for row in &rows {
            assert_eq!(
                (row.4.as_str(), row.5.clone()),
                (session, Some(branch_id(session)))
            );
        }
        assert_eq!(
            rows[0].3, rec.first_at,
            "{session}: created_at of the first message"
        );
        assert_eq!(
            env.text(
                "SELECT first_msg_id FROM branches WHERE id = ?1",
                &branch_id(session)
            ),
            Some(rows[0].0.clone())
        );
        assert_eq!(
            env.text(
                "SELECT last_msg_id FROM branches WHERE id = ?1",
                &branch_id(session)
            ),
            rows.last().map(|r| r.0.clone())
        );
        // The session row: what ran it, where, and with which model.
        let project = rec
            .cwd
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("");
        for (column, want) in [
            ("kind", "mirrored"),
            ("provider", source),
            (
                "agent_name",
                if source == "claude" {
                    "claude-code"
                } else {
                    "codex"
                },
            ),
            ("model", rec.model.as_str()),
            ("cwd", rec.cwd.as_str()),
            ("project", project),
        ] {
            assert_eq!(
                env.text(
                    &format!("SELECT {column} FROM sessions WHERE id = ?1"),
                    session
                )
                .as_deref(),
                Some(want),
                "{session}: {column}"
            );
        }
        // One recorded run is one conversation: no lineage link to another
        // session, and no pointer left to resolve.
        assert_eq!(
            env.text(
                "SELECT json_extract(node_metadata, '$.lineage') FROM sessions WHERE id = ?1",
                session
            ),
            None,
            "{session}"
        );
        assert_eq!(
            env.count(&format!(
                "SELECT count(*) FROM mirror_cursors WHERE session_id = '{session}'
                 AND pending_parent_uuid IS NULL AND source = '{source}'"
            )),
            1,
            "{session}: its cursor"
        );
    }
    assert_eq!(
        env.mirror()
            .pass(SystemTime::now())
            .expect("pass")
            .messages_added,
        0
    );
}
