//! Shared helpers: a store in a temp dir, fixture copies, row queries.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use state_sqlite::{Engine, EngineConfig, MirrorMessage, MirrorSession, Store};
use transcript_mirror::{Mirror, MirrorConfig, branch_id, progression_id};

pub(crate) const S1: &str = "3f0c2a8e-6b1d-4c47-9a51-2e7d0b9c1a01";
pub(crate) const S2: &str = "7b9e4d12-0c3a-4e8f-b6a2-5d1f3c8e2b02";
pub(crate) const CODEX: &str = "0199d3a4-5b6c-7d8e-9f01-23456789abcd";
pub(crate) const PROJECT_DIR: &str = "-home-dev-acme";

pub(crate) struct Env {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) store: Store,
}

impl Env {
    pub(crate) fn new() -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::new(
            Engine::create(dir.path().join("state.db"), EngineConfig::default()).expect("engine"),
        );
        std::fs::create_dir_all(dir.path().join("claude").join(PROJECT_DIR)).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("codex")).expect("mkdir");
        Env { dir, store }
    }

    pub(crate) fn claude_root(&self) -> PathBuf {
        self.dir.path().join("claude")
    }

    pub(crate) fn codex_root(&self) -> PathBuf {
        self.dir.path().join("codex")
    }

    pub(crate) fn claude_file(&self, session: &str) -> PathBuf {
        self.claude_root()
            .join(PROJECT_DIR)
            .join(format!("{session}.jsonl"))
    }

    pub(crate) fn config(&self) -> MirrorConfig {
        MirrorConfig {
            claude_root: Some(self.claude_root()),
            codex_root: Some(self.codex_root()),
            ..MirrorConfig::default()
        }
    }

    pub(crate) fn mirror(&self) -> Mirror {
        Mirror::new(self.store.clone(), self.config())
    }

    /// Copies the fixture tree (claude and codex) into this env.
    pub(crate) fn copy_fixtures(&self) {
        copy_dir(&fixtures().join("claude"), &self.claude_root());
        copy_dir(&fixtures().join("codex"), &self.codex_root());
    }

    pub(crate) fn count(&self, sql: &str) -> i64 {
        let conn = self.store.engine().conn().expect("conn");
        conn.query_row(sql, [], |r| r.get(0)).expect("count query")
    }

    pub(crate) fn text(&self, sql: &str, arg: &str) -> Option<String> {
        let conn = self.store.engine().conn().expect("conn");
        conn.query_row(sql, [arg], |r| r.get(0))
            .expect("text query")
    }

    pub(crate) fn int(&self, sql: &str, arg: &str) -> Option<i64> {
        let conn = self.store.engine().conn().expect("conn");
        conn.query_row(sql, [arg], |r| r.get(0)).expect("int query")
    }

    /// Every progression item as (message id, position), in position order.
    pub(crate) fn progression_order(&self) -> Vec<(String, i64)> {
        let conn = self.store.engine().conn().expect("conn");
        let mut stmt = conn
            .prepare("SELECT message_id, position FROM progression_items ORDER BY position")
            .expect("prepare");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    }

    pub(crate) fn exec(&self, sql: &str) {
        let conn = self.store.engine().conn().expect("conn");
        conn.execute_batch(sql).expect("exec");
    }

    /// Every table's row count, for before/after comparisons.
    pub(crate) fn row_counts(&self) -> Vec<(String, i64)> {
        [
            "sessions",
            "branches",
            "messages",
            "progressions",
            "progression_items",
            "status_transitions",
            "admin_events",
            "mirror_events",
        ]
        .iter()
        .map(|t| {
            (
                (*t).to_owned(),
                self.count(&format!("SELECT count(*) FROM {t}")),
            )
        })
        .collect()
    }
}

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/transcript-mirror")
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("fixture dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

pub(crate) fn at_micros(us: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_micros(us as u64)
}

/// RFC 3339 for a microsecond time (UTC).
pub(crate) fn rfc3339(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let frac = us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{frac:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A Claude user event line (with newline).
pub(crate) fn claude_user(
    session: &str,
    uuid: &str,
    parent: Option<&str>,
    ts: i64,
    text: &str,
) -> String {
    let line = serde_json::json!({
        "parentUuid": parent, "isSidechain": false, "userType": "external",
        "cwd": "/home/dev/acme", "sessionId": session, "version": "2.0.14",
        "gitBranch": "main", "type": "user", "uuid": uuid, "timestamp": rfc3339(ts),
        "message": {"role": "user", "content": text},
    });
    format!("{line}\n")
}

pub(crate) fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open for append");
    f.write_all(text.as_bytes()).expect("append");
}

/// A scaffold for store-level tests.
pub(crate) fn scaffold(session: &str, project: Option<&str>) -> MirrorSession {
    MirrorSession {
        session_id: session.into(),
        branch_id: branch_id(session),
        progression_id: progression_id(session),
        project: project.map(Into::into),
        model: Some("m1".into()),
        agent_name: Some("claude-code".into()),
        provider: Some("claude".into()),
        cwd: None,
        node_metadata: Some(serde_json::json!({"process_identity_mode": "external"})),
        started_at: Some(1_000),
    }
}

pub(crate) fn message(id: &str, at: i64) -> MirrorMessage {
    MirrorMessage {
        id: id.into(),
        role: "user".into(),
        content: format!("{{\"instruction\":\"{id}\"}}"),
        created_at: at,
    }
}

/// Writes a batch of messages (no cursor, no events).
pub(crate) fn write(
    store: &Store,
    s: &MirrorSession,
    messages: &[MirrorMessage],
) -> state_sqlite::MirrorWrite {
    store
        .mirror_session(&state_sqlite::MirrorBatch {
            session: s,
            messages,
            event_uuids: &[],
            cursor: None,
        })
        .expect("mirror_session")
}
