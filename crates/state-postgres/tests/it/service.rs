//! The transition service on PostgreSQL: CAS races between threads,
//! sinks after commit, audit rows, typed values.

use std::sync::{Arc, Barrier, Mutex};

use lifecycle_core::{
    Actor, ActorType, InitialCommand, OutcomeKind, Reason, TerminalEvent, TerminalSink,
    TransitionCommand,
};
use serde_json::json;
use state_postgres::{PgStore, PgStoreError};

use crate::common::{Schema, server};

fn actor() -> Actor {
    Actor::new(ActorType::Executor, "svc")
}

fn create(store: &PgStore, id: &str) {
    let out = store
        .create(&InitialCommand {
            entity_type: "session".into(),
            entity_id: id.into(),
            status: "running".into(),
            reason: Reason::new("run.started.ok"),
            actor: actor(),
            patch: Default::default(),
        })
        .expect("create");
    assert_eq!(out.result, OutcomeKind::Applied);
}

#[test]
fn racing_threads_on_one_version_have_exactly_one_winner() {
    let Some(url) = server("cas") else { return };
    let schema = Schema::new(&url, "cas");
    let store = schema.store();
    for round in 0..20 {
        let id = format!("s{round}");
        create(&store, &id);
        let version = store
            .status_of("session", &id)
            .expect("read")
            .expect("row")
            .1;
        let barrier = Arc::new(Barrier::new(6));
        let handles: Vec<_> = (0..6)
            .map(|i| {
                // Each thread its own engine: six hosts.
                let store = if i % 2 == 0 {
                    store.clone()
                } else {
                    schema.store()
                };
                let barrier = Arc::clone(&barrier);
                let id = id.clone();
                let to = ["completed", "failed", "cancelled"][i % 3];
                let code = [
                    "run.completed.ok",
                    "run.failed.exception",
                    "run.cancelled.manual_kill",
                ][i % 3];
                std::thread::spawn(move || {
                    barrier.wait();
                    store
                        .transition(
                            &TransitionCommand::new("session", &id, to, Reason::new(code), actor())
                                .expecting("running")
                                .with_version(version),
                        )
                        .expect("transition")
                        .result
                })
            })
            .collect();
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect();
        let wins = results
            .iter()
            .filter(|r| **r == OutcomeKind::Applied)
            .count();
        assert_eq!(wins, 1, "round {round}: {results:?}");
        assert!(
            results
                .iter()
                .all(|r| matches!(r, OutcomeKind::Applied | OutcomeKind::Conflict))
        );
        assert_eq!(store.history("session", &id).expect("history").len(), 2);
    }
}

#[test]
fn unguarded_moves_from_many_hosts_all_apply_in_some_serial_order() {
    let Some(url) = server("serial") else { return };
    let schema = Schema::new(&url, "serial");
    let store = schema.store();
    create(&store, "s");
    // Unguarded running -> running appends (the session policy appends on
    // a same-status move) from four hosts at once: every one applies (a
    // lost CAS runs again from a fresh read), and the history stays one
    // chain whose every version is distinct.
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let store = schema.store();
            std::thread::spawn(move || {
                let mut applied = 0;
                for _ in 0..25 {
                    let out = store
                        .transition(&TransitionCommand::new(
                            "session",
                            "s",
                            "running",
                            Reason::new("run.started.ok"),
                            actor(),
                        ))
                        .expect("transition");
                    if out.result == OutcomeKind::Applied {
                        applied += 1;
                    }
                }
                applied
            })
        })
        .collect();
    let applied: usize = handles.into_iter().map(|h| h.join().expect("thread")).sum();
    let history = store.history("session", "s").expect("history");
    assert_eq!(applied, 100, "every unguarded move applies");
    assert_eq!(history.len(), applied + 1);
    let mut versions: Vec<i64> = history.iter().map(|t| t.created_at).collect();
    versions.dedup();
    assert_eq!(
        versions.len(),
        history.len(),
        "every write bumped the version"
    );
    for pair in history.windows(2) {
        assert_eq!(
            pair[1].from_status.as_deref(),
            Some(pair[0].to_status.as_str()),
            "one chain"
        );
    }
    let (status, _) = store.status_of("session", "s").expect("read").expect("row");
    assert_eq!(
        history.last().map(|t| t.to_status.as_str()),
        Some(status.as_str())
    );
}

struct Recorder {
    store: PgStore,
    seen: Mutex<Vec<(i64, Option<String>)>>,
}

