//! Crash recovery with real processes: `lionrt run` SIGKILLed at random
//! instants, the orphan sweep, `lionrt kill`, and bad input that must leave
//! no `running` session behind.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lifecycle_core::{Actor, ActorType, LegRecord, OwnerRecord, SessionStart, leg_columns};
use state_sqlite::{Engine, EngineConfig, Store};

use crate::{lionrt, stdout_json};

const MARK_VAR: &str = "LIONRT_CRASH_TEST_MARK";

fn mark() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("crash-{}-{nanos}", std::process::id())
}

/// Live (non-zombie) processes whose environment carries `mark`.
fn marked(mark: &str) -> Vec<i32> {
    let needle = format!("{MARK_VAR}={mark}");
    let mut found = Vec::new();
    let Ok(all) = procfs::process::all_processes() else {
        return found;
    };
    for p in all.flatten() {
        let Ok(env) = p.environ() else { continue };
        let hit = env
            .iter()
            .any(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()) == needle);
        if hit
            && let Ok(stat) = p.stat()
            && !matches!(stat.state, 'Z' | 'X' | 'x')
        {
            found.push(p.pid);
        }
    }
    found
}

/// Live members of process group `pgid`.
fn group_members(pgid: i64) -> Vec<i32> {
    let Ok(all) = procfs::process::all_processes() else {
        return vec![-1];
    };
    all.flatten()
        .filter_map(|p| p.stat().ok())
        .filter(|s| i64::from(s.pgrp) == pgid && !matches!(s.state, 'Z' | 'X' | 'x'))
        .map(|s| s.pid)
        .collect()
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

fn store(db: &Path) -> Store {
    Store::new(Engine::create(db, EngineConfig::default()).expect("engine"))
}

fn start_run(db: &Path, session: &str, script: &Path, mark: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("--db")
        .arg(db)
        .args(["run", "--session", session, "--script"])
        .arg(script)
        .env(MARK_VAR, mark)
        .env_remove("LIONRT_DB")
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start lionrt run")
}

/// A cheap, seeded jitter (no randomness crate): xorshift over the clock.
fn jitter(seed: &mut u64, max_ms: u64) -> Duration {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    Duration::from_millis(*seed % max_ms.max(1))
}

fn sigkill_at_random_points(script_json: &str, rounds: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let script = dir.path().join("slow.json");
    std::fs::write(&script, script_json).expect("script");
    // Create the schema first so every round measures the run, not migration.
    assert!(lionrt(&db, &["state", "init"]).status.success());
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    let mut started_sessions = 0;
    for round in 0..rounds {
        let session = format!("crash-{round}");
        let mark = mark();
        let mut run = start_run(&db, &session, &script, &mark);
        // Early rounds land before or around the spawn, later ones mid-leg.
        let delay = jitter(&mut seed, 150 + 150 * round as u64);
        std::thread::sleep(delay);
        run.kill().expect("SIGKILL lionrt run");
        let _ = run.wait();
        let leg = store(&db)
            .session(&session)
            .expect("read")
            .and_then(|s| s.leg());
        let empty = wait_until(Duration::from_secs(2), || {
            marked(&mark).is_empty() && leg.is_none_or(|l| group_members(l.pgid).is_empty())
        });
        assert!(
            empty,
            "round {round} (killed after {delay:?}): processes left {:?} {:?}",
            marked(&mark),
            leg.map(|l| group_members(l.pgid))
        );
        // The next lionrt command converges the session.
        let doctor = lionrt(&db, &["--json", "state", "doctor"]);
        assert!(doctor.status.success(), "{doctor:?}");
        if let Some(s) = store(&db).session(&session).expect("read") {
            started_sessions += 1;
            assert_eq!(s.status, "failed", "round {round}: {s:?}");
            assert_eq!(
                s.reason_code.as_deref(),
                Some("session.orphaned.no_process"),
                "round {round}"
            );
        }
    }
    assert!(
        started_sessions > 0,
        "no round got as far as the session start"
    );
}

#[test]
fn a_sigkilled_run_leaves_no_leg_process_and_the_next_command_ends_it_as_orphaned() {
    // A slow leg: the scripted agent sleeps for 30 s before its answer.
    sigkill_at_random_points(
        r#"[{"type": "tool_call", "id": "t", "name": "sleep", "arguments": {"ms": 30000}}]"#,
        6,
    );
}

#[test]
fn the_same_holds_when_the_legs_descendants_ignore_sigterm() {
    sigkill_at_random_points(
        r#"[{"type": "tool_call", "id": "t", "name": "run_command",
             "arguments": {"argv": ["/bin/sh", "-c", "trap '' TERM; sleep 30; :"]}}]"#,
        6,
    );
}

