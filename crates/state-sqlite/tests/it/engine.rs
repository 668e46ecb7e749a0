//! Engines: pragmas, read-only mode, WAL-reset check, bad files.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use state_sqlite::{
    Engine, EngineConfig, ReadOnlyEngine, StoreError, has_wal_reset_fix, warn_if_unfixed,
};

use crate::common::{count, create, db};

fn file_hash(path: &std::path::Path) -> Vec<u8> {
    Sha256::digest(std::fs::read(path).expect("read db")).to_vec()
}

#[test]
fn the_engine_sets_its_pragmas_on_every_connection() {
    let db = db();
    let conn = db.store.engine().conn().expect("conn");
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .expect("mode");
    let fk: i64 = conn
        .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
        .expect("fk");
    let sync: i64 = conn
        .query_row("PRAGMA synchronous", [], |r| r.get(0))
        .expect("sync");
    let busy: i64 = conn
        .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
        .expect("busy");
    let ckpt: i64 = conn
        .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
        .expect("ckpt");
    assert_eq!(
        (mode.as_str(), fk, sync, busy, ckpt),
        ("wal", 1, 1, 5000, 1000)
    );
}

// contract: SQL-001, SQL-002, SQL-005
#[test]
fn the_read_only_engine_changes_no_byte() {
    let db = db();
    create(&db.store, "session", "s1", "running", "run.started.ok", &[]);
    // Checkpoint and close so the main file holds everything.
    {
        let conn = db.store.engine().conn().expect("conn");
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .expect("checkpoint");
    }
    drop(db.store);
    let path = db.dir.path().join("state.db");
    let before = file_hash(&path);
    let ro = ReadOnlyEngine::open(&path, Duration::from_millis(200)).expect("ro");
    let conn = ro.conn().expect("conn");
    let n: i64 = conn
        .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
        .expect("query");
    assert_eq!(n, 1);
    let q: i64 = conn
        .query_row("PRAGMA query_only", [], |r| r.get(0))
        .expect("query_only");
    assert_eq!(q, 1);
    let busy: i64 = conn
        .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
        .expect("busy");
    assert_eq!(busy, 200);
    // Opened through SQLite's read-only mode, not a read-write handle with
    // query_only on: the file stays read-only with query_only switched off.
    assert!(conn.is_readonly(rusqlite::MAIN_DB).expect("is_readonly"));
    conn.execute_batch("PRAGMA query_only = OFF")
        .expect("query_only off");
    let err = conn
        .execute_batch("DELETE FROM sessions")
        .expect_err("the handle itself is read-only");
    assert_eq!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::ReadOnly),
        "{err}"
    );
    drop(conn);
    drop(ro);
    assert_eq!(file_hash(&path), before);
}

// contract: SQL-003
#[test]
fn every_write_through_the_read_only_engine_fails() {
    let db = db();
    create(&db.store, "session", "s1", "running", "run.started.ok", &[]);
    let path = db.path();
    let ro = ReadOnlyEngine::open(&path, Duration::from_millis(200)).expect("ro");
    let conn = ro.conn().expect("conn");
    for sql in [
        "INSERT INTO teams (id, status, created_at, updated_at) VALUES ('t', 'active', 0, 0)",
        "UPDATE sessions SET status = 'failed'",
        "DELETE FROM sessions",
        "CREATE TABLE x (a)",
        "DROP TABLE sessions",
    ] {
        assert!(conn.execute_batch(sql).is_err(), "{sql} must fail");
    }
    assert_eq!(
        count(
            &db.store,
            "SELECT count(*) FROM sessions WHERE status = 'running'"
        ),
        1
    );
    assert_eq!(count(&db.store, "SELECT count(*) FROM teams"), 0);
}

// contract: SQL-004
#[test]
fn the_read_only_engine_applies_no_mutating_pragma() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("legacy.db");
    {
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch(
            "PRAGMA journal_mode = DELETE; CREATE TABLE t (a); INSERT INTO t VALUES (1);",
        )
        .expect("setup");
    }
    let before = file_hash(&path);
    let ro = ReadOnlyEngine::open(&path, Duration::from_millis(100)).expect("ro");
    let conn = ro.conn().expect("conn");
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .expect("mode");
    assert_eq!(mode, "delete");
    drop(conn);
    drop(ro);
    let conn = rusqlite::Connection::open(&path).expect("reopen");
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .expect("mode");
    assert_eq!(mode, "delete");
    drop(conn);
    assert_eq!(file_hash(&path), before);
}

