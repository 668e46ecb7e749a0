//! The fleet page's read over a SQLite store of 100,000 sessions (paged,
//! 50 rows) against the floor, the bare page query (`SELECT .. ORDER BY
//! created_at DESC, id DESC LIMIT 51`), alternating in one run; also the
//! fleet filtered to one group. The fleet read adds the counts per group
//! and per provider (aggregates over every matching session).
//!
//! `cargo bench -p web-monitor --bench fleet` (`FLEET_SESSIONS` sets the
//! size, default 100000).
#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]

use std::time::{Duration, Instant};

use web_monitor::queries::{self, Group, SessionQuery};
use web_monitor::{Source, SqliteSource};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let n: i64 = std::env::var("FLEET_SESSIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let engine =
        state_sqlite::Engine::create(&path, state_sqlite::EngineConfig::default()).expect("create");
    {
        let mut conn = engine.conn().expect("conn");
        let tx = conn.transaction().expect("tx");
        {
            let mut ins = tx
                .prepare(
                    "INSERT INTO sessions (id, status, provider, model, created_at, updated_at, total_cost_usd)
                     VALUES (?1, ?2, ?3, 'm', ?4, ?4, ?5)",
                )
                .expect("prepare");
            let statuses = [
                "completed",
                "failed",
                "running",
                "completed_empty",
                "cancelled",
            ];
            let providers = ["claude", "codex", "gemini", "pi"];
            for i in 0..n {
                let status = statuses[(i % 5) as usize];
                let provider = providers[(i % 4) as usize];
                let cost = (i % 3 == 0).then_some(0.01);
                ins.execute(rusqlite::params![
                    format!("s-{i:07}"),
                    status,
                    provider,
                    1_000 + i,
                    cost
                ])
                .expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    let ro = state_sqlite::ReadOnlyEngine::open(&path, Duration::from_secs(5)).expect("open");
    let src = SqliteSource::new(ro, path.display().to_string());
    let quiet = i64::MAX / 2;
    let bare = |src: &SqliteSource| {
        src.query(
            "SELECT s.id, s.status, s.provider, s.model, s.created_at FROM sessions s \
             ORDER BY s.created_at DESC, s.id DESC LIMIT $1",
            &[web_monitor::source::Param::Int(51)],
        )
        .expect("bare")
        .len()
    };
    let all = SessionQuery::default();
    let failed = SessionQuery {
        group: Some(Group::Failed),
        ..SessionQuery::default()
    };
    let (mut floor, mut fleet, mut grouped) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..15 {
        let t = Instant::now();
        assert_eq!(bare(&src), 51);
        floor.push(t.elapsed());
        let t = Instant::now();
        let page = queries::fleet(&src, &all, quiet).expect("fleet");
        fleet.push(t.elapsed());
        assert_eq!(page["items"].as_array().map(Vec::len), Some(50));
        let t = Instant::now();
        let page = queries::fleet(&src, &failed, quiet).expect("fleet");
        grouped.push(t.elapsed());
        assert!(page["next"].is_string());
    }
    println!(
        "{n} sessions, SQLite, median of 15: bare page query {:?}; fleet page (rows + counts per group and provider) {:?}; fleet group=failed {:?}",
        median(floor),
        median(fleet),
        median(grouped)
    );
}
