//! The behaviour every `StateReader` (with `SessionRetention`) must show,
//! checked on a store written through its `SessionRecorder`.

use lifecycle_core::{
    Actor, ActorType, ID_CANDIDATES, IdMatch, OwnerRecord, SessionEnd, SessionFilter,
    SessionRecorder, SessionRetention, SessionStart, Usage,
};

fn actor() -> Actor {
    Actor::new(ActorType::Executor, "reader-contract")
}

fn ok<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn start<S: SessionRecorder>(store: &S, id: &str, invocation: Option<&str>) {
    let start = SessionStart {
        kind: Some("orchestrated".into()),
        model: Some("m-1".into()),
        provider: Some("scripted".into()),
        cwd: Some("/w".into()),
        pid: Some(4242),
        invocation_id: invocation.map(str::to_owned),
        owner: Some(OwnerRecord {
            pid: 77,
            start_time: Some(1),
            boot_id: None,
            host_id: Some(format!("host-of-{id}")),
        }),
        ..SessionStart::new(id, "run.started.ok")
    };
    ok("start", store.persist_session_start(&start, &actor()));
}

fn end<S: SessionRecorder>(store: &S, id: &str, status: &str, reason: &str, at: i64) {
    let end = SessionEnd {
        usage: Usage {
            input_tokens: Some(10),
            output_tokens: Some(20),
            ..Usage::default()
        },
        ..SessionEnd::new(id, status, reason, at)
    };
    ok("end", store.persist_session_end(&end, &actor()));
}

fn ids(rows: &[lifecycle_core::SessionRow]) -> Vec<&str> {
    rows.iter().map(|r| r.id.as_str()).collect()
}

