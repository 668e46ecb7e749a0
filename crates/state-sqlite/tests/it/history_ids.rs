//! Migration 0009: `status_transitions` without AUTOINCREMENT and with a
//! partial index over terminal moves. A file written at 0008 upgrades with
//! its rows, ids and delivery acknowledgements; the reconciliation query
//! returns what it returned before and searches the new index; history ids
//! still only count up; and a migration that fails or is killed half way
//! leaves the file as it was, to be upgraded by the next open.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use lifecycle_core::{
    ActorType, PolicyRegistry, Reason, TransitionCommand, default_policy_specs, default_registry,
};
use proptest::prelude::*;
use rusqlite::types::Value;
use rusqlite::{Connection, params};
use state_sqlite::deliveries::{TERMINAL_INDEX, undelivered, undelivered_plan};
use state_sqlite::{Engine, EngineConfig, Store, migrate, schema_version};

use crate::common::{actor, create, db, migrate_before};

const ROLE: &str = "STATE_SQLITE_TEST_ROLE";
const DB: &str = "STATE_SQLITE_TEST_DB";

/// What an older build left: every migration before 0009, recorded.
fn file_at_0008(path: &Path) -> Connection {
    let conn = Connection::open(path).expect("open");
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;")
        .expect("pragmas");
    migrate_before(&conn, 9);
    conn
}

/// A small deterministic generator (no seed file, same rows every run).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from((self.0 >> 33) % n as u64).expect("small")
    }
}

/// Appends `n` history rows over every entity type, with from-statuses,
/// same-status rows and NULLs, as the 0008 schema stored them.
fn fill_history(conn: &Connection, registry: &PolicyRegistry, n: usize, seed: u64) {
    let entities = [
        "session",
        "invocation",
        "schedule_run",
        "play",
        "show",
        "team",
        "dispatch",
        "schedule",
    ];
    let mut rng = Lcg(seed);
    let tx = conn.unchecked_transaction().expect("tx");
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status,
                    reason_code, reason_summary, reason_json, actor_type, actor_id, override_json,
                    created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, '{}', 'executor', 'old-build', ?7, ?8)",
            )
            .expect("prepare");
        for i in 0..n {
            let entity = entities[rng.below(entities.len())];
            let statuses = registry.get(entity).expect("a default policy").statuses();
            let to = &statuses[rng.below(statuses.len())];
            let from = match rng.below(4) {
                0 => None,
                1 => Some(to),
                _ => Some(&statuses[rng.below(statuses.len())]),
            };
            let over = (rng.below(10) == 0).then(|| format!("{{\"justification\":\"j{i}\"}}"));
            insert
                .execute(params![
                    entity,
                    format!("{entity}-{}", rng.below(50)),
                    from,
                    to,
                    format!("{entity}.{to}.old"),
                    format!("row {i}"),
                    over,
                    i64::try_from(i).expect("small") * 1000
                ])
                .expect("history row");
        }
    }
    tx.commit().expect("commit");
}

