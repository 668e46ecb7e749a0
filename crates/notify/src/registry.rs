//! The terminal-callback registry: concurrent fan-out under one deadline.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::envelope::{EntityRef, RunTerminalEnvelope};
use crate::error::BoxError;

/// The default shared deadline of one [`Registry::emit`].
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(10);

/// What an async handler returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send>>;

type AsyncFn = dyn Fn(Arc<RunTerminalEnvelope>) -> HandlerFuture + Send + Sync;
type BlockingFn = dyn Fn(&RunTerminalEnvelope) -> Result<(), BoxError> + Send + Sync;

/// A callback. Async handlers run as tasks and are cancelled at the
/// deadline; blocking handlers run on the blocking pool and are abandoned
/// (not killed) at the deadline.
#[derive(Clone)]
pub enum Handler {
    /// Runs as a task on the runtime.
    Async(Arc<AsyncFn>),
    /// Runs on the blocking pool, never on a runtime worker.
    Blocking(Arc<BlockingFn>),
}

impl Handler {
    /// An async handler from a closure returning a future.
    pub fn from_async<F, Fut>(f: F) -> Self
    where
        F: Fn(Arc<RunTerminalEnvelope>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        Self::Async(Arc::new(move |envelope| Box::pin(f(envelope))))
    }

    /// A synchronous handler; it may block.
    pub fn blocking<F>(f: F) -> Self
    where
        F: Fn(&RunTerminalEnvelope) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        Self::Blocking(Arc::new(f))
    }
}

impl fmt::Debug for Handler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Async(_) => "Handler::Async",
            Self::Blocking(_) => "Handler::Blocking",
        })
    }
}

/// Which entities a registration (or a configured notifier) accepts:
/// `None` accepts any value; a list accepts only its members. Both parts
/// must accept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filter {
    /// Accepted entity kinds.
    pub kinds: Option<Vec<String>>,
    /// Accepted entity ids.
    pub ids: Option<Vec<String>>,
}

impl Filter {
    /// Whether `entity` passes the filter.
    pub fn matches(&self, entity: &EntityRef) -> bool {
        let ok = |list: &Option<Vec<String>>, value: &str| {
            list.as_ref().is_none_or(|l| l.iter().any(|v| v == value))
        };
        ok(&self.kinds, &entity.kind) && ok(&self.ids, &entity.id)
    }
}

/// One named callback with its filter.
#[derive(Debug, Clone)]
pub struct Registration {
    /// The name (registering a name again replaces the earlier entry).
    pub name: String,
    /// The callback.
    pub handler: Handler,
    /// Which envelopes it matches.
    pub filter: Filter,
    /// A per-run override: for an envelope it matches, only override
    /// registrations fire.
    pub is_override: bool,
}

impl Registration {
    /// A registration matching every envelope.
    pub fn new(name: impl Into<String>, handler: Handler) -> Self {
        Self {
            name: name.into(),
            handler,
            filter: Filter::default(),
            is_override: false,
        }
    }

    /// Restricts it with `filter`.
    pub fn with_filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    /// Marks it an override for the envelopes it matches.
    pub fn as_override(mut self) -> Self {
        self.is_override = true;
        self
    }
}

/// What one emit did: names of handlers by how they ended. Returned for
/// observation only; emit never fails.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmitReport {
    /// Handlers selected for the envelope, in registration order.
    pub fired: Vec<String>,
    /// Handlers that returned Ok before the deadline.
    pub succeeded: Vec<String>,
    /// Handlers that returned an error or panicked (logged and swallowed).
    pub failed: Vec<String>,
    /// Handlers still running at the deadline: async ones were cancelled,
    /// blocking ones abandoned.
    pub timed_out: Vec<String>,
}

/// The process's terminal-callback registry.
///
/// [`Registry::emit`] pushes an envelope to every matching handler
/// concurrently and returns by one shared deadline (the budget), whatever
/// the handlers do. Failures, panics and timeouts are logged and swallowed.
pub struct Registry {
    budget: Duration,
    entries: RwLock<Vec<Registration>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new(DEFAULT_BUDGET)
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("budget", &self.budget)
            .field("names", &self.names())
            .finish()
    }
}

impl Registry {
    /// A registry whose emits share a deadline of `budget`.
    pub fn new(budget: Duration) -> Self {
        Self {
            budget,
            entries: RwLock::new(Vec::new()),
        }
    }

    /// The shared deadline of one emit.
    pub fn budget(&self) -> Duration {
        self.budget
    }

