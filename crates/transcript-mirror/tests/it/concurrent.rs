//! Two processes mirroring the same transcripts at once add no duplicate.

use std::process::{Command, Stdio};
use std::time::SystemTime;

use transcript_mirror::Mirror;

use crate::common::{Env, append, claude_user};

const DB: &str = "TRANSCRIPT_MIRROR_WORKER_DB";
const ROOT: &str = "TRANSCRIPT_MIRROR_WORKER_ROOT";
const BATCH: &str = "TRANSCRIPT_MIRROR_WORKER_BATCH";

/// Worker role: two passes over the roots under `ROOT` into `DB`.
#[test]
fn worker_mirror_twice() {
    let (Ok(db), Ok(root)) = (std::env::var(DB), std::env::var(ROOT)) else {
        return;
    };
    let root = std::path::PathBuf::from(root);
    let store = state_sqlite::Store::new(
        state_sqlite::Engine::open(&db, state_sqlite::EngineConfig::default()).expect("engine"),
    );
    let config = transcript_mirror::MirrorConfig {
        claude_root: Some(root.join("claude")),
        codex_root: Some(root.join("codex")),
        batch_lines: std::env::var(BATCH)
            .ok()
            .and_then(|b| b.parse().ok())
            .unwrap_or(64),
        ..Default::default()
    };
    let mut mirror = Mirror::new(store, config);
    for _ in 0..2 {
        let r = mirror.pass(SystemTime::now()).expect("pass");
        assert!(r.errors.is_empty(), "{:?}", r.errors);
    }
}

/// A worker writing batches of `batch` lines (the two workers use
/// different sizes, so their batches overlap only in part).
fn spawn(env: &Env, batch: &str) -> std::process::Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "concurrent::worker_mirror_twice",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DB, env.dir.path().join("state.db"))
        .env(ROOT, env.dir.path())
        .env(BATCH, batch)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn worker")
}

// contract: SQL-052, SQL-053
#[test]
fn two_processes_mirroring_at_once_add_no_duplicate_rows() {
    for round in 0..3 {
        let env = Env::new();
        env.copy_fixtures();
        // Enough lines that the two workers' batches interleave.
        let t = 1_700_000_000_000_000;
        for f in 0..4 {
            let session = format!("busy-{f}");
            let mut text = String::new();
            for i in 0..400 {
                let parent = (i > 0).then(|| format!("{session}-{}", i - 1));
                text.push_str(&claude_user(
                    &session,
                    &format!("{session}-{i}"),
                    parent.as_deref(),
                    t + i,
                    &format!("line {i} {}", "y".repeat(200)),
                ));
            }
            append(&env.claude_file(&session), &text);
        }
        let workers = [spawn(&env, "64"), spawn(&env, "37")];
        for w in workers {
            let out = w.wait_with_output().expect("worker");
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let expected_messages = 9 + 4 + 6 + 4 * 400;
        assert_eq!(
            env.count("SELECT count(*) FROM messages"),
            expected_messages
        );
        assert_eq!(
            env.count("SELECT count(*) FROM progression_items"),
            expected_messages
        );
        assert_eq!(env.count("SELECT count(*) FROM sessions"), 3 + 4);
        assert_eq!(env.count("SELECT count(*) FROM branches"), 3 + 4);
        assert_eq!(env.count("SELECT count(*) FROM progressions"), 3 + 4);
        // One creation row per session, one completion row per session.
        assert_eq!(
            env.count("SELECT count(*) FROM status_transitions WHERE from_status IS NULL"),
            7
        );
        assert_eq!(
            env.count("SELECT count(*) FROM status_transitions WHERE to_status = 'completed'"),
            7
        );
        // Positions are dense per progression: 0..n without gaps.
        assert_eq!(
            env.count(
                "SELECT count(*) FROM (SELECT progression_id, MAX(position) + 1 AS m, count(*) AS n
                 FROM progression_items GROUP BY progression_id) WHERE m != n"
            ),
            0
        );
        // A third, single run over the same store still adds nothing.
        let r = env.mirror().pass(SystemTime::now()).expect("pass");
        assert_eq!(r.messages_added, 0);
    }
}