fn all_rows(conn: &Connection, sql: &str) -> Vec<Vec<Value>> {
    let mut stmt = conn.prepare(sql).expect("prepare");
    let width = stmt.column_count();
    stmt.query_map([], |r| (0..width).map(|i| r.get::<_, Value>(i)).collect())
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

fn undelivered_ids(conn: &Connection, registry: &PolicyRegistry, consumer: &str) -> Vec<i64> {
    undelivered(conn, registry, consumer)
        .expect("reconciliation query")
        .iter()
        .map(|t| t.id)
        .collect()
}

fn single<T: rusqlite::types::FromSql>(conn: &Connection, sql: &str) -> T {
    conn.query_row(sql, [], |r| r.get(0)).expect(sql)
}

#[test]
fn a_file_at_0008_upgrades_with_its_history_ids_and_deliveries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.db");
    let registry = default_registry();
    let (history, deliveries, before, newest) = {
        let conn = file_at_0008(&path);
        fill_history(&conn, registry, 600, 7);
        // Gaps, and the newest row deleted by hand (AUTOINCREMENT then
        // remembers an id above the highest one left).
        conn.execute_batch(
            "DELETE FROM status_transitions WHERE id % 7 = 3;
             DELETE FROM status_transitions WHERE id = (SELECT max(id) FROM status_transitions);",
        )
        .expect("gaps");
        let newest: i64 = single(&conn, "SELECT max(id) FROM status_transitions");
        let seq: i64 = single(
            &conn,
            "SELECT seq FROM sqlite_sequence WHERE name = 'status_transitions'",
        );
        assert!(seq > newest);
        // Acknowledgements: every third terminal move for `mailer`, every
        // fifth for `pager`, and one for the deleted newest id (possible
        // only with foreign keys off), which would hide whatever event is
        // given that id next.
        for (consumer, step) in [("mailer", 3), ("pager", 5)] {
            for (i, id) in undelivered_ids(&conn, registry, consumer)
                .into_iter()
                .enumerate()
            {
                if i % step == 0 {
                    conn.execute(
                        "INSERT INTO transition_deliveries (consumer, transition_id, delivered_at) VALUES (?1, ?2, ?3)",
                        params![consumer, id, id * 10],
                    )
                    .expect("delivery");
                }
            }
        }
        conn.execute_batch(&format!(
            "PRAGMA foreign_keys = OFF;
             INSERT INTO transition_deliveries VALUES ('mailer', {seq}, 1);
             PRAGMA foreign_keys = ON;"
        ))
        .expect("orphan delivery");
        let before: Vec<Vec<i64>> = ["mailer", "pager", "nobody"]
            .iter()
            .map(|c| undelivered_ids(&conn, registry, c))
            .collect();
        assert!(before[2].len() > 50, "enough terminal moves to compare");
        assert!(before[0].len() < before[2].len() && before[1].len() < before[2].len());
        (
            all_rows(&conn, "SELECT * FROM status_transitions ORDER BY id"),
            all_rows(
                &conn,
                &format!(
                    "SELECT * FROM transition_deliveries WHERE transition_id != {seq} ORDER BY consumer, transition_id"
                ),
            ),
            before,
            newest,
        )
    };

    let store = Store::new(Engine::open(&path, EngineConfig::default()).expect("upgrade"));
    let conn = store.engine().conn().expect("conn");
    assert_eq!(schema_version(&conn).expect("version"), 9);
    assert_eq!(
        all_rows(&conn, "SELECT * FROM status_transitions ORDER BY id"),
        history,
        "every row, id and column kept"
    );
    assert_eq!(
        all_rows(
            &conn,
            "SELECT * FROM transition_deliveries ORDER BY consumer, transition_id"
        ),
        deliveries,
        "every acknowledgement of an existing move kept, the orphan dropped"
    );
    let after: Vec<Vec<i64>> = ["mailer", "pager", "nobody"]
        .iter()
        .map(|c| undelivered_ids(&conn, store.registry(), c))
        .collect();
    assert_eq!(after, before, "the reconciliation query answers as before");
    assert!(all_rows(&conn, "PRAGMA foreign_key_check").is_empty());
    assert_eq!(single::<String>(&conn, "PRAGMA integrity_check"), "ok");
    assert_eq!(
        single::<i64>(
            &conn,
            "SELECT count(*) FROM sqlite_master WHERE name IN
             ('status_transitions_0008', 'transition_deliveries_0009', 'status_transitions_to_status')
             OR sql LIKE '%AUTOINCREMENT%' AND name = 'status_transitions'"
        ),
        0
    );

    // The next move takes the next id, and the id's old orphan
    // acknowledgement does not hide it from `mailer`.
    create(&store, "session", "after", "running", "run.started.ok", &[]);
    let done = store
        .transition(&TransitionCommand::new(
            "session",
            "after",
            "completed",
            Reason::new("run.completed.ok"),
            actor(ActorType::Executor),
        ))
        .expect("completed");
    assert_eq!(done.transition_id, Some(newest + 2));
    assert_eq!(
        undelivered_ids(&conn, store.registry(), "mailer").last(),
        Some(&(newest + 2))
    );
}

