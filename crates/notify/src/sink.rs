//! The `TerminalSink` a store calls after commit.

use std::sync::{Arc, Mutex};

use lifecycle_core::{PolicyRegistry, TerminalEvent, TerminalSink, default_registry};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::envelope::RunTerminalEnvelope;
use crate::registry::{EmitReport, Registry};

/// How many emits are tracked before finished ones are dropped.
const MAX_TRACKED: usize = 256;

/// Turns a store's committed terminal transitions into envelopes and emits
/// them on a registry.
///
/// The store calls [`TerminalSink::on_terminal`] synchronously after
/// commit, often from a blocking thread; this sink never blocks it: the
/// emit is spawned on the runtime behind `handle` and tracked, and
/// [`TerminalNotifier::flush`] waits for every emit in flight (each bounded
/// by the registry's budget). A process should flush before it exits.
pub struct TerminalNotifier {
    registry: Arc<Registry>,
    policies: Arc<PolicyRegistry>,
    handle: Handle,
    run_id: Option<String>,
    in_flight: Mutex<Vec<JoinHandle<EmitReport>>>,
}

impl std::fmt::Debug for TerminalNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalNotifier")
            .field("registry", &self.registry)
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

impl TerminalNotifier {
    /// A notifier emitting on `registry`, spawning on `handle`, judging
    /// terminal statuses by the default (sealed) policies.
    pub fn new(registry: Arc<Registry>, handle: Handle) -> Self {
        Self {
            registry,
            policies: Arc::new(default_registry().clone()),
            handle,
            run_id: None,
            in_flight: Mutex::new(Vec::new()),
        }
    }

    /// Judges terminal statuses by `policies` (the store's own registry).
    pub fn with_policies(mut self, policies: Arc<PolicyRegistry>) -> Self {
        self.policies = policies;
        self
    }

    /// Stamps `run_id` into every envelope's correlation block.
    pub fn with_run_id(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The envelope for `event`, if one is due (see
    /// [`RunTerminalEnvelope::for_terminal_event`]).
    pub fn envelope_for(&self, event: &TerminalEvent) -> Option<RunTerminalEnvelope> {
        let envelope = RunTerminalEnvelope::for_terminal_event(event, &self.policies)?;
        Some(match &self.run_id {
            Some(run_id) => envelope.with_run_id(run_id.clone()),
            None => envelope,
        })
    }

    /// Waits for every emit started so far; returns the reports of those
    /// still tracked, in the order the events arrived.
    pub async fn flush(&self) -> Vec<EmitReport> {
        let pending = std::mem::take(&mut *lock(&self.in_flight));
        let mut reports = Vec::with_capacity(pending.len());
        for task in pending {
            match task.await {
                Ok(report) => reports.push(report),
                Err(error) => tracing::warn!(%error, "terminal emit task did not complete"),
            }
        }
        reports
    }
}

impl TerminalSink for TerminalNotifier {
    fn on_terminal(
        &self,
        event: &TerminalEvent,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let Some(envelope) = self.envelope_for(event) else {
            return Ok(());
        };
        let registry = Arc::clone(&self.registry);
        let task = self
            .handle
            .spawn(async move { registry.emit(&envelope).await });
        let mut in_flight = lock(&self.in_flight);
        // Bounded memory in a long-lived process: past a few hundred
        // tracked emits, finished ones are dropped (flush then misses
        // their reports, never their completion).
        if in_flight.len() >= MAX_TRACKED {
            in_flight.retain(|t| !t.is_finished());
        }
        in_flight.push(task);
        Ok(())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
