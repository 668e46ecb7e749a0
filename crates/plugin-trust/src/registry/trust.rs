//! The trust operations behind `lionrt plugin`: list, verify, show, trust,
//! untrust, enable/disable and gc, each checked against disk now.

use std::collections::BTreeMap;

use super::Registry;
use super::discovery::same_bundle;
use crate::bundle_fs::BundleDir;
use crate::error::{Error, Result};
use crate::manifest::{hex, pinned_targets, record_key_path};
use crate::settings::{self, Settings, TrustRecord};
use crate::version::{COMPAT_VERSION, specifier_admits};
use crate::wire::{
    DisclosedFile, DisclosedHook, DisclosedTool, Disclosure, FileCheck, HashCheck, ListReport,
    PluginSummary, TrustReport, TrustState, VerifyReport,
};

impl Registry {
    /// `plugin list`: every discovered plugin with its state checked now.
    pub fn list(&self) -> Result<ListReport> {
        let discovery = self.discovery();
        let mut plugins = Vec::new();
        for (name, bundle) in &discovery.bundles {
            let (state, enabled, compatible, problem) = match self.verify(name) {
                Ok(report) => (report.state, report.enabled, report.compatible, None),
                Err(error @ Error::SettingsRead { .. }) => return Err(error),
                Err(error) => {
                    let settings = settings::load(&self.settings)?;
                    let state = if settings.trust_record_names().iter().any(|n| n == name) {
                        TrustState::Changed
                    } else {
                        TrustState::Untrusted
                    };
                    (
                        state,
                        !settings.is_plugin_disabled(name),
                        specifier_admits(&bundle.manifest.lionagi, COMPAT_VERSION),
                        Some(error.to_string()),
                    )
                }
            };
            plugins.push(PluginSummary {
                name: name.clone(),
                version: bundle.manifest.version.clone(),
                description: bundle.manifest.description.clone(),
                bundle_path: bundle.dir.clone(),
                state,
                enabled,
                compatible,
                problem,
            });
        }
        Ok(ListReport {
            plugins,
            problems: discovery.problems.clone(),
        })
    }

    /// `plugin verify`: re-hashes the manifest and every declared and
    /// recorded file and compares with the record.
    pub fn verify(&self, plugin: &str) -> Result<VerifyReport> {
        let dir_path = self.bundle_dir(plugin)?;
        let manifest = self.rescan(plugin, &dir_path)?;
        let settings = settings::load(&self.settings)?;
        let record = settings.trust_record(plugin).map(pinned_record);
        let current_manifest = manifest.sha256();
        let manifest_check = check(
            record.as_ref().map(|r| r.manifest.clone()),
            Some(current_manifest),
        );
        let declared = manifest.declared_paths();
        let mut paths = declared.clone();
        if let Some(record) = &record {
            paths.extend(record.targets.keys().cloned());
        }
        let dir = BundleDir::open(&dir_path).ok();
        let mut buf = vec![0u8; 64 * 1024];
        let files: Vec<FileCheck> = paths
            .into_iter()
            .map(|path| {
                let current = dir
                    .as_ref()
                    .and_then(|d| d.hash(&path, self.config.max_file_size, &mut buf).ok())
                    .map(|digest| hex(&digest));
                let recorded = record
                    .as_ref()
                    .and_then(|r| r.targets.get(&path).cloned().flatten());
                FileCheck {
                    declared: declared.contains(&path),
                    hash: check(recorded, current),
                    path,
                }
            })
            .collect();
        let recorded_bundle_path = settings.trust_record_bundle_path(plugin);
        let state = match &record {
            None => TrustState::Untrusted,
            Some(record)
                if manifest_check.matches
                    && same_bundle(&record.bundle_path, &dir_path)
                    && files.iter().all(|f| f.declared && f.hash.matches) =>
            {
                TrustState::Trusted
            }
            Some(_) => TrustState::Changed,
        };
        Ok(VerifyReport {
            name: plugin.to_owned(),
            state,
            enabled: !settings.is_plugin_disabled(plugin),
            compatible: specifier_admits(&manifest.lionagi, COMPAT_VERSION),
            bundle_path: dir_path,
            recorded_bundle_path,
            manifest: manifest_check,
            files,
        })
    }

    /// `plugin show`: everything the bundle declares, re-read from disk,
    /// with every hook argv in full and the current hash of every file.
    pub fn show(&self, plugin: &str) -> Result<Disclosure> {
        let report = self.verify(plugin)?;
        let manifest = self.rescan(plugin, &report.bundle_path)?;
        let dir = BundleDir::open(&report.bundle_path).ok();
        let mut buf = vec![0u8; 64 * 1024];
        let files = manifest
            .declared_paths()
            .into_iter()
            .map(|path| {
                let result = match &dir {
                    Some(d) => d.hash(&path, self.config.max_file_size, &mut buf),
                    None => Err(std::io::Error::other("bundle directory unreadable")),
                };
                match result {
                    Ok(digest) => DisclosedFile {
                        path,
                        sha256: Some(hex(&digest)),
                        error: None,
                    },
                    Err(e) => DisclosedFile {
                        path,
                        sha256: None,
                        error: Some(e.to_string()),
                    },
                }
            })
            .collect();
        let caps = &manifest.capabilities;
        Ok(Disclosure {
            name: manifest.name.clone(),
            version: manifest.version.clone(),
            description: manifest.description.clone(),
            lionagi: manifest.lionagi.clone(),
            compatible: report.compatible,
            bundle_path: report.bundle_path.clone(),
            manifest_sha256: manifest.sha256(),
            state: report.state,
            enabled: report.enabled,
            tools: caps
                .tools
                .iter()
                .filter_map(|t| {
                    manifest
                        .resolve_tool(&t.name)
                        .map(|resolved| DisclosedTool {
                            name: t.name.clone(),
                            target: t.target.clone(),
                            resolved,
                        })
                })
                .collect(),
            hooks: manifest
                .hooks()
                .map(|(event, hook, matcher)| DisclosedHook {
                    event: event.to_owned(),
                    matcher: matcher.to_owned(),
                    kind: hook.kind,
                    command: hook.command.clone(),
                })
                .collect(),
            agents: caps.agents.clone(),
            playbooks: caps.playbooks.clone(),
            packs: caps.packs.clone(),
            providers: caps.providers.clone(),
            files,
        })
    }