// contract: SQL-006
#[test]
fn the_read_only_engine_never_creates_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("absent.db");
    assert!(matches!(
        ReadOnlyEngine::open(&path, Duration::from_millis(10)),
        Err(StoreError::Missing(_))
    ));
    assert!(!path.exists());
    let text = dir.path().join("notes.txt");
    std::fs::File::create(&text)
        .expect("create")
        .write_all(b"this is not a database, just some text padding it out")
        .expect("write");
    assert!(matches!(
        ReadOnlyEngine::open(&text, Duration::from_millis(10)),
        Err(StoreError::NotADatabase(_))
    ));
}

// contract: SQL-007
#[test]
fn read_only_engines_are_sqlite_only() {
    let db = db();
    for url in [
        "postgres://user@host/db",
        "postgresql://h/db",
        "mysql://h/db",
    ] {
        let err = ReadOnlyEngine::open_url(url, Duration::from_millis(10)).expect_err("refused");
        assert!(matches!(err, StoreError::UnsupportedUrl(_)), "{err}");
        assert!(err.to_string().contains("read-only database role"));
    }
    let url = format!("sqlite://{}", db.path().display());
    assert!(ReadOnlyEngine::open_url(&url, Duration::from_millis(10)).is_ok());
}

#[test]
fn bad_files_get_typed_errors_and_are_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.db");
    assert!(matches!(
        Engine::open(&missing, EngineConfig::default()),
        Err(StoreError::Missing(_))
    ));
    assert!(!missing.exists());
    let text = dir.path().join("text.db");
    let content = b"hello, I am a plain text file that happens to be named .db and is long enough";
    std::fs::write(&text, content).expect("write");
    let err = Engine::open(&text, EngineConfig::default()).expect_err("not a db");
    assert!(matches!(err, StoreError::NotADatabase(_)), "{err}");
    assert!(err.to_string().contains("text.db"));
    assert_eq!(
        std::fs::read(&text).expect("read"),
        content,
        "nothing written to the file"
    );
}

// contract: SQL-008, SQL-009, SQL-010, SQL-011
#[test]
fn wal_reset_fix_versions() {
    for v in [
        "3.7.0", "3.44.5", "3.45.0", "3.50.6", "3.51.0", "3.51.2", "3.8.11", "3.49.9",
    ] {
        assert!(!has_wal_reset_fix(v), "{v} is affected");
    }
    for v in [
        "3.51.3", "3.51.4", "3.52.0", "4.0.0", "3.44.6", "3.44.7", "3.44.10", "3.50.7", "3.50.12",
    ] {
        assert!(has_wal_reset_fix(v), "{v} is fixed");
    }
    assert!(!has_wal_reset_fix("garbage"), "unparseable fails closed");
    assert!(
        has_wal_reset_fix(rusqlite::version()),
        "the bundled SQLite {} is fixed",
        rusqlite::version()
    );
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// contract: SQL-012
#[test]
fn an_unfixed_sqlite_warns_at_startup_and_a_fixed_one_does_not() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let dir = tempfile::tempdir().expect("tempdir");
    tracing::subscriber::with_default(subscriber, || {
        assert!(warn_if_unfixed("3.45.1"));
        assert!(!warn_if_unfixed("3.51.3"));
        // Startup with the linked (fixed) SQLite warns nothing.
        assert!(has_wal_reset_fix(rusqlite::version()));
        Engine::create(dir.path().join("state.db"), EngineConfig::default()).expect("engine");
    });
    let text = String::from_utf8(capture.0.lock().expect("lock").clone()).expect("utf8");
    assert_eq!(text.matches("WAL-reset fix").count(), 1, "{text}");
    assert!(text.contains("3.45.1") && text.contains("WARN"), "{text}");
}

#[test]
fn a_writer_locked_out_past_busy_timeout_gets_a_typed_error_and_writes_nothing() {
    let db = db();
    create(&db.store, "session", "s1", "running", "run.started.ok", &[]);
    let config = EngineConfig {
        busy_timeout: Duration::from_millis(100),
        ..EngineConfig::default()
    };
    let store = state_sqlite::Store::new(Engine::open(db.path(), config).expect("engine"));
    let mut blocker = rusqlite::Connection::open(db.path()).expect("blocker");
    let tx = blocker
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .expect("lock");
    let cmd = lifecycle_core::TransitionCommand::new(
        "session",
        "s1",
        "completed",
        lifecycle_core::Reason::new("run.completed.ok"),
        crate::common::actor(lifecycle_core::ActorType::Executor),
    );
    let err = store.transition(&cmd).expect_err("locked");
    assert!(matches!(err, StoreError::Locked(_)), "{err}");
    assert!(err.to_string().contains("locked"));
    drop(tx);
    assert_eq!(store.history("session", "s1").expect("history").len(), 1);
    assert_eq!(
        store
            .status_of("session", "s1")
            .expect("status")
            .map(|s| s.0),
        Some("running".into())
    );
}
