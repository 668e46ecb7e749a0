//! Whole runs against the in-memory and the SQLite recorder, with a real
//! leg: `/bin/sh` replaying the scripted provider's leg file.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lifecycle_core::{
    Actor, Cancellation, InitialCommand, LifecycleStore, Outcome, SessionEnd, SessionRecorder,
    SessionSnapshot, SessionStart, TransitionCommand, TransitionRecord,
};
use providers_scripted::ScriptModel;
use runner::{LegProgram, ProviderChoice, RunConfig, RunReport};
use serde_json::Value;
use state_sqlite::{Engine, EngineConfig, Store};
use test_support::{MemoryStore, MemoryStoreError};

/// A leg program that prints the leg file as it is (`sh -c 'sleep 0.1; cat "$2"'`;
/// the pause keeps the leader alive long enough to read its start time).
fn cat_leg() -> LegProgram {
    LegProgram {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), r#"sleep 0.1; cat "$2""#.into(), "leg".into()],
    }
}

fn scripted(script: &str, leg: LegProgram) -> ProviderChoice {
    ProviderChoice::Scripted {
        script: ScriptModel::from_json(script).expect("script"),
        leg,
    }
}

const STREAM: &str = r#"[{"type": "stream", "chunks": ["a", "b", "c"]}]"#;

fn config(id: &str, provider: ProviderChoice) -> RunConfig {
    let dir = std::env::temp_dir();
    RunConfig::new(id, provider, "do it", dir)
}

async fn never() -> Cancellation {
    std::future::pending().await
}

fn sqlite() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store =
        Store::new(Engine::create(dir.path().join("s.db"), EngineConfig::default()).expect("db"));
    (dir, Arc::new(store))
}

async fn completes_and_records<R: SessionRecorder + Send + Sync + 'static>(store: Arc<R>) {
    let seen = Arc::new(Mutex::new(Vec::<(RunReport, Option<String>)>::new()));
    let mut cfg = config("ok-1", scripted(STREAM, cat_leg()));
    {
        let (seen, store) = (Arc::clone(&seen), Arc::clone(&store));
        cfg.on_terminal = Some(Arc::new(move |report: &RunReport| {
            // The terminal transition is committed before the callback runs.
            let status = store
                .session(&report.session)
                .ok()
                .flatten()
                .map(|s| s.status);
            seen.lock().expect("lock").push((report.clone(), status));
        }));
    }
    let report = runner::run(Arc::clone(&store), cfg, never())
        .await
        .expect("run");
    assert!(report.ok, "{report:?}");
    assert_eq!(report.recorded_status, "completed");
    assert_eq!(report.verdict.reason_code, "run.completed.ok");
    assert_eq!(report.text, "abc");
    let snap = store.session("ok-1").expect("read").expect("row");
    assert_eq!(snap.status, "completed");
    assert_eq!(snap.messages, report.messages);
    assert!(report.messages >= 5, "{report:?}");
    // The owner is this process, with its start time; the leg's spawn
    // record was stored with a start time.
    let owner = snap.owner().expect("owner");
    assert_eq!(owner.pid, i64::from(std::process::id()));
    assert!(owner.start_time.is_some());
    let leg = snap.leg().expect("spawn record");
    assert_eq!(leg.pid, leg.pgid);
    assert!(leg.create_time.is_some());
    let seen = seen.lock().expect("lock");
    assert_eq!(seen.len(), 1, "the callback runs once");
    assert_eq!(seen[0].1.as_deref(), Some("completed"));
}

#[tokio::test]
async fn a_run_completes_and_records_everything_in_memory() {
    completes_and_records(Arc::new(MemoryStore::default())).await;
}

#[tokio::test]
async fn a_run_completes_and_records_everything_in_sqlite() {
    let (_dir, store) = sqlite();
    completes_and_records(store).await;
}

/// A leg that prints `lines` (NDJSON) and exits 0.
fn printing_leg(lines: &str) -> LegProgram {
    LegProgram {
        program: "/bin/sh".into(),
        args: vec![
            "-c".into(),
            r#"sleep 0.1; printf '%s\n' "$1""#.into(),
            "leg".into(),
            lines.into(),
        ],
    }
}