#[test]
fn the_reconciliation_query_searches_the_partial_terminal_index() {
    let db = db();
    let conn = db.store.engine().conn().expect("conn");
    let partial: i64 = conn
        .query_row(
            "SELECT partial FROM pragma_index_list('status_transitions') WHERE name = ?1",
            [TERMINAL_INDEX],
            |r| r.get(0),
        )
        .expect("the terminal index exists");
    assert_eq!(partial, 1);
    // Only terminal statuses of execution entities are in its predicate:
    // a dispatch's moves never enter it.
    let sql: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = ?1",
            [TERMINAL_INDEX],
            |r| r.get(0),
        )
        .expect("sql");
    for status in ["pending", "delivering", "delivered", "running", "queued"] {
        assert!(!sql.contains(&format!("'{status}'")), "{sql}");
    }
    let plan = undelivered_plan(&conn, db.store.registry()).expect("plan");
    let searches: Vec<&String> = plan
        .iter()
        .filter(|l| l.starts_with("SEARCH st "))
        .collect();
    assert!(!searches.is_empty(), "{plan:?}");
    assert!(
        searches
            .iter()
            .all(|l| l.contains(&format!("INDEX {TERMINAL_INDEX} "))),
        "{plan:?}"
    );
    assert!(!plan.iter().any(|l| l.starts_with("SCAN st")), "{plan:?}");
}

#[test]
fn a_status_that_is_no_plain_identifier_is_bound_not_inlined() {
    // A registry whose session policy ends runs in "o'clock" (a quote)
    // and "Done" (upper case): the query must neither break nor inline
    // them; it answers through bound values without the index.
    let mut registry = PolicyRegistry::new();
    for mut spec in default_policy_specs() {
        if spec.entity_type == "session" {
            for extra in ["o'clock", "Done"] {
                spec.statuses.push(extra.into());
                spec.terminal_statuses.push(extra.into());
            }
        }
        registry.register(spec).expect("a valid policy");
    }
    let db = db();
    let conn = db.store.engine().conn().expect("conn");
    for (i, to) in ["o'clock", "running", "Done", "completed"]
        .iter()
        .enumerate()
    {
        conn.execute(
            "INSERT INTO status_transitions (entity_type, entity_id, to_status, reason_code,
                actor_type, actor_id, created_at)
             VALUES ('session', ?1, ?2, 'run.x', 'executor', 't', 1)",
            params![format!("s{i}"), to],
        )
        .expect("history row");
    }
    let statuses = |r: &PolicyRegistry| -> Vec<String> {
        undelivered(&conn, r, "c")
            .expect("reconciliation query")
            .into_iter()
            .map(|t| t.to_status)
            .collect()
    };
    assert_eq!(statuses(&registry), ["o'clock", "Done", "completed"]);
    assert_eq!(statuses(default_registry()), ["completed"]);
    let plan = undelivered_plan(&conn, &registry).expect("plan");
    assert!(
        !plan.iter().any(|l| l.contains(TERMINAL_INDEX)),
        "no literal term, so no partial index: {plan:?}"
    );
}

#[test]
fn history_ids_take_no_sqlite_sequence_write_and_the_newest_row_stays() {
    let db = db();
    create(&db.store, "session", "s", "running", "run.started.ok", &[]);
    let conn = db.store.engine().conn().expect("conn");
    assert_eq!(
        single::<i64>(
            &conn,
            "SELECT count(*) FROM sqlite_sequence WHERE name = 'status_transitions'"
        ),
        0
    );
    let newest: i64 = single(&conn, "SELECT max(id) FROM status_transitions");
    let refused = conn
        .execute("DELETE FROM status_transitions WHERE id = ?1", [newest])
        .expect_err("the newest row is kept");
    assert!(refused.to_string().contains("never deleted"), "{refused}");
    let refused = conn
        .execute_batch("DELETE FROM status_transitions")
        .expect_err("a delete of every row reaches the newest");
    assert!(refused.to_string().contains("never deleted"), "{refused}");
    let refused = conn
        .execute(
            "UPDATE status_transitions SET id = id + 100 WHERE id = ?1",
            [newest],
        )
        .expect_err("ids never change");
    assert!(refused.to_string().contains("never changes"), "{refused}");
    assert_eq!(
        single::<i64>(&conn, "SELECT count(*) FROM status_transitions"),
        1
    );
}

