//! Stage 1, discovery: bundles found under the plugin roots, cached for the
//! registry's life, and the per-call re-read of one bundle's manifest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Registry, lock};
use crate::bundle_fs::BundleDir;
use crate::error::{Error, Result};
use crate::manifest::{MANIFEST_FILE, Manifest};
use crate::wire::DiscoveryProblem;

/// The largest `plugin.yaml` read: a manifest is a short list of names.
pub(super) const MANIFEST_MAX: u64 = 1024 * 1024;

#[derive(Debug, Clone)]
pub(super) struct Discovered {
    pub(super) dir: PathBuf,
    pub(super) manifest: Manifest,
}

#[derive(Debug, Default)]
pub(super) struct Discovery {
    pub(super) bundles: BTreeMap<String, Discovered>,
    pub(super) problems: Vec<DiscoveryProblem>,
}

impl Registry {
    pub(super) fn discovery(&self) -> Arc<Discovery> {
        let mut slot = lock(&self.discovery);
        if let Some(found) = slot.as_ref() {
            return Arc::clone(found);
        }
        let found = Arc::new(self.scan());
        *slot = Some(Arc::clone(&found));
        found
    }

    pub(super) fn scan(&self) -> Discovery {
        let mut discovery = Discovery::default();
        for root in &self.config.plugin_roots {
            let Ok(entries) = std::fs::read_dir(root) else {
                continue;
            };
            let mut dirs: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join(MANIFEST_FILE).is_file())
                .collect();
            dirs.sort();
            for dir in dirs {
                let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
                match self.read_manifest(&dir) {
                    Ok(manifest) => {
                        if let Some(first) = discovery.bundles.get(&manifest.name) {
                            discovery.problems.push(DiscoveryProblem {
                                path: dir.clone(),
                                reason: format!(
                                    "plugin '{}' is already provided by {}",
                                    manifest.name,
                                    first.dir.display()
                                ),
                            });
                        } else {
                            discovery
                                .bundles
                                .insert(manifest.name.clone(), Discovered { dir, manifest });
                        }
                    }
                    Err(error) => discovery.problems.push(DiscoveryProblem {
                        path: dir.join(MANIFEST_FILE),
                        reason: error.to_string(),
                    }),
                }
            }
        }
        tracing::debug!(
            plugins = discovery.bundles.len(),
            problems = discovery.problems.len(),
            "plugins discovered"
        );
        discovery
    }

    /// Reads and parses `plugin.yaml` from disk (never a cached copy).
    pub(super) fn read_manifest(&self, dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST_FILE);
        let bytes = BundleDir::open(dir)
            .and_then(|d| d.read(MANIFEST_FILE, self.config.max_file_size.min(MANIFEST_MAX)))
            .map_err(|source| Error::ManifestRead {
                path: path.clone(),
                source,
            })?;
        Manifest::parse(&bytes, &path)
    }

    pub(super) fn bundle_dir(&self, plugin: &str) -> Result<PathBuf> {
        self.discovery()
            .bundles
            .get(plugin)
            .map(|b| b.dir.clone())
            .ok_or_else(|| Error::UnknownPlugin {
                plugin: plugin.to_owned(),
            })
    }

    /// Rescans one bundle: re-reads `plugin.yaml` from disk and checks it
    /// still names the plugin.
    pub(super) fn rescan(&self, plugin: &str, dir: &Path) -> Result<Manifest> {
        let manifest = self.read_manifest(dir)?;
        if manifest.name != plugin {
            return Err(Error::Changed {
                plugin: plugin.to_owned(),
                what: format!("the manifest now names '{}'", manifest.name),
            });
        }
        Ok(manifest)
    }

    /// The provider modules a plugin declares now (re-read from disk).
    pub fn provider_modules(&self, plugin: &str) -> Result<Vec<String>> {
        let dir = self.bundle_dir(plugin)?;
        let manifest = self.rescan(plugin, &dir)?;
        Ok(manifest
            .capabilities
            .providers
            .into_iter()
            .map(|p| p.module)
            .collect())
    }
}

/// Whether a recorded `bundle_path` names the discovered (canonical)
/// bundle directory. A record written through a symlinked path by the
/// original still matches; a different directory never does.
pub(super) fn same_bundle(recorded: &str, discovered: &Path) -> bool {
    let recorded = Path::new(recorded);
    recorded == discovered
        || std::fs::canonicalize(recorded).is_ok_and(|resolved| resolved == discovered)
}
