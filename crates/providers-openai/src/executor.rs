//! The rate-limited executor a model queues its calls on: a per-interval
//! request budget, a bounded queue, the in-flight set, and the replenisher
//! that refills the budget and re-drives the queue.
//!
//! A call asks for a permit ([`Executor::acquire`]). With budget left it is
//! granted at once; without, the call is *denied*, which is a deferral: it
//! stays queued and pending until a replenish tick re-drives the queue. Only
//! a permission refusal is terminal (the executor is stopped, or its queue
//! is full). The replenisher is a future the caller runs on its own
//! runtime ([`Executor::replenisher`]); this crate names none.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::error::Error;

/// An executor's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Calls allowed per replenish interval (at least 1).
    pub requests: u32,
    /// Calls that may wait for budget at once; one more is refused.
    pub queue_capacity: usize,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self {
            requests: 60,
            queue_capacity: 1000,
        }
    }
}

/// What an executor has done so far (for monitoring and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecutorStats {
    /// Budget left in the current interval.
    pub budget: u32,
    /// Calls waiting for budget (denied, still pending).
    pub queued: usize,
    /// Calls holding a permit whose request has not ended.
    pub in_flight: usize,
    /// Permits granted.
    pub granted: u64,
    /// Permits refused (terminal).
    pub rejected: u64,
    /// Replenish ticks that refilled the budget.
    pub ticks: u64,
    /// Whether [`Executor::stop`] was called.
    pub stopped: bool,
    /// Replenisher futures that exist and have not ended.
    pub replenishers: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Pending,
    Granted,
    Refused(Refusal),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Stopped,
    QueueFull,
}

#[derive(Debug)]
struct Waiting {
    status: Status,
    waker: Option<Waker>,
}

#[derive(Debug)]
struct State {
    budget: u32,
    queue: VecDeque<u64>,
    waiting: BTreeMap<u64, Waiting>,
    in_flight: BTreeSet<u64>,
    replenishers: BTreeMap<u64, Option<Waker>>,
    granted: u64,
    rejected: u64,
    ticks: u64,
    stopped: bool,
}

#[derive(Debug)]
struct Inner {
    limit: RateLimit,
    state: Mutex<State>,
}

static NEXT_TICKET: AtomicU64 = AtomicU64::new(1);

fn ticket() -> u64 {
    NEXT_TICKET.fetch_add(1, Ordering::Relaxed)
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock; a poisoned lock still
        // holds consistent state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    /// Grants queued calls in order while budget lasts. A call that finds
    /// no budget is denied: it stays at the front, pending, for the next
    /// tick.
    fn process(&mut self) {
        while let Some(&id) = self.queue.front() {
            if self.budget == 0 {
                return;
            }
            self.queue.pop_front();
            self.budget -= 1;
            self.granted += 1;
            if let Some(w) = self.waiting.get_mut(&id) {
                w.status = Status::Granted;
                if let Some(waker) = w.waker.take() {
                    waker.wake();
                }
            }
        }
    }
}

/// A rate-limited executor. Cloning shares it: clones are the same
/// executor ([`same_as`](Self::same_as)), with one budget and one queue.
#[derive(Debug, Clone)]
pub struct Executor {
    inner: Arc<Inner>,
}

impl Executor {
    /// A fresh executor with a full budget. A limit of zero requests could
    /// never grant anything and is refused.
    pub fn new(limit: RateLimit) -> Result<Self, Error> {
        if limit.requests == 0 {
            return Err(Error::InvalidRateLimit("requests must be at least 1"));
        }
        Ok(Self {
            inner: Arc::new(Inner {
                limit,
                state: Mutex::new(State {
                    budget: limit.requests,
                    queue: VecDeque::new(),
                    waiting: BTreeMap::new(),
                    in_flight: BTreeSet::new(),
                    replenishers: BTreeMap::new(),
                    granted: 0,
                    rejected: 0,
                    ticks: 0,
                    stopped: false,
                }),
            }),
        })
    }

