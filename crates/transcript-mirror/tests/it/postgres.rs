//! The mirror over `state_postgres::PgStore`: the same contracts as on
//! SQLite, against a real server (`LIONRT_TEST_PG`, e.g. from
//! `eval "$(.ci/pg-cluster start DIR)"`), each test in a schema of its own.
//! Without a server the tests print why and pass without checking.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::SystemTime;

use state_postgres::{PgConfig, PgEngine, PgStore};
use transcript_mirror::{
    LineageOutcome, MIRROR_RECONCILE_ID, Mirror, MirrorBatch, MirrorConfig, MirrorMessage,
    MirrorSession, MirrorStore, MirrorWrite, REACTIVATION_JUSTIFICATION, ReconcileAction,
};

use crate::common::{Env, S1, S2, append, claude_user, copy_dir, fixtures, message};

const PG_VAR: &str = "LIONRT_TEST_PG";
const SCHEMA_VAR: &str = "TRANSCRIPT_MIRROR_PG_WORKER_SCHEMA";
const ROOT_VAR: &str = "TRANSCRIPT_MIRROR_PG_WORKER_ROOT";
const BATCH_VAR: &str = "TRANSCRIPT_MIRROR_PG_WORKER_BATCH";
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A schema of its own on the test server, dropped at the end.
struct Pg {
    url: String,
    schema: String,
    store: PgStore,
    dir: tempfile::TempDir,
}