    /// Adds `registration`, replacing one of the same name. Returns whether
    /// one was replaced.
    pub fn register(&self, registration: Registration) -> bool {
        let mut entries = write(&self.entries);
        if let Some(slot) = entries.iter_mut().find(|r| r.name == registration.name) {
            *slot = registration;
            true
        } else {
            entries.push(registration);
            false
        }
    }

    /// Removes the registration named `name`; returns whether it existed.
    pub fn unregister(&self, name: &str) -> bool {
        let mut entries = write(&self.entries);
        let before = entries.len();
        entries.retain(|r| r.name != name);
        entries.len() != before
    }

    /// Removes every registration.
    pub fn clear(&self) {
        write(&self.entries).clear();
    }

    /// The registered names, in registration order.
    pub fn names(&self) -> Vec<String> {
        read(&self.entries).iter().map(|r| r.name.clone()).collect()
    }

    /// The registrations that fire for `envelope`: every matching override
    /// if any matches, else every matching non-override.
    pub fn selected(&self, envelope: &RunTerminalEnvelope) -> Vec<Registration> {
        let entries = read(&self.entries);
        let matching: Vec<&Registration> = entries
            .iter()
            .filter(|r| r.filter.matches(&envelope.entity))
            .collect();
        let overridden = matching.iter().any(|r| r.is_override);
        matching
            .into_iter()
            .filter(|r| r.is_override == overridden)
            .cloned()
            .collect()
    }

    /// Pushes `envelope` to every selected handler concurrently and returns
    /// when all have finished or the shared deadline passes, whichever is
    /// first. Never fails: handler errors, panics and timeouts are logged.
    ///
    /// Must run inside a tokio runtime. At the deadline async handlers are
    /// cancelled (dropped) and blocking handlers abandoned: their threads
    /// finish in the background.
    pub async fn emit(&self, envelope: &RunTerminalEnvelope) -> EmitReport {
        let deadline = Instant::now() + self.budget;
        let selected = self.selected(envelope);
        let mut report = EmitReport {
            fired: selected.iter().map(|r| r.name.clone()).collect(),
            ..EmitReport::default()
        };
        if selected.is_empty() {
            return report;
        }
        let shared = Arc::new(envelope.clone());
        let mut tasks = JoinSet::new();
        let mut names = HashMap::new();
        for registration in selected {
            let envelope = Arc::clone(&shared);
            let handle = match registration.handler {
                // The handler's own constructor call runs inside the task
                // too, so a panic there is contained like any other.
                Handler::Async(f) => tasks.spawn(async move { f(envelope).await }),
                Handler::Blocking(f) => tasks.spawn(async move {
                    match tokio::task::spawn_blocking(move || f(&envelope)).await {
                        Ok(result) => result,
                        Err(join) if join.is_panic() => Err("blocking handler panicked".into()),
                        Err(join) => Err(Box::new(join) as BoxError),
                    }
                }),
            };
            names.insert(handle.id(), registration.name);
        }
        loop {
            match tokio::time::timeout_at(deadline, tasks.join_next_with_id()).await {
                Ok(None) => break,
                Ok(Some(Ok((id, result)))) => {
                    let name = names.remove(&id).unwrap_or_default();
                    match result {
                        Ok(()) => report.succeeded.push(name),
                        Err(error) => {
                            tracing::warn!(
                                handler = %name,
                                event_id = %envelope.event_id,
                                %error,
                                "terminal callback failed"
                            );
                            report.failed.push(name);
                        }
                    }
                }
                Ok(Some(Err(join))) => {
                    let name = names.remove(&join.id()).unwrap_or_default();
                    tracing::warn!(
                        handler = %name,
                        event_id = %envelope.event_id,
                        panicked = join.is_panic(),
                        "terminal callback did not complete"
                    );
                    report.failed.push(name);
                }
                Err(_) => {
                    tasks.abort_all();
                    let mut left: Vec<String> = names.into_values().collect();
                    left.sort();
                    for name in &left {
                        tracing::warn!(
                            handler = %name,
                            event_id = %envelope.event_id,
                            budget = ?self.budget,
                            "terminal callback passed the shared deadline"
                        );
                    }
                    report.timed_out = left;
                    break;
                }
            }
        }
        report
    }
}

fn read(lock: &RwLock<Vec<Registration>>) -> std::sync::RwLockReadGuard<'_, Vec<Registration>> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write(lock: &RwLock<Vec<Registration>>) -> std::sync::RwLockWriteGuard<'_, Vec<Registration>> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