    /// `plugin trust`: re-reads the manifest and hashes every declared
    /// file, then writes the record under the settings lock. Refuses if any
    /// declared file is unreadable.
    pub fn trust(&self, plugin: &str) -> Result<TrustReport> {
        self.trust_checked(plugin, None)
    }

    /// Trusts exactly what a [`Disclosure`] showed: refuses with
    /// [`Error::Changed`] if the manifest or any declared file hashes
    /// differently now than when [`Registry::show`] produced it, so a bundle
    /// edited between "show" and the user's "yes" is not trusted.
    pub fn trust_as_disclosed(&self, disclosure: &Disclosure) -> Result<TrustReport> {
        self.trust_checked(&disclosure.name, Some(disclosure))
    }

    #[tracing::instrument(skip_all, fields(plugin))]
    pub(super) fn trust_checked(
        &self,
        plugin: &str,
        shown: Option<&Disclosure>,
    ) -> Result<TrustReport> {
        let dir_path = self.bundle_dir(plugin)?;
        let manifest = self.rescan(plugin, &dir_path)?;
        let dir = BundleDir::open(&dir_path).map_err(|source| Error::Unreadable {
            plugin: plugin.to_owned(),
            path: ".".to_owned(),
            source,
        })?;
        let mut buf = vec![0u8; 64 * 1024];
        let mut targets = BTreeMap::new();
        // Keyed as the original keys them (a hook's `./x`), hashed at the
        // bundle path each names.
        for key in manifest.declared_record_keys() {
            let path = record_key_path(&key).to_owned();
            let digest = dir
                .hash(&path, self.config.max_file_size, &mut buf)
                .map_err(|source| Error::Unreadable {
                    plugin: plugin.to_owned(),
                    path: path.clone(),
                    source,
                })?;
            targets.insert(key, Some(hex(&digest)));
        }
        let record = TrustRecord {
            manifest: manifest.sha256(),
            targets,
            bundle_path: dir_path.to_string_lossy().into_owned(),
        };
        if let Some(shown) = shown {
            let shown_files: BTreeMap<&str, Option<&str>> = shown
                .files
                .iter()
                .map(|f| (f.path.as_str(), f.sha256.as_deref()))
                .collect();
            let pinned = pinned_targets(&record.targets);
            let now_files: BTreeMap<&str, Option<&str>> = pinned
                .iter()
                .map(|(p, h)| (p.as_str(), h.as_deref()))
                .collect();
            if shown.manifest_sha256 != record.manifest
                || shown_files != now_files
                || shown.bundle_path != dir_path
            {
                return Err(Error::Changed {
                    plugin: plugin.to_owned(),
                    what: "the bundle differs from what was shown".to_owned(),
                });
            }
        }
        settings::update(&self.settings, |settings| {
            settings.set_trust_record(plugin, &record)
        })?;
        tracing::info!(plugin, "plugin trusted");
        Ok(TrustReport {
            name: plugin.to_owned(),
            record,
        })
    }

    /// `plugin untrust`: removes the record; true if there was one. Needs
    /// no bundle (a record for a removed bundle can be dropped too).
    #[tracing::instrument(skip_all, fields(plugin))]
    pub fn untrust(&self, plugin: &str) -> Result<bool> {
        let removed = settings::update(&self.settings, |settings| {
            settings.remove_trust_record(plugin)
        })?;
        if removed {
            tracing::info!(plugin, "plugin untrusted");
        }
        Ok(removed)
    }

    /// Enables or disables a plugin (`disabled_plugins` in the settings).
    #[tracing::instrument(skip_all, fields(plugin, enabled))]
    pub fn set_enabled(&self, plugin: &str, enabled: bool) -> Result<()> {
        settings::update(&self.settings, |settings| {
            settings.set_plugin_disabled(plugin, !enabled)
        })?;
        tracing::info!(plugin, enabled, "plugin enablement changed");
        Ok(())
    }

    /// `plugin gc`: removes records whose bundle directory no longer
    /// exists, under the settings lock; returns the pruned names, sorted.
    /// Running it again prunes nothing.
    #[tracing::instrument(skip_all)]
    pub fn gc(&self) -> Result<Vec<String>> {
        settings::update(&self.settings, |settings: &mut Settings| {
            let mut pruned = Vec::new();
            for name in settings.trust_record_names() {
                let Some(path) = settings.trust_record_bundle_path(&name) else {
                    continue;
                };
                let gone = matches!(
                    std::fs::metadata(&path),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound
                );
                if gone && settings.remove_trust_record(&name) {
                    pruned.push(name);
                }
            }
            pruned.sort();
            pruned
        })
    }
}

pub(super) fn check(recorded: Option<String>, current: Option<String>) -> HashCheck {
    let matches = matches!((&recorded, &current), (Some(a), Some(b)) if a == b);
    HashCheck {
        recorded,
        current,
        matches,
    }
}

/// A record as this crate compares it: its targets keyed by bundle path
/// ([`pinned_targets`]), whichever tool wrote it.
pub(super) fn pinned_record(mut record: TrustRecord) -> TrustRecord {
    record.targets = pinned_targets(&record.targets);
    record
}
