//! The rate-limited processor: a denied event is deferred, never dropped,
//! and every replenish tick re-drives the queue.
//!
//! It is driven by explicit ticks instead of owning a background task, so
//! this crate names no async runtime; the binary calls
//! [`RateLimitedProcessor::tick`] on its own timer.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// An event's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventStatus {
    /// Queued, possibly deferred by the rate limit.
    Pending,
    /// Processed.
    Completed,
    /// Rejected by a permission check (terminal).
    Rejected,
}

#[derive(Debug, Clone, Copy)]
struct Job {
    id: u64,
    cost: u32,
    permitted: bool,
}

/// Queues events under a per-interval budget.
#[derive(Debug)]
pub struct RateLimitedProcessor {
    limit: u32,
    budget: u32,
    queue: VecDeque<Job>,
    status: BTreeMap<u64, EventStatus>,
    in_flight: BTreeSet<u64>,
    stopped: bool,
}

impl RateLimitedProcessor {
    /// A processor allowing `limit` cost units per interval.
    pub fn new(limit: u32) -> Self {
        Self {
            limit,
            budget: limit,
            queue: VecDeque::new(),
            status: BTreeMap::new(),
            in_flight: BTreeSet::new(),
            stopped: false,
        }
    }

    /// Queues an event. `permitted = false` models a permission rejection.
    pub fn submit(&mut self, id: u64, cost: u32, permitted: bool) {
        self.status.insert(id, EventStatus::Pending);
        self.queue.push_back(Job {
            id,
            cost,
            permitted,
        });
    }

    /// Processes the queue in order until the budget runs out. A denial
    /// re-enqueues the event at the front (it stays pending) and ends this
    /// pass; a permission rejection is terminal.
    pub fn process(&mut self) {
        while let Some(job) = self.queue.pop_front() {
            if !job.permitted {
                self.status.insert(job.id, EventStatus::Rejected);
                continue;
            }
            if job.cost > self.budget {
                self.queue.push_front(job);
                return;
            }
            self.budget -= job.cost;
            self.status.insert(job.id, EventStatus::Completed);
        }
    }

    /// One replenish tick: the budget is refilled and, if anything is
    /// queued, the queue is re-processed, so deferred events complete
    /// without the caller submitting again. A stopped processor does
    /// nothing.
    pub fn tick(&mut self) {
        if self.stopped {
            return;
        }
        self.budget = self.limit;
        if !self.queue.is_empty() {
            self.process();
        }
    }

    /// An event's status.
    pub fn status(&self, id: u64) -> Option<&EventStatus> {
        self.status.get(&id)
    }

    /// Stops replenishing. Idempotent.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// Whether [`stop`](Self::stop) was called.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Records an in-flight call.
    pub(crate) fn begin(&mut self, id: u64) {
        self.in_flight.insert(id);
    }

    /// Forgets an in-flight call.
    pub(crate) fn end(&mut self, id: u64) {
        self.in_flight.remove(&id);
    }

    /// Calls currently in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }
}

/// Replenishes `processor` every `interval` until it is stopped.
///
/// Cancelling is dropping this future, at any await point including before
/// the first tick; nothing is left half-done and nothing is raised, so a
/// later [`RateLimitedProcessor::stop`] is always an ordinary stop. `sleep`
/// is a parameter so this crate names no async runtime.
pub async fn run_replenisher(
    processor: &std::sync::Mutex<RateLimitedProcessor>,
    interval: std::time::Duration,
    mut sleep: impl AsyncFnMut(std::time::Duration),
) {
    loop {
        {
            let mut p = processor
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if p.is_stopped() {
                return;
            }
            p.tick();
        }
        sleep(interval).await;
    }
}
