//! Plugin-declared providers: the registry-miss fallback that reaches a
//! plugin's provider definitions only through activation.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Serialize;

use crate::definition::ProviderDefinition;
use crate::registry::{Registry, Target};

/// A provider found through a plugin, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PluginProvider {
    /// The plugin that declares it.
    pub plugin: String,
    /// The declared definition file.
    pub module: String,
    /// sha256 of the definition bytes that were verified.
    pub sha256: String,
    /// The definition.
    pub definition: ProviderDefinition,
}

/// The plugin step of a provider registry's miss path.
///
/// A provider registry calls [`ProviderFallback::lookup`] when a name is not
/// among its built-in providers, before its generic fallback. Every answer
/// comes from [`Registry::activate`], so trust, enablement, compatibility
/// and content are checked on each lookup; a remembered plugin entry whose
/// activation fails is dropped on the spot and the search continues.
#[derive(Debug, Default)]
pub struct ProviderFallback {
    entries: Mutex<BTreeMap<String, (String, String)>>,
}

impl ProviderFallback {
    /// An empty fallback.
    pub fn new() -> Self {
        Self::default()
    }

    /// The plugin provider answering to `name`, or `None` (the caller then
    /// uses its generic fallback, exactly as with no plugins installed).
    ///
    /// On a miss this activates the provider modules of every discovered
    /// plugin, in name order, until one answers to `name`. Activation of a
    /// provider module parses data and runs nothing.
    pub fn lookup(&self, registry: &Registry, name: &str) -> Option<PluginProvider> {
        let remembered = self.lock().get(name).cloned();
        if let Some((plugin, module)) = remembered {
            match activate_provider(registry, &plugin, &module) {
                Some(found) if found.definition.answers_to(name) => return Some(found),
                _ => {
                    tracing::debug!(provider = name, plugin, "dropped plugin provider entry");
                    self.lock().remove(name);
                }
            }
        }
        for plugin in registry.discovered_names() {
            let Ok(modules) = registry.provider_modules(&plugin) else {
                continue;
            };
            for module in modules {
                if let Some(found) = activate_provider(registry, &plugin, &module)
                    && found.definition.answers_to(name)
                {
                    self.lock()
                        .insert(name.to_owned(), (plugin.clone(), module.clone()));
                    return Some(found);
                }
            }
        }
        None
    }

    /// The provider names currently remembered as plugin-sourced.
    pub fn remembered(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (String, String)>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn activate_provider(registry: &Registry, plugin: &str, module: &str) -> Option<PluginProvider> {
    match registry.activate(plugin, &Target::Provider(module.to_owned())) {
        Ok(activation) => {
            let definition = ProviderDefinition::clone(activation.provider()?);
            Some(PluginProvider {
                plugin: plugin.to_owned(),
                module: module.to_owned(),
                sha256: activation.sha256().to_owned(),
                definition,
            })
        }
        Err(error) => {
            tracing::debug!(plugin, module, %error, "plugin provider not activated");
            None
        }
    }
}