impl Pg {
    #[allow(clippy::print_stderr, reason = "a skipped test says why")]
    fn new(test: &str) -> Option<Pg> {
        let url = match std::env::var(PG_VAR) {
            Ok(u) if !u.trim().is_empty() => u,
            _ => {
                eprintln!(
                    "{test}: skipped: {PG_VAR} is unset (start a server with `eval \"$(.ci/pg-cluster start DIR)\"`)"
                );
                return None;
            }
        };
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let schema = format!("tm_{test}_{}_{n}", std::process::id());
        let store = open(&url, &schema);
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("claude").join(crate::common::PROJECT_DIR))
            .expect("mkdir");
        std::fs::create_dir_all(dir.path().join("codex")).expect("mkdir");
        Some(Pg {
            url,
            schema,
            store,
            dir,
        })
    }

    fn client(&self) -> postgres::Client {
        let mut c = postgres::Client::connect(&self.url, postgres::NoTls).expect("connect");
        c.batch_execute(&format!("SET search_path = {}", self.schema))
            .expect("search_path");
        c
    }

    fn count(&self, sql: &str) -> i64 {
        self.client().query_one(sql, &[]).expect("count").get(0)
    }

    fn text(&self, sql: &str, arg: &str) -> Option<String> {
        self.client()
            .query_opt(sql, &[&arg])
            .expect("text query")
            .and_then(|r| r.get(0))
    }

    fn int(&self, sql: &str, arg: &str) -> Option<i64> {
        self.client()
            .query_opt(sql, &[&arg])
            .expect("int query")
            .and_then(|r| r.get(0))
    }

    fn exec(&self, sql: &str) {
        self.client().batch_execute(sql).expect("exec");
    }

    fn config(&self) -> MirrorConfig {
        MirrorConfig {
            claude_root: Some(self.dir.path().join("claude")),
            codex_root: Some(self.dir.path().join("codex")),
            ..MirrorConfig::default()
        }
    }

    fn mirror(&self) -> Mirror {
        Mirror::new(self.store.clone(), self.config())
    }

    fn claude_file(&self, session: &str) -> std::path::PathBuf {
        self.dir
            .path()
            .join("claude")
            .join(crate::common::PROJECT_DIR)
            .join(format!("{session}.jsonl"))
    }

    fn copy_fixtures(&self) {
        copy_dir(&fixtures().join("claude"), &self.dir.path().join("claude"));
        copy_dir(&fixtures().join("codex"), &self.dir.path().join("codex"));
    }

    fn row_counts(&self) -> Vec<(String, i64)> {
        TABLES
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

impl Drop for Pg {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}

const TABLES: [&str; 9] = [
    "sessions",
    "branches",
    "messages",
    "progressions",
    "progression_items",
    "status_transitions",
    "admin_events",
    "mirror_events",
    "mirror_cursors",
];

fn open(url: &str, schema: &str) -> PgStore {
    PgStore::new(
        PgEngine::open(
            &PgConfig::new(url)
                .with_schema(schema.to_owned())
                .with_pool_size(4),
        )
        .expect("open engine"),
    )
}

fn scaffold(session: &str, project: Option<&str>) -> MirrorSession {
    crate::common::scaffold(session, project)
}

fn write(store: &PgStore, s: &MirrorSession, messages: &[MirrorMessage]) -> MirrorWrite {
    MirrorStore::mirror_session(
        store,
        &MirrorBatch {
            session: s,
            messages,
            event_uuids: &[],
            cursor: None,
        },
    )
    .expect("mirror_session")
}

// contract: SQL-052, SQL-054, SQL-055
#[test]
fn a_pass_on_postgres_writes_what_sqlite_writes_and_re_runs_add_nothing() {
    let Some(pg) = Pg::new("same_as_sqlite") else {
        return;
    };
    pg.copy_fixtures();
    let first = pg.mirror().pass(SystemTime::now()).expect("pass");
    assert!(first.errors.is_empty(), "{:?}", first.errors);
    assert_eq!(first.sessions_created, 3);
    // The same fixtures into SQLite give the same ids, byte for byte.
    let sqlite = Env::new();
    sqlite.copy_fixtures();
    let theirs = sqlite.mirror().pass(SystemTime::now()).expect("pass");
    assert_eq!(first.messages_added, theirs.messages_added);
    let pg_ids: BTreeSet<(String, String, String, i64)> = pg
        .client()
        .query(
            "SELECT id, session_id, content, created_at FROM messages",
            &[],
        )
        .expect("messages")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    let sqlite_ids: BTreeSet<(String, String, String, i64)> = {
        let conn = sqlite.store.engine().conn().expect("conn");
        let mut stmt = conn
            .prepare("SELECT id, session_id, content, created_at FROM messages")
            .expect("prepare");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    };
    assert_eq!(pg_ids.len(), first.messages_added);
    assert_eq!(pg_ids, sqlite_ids);
    // Session rows carry project, model and agent name, and a branch.
    assert_eq!(
        pg.text("SELECT project FROM sessions WHERE id = $1", S1)
            .as_deref(),
        Some("acme")
    );
    assert!(
        pg.text("SELECT model FROM sessions WHERE id = $1", S1)
            .is_some()
    );
    assert_eq!(
        pg.text("SELECT agent_name FROM sessions WHERE id = $1", S1)
            .as_deref(),
        Some("claude-code")
    );
    assert_eq!(pg.count("SELECT count(*) FROM branches"), 3);
    // A second pass, and a fresh mirror (stored cursors), add nothing; a
    // mirror that forgot its cursors re-reads everything and adds nothing.
    let before = pg.row_counts();
    assert_eq!(
        pg.mirror()
            .pass(SystemTime::now())
            .expect("pass")
            .messages_added,
        0
    );
    pg.exec("DELETE FROM mirror_cursors");
    let reread = pg.mirror().pass(SystemTime::now()).expect("pass");
    assert!(reread.stats.lines > 0);
    assert_eq!(reread.messages_added, 0);
    assert_eq!(pg.row_counts(), before);
}

// contract: SQL-053
#[test]
fn postgres_upserts_by_id_and_keeps_each_id_once_in_dense_order() {
    let Some(pg) = Pg::new("upsert") else {
        return;
    };
    let s = scaffold("s-upsert", Some("acme"));
    let m1 = message("m1", 10);
    let first = write(&pg.store, &s, &[m1.clone(), m1.clone(), message("m2", 20)]);
    assert_eq!((first.messages_added, first.messages_updated), (2, 0));
    let changed = MirrorMessage {
        content: "{\"instruction\":\"edited\"}".into(),
        ..m1.clone()
    };
    let second = write(
        &pg.store,
        &s,
        &[changed, message("m2", 20), message("m3", 30)],
    );
    assert_eq!((second.messages_added, second.messages_updated), (1, 1));
    assert_eq!(
        pg.text("SELECT content FROM messages WHERE id = $1", "m1")
            .as_deref(),
        Some("{\"instruction\":\"edited\"}")
    );
    let order: Vec<(String, i64)> = pg
        .client()
        .query(
            "SELECT message_id, position FROM progression_items ORDER BY position",
            &[],
        )
        .expect("items")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        order,
        [
            ("m1".to_owned(), 0),
            ("m2".to_owned(), 1),
            ("m3".to_owned(), 2)
        ]
    );
    assert_eq!(
        pg.int(
            "SELECT next_position FROM progressions WHERE id = $1",
            &s.progression_id
        ),
        Some(3)
    );
    assert_eq!(
        pg.text(
            "SELECT last_msg_id FROM branches WHERE id = $1",
            &s.branch_id
        )
        .as_deref(),
        Some("m3")
    );
}