impl TerminalSink for Recorder {
    fn on_terminal(
        &self,
        event: &TerminalEvent,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        // Another connection sees the row terminal already: the sink runs
        // after commit.
        let status = self
            .store
            .status_of("session", &event.transition.entity_id)?
            .map(|s| s.0);
        self.seen
            .lock()
            .map_err(|_| "poisoned")?
            .push((event.transition.id, status));
        Err("a failing sink changes nothing".into())
    }
}

#[test]
fn terminal_sinks_run_after_commit_and_rejections_are_audited() {
    let Some(url) = server("sinks") else { return };
    let schema = Schema::new(&url, "sinks");
    let mut store = schema.store();
    let sink = Arc::new(Recorder {
        store: schema.store(),
        seen: Mutex::new(Vec::new()),
    });
    store.add_terminal_sink(sink.clone());
    create(&store, "s1");
    let out = store
        .transition(
            &TransitionCommand::new(
                "session",
                "s1",
                "completed",
                Reason::new("run.completed.ok"),
                actor(),
            )
            .expecting("running"),
        )
        .expect("complete");
    assert_eq!(out.result, OutcomeKind::Applied);
    let seen = sink.seen.lock().expect("seen").clone();
    assert_eq!(
        seen,
        vec![(out.transition_id.expect("id"), Some("completed".to_owned()))]
    );

    // Leaving the terminal status is rejected, with an audit row and no
    // history row.
    let out = store
        .transition(&TransitionCommand::new(
            "session",
            "s1",
            "running",
            Reason::new("session.reopened.by_resume"),
            actor(),
        ))
        .expect("reject");
    assert_eq!(out.result, OutcomeKind::Rejected);
    let events = store.admin_events("session", "s1").expect("audit");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, "transition.rejected");
    assert_eq!(events[0].detail["rejection"], json!("terminal_exit"));
    assert_eq!(store.history("session", "s1").expect("history").len(), 2);
    assert_eq!(
        sink.seen.lock().expect("seen").len(),
        1,
        "no sink call without a terminal move"
    );
}

#[test]
fn a_value_the_column_cannot_hold_is_a_typed_error_that_writes_nothing() {
    let Some(url) = server("values") else { return };
    let schema = Schema::new(&url, "values");
    let store = schema.store();
    create(&store, "s1");
    let err = store
        .transition(
            &TransitionCommand::new(
                "session",
                "s1",
                "completed",
                Reason::new("run.completed.ok"),
                actor(),
            )
            .with_patch("ended_at", json!("yesterday")),
        )
        .expect_err("text into a bigint");
    assert!(matches!(err, PgStoreError::BadValue { .. }), "{err:?}");
    assert_eq!(store.history("session", "s1").expect("history").len(), 1);
    let cols = std::collections::BTreeMap::from([("status".to_owned(), json!("x"))]);
    assert!(matches!(
        store.update_session("s1", &cols),
        Err(PgStoreError::ColumnNotAllowed { .. })
    ));
}

/// The server URL with every transaction SERIALIZABLE.
fn serializable(url: &str) -> String {
    let opt = "-c default_transaction_isolation=serializable";
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!(
            "{url}{sep}options={}",
            opt.replace(' ', "%20").replace('=', "%3D")
        )
    } else {
        format!("{url} options='{opt}'")
    }
}

#[test]
fn serialization_failures_are_retried_until_every_move_applies() {
    let Some(url) = server("serializable") else {
        return;
    };
    let schema = Schema::new(&url, "serializable");
    let strict = serializable(&url);
    let open = || {
        state_postgres::PgStore::new(
            state_postgres::PgEngine::open(
                &state_postgres::PgConfig::new(strict.as_str())
                    .with_schema(schema.name.clone())
                    .with_pool_size(2),
            )
            .expect("open serializable"),
        )
    };
    let store = open();
    let mut c = store.engine().connect_direct().expect("direct");
    let level: String = c
        .query_one("SHOW transaction_isolation", &[])
        .expect("show")
        .get(0);
    assert_eq!(level, "serializable");
    create(&store, "s");
    // Concurrent writers of one row under SERIALIZABLE: the losers get
    // SQLSTATE 40001, and the store runs their transaction again.
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let store = open();
            std::thread::spawn(move || {
                for _ in 0..15 {
                    let out = store
                        .transition(&TransitionCommand::new(
                            "session",
                            "s",
                            "running",
                            Reason::new("run.started.ok"),
                            actor(),
                        ))
                        .expect("every move applies after its retries");
                    assert_eq!(out.result, OutcomeKind::Applied);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    assert_eq!(store.history("session", "s").expect("history").len(), 61);
}
