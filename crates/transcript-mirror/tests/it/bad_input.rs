//! Bad input loses nothing and never panics: truncated tails, bytes that
//! are not UTF-8, unknown event types, oversized lines, a 100 MB transcript.

use std::io::Write;
use std::time::SystemTime;

use transcript_mirror::{Mirror, MirrorConfig, Source};

use crate::common::{Env, append, claude_user};

const T: i64 = 1_800_000_000_000_000;

fn messages(env: &Env, session: &str) -> i64 {
    env.count(&format!(
        "SELECT count(*) FROM messages WHERE session_id = '{session}'"
    ))
}

#[test]
fn a_truncated_last_line_waits_for_the_next_pass() {
    let env = Env::new();
    let path = env.claude_file("t");
    let third = claude_user("t", "t3", Some("t2"), T + 2, "third");
    append(&path, &claude_user("t", "t1", None, T, "first"));
    append(&path, &claude_user("t", "t2", Some("t1"), T + 1, "second"));
    let (head, rest) = third.split_at(40);
    append(&path, head);
    let mut mirror = env.mirror();
    let r = mirror.pass(SystemTime::now()).expect("pass");
    assert_eq!(messages(&env, "t"), 2);
    assert_eq!(r.files[0].tail_left, head.len() as u64);
    let cursor = env
        .store
        .mirror_cursor(&path.to_string_lossy())
        .expect("cursor")
        .expect("row");
    let size = std::fs::metadata(&path).expect("stat").len() as i64;
    assert_eq!(
        cursor.byte_offset,
        size - head.len() as i64,
        "the tail is not consumed"
    );
    // The writer finishes the line: the next pass (even in another process)
    // mirrors it.
    append(&path, rest);
    env.mirror().pass(SystemTime::now()).expect("pass");
    assert_eq!(messages(&env, "t"), 3);
    // A whole JSON object without its newline is taken as it is.
    let fourth = claude_user("t", "t4", Some("t3"), T + 3, "fourth");
    append(&path, fourth.trim_end());
    mirror.pass(SystemTime::now()).expect("pass");
    assert_eq!(messages(&env, "t"), 4);
    append(&path, "\n");
    append(&path, &claude_user("t", "t5", Some("t4"), T + 4, "fifth"));
    mirror.pass(SystemTime::now()).expect("pass");
    assert_eq!(messages(&env, "t"), 5);
}

#[test]
fn bytes_that_are_not_utf8_cost_only_themselves() {
    let env = Env::new();
    let path = env.claude_file("u");
    let line = claude_user("u", "u1", None, T, "cafe MARK");
    let mut bytes = line.into_bytes();
    let at = bytes.windows(4).position(|w| w == b"MARK").expect("marker");
    bytes.splice(at..at + 4, [0xff, 0xfe]);
    std::fs::write(&path, &bytes).expect("write");
    append(&path, &claude_user("u", "u2", Some("u1"), T + 1, "after"));
    let r = env.mirror().pass(SystemTime::now()).expect("pass");
    assert_eq!(r.stats.non_utf8, 1);
    assert_eq!(messages(&env, "u"), 2);
    let content = env
        .text(
            "SELECT content FROM messages WHERE session_id = ?1 ORDER BY created_at LIMIT 1",
            "u",
        )
        .expect("content");
    assert_eq!(content, "{\"instruction\":\"cafe \u{fffd}\u{fffd}\"}");
}

#[test]
fn unknown_and_malformed_lines_are_counted_and_the_rest_mirrored() {
    let env = Env::new();
    let path = env.claude_file("k");
    append(&path, &claude_user("k", "k1", None, T, "one"));
    append(
        &path,
        "{\"type\":\"brand-new-event\",\"uuid\":\"k2\",\"payload\":{\"x\":[1,2,3]}}\n",
    );
    append(
        &path,
        "not json at all\n[1,2,3]\n\"a string\"\n{\"type\":\"user\",\"message\":42}\n\n   \n",
    );
    append(
        &path,
        "{\"type\":\"assistant\",\"uuid\":\"k3\",\"timestamp\":\"2027-01-15T08:00:01Z\",\"message\":{\"content\":[{\"type\":\"server_tool_use_v9\",\"id\":\"z\"},{\"type\":\"text\",\"text\":\"two\"}]}}\n",
    );
    append(&path, &claude_user("k", "k4", Some("k3"), T + 2, "three"));
    let r = env.mirror().pass(SystemTime::now()).expect("pass");
    assert_eq!(messages(&env, "k"), 3);
    assert_eq!(r.stats.unparseable, 4, "{r:#?}");
    assert_eq!(r.stats.skipped.get("brand-new-event"), Some(&1));
    assert_eq!(
        r.stats.skipped.get("assistant/server_tool_use_v9"),
        Some(&1)
    );
    // The unknown event's uuid is still known for lineage.
    assert_eq!(
        env.count("SELECT count(*) FROM mirror_events WHERE event_uuid = 'k2'"),
        1
    );
}

