//! A store shared by several hosts: the orphan sweep (`run`'s preamble,
//! `kill --all-stale`, `state doctor`) judges only sessions owned by this
//! host. Another host's session, whose leg is a real live process here
//! (what a pid on another machine may name), is never signalled nor ended;
//! this host's session from a previous boot still is. On SQLite and on a
//! real PostgreSQL server (`LIONRT_TEST_PG`, a schema per test).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output};

use lifecycle_core::{
    Actor, ActorType, LegRecord, OwnerRecord, SessionRecorder, SessionStart, leg_columns,
};
use serde_json::Value;

/// Where the commands under test point.
enum Db<'a> {
    Sqlite(&'a Path),
    Pg { url: &'a str, schema: &'a str },
}

impl Db<'_> {
    fn lionrt(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lionrt"));
        cmd.env_remove("LIONRT_DB");
        match self {
            Db::Sqlite(path) => cmd.arg("--db").arg(path),
            Db::Pg { url, schema } => cmd.arg("--db").arg(url).env("LIONRT_PG_SCHEMA", schema),
        };
        cmd.args(args).output().expect("run lionrt")
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.lionrt(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        crate::stdout_json(&out)
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn start_time(pid: u32) -> Option<i64> {
    let pid = i32::try_from(pid).ok()?;
    let stat = procfs::process::Process::new(pid).ok()?.stat().ok()?;
    i64::try_from(stat.starttime).ok()
}

/// A live process in a group of its own: the leg another host's record
/// names (its pid and start time are real here).
struct Leg {
    child: Child,
    record: LegRecord,
}

impl Leg {
    fn spawn() -> Self {
        let child = Command::new("sleep")
            .arg("120")
            .process_group(0)
            .spawn()
            .expect("spawn a leg");
        let pid = i64::from(child.id());
        let create_time = start_time(child.id());
        assert!(create_time.is_some(), "the leg's start time is readable");
        Leg {
            child,
            record: LegRecord {
                pid,
                pgid: pid,
                create_time,
            },
        }
    }

    /// Alive, and still the same process.
    fn assert_untouched(&mut self, after: &str) {
        assert_eq!(
            self.child.try_wait().expect("poll the leg"),
            None,
            "the leg was ended by {after}"
        );
        assert_eq!(start_time(self.child.id()), self.record.create_time);
    }
}

impl Drop for Leg {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A pid that names no process now, with a start time.
fn gone_owner(boot: &str, host: Option<&str>) -> OwnerRecord {
    let mut child = Command::new("true").spawn().expect("spawn");
    let pid = child.id();
    child.wait().expect("reap");
    OwnerRecord {
        pid: i64::from(pid),
        start_time: Some(12_345),
        boot_id: Some(boot.to_owned()),
        host_id: host.map(str::to_owned),
    }
}

fn record<R: SessionRecorder>(store: &R, id: &str, owner: OwnerRecord, leg: Option<&LegRecord>)
where
    R::Error: std::fmt::Debug,
{
    let start = SessionStart {
        owner: Some(owner),
        ..SessionStart::new(id, "run.started.ok")
    };
    store
        .persist_session_start(&start, &Actor::new(ActorType::Executor, "test"))
        .expect("start");
    if let Some(leg) = leg {
        assert!(store.update_session(id, &leg_columns(leg)).expect("leg"));
    }
}

/// The ids and owner states a sweep report left alone.
fn left_alone(v: &Value) -> Vec<(String, String)> {
    v["left_alone"]
        .as_array()
        .expect("left_alone")
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap_or_default().to_owned(),
                p[1].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn orphan_ids(v: &Value) -> Vec<String> {
    v["orphans"]
        .as_array()
        .expect("orphans")
        .iter()
        .filter_map(|o| o["id"].as_str().map(str::to_owned))
        .collect()
}

/// The sessions every scenario records, and what is checked after each
/// sweeping command. `legacy` is what a row with no host recorded and
/// another boot id must come to: ended on a single-host file, left alone
/// (host unknown) on a shared server.
fn scenario<R: SessionRecorder>(db: &Db<'_>, store: &R, shared: bool)
where
    R::Error: std::fmt::Debug,
{
    let this_boot = runner::boot_id().expect("this boot has an id");
    let this_host = runner::host_id().expect("this host has an identity");
    let mut leg = Leg::spawn();
    // Another host, the same boot id (a container of this kernel, or just
    // a coincidence a sweep must not trust): its owner's pid is gone here
    // and its leg's pid and start time name a live process here, so on
    // this host both would be proof and the leg would get SIGKILL.
    record(
        store,
        "theirs-same-boot",
        gone_owner(&this_boot, Some("machine-b:host-b")),
        Some(&leg.record),
    );
    // Another host, another boot: what the old sweep called "rebooted".
    record(
        store,
        "theirs-other-boot",
        gone_owner("boot-of-host-b", Some("machine-b:host-b")),
        Some(&leg.record),
    );
    // This host, a boot before this one: ended, its leg not signalled.
    record(
        store,
        "ours-rebooted",
        gone_owner("a-boot-before-this-one", Some(&this_host)),
        Some(&leg.record),
    );
    // A row from before the host column, from another boot, naming the
    // live leg.
    record(
        store,
        "legacy-other-boot",
        gone_owner("boot-of-someone", None),
        Some(&leg.record),
    );
    // A row from before the host column, this boot, its owner gone.
    record(
        store,
        "legacy-this-boot",
        gone_owner(&this_boot, None),
        None,
    );

    let mut expect_ended = vec!["ours-rebooted", "legacy-this-boot"];
    let mut expect_alone = vec![
        ("theirs-same-boot", "other_host"),
        ("theirs-other-boot", "other_host"),
    ];
    if shared {
        expect_alone.push(("legacy-other-boot", "host_unknown"));
    } else {
        expect_ended.push("legacy-other-boot");
    }
    expect_ended.sort_unstable();
    expect_alone.sort_unstable();
    let alone_of = |v: &Value| {
        let mut got = left_alone(v);
        got.sort();
        got
    };
    let want_alone: Vec<(String, String)> = expect_alone
        .iter()
        .map(|(i, s)| ((*i).to_owned(), (*s).to_owned()))
        .collect();

    // The dry run reports without touching anything.
    let dry = db.json(&["--json", "kill", "--all-stale", "--dry-run"]);
    let mut found = orphan_ids(&dry);
    found.sort();
    assert_eq!(found, expect_ended, "{dry}");
    assert_eq!(alone_of(&dry), want_alone, "{dry}");
    leg.assert_untouched("kill --all-stale --dry-run");

    // state doctor ends this host's orphans, and only them.
    let doctor = db.json(&["--json", "state", "doctor"]);
    let mut found = orphan_ids(&doctor);
    found.sort();
    assert_eq!(found, expect_ended, "{doctor}");
    assert_eq!(alone_of(&doctor), want_alone, "{doctor}");
    for orphan in doctor["orphans"].as_array().expect("orphans") {
        // Rebooted records name nobody alive now; the rest have no leg.
        assert_ne!(orphan["leg_signal"], "sent", "{doctor}");
    }
    leg.assert_untouched("state doctor");
    let doctor_text = text(&db.lionrt(&["state", "doctor", "--dry-run"]));
    assert!(
        doctor_text.contains("theirs-same-boot") && doctor_text.contains("OtherHost"),
        "{doctor_text}"
    );

    // kill --all-stale and a run's own sweep find nothing more to end.
    let again = db.json(&["--json", "kill", "--all-stale"]);
    assert_eq!(orphan_ids(&again), Vec::<String>::new(), "{again}");
    assert_eq!(alone_of(&again), want_alone, "{again}");
    leg.assert_untouched("kill --all-stale");
    let run = db.lionrt(&["--json", "run", "--session", "fresh-run"]);
    assert!(run.status.success(), "{}", text(&run));
    leg.assert_untouched("lionrt run");

    // Health lists another host's sessions as such.
    let health = db.json(&["--json", "state", "health", "--all"]);
    let listed = health["sessions"].as_array().expect("sessions");
    for (id, other) in [
        ("theirs-same-boot", true),
        ("theirs-other-boot", true),
        ("ours-rebooted", false),
        ("legacy-other-boot", false),
        ("fresh-run", false),
    ] {
        let entry = listed
            .iter()
            .find(|e| e["id"] == id)
            .unwrap_or_else(|| panic!("{id} is listed: {health}"));
        assert_eq!(entry["other_host"], other, "{id}: {health}");
    }
    let health_text = text(&db.lionrt(&["state", "health", "--all"]));
    assert!(
        health_text
            .lines()
            .any(|l| l.contains("theirs-same-boot") && l.ends_with("(other host)")),
        "{health_text}"
    );
    leg.assert_untouched("state health");

    // An explicit kill of another host's session is refused.
    let kill = db.lionrt(&["kill", "theirs-same-boot", "--grace", "0"]);
    assert!(!kill.status.success(), "{}", text(&kill));
    assert!(
        text(&kill).contains("owned by another host (machine-b:host-b)"),
        "{}",
        text(&kill)
    );
    leg.assert_untouched("kill theirs-same-boot");

    for id in ["theirs-same-boot", "theirs-other-boot"] {
        let s = store.session(id).expect("read").expect("row");
        assert_eq!(s.status, "running", "{id} was ended");
    }
    if shared {
        let s = store
            .session("legacy-other-boot")
            .expect("read")
            .expect("row");
        assert_eq!(s.status, "running", "a legacy row ended on a shared store");
        // An operator's explicit kill of it records the end but signals
        // nothing: whose host its leg pid names is not known.
        let kill = db.json(&["--json", "kill", "legacy-other-boot", "--grace", "0"]);
        assert_eq!(kill["status"], "cancelled", "{kill}");
        assert_eq!(kill["owner"], "host_unknown", "{kill}");
        assert_eq!(kill["signals"], serde_json::json!([]), "{kill}");
        leg.assert_untouched("kill legacy-other-boot");
    }
    for id in expect_ended {
        let s = store.session(id).expect("read").expect("row");
        assert_eq!(s.status, "failed", "{id}");
        assert_eq!(
            s.reason_code.as_deref(),
            Some(runner::ORPHAN_REASON),
            "{id}"
        );
    }
    // The run recorded this host as its owner.
    let fresh = store.session("fresh-run").expect("read").expect("row");
    let owner = fresh.owner().expect("an owner");
    assert_eq!(owner.host_id.as_deref(), Some(this_host.as_str()));
    assert_eq!(owner.boot_id.as_deref(), Some(this_boot.as_str()));
}

#[test]
fn on_sqlite_the_sweep_never_touches_another_hosts_live_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let db = Db::Sqlite(&path);
    assert!(db.lionrt(&["state", "init"]).status.success());
    let store = state_sqlite::Store::new(
        state_sqlite::Engine::create(&path, state_sqlite::EngineConfig::default()).expect("engine"),
    );
    scenario(&db, &store, false);
}

#[test]
fn on_postgres_the_sweep_never_touches_another_hosts_live_session() {
    let Ok(url) = std::env::var("LIONRT_TEST_PG") else {
        #[allow(clippy::print_stderr, reason = "a skipped test says why")]
        {
            eprintln!(
                "skipped: LIONRT_TEST_PG is unset (start a server with `eval \"$(.ci/pg-cluster start)\"`)"
            );
        }
        return;
    };
    let schema = format!("lionrt_multihost_{}", std::process::id());
    let db = Db::Pg {
        url: &url,
        schema: &schema,
    };
    let engine = state_postgres::PgEngine::open(
        &state_postgres::PgConfig::new(state_postgres::DbUrl::new(url.clone()))
            .with_schema(schema.clone()),
    )
    .expect("open the schema");
    let store = state_postgres::PgStore::new(engine);
    scenario(&db, &store, true);
    drop(store);
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .expect("drop");
}