// contract: SQL-056
#[test]
fn mirroring_on_postgres_never_changes_the_status() {
    let Some(pg) = Pg::new("status") else {
        return;
    };
    let s = scaffold("s-status", Some("acme"));
    write(&pg.store, &s, &[message("a", 10)]);
    for status in ["completed", "failed", "cancelled"] {
        pg.exec(&format!(
            "UPDATE sessions SET status = '{status}' WHERE id = 's-status'"
        ));
        let history = pg.store.history("session", "s-status").expect("history");
        let w = write(
            &pg.store,
            &s,
            &[message(
                &format!("new-{status}"),
                state_postgres::now_micros(),
            )],
        );
        assert_eq!(w.messages_added, 1);
        assert_eq!(
            pg.text("SELECT status FROM sessions WHERE id = $1", "s-status")
                .as_deref(),
            Some(status)
        );
        assert_eq!(
            pg.store.history("session", "s-status").expect("history"),
            history
        );
    }
}

// contract: SQL-057
#[test]
fn postgres_scaffold_writes_run_in_order_every_call_and_repair() {
    let Some(pg) = Pg::new("scaffold") else {
        return;
    };
    pg.exec(
        "CREATE TABLE scaffold_log (n BIGSERIAL PRIMARY KEY, t TEXT);
         CREATE FUNCTION log_insert() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN INSERT INTO scaffold_log (t) VALUES (TG_TABLE_NAME); RETURN NEW; END $$;
         CREATE TRIGGER log_p AFTER INSERT ON progressions FOR EACH ROW EXECUTE FUNCTION log_insert();
         CREATE TRIGGER log_s AFTER INSERT ON sessions FOR EACH ROW EXECUTE FUNCTION log_insert();
         CREATE TRIGGER log_b AFTER INSERT ON branches FOR EACH ROW EXECUTE FUNCTION log_insert();",
    );
    let log = |pg: &Pg| -> Vec<String> {
        pg.client()
            .query("SELECT t FROM scaffold_log ORDER BY n", &[])
            .expect("log")
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let s = scaffold("s-order", Some("acme"));
    write(&pg.store, &s, &[message("o1", 10)]);
    assert_eq!(log(&pg), ["progressions", "sessions", "branches"]);
    // A pass that died after the session: the next call, even without a
    // message, recreates what is missing.
    pg.exec(
        "DELETE FROM scaffold_log; DELETE FROM branches; DELETE FROM progression_items;
         DELETE FROM progressions;",
    );
    let w = write(&pg.store, &s, &[]);
    assert!(
        w.progression_created && w.branch_created && !w.session_created,
        "{w:?}"
    );
    assert_eq!(log(&pg), ["progressions", "branches"]);
    // A failing branch write rolls the whole call back.
    pg.exec(
        "CREATE FUNCTION fail_branch() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN RAISE EXCEPTION 'branch write failed'; END $$;
         CREATE TRIGGER fail_b BEFORE INSERT ON branches FOR EACH ROW EXECUTE FUNCTION fail_branch();",
    );
    let fresh = scaffold("s-fail", None);
    let failed = MirrorStore::mirror_session(
        &pg.store,
        &MirrorBatch {
            session: &fresh,
            messages: &[message("f1", 10)],
            event_uuids: &[],
            cursor: None,
        },
    );
    assert!(failed.is_err());
    assert_eq!(
        pg.count("SELECT count(*) FROM sessions WHERE id = 's-fail'"),
        0
    );
    pg.exec("DROP TRIGGER fail_b ON branches;");
    let w = write(&pg.store, &fresh, &[message("f1", 10)]);
    assert!(
        w.progression_created && w.session_created && w.branch_created,
        "{w:?}"
    );
    assert_eq!(w.messages_added, 1);
}

// contract: SQL-058, SQL-059
#[test]
fn postgres_scaffold_never_overwrites_and_backfills_only_a_missing_project() {
    let Some(pg) = Pg::new("keep") else {
        return;
    };
    let s = scaffold("s-keep", None);
    write(&pg.store, &s, &[message("k1", 123_456)]);
    let row = |pg: &Pg| -> (Option<String>, Option<String>, Option<String>, i64) {
        let r = pg
            .client()
            .query_one(
                "SELECT model, agent_name, node_metadata, created_at FROM sessions WHERE id = 's-keep'",
                &[],
            )
            .expect("row");
        (r.get(0), r.get(1), r.get(2), r.get(3))
    };
    let before = row(&pg);
    assert_eq!(before.3, 1_000, "created_at is the transcript start");
    let other = MirrorSession {
        project: Some("acme".into()),
        model: Some("m2".into()),
        agent_name: Some("someone".into()),
        node_metadata: Some(serde_json::json!({"x": 1})),
        started_at: Some(5_000),
        ..s.clone()
    };
    let w = write(&pg.store, &other, &[]);
    assert!(w.project_backfilled);
    assert_eq!(row(&pg), before, "existing fields are kept");
    assert_eq!(
        pg.text("SELECT project FROM sessions WHERE id = $1", "s-keep")
            .as_deref(),
        Some("acme")
    );
    assert_eq!(
        pg.int(
            "SELECT last_message_at FROM sessions WHERE id = $1",
            "s-keep"
        ),
        Some(123_456),
        "the backfill does not move the liveness clock"
    );
    let again = write(
        &pg.store,
        &MirrorSession {
            project: Some("zzz".into()),
            ..s
        },
        &[],
    );
    assert!(!again.project_backfilled);
    assert_eq!(
        pg.text("SELECT project FROM sessions WHERE id = $1", "s-keep")
            .as_deref(),
        Some("acme")
    );
}

const WINDOW: i64 = 300_000_000;
const NOW: i64 = 1_900_000_000_000_000;

fn status(pg: &Pg, id: &str) -> String {
    pg.text("SELECT status FROM sessions WHERE id = $1", id)
        .expect("status")
}

fn reconcile(pg: &Pg, id: &str, now: i64) -> ReconcileAction {
    MirrorStore::reconcile_mirror_session(&pg.store, id, now, WINDOW).expect("reconcile")
}

// contract: SQL-060, SQL-061, SQL-062, SQL-063
#[test]
fn postgres_reconcile_reads_last_message_at_and_reactivates_through_the_override() {
    let Some(pg) = Pg::new("reconcile") else {
        return;
    };
    write(
        &pg.store,
        &scaffold("live", Some("acme")),
        &[message("live-m", NOW - 10_000_000)],
    );
    write(
        &pg.store,
        &scaffold("idle", Some("acme")),
        &[message("idle-m", NOW - WINDOW - 1)],
    );
    assert_eq!(reconcile(&pg, "live", NOW), ReconcileAction::Unchanged);
    assert_eq!(status(&pg, "live"), "running");
    assert_eq!(reconcile(&pg, "idle", NOW), ReconcileAction::Completed);
    assert_eq!(status(&pg, "idle"), "completed");
    // A fresh updated_at does not make it live again.
    pg.exec("UPDATE sessions SET updated_at = 1900000000000000 WHERE id = 'idle'");
    assert_eq!(reconcile(&pg, "idle", NOW), ReconcileAction::Unchanged);
    assert_eq!(status(&pg, "idle"), "completed");
    assert!(
        pg.store
            .admin_events("session", "idle")
            .expect("events")
            .is_empty()
    );
    // New messages: back to running, as an audited override.
    let later = NOW + 3_600_000_000;
    write(
        &pg.store,
        &scaffold("idle", Some("acme")),
        &[message("idle-m2", later - 1_000_000)],
    );
    assert_eq!(
        reconcile(&pg, "idle", later),
        ReconcileAction::Reactivated {
            from: "completed".into()
        }
    );
    assert_eq!(status(&pg, "idle"), "running");
    let events = pg.store.admin_events("session", "idle").expect("events");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, "transition.override");
    assert_eq!(events[0].actor_id, MIRROR_RECONCILE_ID);
    assert_eq!(
        events[0].detail["justification"],
        REACTIVATION_JUSTIFICATION
    );
    let last = pg
        .store
        .history("session", "idle")
        .expect("history")
        .pop()
        .expect("a row");
    assert!(last.overridden);
    assert_eq!(last.to_status, "running");
}