/// The usage a provider reports is recorded on the session: tokens, turns,
/// duration and the model that served the run; a run that reports no cost
/// stays unpriced (NULL), never 0.
#[tokio::test]
async fn reported_usage_and_model_are_recorded_and_no_cost_stays_unpriced() {
    use lifecycle_core::StateReader;
    let (_dir, store) = sqlite();
    let line = r#"{"type":"result","subtype":"success","is_error":false,"result":"x","model":"m-served","num_turns":3,"duration_ms":77,"usage":{"input_tokens":5,"output_tokens":8}}"#;
    let report = runner::run(
        Arc::clone(&store),
        config("usage-1", scripted(STREAM, printing_leg(line))),
        never(),
    )
    .await
    .expect("run");
    assert!(report.ok, "{report:?}");
    let row = store.session_row("usage-1").expect("read").expect("row");
    assert_eq!(row.model.as_deref(), Some("m-served"));
    assert_eq!((row.input_tokens, row.output_tokens), (Some(5), Some(8)));
    assert_eq!((row.num_turns, row.duration_ms), (Some(3), Some(77)));
    assert_eq!(row.total_cost_usd, None);
}

#[tokio::test]
async fn a_provider_error_fails_the_session_with_its_message() {
    let store = Arc::new(MemoryStore::default());
    let script = r#"[{"type": "error", "message": "quota exhausted", "status": 429}]"#;
    let report = runner::run(
        Arc::clone(&store),
        config("e", scripted(script, cat_leg())),
        never(),
    )
    .await
    .expect("run");
    assert!(!report.ok);
    assert_eq!(report.recorded_status, "failed");
    assert_eq!(
        report.verdict.reason_code,
        "run.failed.provider_nonretryable"
    );
    assert!(report.error.as_deref().is_some_and(|e| e.contains("quota")));
}

#[tokio::test]
async fn a_missing_leg_program_ends_the_session_failed() {
    let store = Arc::new(MemoryStore::default());
    let leg = LegProgram {
        program: "/nonexistent/scripted-leg".into(),
        args: vec![],
    };
    let report = runner::run(
        Arc::clone(&store),
        config("m", scripted(STREAM, leg)),
        never(),
    )
    .await
    .expect("run");
    assert_eq!(report.recorded_status, "failed");
    assert_eq!(report.verdict.reason_code, "run.failed.exception");
    assert!(
        report
            .error
            .as_deref()
            .is_some_and(|e| e.contains("scripted-leg"))
    );
    assert!(store.open_sessions().expect("open").is_empty());
}

#[tokio::test]
async fn a_cancellation_ends_the_leg_and_records_cancelled() {
    let store = Arc::new(MemoryStore::default());
    let slow = LegProgram {
        program: "/bin/sh".into(),
        args: vec![
            "-c".into(),
            r#"head -n 1 "$2"; sleep 30"#.into(),
            "leg".into(),
        ],
    };
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        Cancellation::Orchestrator
    };
    let started = std::time::Instant::now();
    let report = runner::run(
        Arc::clone(&store),
        config("c", scripted(STREAM, slow)),
        cancel,
    )
    .await
    .expect("run");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(report.recorded_status, "cancelled");
    assert_eq!(report.verdict.reason_code, "run.cancelled.orchestrator");
    let leg = store
        .session("c")
        .expect("read")
        .and_then(|s| s.leg())
        .expect("leg");
    let alive = std::path::Path::new(&format!("/proc/{}", leg.pid)).exists();
    assert!(!alive, "the leg was ended");
}

/// A recorder that fails one kind of write, to show every failure after
/// the start still ends the session.
struct Failing {
    inner: MemoryStore,
    fail_messages: bool,
    fail_updates: bool,
    calls: AtomicUsize,
}

impl Failing {
    fn new(fail_messages: bool, fail_updates: bool) -> Self {
        Self {
            inner: MemoryStore::default(),
            fail_messages,
            fail_updates,
            calls: AtomicUsize::new(0),
        }
    }
}

impl LifecycleStore for Failing {
    type Error = MemoryStoreError;
    fn create(&self, cmd: &InitialCommand) -> Result<Outcome, MemoryStoreError> {
        self.inner.create(cmd)
    }
    fn transition(&self, cmd: &TransitionCommand) -> Result<Outcome, MemoryStoreError> {
        self.inner.transition(cmd)
    }
    fn history(&self, t: &str, id: &str) -> Result<Vec<TransitionRecord>, MemoryStoreError> {
        self.inner.history(t, id)
    }
}