fn fake_session(store: &Store, id: &str, owner: OwnerRecord, leg: Option<LegRecord>) {
    let start = SessionStart {
        owner: Some(owner),
        ..SessionStart::new(id, "run.started.ok")
    };
    store
        .persist_session_start(&start, &Actor::new(ActorType::Executor, "test"))
        .expect("start");
    if let Some(leg) = leg {
        assert!(store.update_session(id, &leg_columns(&leg)).expect("leg"));
    }
}

fn start_time(pid: i32) -> i64 {
    let stat = procfs::process::Process::new(pid)
        .and_then(|p| p.stat())
        .expect("stat");
    i64::try_from(stat.starttime).expect("fits")
}

#[test]
fn the_sweep_never_signals_a_recycled_pid_and_never_touches_a_live_owner() {
    // contract: SUP-006, SUP-007
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let store = store(&db);
    // A live stranger in a group of its own: what a recycled pid would name.
    let mut stranger = Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .expect("stranger");
    let pid = i32::try_from(stranger.id()).expect("pid");
    let real = start_time(pid);
    let me = i32::try_from(std::process::id()).expect("pid");
    let my_start = start_time(me);
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|b| b.trim().to_owned());
    let gone_owner = OwnerRecord {
        pid: i64::from(me),
        start_time: Some(my_start + 1),
        boot_id: boot.clone(),
        host_id: None,
    };
    // Orphaned, with a spawn record whose pid is live but started at
    // another time: a recycled pid.
    fake_session(
        &store,
        "recycled",
        gone_owner.clone(),
        Some(LegRecord {
            pid: i64::from(pid),
            pgid: i64::from(pid),
            create_time: Some(real + 7),
        }),
    );
    // Orphaned, with a record lacking a start time: never a match.
    fake_session(
        &store,
        "unknown-start",
        gone_owner,
        Some(LegRecord {
            pid: i64::from(pid),
            pgid: i64::from(pid),
            create_time: None,
        }),
    );
    // Owned by a live process (this test) with the stranger's true record:
    // never touched.
    fake_session(
        &store,
        "alive",
        OwnerRecord {
            pid: i64::from(me),
            start_time: Some(my_start),
            boot_id: boot,
            host_id: None,
        },
        Some(LegRecord {
            pid: i64::from(pid),
            pgid: i64::from(pid),
            create_time: Some(real),
        }),
    );
    let dry = stdout_json(&lionrt(
        &db,
        &["--json", "kill", "--all-stale", "--dry-run"],
    ));
    assert_eq!(dry["orphans"].as_array().map(Vec::len), Some(2), "{dry}");
    assert_eq!(
        store
            .session("recycled")
            .expect("read")
            .expect("row")
            .status,
        "running"
    );

    let out = lionrt(&db, &["--json", "state", "doctor"]);
    assert!(out.status.success(), "{out:?}");
    let v = stdout_json(&out);
    for orphan in v["orphans"].as_array().expect("orphans") {
        assert!(
            orphan["leg_signal"]
                .as_str()
                .is_some_and(|s| s.starts_with("not sent")),
            "{v}"
        );
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        stranger.try_wait().expect("poll"),
        None,
        "the stranger was signalled"
    );
    assert_eq!(start_time(pid), real);
    for id in ["recycled", "unknown-start"] {
        let s = store.session(id).expect("read").expect("row");
        assert_eq!(s.status, "failed");
        assert_eq!(
            s.reason_code.as_deref(),
            Some("session.orphaned.no_process")
        );
    }
    let alive = store.session("alive").expect("read").expect("row");
    assert_eq!(
        alive.status, "running",
        "a live owner's session was touched"
    );
    let history = lionrt(&db, &["--json", "state", "history", "session", "recycled"]);
    let h = stdout_json(&history);
    assert_eq!(h[1]["actor_type"], "system", "{h}");
    let _ = stranger.kill();
    let _ = stranger.wait();
}