#[derive(Debug, Clone)]
enum Op {
    Append,
    /// Delete the row at this position (modulo the rows left).
    Delete(usize),
    /// Change the id of the row at this position.
    Renumber(usize, i64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Append),
        2 => any::<usize>().prop_map(Op::Delete),
        1 => (any::<usize>(), -5i64..1000).prop_map(|(i, to)| Op::Renumber(i, to)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Whatever is deleted or renumbered (refused or not), every new id is
    /// above every id ever given: no reuse, no going back.
    #[test]
    fn history_ids_only_count_up(ops in prop::collection::vec(op(), 1..60)) {
        let mut conn = Connection::open_in_memory().expect("memory");
        conn.pragma_update(None, "foreign_keys", "ON").expect("fk");
        migrate(&mut conn).expect("migrate");
        let mut highest = 0i64;
        for op in ops {
            let ids: Vec<i64> = conn
                .prepare("SELECT id FROM status_transitions ORDER BY id")
                .expect("prepare")
                .query_map([], |r| r.get(0))
                .expect("ids")
                .collect::<Result<_, _>>()
                .expect("rows");
            match op {
                Op::Append => {
                    conn.execute(
                        "INSERT INTO status_transitions (entity_type, entity_id, to_status,
                            reason_code, actor_type, actor_id, created_at)
                         VALUES ('dispatch', 'd', 'pending', 'dispatch.pending.enqueued', 'executor', 'p', 1)",
                        [],
                    )
                    .expect("append");
                    let id = conn.last_insert_rowid();
                    prop_assert!(id > highest, "id {id} after {highest}");
                    highest = id;
                }
                Op::Delete(i) if !ids.is_empty() => {
                    let id = ids[i % ids.len()];
                    let deleted = conn.execute("DELETE FROM status_transitions WHERE id = ?1", [id]);
                    prop_assert_eq!(deleted.is_err(), id == highest);
                }
                Op::Renumber(i, to) if !ids.is_empty() => {
                    let id = ids[i % ids.len()];
                    let changed = conn.execute(
                        "UPDATE status_transitions SET id = ?1 WHERE id = ?2",
                        [to, id],
                    );
                    prop_assert!(changed.is_err() || to == id);
                }
                Op::Delete(_) | Op::Renumber(..) => {}
            }
        }
    }
}

/// Writes the 0008 file the interrupted-migration tests upgrade.
fn old_file(dir: &Path, rows: usize) -> (PathBuf, Vec<Vec<Value>>, Vec<Vec<Value>>) {
    let path = dir.join("old.db");
    let conn = file_at_0008(&path);
    let registry = default_registry();
    fill_history(&conn, registry, rows, 11);
    for id in undelivered_ids(&conn, registry, "mailer").iter().step_by(2) {
        conn.execute(
            "INSERT INTO transition_deliveries (consumer, transition_id, delivered_at) VALUES ('mailer', ?1, 1)",
            [id],
        )
        .expect("delivery");
    }
    let history = all_rows(&conn, "SELECT * FROM status_transitions ORDER BY id");
    let deliveries = all_rows(
        &conn,
        "SELECT * FROM transition_deliveries ORDER BY consumer, transition_id",
    );
    (path, history, deliveries)
}

/// The file is at 0009 with exactly the rows it had at 0008.
fn check_upgraded(path: &Path, history: &[Vec<Value>], deliveries: &[Vec<Value>]) {
    let store = Store::new(Engine::open(path, EngineConfig::default()).expect("upgrade"));
    let conn = store.engine().conn().expect("conn");
    assert_eq!(schema_version(&conn).expect("version"), 9);
    assert_eq!(
        all_rows(&conn, "SELECT * FROM status_transitions ORDER BY id"),
        history
    );
    assert_eq!(
        all_rows(
            &conn,
            "SELECT * FROM transition_deliveries ORDER BY consumer, transition_id"
        ),
        deliveries
    );
    assert_eq!(single::<String>(&conn, "PRAGMA integrity_check"), "ok");
}

