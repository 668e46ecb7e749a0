//! Endpoint registry: plugin providers through the activation chokepoint.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use providers_core::{
    EndpointMatch, EndpointRegistry, Error, NoPlugins, PluginActivator, PluginTarget,
    ProviderFactory,
};

struct Provides(&'static str);
impl ProviderFactory for Provides {
    fn provides(&self, name: &str) -> bool {
        name == self.0
    }
}

/// A plugin registry: trusted set, per-target cache, counts of module
/// executions and of chokepoint calls.
#[derive(Default)]
struct FakePlugins {
    targets: Vec<(PluginTarget, &'static str)>,
    trusted: Mutex<BTreeSet<String>>,
    cache: Mutex<BTreeMap<PluginTarget, Arc<dyn ProviderFactory>>>,
    executions: AtomicUsize,
    activations: AtomicUsize,
}

impl FakePlugins {
    fn with(plugin: &str, provides: &'static str, trusted: bool) -> Self {
        let t = PluginTarget {
            plugin: plugin.into(),
            module: format!("{plugin}.provider"),
        };
        let f = Self {
            targets: vec![(t, provides)],
            ..Default::default()
        };
        if trusted {
            f.trusted.lock().unwrap().insert(plugin.into());
        }
        f
    }
}

impl PluginActivator for FakePlugins {
    fn active_provider_targets(&self) -> Vec<PluginTarget> {
        self.targets.iter().map(|(t, _)| t.clone()).collect()
    }
    fn activate_target(&self, target: &PluginTarget) -> Result<Arc<dyn ProviderFactory>, Error> {
        self.activations.fetch_add(1, Ordering::SeqCst);
        if !self.trusted.lock().unwrap().contains(&target.plugin) {
            return Err(Error::PluginActivation {
                plugin: target.plugin.clone(),
                reason: "untrusted",
            });
        }
        let mut cache = self.cache.lock().unwrap();
        if let Some(f) = cache.get(target) {
            return Ok(Arc::clone(f));
        }
        self.executions.fetch_add(1, Ordering::SeqCst);
        let name = self
            .targets
            .iter()
            .find(|(t, _)| t == target)
            .map_or("", |(_, n)| *n);
        let f: Arc<dyn ProviderFactory> = Arc::new(Provides(name));
        cache.insert(target.clone(), Arc::clone(&f));
        Ok(f)
    }
}

fn registry() -> EndpointRegistry {
    EndpointRegistry::new(["claude", "codex", "openai"])
}

#[test]
fn a_miss_consults_active_plugins_before_the_fallback() {
    // contract: PRV-038
    let plugins = FakePlugins::with("acme", "acme-llm", true);
    let m = registry().match_provider("acme-llm", &plugins);
    assert!(matches!(m, EndpointMatch::Plugin { ref target, .. } if target.plugin == "acme"));
}

#[test]
fn untrusted_plugins_are_never_loaded() {
    // contract: PRV-039
    let plugins = FakePlugins::with("shady", "shady-llm", false);
    let m = registry().match_provider("shady-llm", &plugins);
    assert_eq!(m, EndpointMatch::OpenAiCompatible("shady-llm".into()));
    assert_eq!(plugins.executions.load(Ordering::SeqCst), 0);
    // The registry asked the chokepoint (it did not decide trust itself) and
    // kept nothing from the refused activation.
    assert!(plugins.activations.load(Ordering::SeqCst) >= 1);
    let mut r = registry();
    assert_eq!(
        r.match_provider("shady-llm", &plugins),
        EndpointMatch::OpenAiCompatible("shady-llm".into())
    );
    assert!(!r.has_plugin_entry("shady-llm"));
}

#[test]
fn nothing_is_loaded_before_a_miss() {
    // contract: PRV-040
    let plugins = FakePlugins::with("acme", "acme-llm", true);
    let mut r = registry();
    assert_eq!(
        r.match_provider("claude", &plugins),
        EndpointMatch::Builtin("claude".into())
    );
    assert_eq!(plugins.activations.load(Ordering::SeqCst), 0);
    assert_eq!(plugins.executions.load(Ordering::SeqCst), 0);
}

// Not cited for PRV-041: the activation cache counted here lives in the
// fake plugin registry, so this cannot fail because of the endpoint registry.
#[test]
fn repeated_misses_reuse_the_cached_activation() {
    let plugins = FakePlugins::with("acme", "acme-llm", true);
    let mut r = registry();
    for _ in 0..5 {
        assert_eq!(
            r.match_provider("other-llm", &plugins),
            EndpointMatch::OpenAiCompatible("other-llm".into())
        );
        let _ = r.match_provider("acme-llm", &plugins);
    }
    assert_eq!(
        plugins.executions.load(Ordering::SeqCst),
        1,
        "module executed once"
    );
}

#[test]
fn no_matching_plugin_gives_the_no_plugin_result() {
    // contract: PRV-042
    let plugins = FakePlugins::with("acme", "acme-llm", true);
    let with = registry().match_provider("mistral-api", &plugins);
    let without = registry().match_provider("mistral-api", &NoPlugins);
    assert_eq!(with, without);
    assert_eq!(
        without,
        EndpointMatch::OpenAiCompatible("mistral-api".into())
    );
}

#[test]
fn revoked_trust_removes_the_plugin_entry() {
    // contract: PRV-043
    let plugins = FakePlugins::with("acme", "acme-llm", true);
    let mut r = registry();
    assert!(matches!(
        r.match_provider("acme-llm", &plugins),
        EndpointMatch::Plugin { .. }
    ));
    assert!(r.has_plugin_entry("acme-llm"));
    plugins.trusted.lock().unwrap().clear();
    assert_eq!(
        r.match_provider("acme-llm", &plugins),
        EndpointMatch::OpenAiCompatible("acme-llm".into())
    );
    assert!(!r.has_plugin_entry("acme-llm"));
}