// contract: SQL-064, SQL-065
#[test]
fn postgres_reconcile_leaves_other_terminal_statuses_unless_the_transcript_resumes() {
    let Some(pg) = Pg::new("terminal") else {
        return;
    };
    write(
        &pg.store,
        &scaffold("f", Some("acme")),
        &[message("f-m", NOW - 2 * WINDOW)],
    );
    pg.exec("UPDATE sessions SET status = 'failed' WHERE id = 'f'");
    assert_eq!(
        reconcile(&pg, "f", NOW),
        ReconcileAction::LeftTerminal {
            status: "failed".into()
        }
    );
    assert_eq!(status(&pg, "f"), "failed");
    assert_eq!(
        pg.store.history("session", "f").expect("history").len(),
        1,
        "nothing written"
    );
    write(
        &pg.store,
        &scaffold("f", Some("acme")),
        &[message("f-m2", NOW - 1)],
    );
    assert_eq!(
        reconcile(&pg, "f", NOW),
        ReconcileAction::Reactivated {
            from: "failed".into()
        }
    );
}

fn lineage(pg: &Pg, id: &str) -> Option<serde_json::Value> {
    let meta = pg.text("SELECT node_metadata FROM sessions WHERE id = $1", id)?;
    let v: serde_json::Value = serde_json::from_str(&meta).expect("node_metadata is JSON");
    v.get("lineage").cloned()
}