#[test]
fn an_oversized_line_is_skipped_without_being_buffered() {
    let env = Env::new();
    let path = env.claude_file("o");
    append(&path, &claude_user("o", "o1", None, T, "small"));
    append(
        &path,
        &claude_user("o", "o2", Some("o1"), T + 1, &"x".repeat(10_000)),
    );
    append(
        &path,
        &claude_user("o", "o3", Some("o2"), T + 2, "small again"),
    );
    let mut mirror = Mirror::new(
        env.store.clone(),
        MirrorConfig {
            max_line_bytes: 4096,
            ..env.config()
        },
    );
    let r = mirror.pass(SystemTime::now()).expect("pass");
    assert_eq!(r.stats.oversized, 1);
    assert_eq!(messages(&env, "o"), 2);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, .. Default::default() })]
    #[test]
    fn arbitrary_bytes_never_panic_or_fail_a_pass(
        lines in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..200), 0..20),
        codex in proptest::bool::ANY,
    ) {
        let env = Env::new();
        let path = if codex {
            env.codex_root().join("rollout-x.jsonl")
        } else {
            env.claude_file("p")
        };
        let mut f = std::fs::File::create(&path).expect("create");
        for l in &lines {
            f.write_all(l).expect("write");
            f.write_all(b"\n").expect("write");
        }
        // A valid event after the noise still arrives.
        let good = if codex {
            "{\"timestamp\":\"2027-01-01T00:00:00Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"ok\"}]}}\n".to_owned()
        } else {
            claude_user("p", "p-good", None, T, "ok")
        };
        f.write_all(good.as_bytes()).expect("write");
        drop(f);
        let source = if codex { Source::Codex } else { Source::Claude };
        let r = env.mirror().mirror_file(source, &path).expect("a pass never fails on content");
        proptest::prop_assert!(r.write.messages_added >= 1);
    }
}

const BIG_DB: &str = "TRANSCRIPT_MIRROR_BIG_DB";
const BIG_FILE: &str = "TRANSCRIPT_MIRROR_BIG_FILE";

/// Worker role: mirror one big file and report the peak resident set.
#[test]
fn worker_mirror_big_file() {
    let (Ok(db), Ok(file)) = (std::env::var(BIG_DB), std::env::var(BIG_FILE)) else {
        return;
    };
    let store = state_sqlite::Store::new(
        state_sqlite::Engine::open(&db, state_sqlite::EngineConfig::default()).expect("engine"),
    );
    let mut mirror = Mirror::new(store, MirrorConfig::default());
    let r = mirror
        .mirror_file(Source::Claude, std::path::Path::new(&file))
        .expect("mirror");
    let status = std::fs::read_to_string("/proc/self/status").expect("proc status");
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM");
    #[allow(
        clippy::print_stdout,
        reason = "the worker reports to its parent on stdout"
    )]
    {
        println!("BIG {} {} {hwm}", r.write.messages_added, r.stats.bytes);
    }
}

#[test]
fn a_100_mb_transcript_is_streamed_not_loaded_whole() {
    let env = Env::new();
    let path = env.claude_file("big");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let payload = "0123456789abcdef".repeat(4096); // 64 KiB per tool result
    let mut lines = 0u64;
    let mut size = 0u64;
    while size < 100 * 1024 * 1024 {
        let line = format!(
            "{{\"type\":\"user\",\"uuid\":\"big-{lines}\",\"sessionId\":\"big\",\"timestamp\":\"2027-01-15T08:00:00Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"c{lines}\",\"content\":\"{payload}\"}}]}}}}\n"
        );
        f.write_all(line.as_bytes()).expect("write");
        size += line.len() as u64;
        lines += 1;
    }
    f.flush().expect("flush");
    drop(f);
    let db = env.dir.path().join("state.db");
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "bad_input::worker_mirror_big_file",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(BIG_DB, &db)
        .env(BIG_FILE, &path)
        .output()
        .expect("worker");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Vec<u64> = stdout
        .lines()
        .find_map(|l| l.split_once("BIG ").map(|(_, r)| r))
        .expect("worker report")
        .split(' ')
        .map(|n| n.parse().expect("number"))
        .collect();
    assert_eq!(report[0], lines, "every line became a message");
    assert_eq!(report[1], size, "every byte was consumed");
    // Streamed: the peak resident set stays far below the file's size.
    assert!(
        report[2] < 64 * 1024,
        "peak RSS {} kB for a {} MB file",
        report[2],
        size >> 20
    );
    // And a re-run reads nothing.
    let again = env
        .mirror()
        .mirror_file(Source::Claude, &path)
        .expect("again");
    assert_eq!(again.stats.bytes, 0);
}
