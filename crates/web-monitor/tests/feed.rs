//! The change feed and the event streams over a real SQLite file: each
//! stream of changes stays in write order whatever the clock did, one
//! feed serves any number of streams with the same checks, and a stream
//! from an old cursor catches up before it follows.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use web_monitor::feed::{self, Feed, StreamFilter};
use web_monitor::queries::{self, Cursor};
use web_monitor::{Source, SqliteSource};

struct Store {
    _dir: tempfile::TempDir,
    engine: state_sqlite::Engine,
    src: Arc<dyn Source>,
}

fn store() -> Store {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let engine =
        state_sqlite::Engine::create(&path, state_sqlite::EngineConfig::default()).expect("create");
    let ro = state_sqlite::ReadOnlyEngine::open(&path, Duration::from_secs(5)).expect("open");
    Store {
        _dir: dir,
        engine,
        src: Arc::new(SqliteSource::new(ro, path.display().to_string())),
    }
}

impl Store {
    fn sql(&self, sql: &str) {
        self.engine
            .conn()
            .expect("conn")
            .execute_batch(sql)
            .expect("sql");
    }

    /// A running session `id` with a creation transition at `at`.
    fn session(&self, id: &str, at: i64) {
        self.sql(&format!(
            "INSERT INTO sessions (id, status, created_at, updated_at) VALUES ('{id}', 'running', {at}, {at});
             INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status, reason_code, actor_type, actor_id, created_at)
             VALUES ('session', '{id}', NULL, 'running', 'run.started.ok', 'executor', 't', {at});"
        ));
    }

    fn message(&self, session: &str, n: u32, at: i64) {
        self.sql(&format!(
            "INSERT INTO messages (id, session_id, role, content, created_at)
             VALUES ('{session}:{n}', '{session}', 'assistant', '{{\"text\":\"m{n}\"}}', {at})"
        ));
    }

    fn end(&self, id: &str, at: i64) {
        self.sql(&format!(
            "UPDATE sessions SET status = 'completed', updated_at = {at} WHERE id = '{id}';
             INSERT INTO status_transitions (entity_type, entity_id, from_status, to_status, reason_code, actor_type, actor_id, created_at)
             VALUES ('session', '{id}', 'running', 'completed', 'run.completed.ok', 'executor', 't', {at});"
        ));
    }
}

#[test]
fn cursors_round_trip_and_refuse_garbage() {
    let c = Cursor {
        transition: 3,
        message: 40,
        admin: 0,
    };
    assert_eq!(Cursor::parse(&c.to_id()), Some(c));
    for bad in ["", "1-2", "1-2-3-4", "a-b-c", "-1-2-3", "1--2-3"] {
        assert_eq!(Cursor::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn each_kind_stays_in_write_order_when_the_clock_steps_back() {
    let s = store();
    s.session("a", 1_000);
    s.message("a", 1, 900); // the clock stepped back
    s.message("a", 2, 2_000);
    s.end("a", 500); // and again
    let head = queries::head(&*s.src, Cursor::default()).expect("head");
    assert_eq!(
        head,
        Cursor {
            transition: 2,
            message: 2,
            admin: 0
        }
    );
    let (changes, reached) =
        queries::changes(&*s.src, Cursor::default(), head, 100).expect("changes");
    assert_eq!(reached, head);
    let mut last = Cursor::default();
    let mut transitions = Vec::new();
    let mut messages = Vec::new();
    for c in &changes {
        assert!(
            last.within(c.cursor) && last != c.cursor,
            "cursors only grow"
        );
        last = c.cursor;
        match c.kind {
            "transition" => transitions.push(c.data["id"].as_i64().expect("id")),
            "message" => messages.push(c.data["seq"].as_i64().expect("seq")),
            other => panic!("{other}"),
        }
    }
    assert_eq!(transitions, [1, 2]);
    assert_eq!(messages, [1, 2]);
    assert_eq!(last, head);
    // A page smaller than the changes stops at what it read.
    let (some, reached) = queries::changes(&*s.src, Cursor::default(), head, 1).expect("changes");
    assert_eq!(some.len(), 2);
    assert_eq!(
        reached,
        Cursor {
            transition: 1,
            message: 1,
            admin: 0
        }
    );
}

#[test]
fn a_message_committed_before_its_sessions_end_is_in_the_feed() {
    let s = store();
    s.session("a", 1);
    let before = queries::head(&*s.src, Cursor::default()).expect("head");
    // Between two checks: the last message, then the end.
    s.message("a", 1, 2);
    s.end("a", 3);
    let head = queries::head(&*s.src, before).expect("head");
    assert_eq!(head.message, 1, "the ended session's message counts");
    let (changes, _) = queries::changes(&*s.src, before, head, 100).expect("changes");
    let kinds: Vec<&str> = changes.iter().map(|c| c.kind).collect();
    assert_eq!(kinds, ["message", "transition"]);
}

async fn take(
    stream: &mut (
             impl futures_util::Stream<
        Item = Result<axum::response::sse::Event, std::convert::Infallible>,
    > + Unpin
         ),
    n: usize,
) -> usize {
    let mut got = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while got < n {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(Ok(_))) => got += 1,
            _ => break,
        }
    }
    got
}

#[tokio::test(flavor = "current_thread")]
async fn one_feed_serves_every_stream_and_an_old_cursor_catches_up() {
    let s = store();
    s.session("a", 1);
    s.message("a", 1, 2);
    let src = s.src.clone();
    let start = tokio::task::spawn_blocking(move || queries::head(&*src, Cursor::default()))
        .await
        .expect("join")
        .expect("head");
    let feed = Feed::new(start);
    let runner = tokio::spawn(feed::run(
        feed.clone(),
        s.src.clone(),
        Duration::from_millis(20),
    ));
    let redact = cli_supervisor::Redactor::new();
    // 200 streams from now, one from the beginning, one for another session.
    let mut now: Vec<_> = (0..200)
        .map(|_| {
            Box::pin(feed::events(
                feed.clone(),
                s.src.clone(),
                None,
                StreamFilter::default(),
                redact.clone(),
            ))
        })
        .collect();
    let mut old = Box::pin(feed::events(
        feed.clone(),
        s.src.clone(),
        Some(Cursor::default()),
        StreamFilter::default(),
        redact.clone(),
    ));
    let mut other = Box::pin(feed::events(
        feed.clone(),
        s.src.clone(),
        None,
        StreamFilter {
            session: Some("b".into()),
        },
        redact.clone(),
    ));
    assert_eq!(take(&mut old, 2).await, 2, "the old cursor's backlog first");
    // Idle: the feed checks at its own cadence whatever the listeners.
    let t0 = Instant::now();
    let c0 = feed.checks();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle_checks = feed.checks() - c0;
    let idle_ms = u64::try_from(t0.elapsed().as_millis()).expect("ms");
    assert!(
        idle_checks <= idle_ms / 20 + 2,
        "{idle_checks} checks in {idle_ms} ms: one feed, not one poll per stream"
    );
    s.message("a", 2, 3);
    s.end("a", 4);
    for stream in &mut now {
        assert_eq!(
            take(stream, 2).await,
            2,
            "every stream gets the message and the end"
        );
    }
    assert_eq!(take(&mut old, 2).await, 2);
    s.session("b", 5);
    assert_eq!(
        take(&mut other, 1).await,
        1,
        "the filtered stream gets its session"
    );
    runner.abort();
}