// contract: SQL-066, SQL-067, SQL-068
#[test]
fn postgres_lineage_links_a_continuation_once_without_moving_the_clock() {
    let Some(pg) = Pg::new("lineage") else {
        return;
    };
    pg.copy_fixtures();
    pg.mirror().pass(SystemTime::now()).expect("pass");
    let link = lineage(&pg, S2).expect("S2 is linked");
    assert_eq!(link["parent_session_id"], S1);
    assert_eq!(lineage(&pg, S1), None);
    // Unlink S2 so the next link really writes, then check that write
    // leaves the liveness clock alone and a second link changes nothing.
    pg.exec(&format!(
        "UPDATE sessions SET node_metadata = (node_metadata::jsonb - 'lineage')::text WHERE id = '{S2}'"
    ));
    assert_eq!(lineage(&pg, S2), None);
    let clock = pg.int("SELECT last_message_at FROM sessions WHERE id = $1", S2);
    assert!(clock.is_some(), "S2 has a liveness clock");
    let parent = "a1000000-0000-4000-8000-000000000010";
    let first = MirrorStore::link_session_lineage(&pg.store, S2, parent).expect("link");
    assert_eq!(
        first,
        LineageOutcome::Linked {
            parent_session_id: S1.into(),
            written: true
        }
    );
    assert_eq!(lineage(&pg, S2), Some(link));
    assert_eq!(
        pg.int("SELECT last_message_at FROM sessions WHERE id = $1", S2),
        clock
    );
    let meta = pg.text("SELECT node_metadata FROM sessions WHERE id = $1", S2);
    let again = MirrorStore::link_session_lineage(&pg.store, S2, parent).expect("link");
    assert_eq!(
        again,
        LineageOutcome::Linked {
            parent_session_id: S1.into(),
            written: false
        }
    );
    assert_eq!(
        pg.text("SELECT node_metadata FROM sessions WHERE id = $1", S2),
        meta
    );
    assert_eq!(
        pg.int("SELECT last_message_at FROM sessions WHERE id = $1", S2),
        clock
    );
    // No link: absent, unresolved, or inside the session itself.
    let t = 1_800_000_000_000_000;
    append(
        &pg.claude_file("root"),
        &claude_user("root", "r1", None, t, "hi"),
    );
    append(
        &pg.claude_file("dangling"),
        &claude_user("dangling", "d1", Some("no-such-event"), t, "hi"),
    );
    append(
        &pg.claude_file("self"),
        "{\"type\":\"system\",\"subtype\":\"informational\",\"uuid\":\"x0\",\"sessionId\":\"self\",\"timestamp\":\"2027-01-15T08:00:00Z\"}\n",
    );
    append(
        &pg.claude_file("self"),
        &claude_user("self", "x1", Some("x0"), t, "hi"),
    );
    pg.mirror().pass(SystemTime::now()).expect("pass");
    for id in ["root", "dangling", "self"] {
        assert_eq!(lineage(&pg, id), None, "{id}");
    }
    assert_eq!(
        MirrorStore::link_session_lineage(&pg.store, "self", "x0").expect("link"),
        LineageOutcome::SameSession
    );
    assert_eq!(
        MirrorStore::link_session_lineage(&pg.store, "dangling", "no-such-event").expect("link"),
        LineageOutcome::Unresolved
    );
}

