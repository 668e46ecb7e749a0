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

/// What [`install_for_run`] installed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunNotify {
    /// The run's resolution (per-run override, project, global).
    pub resolution: Resolution,
    /// The process-wide resolution (project, global).
    pub settings: Resolution,
    /// The run-scoped registration, if one was made.
    pub run_registration: Option<String>,
    /// Whether the process-wide registration was made.
    pub settings_registered: bool,
    /// A do-nothing override for the scope, made when the per-run value
    /// decided against notifying (disabled, refused or filtered out) so the
    /// process-wide notifier does not fire for this run instead.
    pub silenced: Option<String>,
}

impl RunNotify {
    /// The migration warnings to show (each once); none carries an
    /// argument value.
    pub fn warnings(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for warning in [&self.resolution.warning, &self.settings.warning]
            .into_iter()
            .flatten()
        {
            if !out.contains(&warning.as_str()) {
                out.push(warning);
            }
        }
        out
    }

    /// Removes what was installed.
    pub fn uninstall(&self, registry: &Registry) {
        unregister_run_notify_outcome_scope(registry, self.run_registration.as_deref());
        unregister_run_notify_outcome_scope(registry, self.silenced.as_deref());
        if self.settings_registered {
            registry.unregister(SETTINGS_REGISTRATION);
        }
    }
}

/// The whole setup of one run in one call: resolves the three levels of
/// `notify.on_terminal` (each argument is that level's value, see
/// [`crate::on_terminal_in`]), installs the process-wide notifier from the
/// settings alone, and the run's own notifier (its outcome recorded
/// through `run`) as an override for `scope`. When the per-run value
/// decides against notifying (`enabled: false`, a refusal, or a filter
/// excluding the scope), the scope gets a do-nothing override so the
/// process-wide notifier does not fire for it either: the highest level
/// decides. Never fails: refusals are recorded on the run and returned as
/// warnings.
pub fn install_for_run(
    registry: &Registry,
    per_run: Option<&serde_json::Value>,
    project: Option<&serde_json::Value>,
    global: Option<&serde_json::Value>,
    run: Arc<dyn OutcomeSink>,
    scope: &RunScope,
) -> RunNotify {
    let settings = crate::settings::resolve_on_terminal(None, project, global);
    let resolution = crate::settings::resolve_on_terminal(per_run, project, global);
    let settings_registered = register_settings_terminal_callback(registry, &settings);
    let run_registration = register_run_notify_outcome_scope(registry, run, scope, &resolution);
    let silenced = match (&run_registration, resolution.level, scope.entities.first()) {
        (None, Some(crate::settings::Level::PerRun), Some(first)) if settings_registered => {
            let name = format!("notify.run_scope_silenced:{}:{}", first.kind, first.id);
            registry.register(
                Registration::new(name.clone(), Handler::from_async(|_| async { Ok(()) }))
                    .with_filter(scope.filter())
                    .as_override(),
            );
            Some(name)
        }
        _ => None,
    };
    RunNotify {
        resolution,
        settings,
        run_registration,
        settings_registered,
        silenced,
    }
}
