//! Endpoint resolution: built-ins, then providers from active plugins
//! (loaded only through the plugin registry's chokepoint, only on a miss),
//! then the generic OpenAI-compatible endpoint.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use crate::error::Error;

/// A provider module a plugin declares.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PluginTarget {
    /// The plugin's name.
    pub plugin: String,
    /// The declared provider module.
    pub module: String,
}

/// What an activated provider module offers.
pub trait ProviderFactory: Send + Sync {
    /// Whether it supplies the provider `name`.
    fn provides(&self, name: &str) -> bool;
}

/// The plugin registry, as the endpoint registry sees it. Implemented by
/// the plugin-trust side; `activate_target` is the one chokepoint through
/// which plugin code is ever loaded (it enforces trust, enabled and active,
/// and caches activations).
pub trait PluginActivator {
    /// The provider targets declared by currently active plugins. Listing
    /// loads nothing.
    fn active_provider_targets(&self) -> Vec<PluginTarget>;
    /// Loads (or returns the cached) provider module of `target`.
    fn activate_target(&self, target: &PluginTarget) -> Result<Arc<dyn ProviderFactory>, Error>;
}

/// The result of resolving a provider name.
#[derive(Clone)]
pub enum EndpointMatch {
    /// A built-in provider.
    Builtin(String),
    /// A provider supplied by a plugin.
    Plugin {
        /// Where it came from.
        target: PluginTarget,
        /// The activated module.
        factory: Arc<dyn ProviderFactory>,
    },
    /// The generic OpenAI-compatible endpoint for this provider name.
    OpenAiCompatible(String),
}

impl fmt::Debug for EndpointMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Builtin(n) => f.debug_tuple("Builtin").field(n).finish(),
            Self::Plugin { target, .. } => {
                f.debug_struct("Plugin").field("target", target).finish()
            }
            Self::OpenAiCompatible(n) => f.debug_tuple("OpenAiCompatible").field(n).finish(),
        }
    }
}

impl PartialEq for EndpointMatch {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Builtin(a), Self::Builtin(b)) => a == b,
            (Self::OpenAiCompatible(a), Self::OpenAiCompatible(b)) => a == b,
            (Self::Plugin { target: a, .. }, Self::Plugin { target: b, .. }) => a == b,
            _ => false,
        }
    }
}

/// Resolves provider names to endpoints.
pub struct EndpointRegistry {
    builtins: BTreeSet<String>,
    plugin_entries: BTreeMap<String, (PluginTarget, Arc<dyn ProviderFactory>)>,
}

impl fmt::Debug for EndpointRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointRegistry")
            .field("builtins", &self.builtins)
            .field(
                "plugin_entries",
                &self.plugin_entries.keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl EndpointRegistry {
    /// A registry of built-in provider names. Creating it loads no plugin.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(builtins: I) -> Self {
        Self {
            builtins: builtins.into_iter().map(Into::into).collect(),
            plugin_entries: BTreeMap::new(),
        }
    }

    /// Resolves `name`. A plugin-sourced entry is revalidated through the
    /// chokepoint on every use and removed when activation is refused. On a
    /// miss each active plugin's declared provider target is activated (only
    /// through [`PluginActivator::activate_target`]) and the first that
    /// provides `name` is kept; with none, the result is exactly the
    /// no-plugin fallback.
    pub fn match_provider(&mut self, name: &str, plugins: &dyn PluginActivator) -> EndpointMatch {
        if self.builtins.contains(name) {
            return EndpointMatch::Builtin(name.to_owned());
        }
        if let Some((target, _)) = self.plugin_entries.get(name) {
            let target = target.clone();
            match plugins.activate_target(&target) {
                Ok(factory) => return EndpointMatch::Plugin { target, factory },
                Err(_) => {
                    self.plugin_entries.remove(name);
                }
            }
        }
        for target in plugins.active_provider_targets() {
            let Ok(factory) = plugins.activate_target(&target) else {
                continue;
            };
            if factory.provides(name) {
                self.plugin_entries
                    .insert(name.to_owned(), (target.clone(), Arc::clone(&factory)));
                return EndpointMatch::Plugin { target, factory };
            }
        }
        EndpointMatch::OpenAiCompatible(name.to_owned())
    }

    /// Whether a plugin-sourced entry for `name` is held.
    pub fn has_plugin_entry(&self, name: &str) -> bool {
        self.plugin_entries.contains_key(name)
    }
}

/// A plugin activator with no plugins.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPlugins;

impl PluginActivator for NoPlugins {
    fn active_provider_targets(&self) -> Vec<PluginTarget> {
        Vec::new()
    }
    fn activate_target(&self, target: &PluginTarget) -> Result<Arc<dyn ProviderFactory>, Error> {
        Err(Error::PluginActivation {
            plugin: target.plugin.clone(),
            reason: "no plugins",
        })
    }
}
