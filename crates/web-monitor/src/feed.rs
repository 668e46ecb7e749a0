//! The one change feed of a process, and the event streams fed from it.
//!
//! One task reads the store's head ([`queries::head`]: the last
//! transition, message and admin event ids, in one cheap indexed
//! statement) at one cadence for every client; when it moved, the task
//! reads the changes once and broadcasts them as a [`Batch`] (from cursor,
//! to cursor, the changes) over a tokio broadcast channel. An idle stream
//! costs nothing: it waits on the channel, and no stream ever polls.
//!
//! A stream keeps its own cursor. It sends a change only when the change
//! is past its cursor (no duplicate), and when a batch starts past its
//! cursor (it connected with an old `Last-Event-ID`, or fell behind the
//! channel) it first reads the missing range from the store (no gap).
//! Event ids are the cursors ([`Cursor::to_id`]), so a browser's
//! reconnect resumes exactly where it stopped.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::response::sse::Event;
use tokio::sync::{broadcast, watch};

use crate::queries::{self, Change, Cursor};
use crate::source::Source;

/// How many changes of each kind one read takes.
const READ_BATCH: u32 = 500;

/// What the feed broadcasts: the changes in `(from, to]`.
#[derive(Debug, Clone)]
pub struct Batch {
    /// The cursor before.
    pub from: Cursor,
    /// The cursor after.
    pub to: Cursor,
    /// The changes, in order.
    pub changes: Arc<Vec<Change>>,
}

/// The feed's shared side: the channel, the last cursor broadcast, and
/// how often the store was checked (for tests and benchmarks).
#[derive(Debug)]
pub struct Feed {
    sender: broadcast::Sender<Batch>,
    current: watch::Sender<Cursor>,
    checks: AtomicU64,
}

impl Feed {
    /// A feed starting at `start` (nothing before it is broadcast).
    pub fn new(start: Cursor) -> Arc<Feed> {
        let (sender, _) = broadcast::channel(256);
        let (current, _) = watch::channel(start);
        Arc::new(Feed {
            sender,
            current,
            checks: AtomicU64::new(0),
        })
    }

    /// The last cursor the feed broadcast up to.
    pub fn current(&self) -> Cursor {
        *self.current.borrow()
    }

    /// How many times the store's head was read.
    pub fn checks(&self) -> u64 {
        self.checks.load(Ordering::Relaxed)
    }

    /// How many streams listen.
    pub fn listeners(&self) -> usize {
        self.sender.receiver_count()
    }

    /// A subscription (take it before reading [`Feed::current`]).
    pub fn subscribe(&self) -> broadcast::Receiver<Batch> {
        self.sender.subscribe()
    }

    /// Checks the store once; broadcasts what changed. Runs on a blocking
    /// thread (the store's clients block).
    fn check(&self, src: &dyn Source) -> Result<(), queries::QueryError> {
        self.checks.fetch_add(1, Ordering::Relaxed);
        let mut from = self.current();
        let head = queries::head(src, from)?;
        while !head.within(from) {
            let (changes, reached) = queries::changes(src, from, head, READ_BATCH)?;
            let batch = Batch {
                from,
                to: reached,
                changes: Arc::new(changes),
            };
            // The cursor moves first: a stream that subscribed and then
            // reads it catches up from the store and skips this batch.
            self.current.send_replace(reached);
            // No receiver is not an error.
            let _ = self.sender.send(batch);
            from = reached;
        }
        Ok(())
    }
}

/// Runs the feed until the process ends: one check of the store every
/// `every`, for all clients.
pub async fn run(feed: Arc<Feed>, src: Arc<dyn Source>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let (f, s) = (feed.clone(), src.clone());
        match tokio::task::spawn_blocking(move || f.check(&*s)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("the change feed could not read the store: {e}"),
            Err(e) => tracing::warn!("the change feed's check failed: {e}"),
        }
    }
}

/// What one stream sends: everything, or one session's changes.
#[derive(Debug, Clone, Default)]
pub struct StreamFilter {
    /// Only this session's transitions, messages and admin events.
    pub session: Option<String>,
}

impl StreamFilter {
    fn admits(&self, c: &Change) -> bool {
        match &self.session {
            None => true,
            Some(id) => c.session.as_deref() == Some(id.as_str()),
        }
    }
}

/// One client's stream state.
struct Stream {
    feed: Arc<Feed>,
    src: Arc<dyn Source>,
    rx: broadcast::Receiver<Batch>,
    cursor: Cursor,
    filter: StreamFilter,
    ready: VecDeque<Change>,
    redact: cli_supervisor::Redactor,
}

impl Stream {
    /// Queues the changes of `batch` past the cursor.
    fn take(&mut self, changes: &[Change], to: Cursor) {
        for c in changes {
            if !c.cursor.within(self.cursor) && self.filter.admits(c) {
                self.ready.push_back(c.clone());
            }
            self.cursor = self.cursor.max(c.cursor);
        }
        self.cursor = self.cursor.max(to);
    }

    /// Reads `(cursor, upto]` from the store and queues it.
    async fn catch_up(&mut self, upto: Cursor) -> Result<(), String> {
        while !upto.within(self.cursor) {
            let (src, from) = (self.src.clone(), self.cursor);
            let (changes, reached) = tokio::task::spawn_blocking(move || {
                queries::changes(&*src, from, upto, READ_BATCH)
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
            // Components the client claimed past the head stay where they
            // are; the read covers only what lies between.
            let reached = reached.max(from);
            if reached == from {
                break;
            }
            self.take(&changes, reached);
        }
        Ok(())
    }

    fn event(&self, c: &Change) -> Event {
        let data = self.redact.redact_str(&c.data.to_string()).into_owned();
        Event::default()
            .id(c.cursor.to_id())
            .event(c.kind)
            .data(data)
    }

    /// The next event to send (waits for one).
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(c) = self.ready.pop_front() {
                return Some(self.event(&c));
            }
            match self.rx.recv().await {
                Ok(batch) => {
                    if !batch.from.within(self.cursor) {
                        // A range this stream has not seen comes first.
                        if let Err(e) = self.catch_up(batch.from).await {
                            tracing::warn!("an event stream could not catch up: {e}");
                            return None;
                        }
                    }
                    self.take(&batch.changes, batch.to);
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let upto = self.feed.current();
                    if let Err(e) = self.catch_up(upto).await {
                        tracing::warn!("an event stream could not catch up: {e}");
                        return None;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

/// The events of one client from `start` on (`None`: from now): first
/// whatever the store holds past `start`, then the feed's batches, each
/// change once.
pub fn events(
    feed: Arc<Feed>,
    src: Arc<dyn Source>,
    start: Option<Cursor>,
    filter: StreamFilter,
    redact: cli_supervisor::Redactor,
) -> impl futures_util::Stream<Item = Result<Event, std::convert::Infallible>> + Send + 'static {
    // Subscribed before the cursor is read: nothing falls between.
    let rx = feed.subscribe();
    let now = feed.current();
    let stream = Stream {
        cursor: start.unwrap_or(now),
        feed,
        src,
        rx,
        filter,
        ready: VecDeque::new(),
        redact,
    };
    futures_util::stream::unfold((stream, Some(now)), |(mut s, first)| async move {
        if let Some(upto) = first
            && let Err(e) = s.catch_up(upto).await
        {
            tracing::warn!("an event stream could not catch up: {e}");
            return None;
        }
        let ev = s.next().await?;
        Some((Ok(ev), (s, None)))
    })
}