#[test]
fn kill_ends_a_live_leg_from_another_terminal_and_records_cancelled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let script = dir.path().join("slow.json");
    std::fs::write(
        &script,
        r#"[{"type": "tool_call", "id": "t", "name": "run_command",
             "arguments": {"argv": ["/bin/sh", "-c", "trap '' TERM; sleep 30; :"]}}]"#,
    )
    .expect("script");
    assert!(lionrt(&db, &["state", "init"]).status.success());
    let mark = mark();
    let mut run = start_run(&db, "killme-123", &script, &mark);
    // Wait until the leg is recorded, then kill it by a prefix.
    let recorded = wait_until(Duration::from_secs(10), || {
        store(&db)
            .session("killme-123")
            .ok()
            .flatten()
            .and_then(|s| s.leg())
            .is_some()
    });
    assert!(recorded, "the leg was never recorded");
    let out = lionrt(&db, &["--json", "kill", "killme", "--grace", "0.3"]);
    assert!(out.status.success(), "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(v["status"], "cancelled");
    assert_eq!(v["owner"], "alive");
    let status = run.wait().expect("run ends");
    assert_eq!(status.code(), Some(1), "a killed run is not a success");
    assert!(
        wait_until(Duration::from_secs(2), || marked(&mark).is_empty()),
        "left: {:?}",
        marked(&mark)
    );
    let s = store(&db)
        .session("killme-123")
        .expect("read")
        .expect("row");
    assert_eq!(s.status, "cancelled");
    assert_eq!(s.reason_code.as_deref(), Some("run.cancelled.manual_kill"));
    // A second kill finds it already ended.
    let again = lionrt(&db, &["kill", "killme-123"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already ended"));
}

#[test]
fn an_ambiguous_or_unknown_prefix_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    assert!(lionrt(&db, &["state", "init"]).status.success());
    for id in ["amb-1", "amb-2"] {
        let out = lionrt(
            &db,
            &[
                "state",
                "create",
                "session",
                id,
                "running",
                "--reason",
                "run.started.ok",
            ],
        );
        assert!(out.status.success(), "{out:?}");
    }
    let out = lionrt(&db, &["kill", "amb"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ambiguous") && err.contains("amb-1"), "{err}");
    let out = lionrt(&db, &["kill", "zzz"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session matches"));
    // Nothing was changed by the refusals.
    for id in ["amb-1", "amb-2"] {
        assert_eq!(
            store(&db).session(id).expect("read").expect("row").status,
            "running"
        );
    }
}

#[test]
fn every_bad_input_exits_without_leaving_a_running_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let bad_json = dir.path().join("bad.json");
    std::fs::write(&bad_json, "{not json").expect("write");
    let wrong_shape = dir.path().join("shape.json");
    std::fs::write(&wrong_shape, r#"{"entries": 3}"#).expect("write");
    let bad_entry = dir.path().join("entry.json");
    std::fs::write(&bad_entry, r#"[{"type": "teleport"}]"#).expect("write");
    let missing = dir.path().join("missing.json");
    let path = |p: &Path| p.to_str().expect("utf-8").to_owned();
    let cases: Vec<Vec<String>> = vec![
        vec!["--script".into(), path(&bad_json)],
        vec!["--script".into(), path(&wrong_shape)],
        vec!["--script".into(), path(&bad_entry)],
        vec!["--script".into(), path(&missing)],
        vec!["--effort".into(), "enormous".into()],
        vec!["--sandbox".into(), "--workspace".into(), path(dir.path())],
        vec!["--workspace".into(), path(&missing)],
        vec![
            "--provider".into(),
            "claude".into(),
            "--model".into(),
            "x".into(),
        ],
    ];
    for (i, extra) in cases.iter().enumerate() {
        let session = format!("bad-{i}");
        let mut args = vec!["run", "--session", session.as_str()];
        args.extend(extra.iter().map(String::as_str));
        let out = lionrt(&db, &args);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {out:?}");
        if let Some(s) = store(&db).session(&session).expect("read") {
            assert_ne!(s.status, "running", "{extra:?} left {s:?}");
            assert!(s.reason_code.is_some());
        }
    }
    assert!(store(&db).open_sessions().expect("open").is_empty());
}