/// Runs the read-side contract against fresh stores from `make`; panics
/// (naming the rule) on the first violation. For use in tests.
pub fn state_reader_contract<S: SessionRecorder + SessionRetention>(make: impl Fn() -> S) {
    // Listing: newest first, filtered by status, openness, age and limit.
    let store = make();
    for id in ["a1", "a2", "a3"] {
        start(&store, id, Some("inv-9"));
    }
    end(&store, "a2", "completed", "run.completed.ok", 1_000);
    let all = ok("ls", store.sessions(&SessionFilter::all()));
    assert_eq!(ids(&all), ["a3", "a2", "a1"], "newest first");
    let mut f = SessionFilter::all();
    f.status = Some("completed".into());
    assert_eq!(ids(&ok("ls status", store.sessions(&f))), ["a2"]);
    assert_eq!(
        ids(&ok("ls open", store.sessions(&SessionFilter::open()))),
        ["a3", "a1"]
    );
    let mut f = SessionFilter::all();
    f.limit = Some(2);
    assert_eq!(ids(&ok("ls limit", store.sessions(&f))), ["a3", "a2"]);
    let mut f = SessionFilter::all();
    f.since = Some(all[0].created_at.saturating_add(1));
    assert!(ok("ls since", store.sessions(&f)).is_empty(), "since");

    // One row carries what the recorder wrote.
    let row = ok("row", store.session_row("a2")).expect("a2 exists");
    assert_eq!(row.status, "completed");
    assert_eq!(row.reason_code.as_deref(), Some("run.completed.ok"));
    assert_eq!(row.provider.as_deref(), Some("scripted"));
    assert_eq!(row.model.as_deref(), Some("m-1"));
    assert_eq!(row.kind.as_deref(), Some("orchestrated"));
    assert_eq!(row.cwd.as_deref(), Some("/w"));
    assert_eq!(row.pid, Some(4242));
    assert_eq!(row.owner_pid, Some(77));
    assert_eq!((row.input_tokens, row.output_tokens), (Some(10), Some(20)));
    assert_eq!(row.ended_at, Some(1_000));
    assert_eq!(ok("missing row", store.session_row("zz")), None);

    // Messages: write order (not created_at order), a cursor, a limit,
    // a repeated id not counted twice.
    for (mid, at) in [("m-c", 30), ("m-a", 10), ("m-b", 20)] {
        assert!(ok(
            "message",
            store.record_message("a1", mid, "assistant", "\"hi\"", at)
        ));
    }
    assert!(!ok(
        "again",
        store.record_message("a1", "m-a", "assistant", "\"x\"", 40)
    ));
    let msgs = ok("messages", store.messages("a1", 0, 100));
    let order: Vec<&str> = msgs.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(order, ["m-c", "m-a", "m-b"], "write order");
    assert!(msgs.windows(2).all(|w| w[0].seq < w[1].seq), "seq grows");
    let after = ok("after", store.messages("a1", msgs[0].seq, 100));
    assert_eq!(after.len(), 2);
    assert_eq!(after[0].id, "m-a");
    assert_eq!(ok("limit", store.messages("a1", 0, 1)).len(), 1);
    assert_eq!(msgs[0].role, "assistant");
    assert_eq!(msgs[0].content, "\"hi\"");
    assert_eq!(msgs[0].created_at, 30);
    assert_eq!(
        ok("row", store.session_row("a1")).map(|r| r.messages),
        Some(3)
    );

    // Prefixes: an exact id wins over longer ids, a unique prefix names its
    // id, none and several are told apart (several sorted and capped).
    start(&store, "a10", None);
    assert_eq!(
        ok("exact", store.match_id("session", "a1")),
        IdMatch::One("a1".into())
    );
    assert_eq!(
        ok("unique", store.match_id("session", "a3")),
        IdMatch::One("a3".into())
    );
    assert_eq!(ok("none", store.match_id("session", "b")), IdMatch::None);
    for i in 0..=ID_CANDIDATES {
        start(&store, &format!("c{i}"), None);
    }
    match ok("several", store.match_id("session", "c")) {
        IdMatch::Several(c) => {
            let want: Vec<String> = (0..ID_CANDIDATES).map(|i| format!("c{i}")).collect();
            assert_eq!(c, want, "sorted, at most ID_CANDIDATES");
        }
        other => panic!("prefix c names several sessions, got {other:?}"),
    }
    assert!(
        store.match_id("spaceship", "x").is_err(),
        "unknown entity type"
    );

    // History, invocations, in flight, activity and counts.
    assert_eq!(
        ok("transitions", store.transitions("session", "a2")),
        ok("history", store.history("session", "a2"))
    );
    assert_eq!(
        ok("transitions", store.transitions("session", "a2")).len(),
        2
    );
    assert_eq!(
        ok("invocation", store.sessions_of_invocation("inv-9")),
        ["a1", "a2", "a3"]
    );
    let flight = ok("in flight", store.in_flight());
    assert!(flight.sessions.iter().all(|s| s.id != "a2"), "a2 ended");
    assert!(flight.sessions.iter().any(|s| s.id == "a1"));
    let activity = ok("activity", store.session_activity());
    let a1 = activity.iter().find(|a| a.id == "a1").expect("a1 activity");
    assert_eq!(a1.messages, 3);
    assert_eq!(a1.pid, Some(4242));
    assert_eq!(a1.last_activity, 30, "the newest message's time");
    assert_eq!(
        a1.owner_host_id.as_deref(),
        Some("host-of-a1"),
        "the owner's host, for health to tell another host's sessions"
    );
    let counts = ok("counts", store.row_counts());
    let n = |t: &str| counts.tables.iter().find(|(n, _)| n == t).map(|(_, n)| *n);
    assert_eq!(
        n("sessions"),
        Some(i64::try_from(activity.len()).unwrap_or(0))
    );
    assert_eq!(n("messages"), Some(3));
    assert!(counts.schema_version >= 1);
    assert!(
        counts
            .sessions_by_status
            .contains(&("completed".to_owned(), 1))
    );

    // Retention: only terminal sessions that ended before the bound go,
    // with their messages; a dry run counts and keeps; history stays.
    let store = make();
    start(&store, "old", None);
    ok("m", store.record_message("old", "o-1", "user", "\"q\"", 5));
    end(&store, "old", "completed", "run.completed.ok", 1_000);
    start(&store, "late", None);
    end(&store, "late", "failed", "run.failed.exit_nonzero", 5_000);
    start(&store, "open", None);
    let who = Actor::new(ActorType::Operator, "reader-contract");
    let dry = ok("dry prune", store.prune_sessions(2_000, true, &who));
    assert_eq!((dry.sessions, dry.messages, dry.dry_run), (1, 1, true));
    assert!(
        ok("still", store.session_row("old")).is_some(),
        "dry run keeps"
    );
    let done = ok("prune", store.prune_sessions(2_000, false, &who));
    assert_eq!((done.sessions, done.messages, done.dry_run), (1, 1, false));
    assert!(ok("gone", store.session_row("old")).is_none());
    assert!(ok("gone msgs", store.messages("old", 0, 10)).is_empty());
    assert!(
        ok("late", store.session_row("late")).is_some(),
        "ended after"
    );
    assert!(ok("open", store.session_row("open")).is_some(), "open kept");
    assert_eq!(
        ok("history kept", store.transitions("session", "old")).len(),
        2
    );
    // Even a far bound never takes an open session.
    ok("prune all", store.prune_sessions(i64::MAX, false, &who));
    assert!(ok("open", store.session_row("open")).is_some());
    assert!(ok("late", store.session_row("late")).is_none());
}