/// Worker role: two passes over `ROOT_VAR` into the schema `SCHEMA_VAR`,
/// in batches of `BATCH_VAR` lines.
#[test]
fn worker_mirror_twice_on_postgres() {
    let (Ok(url), Ok(schema), Ok(root)) = (
        std::env::var(PG_VAR),
        std::env::var(SCHEMA_VAR),
        std::env::var(ROOT_VAR),
    ) else {
        return;
    };
    let root = std::path::PathBuf::from(root);
    let config = MirrorConfig {
        claude_root: Some(root.join("claude")),
        codex_root: Some(root.join("codex")),
        batch_lines: std::env::var(BATCH_VAR)
            .ok()
            .and_then(|b| b.parse().ok())
            .unwrap_or(64),
        ..Default::default()
    };
    let mut mirror = Mirror::new(open(&url, &schema), config);
    for _ in 0..2 {
        let r = mirror.pass(SystemTime::now()).expect("pass");
        assert!(r.errors.is_empty(), "{:?}", r.errors);
    }
}

// contract: SQL-052, SQL-053
#[test]
fn two_processes_mirroring_at_once_on_postgres_add_no_duplicate_rows() {
    let Some(pg) = Pg::new("two_procs") else {
        return;
    };
    pg.copy_fixtures();
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
        append(&pg.claude_file(&session), &text);
    }
    // Different batch sizes, so that one worker's batch overlaps the other's
    // uncommitted one only in part: the appends it adds must still take
    // the positions after the other's.
    let spawn = |batch: &str| {
        Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "postgres::worker_mirror_twice_on_postgres",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(SCHEMA_VAR, &pg.schema)
            .env(ROOT_VAR, pg.dir.path())
            .env(BATCH_VAR, batch)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn worker")
    };
    let workers = [spawn("64"), spawn("37")];
    for w in workers {
        let out = w.wait_with_output().expect("worker");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let expected_messages = 9 + 4 + 6 + 4 * 400;
    assert_eq!(pg.count("SELECT count(*) FROM messages"), expected_messages);
    assert_eq!(
        pg.count("SELECT count(*) FROM progression_items"),
        expected_messages
    );
    assert_eq!(pg.count("SELECT count(*) FROM sessions"), 3 + 4);
    assert_eq!(pg.count("SELECT count(*) FROM branches"), 3 + 4);
    assert_eq!(pg.count("SELECT count(*) FROM progressions"), 3 + 4);
    assert_eq!(
        pg.count("SELECT count(*) FROM status_transitions WHERE from_status IS NULL"),
        7
    );
    assert_eq!(
        pg.count("SELECT count(*) FROM status_transitions WHERE to_status = 'completed'"),
        7
    );
    // Positions are dense per progression: 0..n without gaps or repeats.
    assert_eq!(
        pg.count(
            "SELECT count(*) FROM (SELECT progression_id, MAX(position) + 1 AS m,
                count(DISTINCT position) AS d, count(*) AS n
             FROM progression_items GROUP BY progression_id) g WHERE m != n OR d != n"
        ),
        0
    );
    let r = pg.mirror().pass(SystemTime::now()).expect("pass");
    assert_eq!(r.messages_added, 0);
}