#[test]
fn a_failed_0009_leaves_the_0008_file_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, history, deliveries) = old_file(dir.path(), 300);
    // Something in the way of the migration's last statement: a trigger
    // with the name 0009 gives one of its own.
    Connection::open(&path)
        .expect("open")
        .execute_batch(
            "CREATE TRIGGER status_transitions_id_fixed AFTER INSERT ON teams BEGIN SELECT 1; END;",
        )
        .expect("obstacle");
    Engine::open(&path, EngineConfig::default()).expect_err("0009 cannot finish");
    {
        let conn = Connection::open(&path).expect("open");
        assert_eq!(schema_version(&conn).expect("version"), 8);
        assert_eq!(
            all_rows(&conn, "SELECT * FROM status_transitions ORDER BY id"),
            history
        );
        let table: String = single(
            &conn,
            "SELECT sql FROM sqlite_master WHERE name = 'status_transitions'",
        );
        assert!(table.contains("AUTOINCREMENT"), "the old table: {table}");
        assert_eq!(
            single::<i64>(
                &conn,
                "SELECT count(*) FROM sqlite_master WHERE name IN
                 ('status_transitions_0008', 'transition_deliveries_0009', 'status_transitions_terminal')"
            ),
            0
        );
        conn.execute_batch("DROP TRIGGER status_transitions_id_fixed")
            .expect("clear the way");
    }
    check_upgraded(&path, &history, &deliveries);
}

/// Worker role: open (and so migrate) the file, saying when it starts.
#[test]
fn worker_open() {
    if std::env::var(ROLE).as_deref() != Ok("open") {
        return;
    }
    let path = PathBuf::from(std::env::var(DB).expect("db path"));
    #[allow(
        clippy::print_stdout,
        reason = "the worker reports to its parent on stdout"
    )]
    {
        println!("OPENING");
        let _engine = Engine::open(&path, EngineConfig::default()).expect("open");
        println!("OPENED");
    }
}

#[test]
fn a_migration_killed_half_way_is_redone_by_the_next_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, history, deliveries) = old_file(dir.path(), 60_000);
    // A pristine copy to start again from when a kill came too late, and how
    // long an open that migrates takes here (on another copy).
    let pristine = dir.path().join("pristine.db");
    let copy = dir.path().join("copy.db");
    {
        let conn = Connection::open(&path).expect("open");
        for target in [&pristine, &copy] {
            conn.execute("VACUUM INTO ?1", [target.to_str().expect("utf-8 path")])
                .expect("copy");
        }
    }
    let start = Instant::now();
    drop(Engine::open(&copy, EngineConfig::default()).expect("migrate the copy"));
    let mut delay = start.elapsed() / 2;
    let exe = std::env::current_exe().expect("test binary");
    let wal = |p: &Path| std::fs::metadata(p.with_extension("db-wal")).map_or(0, |m| m.len());
    let mut killed_mid_migration = 0;
    // SIGKILL the opening process after `delay`; then the file is either
    // still at 0008, all of it, or at 0009. A kill after the migration's
    // first pages spilled into the WAL (it grew) and before its commit
    // landed in the middle of it. The delay adapts, so load cannot make
    // every kill land before or after the migration: a kill that came
    // before it waits longer next time; one that came after it (the file
    // migrated) starts again from the pristine copy with a shorter wait.
    for _ in 0..200 {
        if killed_mid_migration >= 3 {
            break;
        }
        let wal_before = wal(&path);
        let mut child = Command::new(&exe)
            .args([
                "history_ids::worker_open",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ROLE, "open")
            .env(DB, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("worker");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        assert!(
            lines.any(|l| l.is_ok_and(|l| l.contains("OPENING"))),
            "the worker never started"
        );
        std::thread::sleep(delay);
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        let spilled = wal(&path) > wal_before;
        let conn = Connection::open(&path).expect("open");
        match schema_version(&conn).expect("version") {
            8 => {
                assert_eq!(
                    all_rows(&conn, "SELECT * FROM status_transitions ORDER BY id"),
                    history,
                    "all or nothing"
                );
                assert_eq!(
                    single::<i64>(
                        &conn,
                        "SELECT count(*) FROM sqlite_master WHERE name IN
                         ('status_transitions_0008', 'transition_deliveries_0009')"
                    ),
                    0
                );
                if spilled {
                    killed_mid_migration += 1;
                } else {
                    delay = delay * 3 / 2 + std::time::Duration::from_millis(1);
                }
            }
            9 => {
                drop(conn);
                check_upgraded(&path, &history, &deliveries);
                for suffix in ["db-wal", "db-shm"] {
                    let _ = std::fs::remove_file(path.with_extension(suffix));
                }
                std::fs::copy(&pristine, &path).expect("start again");
                delay /= 2;
            }
            other => panic!("schema version {other}"),
        }
    }
    assert!(killed_mid_migration > 0, "no kill landed mid-migration");
    check_upgraded(&path, &history, &deliveries);
}
