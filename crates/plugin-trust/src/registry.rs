//! The registry: discovery (stage 1, cached), activation (stage 2, verified
//! on every call) and the trust operations, one concern per file: the
//! configuration (`config`), discovery (`discovery`), activation and its
//! cache (`activation`) and the trust operations (`trust`). This file holds
//! the registry itself and its cache plumbing.

mod activation;
mod config;
mod discovery;
mod trust;

pub use activation::{Activation, HookActivation, Target};
pub use config::Config;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::settings::SettingsFile;
use crate::wire::CacheStats;

use activation::{CacheKey, Loaded};
use discovery::Discovery;

/// Discovery, trust and activation over one [`Config`].
///
/// Creating a registry does no I/O. Discovery runs the first time anything
/// asks and is cached for the registry's life (one per process in the
/// command line); [`Registry::rediscover`] drops it. Every activation and
/// every trust check re-reads `plugin.yaml`, the settings and every
/// declared file.
#[derive(Debug)]
pub struct Registry {
    config: Config,
    settings: SettingsFile,
    discovery: Mutex<Option<Arc<Discovery>>>,
    cache: Mutex<HashMap<CacheKey, std::result::Result<Loaded, Arc<str>>>>,
    loads: AtomicU64,
    hits: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Registry {
    /// A registry over `config`. No I/O happens here.
    pub fn new(config: Config) -> Registry {
        let settings = SettingsFile::at(config.settings_path.clone());
        Registry {
            config,
            settings,
            discovery: Mutex::new(None),
            cache: Mutex::new(HashMap::new()),
            loads: AtomicU64::new(0),
            hits: AtomicU64::new(0),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Whether discovery has run (and is cached).
    pub fn is_discovered(&self) -> bool {
        lock(&self.discovery).is_some()
    }

    /// Drops the cached discovery; the next call scans again. Activation
    /// results stay cached: their keys include the content hash.
    pub fn rediscover(&self) {
        *lock(&self.discovery) = None;
    }

    /// Activation cache counters.
    pub fn cache_stats(&self) -> CacheStats {
        CacheStats {
            loads: self.loads.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
        }
    }

    /// The names of the discovered plugins, sorted.
    pub fn discovered_names(&self) -> Vec<String> {
        self.discovery().bundles.keys().cloned().collect()
    }
}