    /// The limits this executor was built with.
    pub fn rate_limit(&self) -> RateLimit {
        self.inner.limit
    }

    /// Whether `other` is this very executor (not merely an equal one).
    pub fn same_as(&self, other: &Executor) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> ExecutorStats {
        let st = self.inner.lock();
        ExecutorStats {
            budget: st.budget,
            queued: st.queue.len(),
            in_flight: st.in_flight.len(),
            granted: st.granted,
            rejected: st.rejected,
            ticks: st.ticks,
            stopped: st.stopped,
            replenishers: st.replenishers.len(),
        }
    }

    /// Waits for a permit to send one call. Resolves at once when budget
    /// is left; otherwise the call is deferred (queued, pending) until a
    /// tick grants it. Refused, terminally, when the executor is stopped
    /// (also while waiting) or its queue is full. Dropping the future
    /// withdraws a queued call.
    pub fn acquire(&self) -> Acquire {
        Acquire {
            inner: Arc::clone(&self.inner),
            ticket: None,
            settled: false,
        }
    }

    /// Records a call as in flight until the guard is dropped.
    pub fn begin_call(&self) -> CallGuard {
        let id = ticket();
        self.inner.lock().in_flight.insert(id);
        CallGuard {
            inner: Arc::clone(&self.inner),
            id,
        }
    }

    /// One replenish tick: the budget is refilled and a non-empty queue is
    /// re-processed, so deferred calls are granted without their callers
    /// asking again. A stopped executor does nothing.
    pub fn tick(&self) {
        let mut st = self.inner.lock();
        if st.stopped {
            return;
        }
        st.budget = self.inner.limit.requests;
        st.ticks += 1;
        if !st.queue.is_empty() {
            st.process();
        }
    }

    /// Stops the executor: replenishers end, queued calls are refused
    /// (their callers get [`Error::ExecutorClosed`]) and new calls are
    /// refused. Idempotent, and it never fails, whatever became of the
    /// replenisher (ended, cancelled before it started, never run).
    pub fn stop(&self) {
        let mut st = self.inner.lock();
        if st.stopped {
            return;
        }
        st.stopped = true;
        let queued: Vec<u64> = st.queue.drain(..).collect();
        st.rejected += queued.len() as u64;
        for id in queued {
            if let Some(w) = st.waiting.get_mut(&id) {
                w.status = Status::Refused(Refusal::Stopped);
                if let Some(waker) = w.waker.take() {
                    waker.wake();
                }
            }
        }
        for waker in st.replenishers.values_mut().filter_map(Option::take) {
            waker.wake();
        }
        tracing::debug!(refused = st.rejected, "executor stopped");
    }

    /// The replenisher: every `interval` (waited out by `sleep`, so this
    /// crate names no runtime) it [`tick`](Self::tick)s, until the executor
    /// is stopped, which ends it at once, mid-sleep included.
    ///
    /// It counts as running from the moment it is made, and stops counting
    /// when it is dropped for any reason: it returned, or it was cancelled,
    /// including before its first poll. Cancelling it is dropping it; it
    /// holds no lock across an await and leaves nothing half-done, so a
    /// later [`stop`](Self::stop) is an ordinary stop.
    pub fn replenisher<F, Fut>(
        &self,
        interval: Duration,
        mut sleep: F,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        F: FnMut(Duration) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send,
    {
        let registration = Replenishing::new(Arc::clone(&self.inner));
        let executor = self.clone();
        async move {
            let registration = registration;
            loop {
                let mut nap = pin!(sleep(interval));
                let stopped = poll_fn(|cx| {
                    if registration.stopped_or_listen(cx.waker()) {
                        return Poll::Ready(true);
                    }
                    nap.as_mut().poll(cx).map(|()| false)
                })
                .await;
                if stopped {
                    return;
                }
                executor.tick();
            }
        }
    }
}

/// A replenisher's registration on its executor, removed on drop.
struct Replenishing {
    inner: Arc<Inner>,
    id: u64,
}

impl Replenishing {
    fn new(inner: Arc<Inner>) -> Self {
        let id = ticket();
        inner.lock().replenishers.insert(id, None);
        Self { inner, id }
    }

