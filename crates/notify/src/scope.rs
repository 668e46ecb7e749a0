//! Installing a resolved notifier: process-wide, or scoped to one run.

use std::sync::Arc;

use crate::envelope::EntityRef;
use crate::exec::ExecAdapter;
use crate::outcome::{NotifyOutcome, OutcomeSink};
use crate::registry::{Filter, Handler, Registration, Registry};
use crate::settings::{Adapter, Resolution, ResolvedHandler};

/// The name of the process-wide settings registration.
pub const SETTINGS_REGISTRATION: &str = "notify.settings.on_terminal";

/// The entities one run covers (usually its session, maybe its
/// invocations).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunScope {
    /// The covered entities.
    pub entities: Vec<EntityRef>,
}

impl RunScope {
    /// A scope of one entity.
    pub fn entity(kind: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            entities: vec![EntityRef::new(kind, id)],
        }
    }

    /// The registry filter matching exactly these kinds and ids.
    fn filter(&self) -> Filter {
        let mut kinds: Vec<String> = self.entities.iter().map(|e| e.kind.clone()).collect();
        let mut ids: Vec<String> = self.entities.iter().map(|e| e.id.clone()).collect();
        kinds.sort();
        kinds.dedup();
        ids.sort();
        ids.dedup();
        Filter {
            kinds: Some(kinds),
            ids: Some(ids),
        }
    }
}

/// Installs the resolved process-wide notifier under
/// [`SETTINGS_REGISTRATION`] (a non-override registration with the
/// configured filter, timeout equal to the registry's budget). Returns
/// whether anything was installed; a disabled resolution installs nothing.
pub fn register_settings_terminal_callback(registry: &Registry, resolution: &Resolution) -> bool {
    let Some(resolved) = &resolution.handler else {
        return false;
    };
    let handler = adapter_for(resolved, registry, None).into_handler();
    registry.register(
        Registration::new(SETTINGS_REGISTRATION, handler).with_filter(resolved.filter.clone()),
    );
    true
}

/// Installs the resolved notifier for one run, recording its outcome on
/// the run through `run`.
///
/// Returns the registration's name, or `None` when nothing was registered,
/// which alone does not say why:
///
/// - the run asked for a notifier it cannot have (a refused resolution):
///   an unsuccessful [`NotifyOutcome`] with the reason is recorded on the
///   run before returning;
/// - nothing is configured (or `enabled: false`), or the configured filter
///   excludes every entity of the scope: nothing is written, and that
///   absence is what tells these benign cases from a refusal.
///
/// The registration is an override for the scope's entities, so for an
/// envelope it matches the process-wide registration does not also fire;
/// because it does not defer to that registration's filter, it applies the
/// configured filter itself to each envelope. Never fails the run: a
/// failure to record is logged.
pub fn register_run_notify_outcome_scope(
    registry: &Registry,
    run: Arc<dyn OutcomeSink>,
    scope: &RunScope,
    resolution: &Resolution,
) -> Option<String> {
    let Some(resolved) = &resolution.handler else {
        if let Some(refusal) = resolution.refusal {
            let outcome = NotifyOutcome::failed(None, None, refusal.as_str());
            if let Err(error) = run.record(&outcome) {
                tracing::warn!(%error, reason = refusal.as_str(), "notify refusal not recorded on the run");
            }
        }
        return None;
    };
    if !scope.entities.iter().any(|e| resolved.filter.matches(e)) {
        return None;
    }
    let first = scope.entities.first()?;
    let name = format!("notify.run_scope:{}:{}", first.kind, first.id);
    let adapter = Arc::new(adapter_for(resolved, registry, Some(run)));
    let filter = resolved.filter.clone();
    let handler = Handler::from_async(move |envelope| {
        let adapter = Arc::clone(&adapter);
        let accepted = filter.matches(&envelope.entity);
        async move {
            if !accepted {
                tracing::debug!(entity = ?envelope.entity, "run-scoped notifier filtered the envelope out");
                return Ok(());
            }
            adapter.call_checked(&envelope).await.map_err(Into::into)
        }
    });
    registry.register(
        Registration::new(name.clone(), handler)
            .with_filter(scope.filter())
            .as_override(),
    );
    Some(name)
}

/// Removes a run-scoped registration (`None` is accepted and does nothing).
pub fn unregister_run_notify_outcome_scope(registry: &Registry, name: Option<&str>) {
    if let Some(name) = name {
        registry.unregister(name);
    }
}

fn adapter_for(
    resolved: &ResolvedHandler,
    registry: &Registry,
    run: Option<Arc<dyn OutcomeSink>>,
) -> ExecAdapter {
    let Adapter::Exec(argv) = &resolved.adapter;
    let adapter = ExecAdapter::new(argv.clone()).timeout(registry.budget());
    match run {
        Some(run) => adapter.record_to(run),
        None => adapter,
    }
}