impl SessionRecorder for Failing {
    fn persist_session_start(
        &self,
        s: &SessionStart,
        a: &Actor,
    ) -> Result<Outcome, MemoryStoreError> {
        self.inner.persist_session_start(s, a)
    }
    fn persist_session_end(&self, e: &SessionEnd, a: &Actor) -> Result<Outcome, MemoryStoreError> {
        self.inner.persist_session_end(e, a)
    }
    fn record_message(
        &self,
        s: &str,
        id: &str,
        r: &str,
        c: &str,
        at: i64,
    ) -> Result<bool, MemoryStoreError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if self.fail_messages {
            return Err(MemoryStoreError::Poisoned);
        }
        self.inner.record_message(s, id, r, c, at)
    }
    fn update_session(
        &self,
        s: &str,
        c: &BTreeMap<String, Value>,
    ) -> Result<bool, MemoryStoreError> {
        if self.fail_updates {
            return Err(MemoryStoreError::Poisoned);
        }
        self.inner.update_session(s, c)
    }
    fn update_session_metadata(
        &self,
        s: &str,
        k: &str,
        f: &mut dyn FnMut(Option<&Value>) -> Option<Value>,
    ) -> Result<lifecycle_core::MetadataUpdate, MemoryStoreError> {
        if self.fail_updates {
            return Err(MemoryStoreError::Poisoned);
        }
        self.inner.update_session_metadata(s, k, f)
    }
    fn session(&self, s: &str) -> Result<Option<SessionSnapshot>, MemoryStoreError> {
        self.inner.session(s)
    }
    fn open_sessions(&self) -> Result<Vec<SessionSnapshot>, MemoryStoreError> {
        self.inner.open_sessions()
    }
    fn session_ids_with_prefix(&self, p: &str, l: usize) -> Result<Vec<String>, MemoryStoreError> {
        self.inner.session_ids_with_prefix(p, l)
    }
}

#[tokio::test]
async fn a_store_failure_mid_run_still_ends_the_session() {
    let store = Arc::new(Failing::new(true, false));
    let report = runner::run(
        Arc::clone(&store),
        config("f", scripted(STREAM, cat_leg())),
        never(),
    )
    .await
    .expect("run");
    assert_eq!(report.recorded_status, "failed");
    assert_eq!(report.verdict.reason_code, "run.failed.exception");
    assert!(
        report
            .error
            .as_deref()
            .is_some_and(|e| e.contains("recording a message"))
    );
    assert!(store.calls.load(Ordering::Relaxed) >= 1);
    assert!(store.open_sessions().expect("open").is_empty());
}

#[tokio::test]
async fn a_spawn_record_that_cannot_be_stored_ends_the_leg_and_the_session() {
    // contract: SUP-013
    let store = Arc::new(Failing::new(false, true));
    let report = runner::run(
        Arc::clone(&store),
        config("u", scripted(STREAM, cat_leg())),
        never(),
    )
    .await
    .expect("run");
    assert_eq!(report.recorded_status, "failed");
    assert_eq!(report.verdict.reason_code, "run.failed.exception");
    assert_eq!(report.messages, 0, "no output was read before the record");
    assert!(store.open_sessions().expect("open").is_empty());
}