    /// Whether the executor is stopped; if not, `waker` is woken when it is.
    fn stopped_or_listen(&self, waker: &Waker) -> bool {
        let mut st = self.inner.lock();
        if st.stopped {
            return true;
        }
        if let Some(slot) = st.replenishers.get_mut(&self.id) {
            match slot {
                Some(w) if w.will_wake(waker) => {}
                _ => *slot = Some(waker.clone()),
            }
        }
        false
    }
}

impl Drop for Replenishing {
    fn drop(&mut self) {
        self.inner.lock().replenishers.remove(&self.id);
    }
}

/// The future of [`Executor::acquire`].
#[derive(Debug)]
#[must_use = "a permit is only asked for when the future is polled"]
pub struct Acquire {
    inner: Arc<Inner>,
    ticket: Option<u64>,
    settled: bool,
}

impl Future for Acquire {
    type Output = Result<(), Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if this.settled {
            return Poll::Ready(Err(Error::ExecutorClosed));
        }
        let mut st = this.inner.lock();
        let id = match this.ticket {
            Some(id) => id,
            None => {
                let refusal = if st.stopped {
                    Some(Refusal::Stopped)
                } else if st.queue.len() >= this.inner.limit.queue_capacity {
                    Some(Refusal::QueueFull)
                } else {
                    None
                };
                if let Some(r) = refusal {
                    st.rejected += 1;
                    this.settled = true;
                    return Poll::Ready(Err(refusal_error(r, &this.inner.limit)));
                }
                let id = ticket();
                st.waiting.insert(
                    id,
                    Waiting {
                        status: Status::Pending,
                        waker: None,
                    },
                );
                st.queue.push_back(id);
                st.process();
                this.ticket = Some(id);
                id
            }
        };
        let status = st.waiting.get(&id).map(|w| w.status);
        match status {
            Some(Status::Pending) => {
                if let Some(w) = st.waiting.get_mut(&id) {
                    w.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            Some(Status::Granted) => {
                st.waiting.remove(&id);
                this.settled = true;
                Poll::Ready(Ok(()))
            }
            Some(Status::Refused(r)) => {
                st.waiting.remove(&id);
                this.settled = true;
                Poll::Ready(Err(refusal_error(r, &this.inner.limit)))
            }
            None => {
                this.settled = true;
                Poll::Ready(Err(Error::ExecutorClosed))
            }
        }
    }
}

fn refusal_error(r: Refusal, limit: &RateLimit) -> Error {
    match r {
        Refusal::Stopped => Error::ExecutorClosed,
        Refusal::QueueFull => Error::QueueFull {
            capacity: limit.queue_capacity,
        },
    }
}

impl Drop for Acquire {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let Some(id) = self.ticket else { return };
        let mut st = self.inner.lock();
        // A permit granted but never taken goes back to the budget.
        if let Some(w) = st.waiting.remove(&id) {
            match w.status {
                Status::Pending => st.queue.retain(|q| *q != id),
                Status::Granted => {
                    st.budget = st.budget.saturating_add(1).min(self.inner.limit.requests);
                    st.granted -= 1;
                }
                Status::Refused(_) => {}
            }
        }
    }
}

/// Removes an in-flight call from its executor when dropped, however the
/// call ended: completion, error, or the future owning it being dropped
/// (cancellation, a timeout firing). The removal is synchronous, so it
/// never suspends and never holds up the cancellation.
#[derive(Debug)]
pub struct CallGuard {
    inner: Arc<Inner>,
    id: u64,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.inner.lock().in_flight.remove(&self.id);
    }
}