#[tokio::test]
async fn the_callers_env_and_on_spawn_reach_the_leg() {
    // contract: SUP-004
    // The caller's runtime-only wiring (a call's `env` and `on_spawn`):
    // the child sees the env, and the callback hears the spawn once, with
    // the record the session already holds, before any output is read.
    let store = Arc::new(MemoryStore::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("seen-env");
    let leg = LegProgram {
        program: "/bin/sh".into(),
        args: vec![
            "-c".into(),
            format!(
                r#"printf %s "$RUNNER_CALLER_VAR" > '{}'; sleep 0.1; cat "$2""#,
                out.display()
            ),
            "leg".into(),
        ],
    };
    let mut cfg = config("wired", scripted(STREAM, leg));
    cfg.env = Some(
        cli_supervisor::ChildEnv::try_from_pairs([("RUNNER_CALLER_VAR", "from-the-call")])
            .expect("valid env"),
    );
    let heard = Arc::new(Mutex::new(Vec::new()));
    cfg.on_spawn = Some(cli_supervisor::OnSpawn::sync({
        let (heard, store) = (Arc::clone(&heard), Arc::clone(&store));
        move |record| {
            let snap = store.session("wired").ok().flatten();
            let stored = snap.as_ref().and_then(SessionSnapshot::leg).map(|l| l.pid);
            let messages = snap.map_or(0, |s| s.messages);
            heard
                .lock()
                .expect("lock")
                .push((record.pid, stored, messages));
            Ok(())
        }
    }));
    let report = runner::run(Arc::clone(&store), cfg, never())
        .await
        .expect("run");
    assert!(report.ok, "{report:?}");
    assert_eq!(
        std::fs::read_to_string(&out).expect("the leg wrote its env"),
        "from-the-call"
    );
    let heard = heard.lock().expect("lock");
    assert_eq!(heard.len(), 1, "called once per leg: {heard:?}");
    let (pid, stored, messages) = heard[0];
    assert_eq!(stored, Some(i64::from(pid)), "the record was stored first");
    assert_eq!(messages, 0, "no output was read before the callback");
}

#[tokio::test]
async fn a_failing_caller_on_spawn_ends_the_leg_and_the_session() {
    // contract: SUP-013
    let store = Arc::new(MemoryStore::default());
    let mut cfg = config("refused", scripted(STREAM, cat_leg()));
    cfg.on_spawn = Some(cli_supervisor::OnSpawn::sync(|_| {
        Err("the caller's recorder is down".into())
    }));
    let report = runner::run(Arc::clone(&store), cfg, never())
        .await
        .expect("run");
    assert_eq!(report.recorded_status, "failed");
    assert_eq!(report.messages, 0, "no output was read");
    assert!(store.open_sessions().expect("open").is_empty());
}

#[tokio::test]
async fn notes_are_recorded_on_the_session_before_the_leg_runs() {
    let (dir, store) = sqlite();
    let mut cfg = config("n", scripted(STREAM, cat_leg()));
    cfg.notes = vec![
        runner::RunNote {
            role: "mcp_admission".into(),
            content: r#"{"refused":[{"server":"exec","tool":"run_command"}]}"#.into(),
        },
        runner::RunNote {
            role: "note".into(),
            content: "second".into(),
        },
    ];
    let report = runner::run(Arc::clone(&store), cfg, never())
        .await
        .expect("run");
    assert!(report.ok, "{report:?}");
    let engine = Engine::create(dir.path().join("s.db"), EngineConfig::default()).expect("db");
    let conn = engine.conn().expect("conn");
    let mut stmt = conn
        .prepare("SELECT id, role, content FROM messages WHERE session_id = 'n' ORDER BY rowid")
        .expect("prepare");
    let rows: Vec<(String, String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(rows.len() as u64, report.messages + 2, "{rows:?}");
    assert_eq!(rows[0].0, "n:note:0");
    assert_eq!(rows[0].1, "mcp_admission");
    assert!(rows[0].2.contains("run_command"), "{rows:?}");
    assert_eq!(
        (rows[1].0.as_str(), rows[1].1.as_str()),
        ("n:note:1", "note")
    );
    assert!(rows[2..].iter().all(|r| !r.0.contains(":note:")));
}

#[tokio::test]
async fn a_note_that_cannot_be_recorded_ends_the_session_before_any_leg() {
    let store = Arc::new(Failing::new(true, false));
    let mut cfg = config("nf", scripted(STREAM, cat_leg()));
    cfg.notes = vec![runner::RunNote {
        role: "mcp_admission".into(),
        content: "{}".into(),
    }];
    let report = runner::run(Arc::clone(&store), cfg, never())
        .await
        .expect("run");
    assert_eq!(report.recorded_status, "failed");
    assert!(
        report
            .error
            .as_deref()
            .is_some_and(|e| e.contains("recording a note")),
        "{report:?}"
    );
    assert_eq!(report.messages, 0);
    assert!(
        store
            .session("nf")
            .expect("read")
            .expect("row")
            .leg()
            .is_none()
    );
}

// Every event one read delivered is recorded in one trip to the store: the
// rows keep the stream's order and contiguous ids, whether the lines come
// in one burst or spread over several reads.
#[tokio::test]
async fn batched_events_are_recorded_in_stream_order() {
    for (n, leg) in [
        // One burst: every line arrives in one read.
        cat_leg(),
        // One line per read.
        LegProgram {
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                r#"sleep 0.1; while IFS= read -r l; do printf '%s\n' "$l"; sleep 0.05; done < "$2""#
                    .into(),
                "leg".into(),
            ],
        },
    ]
    .into_iter()
    .enumerate()
    {
        let (dir, store) = sqlite();
        let id = format!("order-{n}");
        let seen = Arc::new(Mutex::new(Vec::<&'static str>::new()));
        let mut cfg = config(&id, scripted(STREAM, leg));
        {
            let seen = Arc::clone(&seen);
            cfg.on_progress = Some(Arc::new(move |p: runner::Progress<'_>| {
                if let runner::Progress::Event(e) = p {
                    seen.lock().expect("lock").push(runner::event_role(e));
                }
            }));
        }
        let report = runner::run(Arc::clone(&store), cfg, never())
            .await
            .expect("run");
        assert!(report.ok, "{report:?}");
        let engine = Engine::create(dir.path().join("s.db"), EngineConfig::default()).expect("db");
        let conn = engine.conn().expect("conn");
        let mut stmt = conn
            .prepare("SELECT id, role FROM messages WHERE session_id = ?1 ORDER BY rowid")
            .expect("prepare");
        let rows: Vec<(String, String)> = stmt
            .query_map([&id], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        let ids: Vec<String> = (1..=rows.len()).map(|k| format!("{id}:{k}")).collect();
        assert_eq!(rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>(), ids);
        let roles: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
        assert_eq!(roles, *seen.lock().expect("lock"), "rows follow the stream");
        assert_eq!(report.messages, rows.len() as u64);
        assert!(rows.len() >= 5, "{rows:?}");
    }
}
