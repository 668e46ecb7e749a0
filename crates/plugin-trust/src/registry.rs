//! The registry: discovery (stage 1, cached), activation (stage 2, verified
//! on every call) and the trust operations.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::bundle_fs::BundleDir;
use crate::error::{Error, Result};
use crate::manifest::{MANIFEST_FILE, Manifest, hex, hook_arg_path};
use crate::provider::ProviderDefinition;
use crate::sealed::{SealedFile, inherit_in_child};
use crate::settings::{Settings, SettingsFile, TrustRecord};
use crate::version::{COMPAT_VERSION, specifier_admits};
use crate::wire::{
    CacheStats, DisclosedFile, DisclosedHook, DisclosedTool, Disclosure, DiscoveryProblem,
    FileCheck, HashCheck, ListReport, PluginSummary, TrustReport, TrustState, VerifyReport,
};

/// The largest `plugin.yaml` read: a manifest is a short list of names.
const MANIFEST_MAX: u64 = 1024 * 1024;

/// How a [`Registry`] finds bundles and trust.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Directories whose subdirectories holding a `plugin.yaml` are
    /// bundles, in precedence order: the first bundle with a name wins, a
    /// later one with the same name is reported as a problem.
    pub plugin_roots: Vec<PathBuf>,
    /// The user-level settings file holding trust records and the
    /// disabled list.
    pub settings_path: PathBuf,
    /// The largest declared file read, in bytes (default 64 MiB). A
    /// manifest is further capped at 1 MiB.
    pub max_file_size: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            plugin_roots: Vec::new(),
            settings_path: PathBuf::new(),
            max_file_size: 64 * 1024 * 1024,
        }
    }
}

impl Config {
    /// The variable naming the user plugin directory instead of
    /// `$HOME/.lionagi/plugins`.
    pub const PLUGINS_VAR: &'static str = "LIONAGI_PLUGINS_DIR";

    /// The configuration of the command line: settings from
    /// `$LIONAGI_SETTINGS_FILE` or `$HOME/.lionagi/settings.yaml`; roots
    /// `$LIONAGI_PLUGINS_DIR` or `$HOME/.lionagi/plugins`, then
    /// `<project>/.lionagi/plugins` if a project directory is given. `None`
    /// when neither a settings variable nor `HOME` is set.
    pub fn from_env(project: Option<&Path>) -> Option<Config> {
        Self::from_env_with(|name| std::env::var_os(name), project)
    }

    /// [`Config::from_env`] over any variable source.
    pub fn from_env_with(
        lookup: impl Fn(&str) -> Option<OsString>,
        project: Option<&Path>,
    ) -> Option<Config> {
        let settings = SettingsFile::locate_with(&lookup)?;
        let mut plugin_roots = Vec::new();
        if let Some(dir) = lookup(Self::PLUGINS_VAR).filter(|d| !d.is_empty()) {
            plugin_roots.push(PathBuf::from(dir));
        } else if let Some(home) = lookup("HOME").filter(|h| !h.is_empty()) {
            plugin_roots.push(Path::new(&home).join(".lionagi").join("plugins"));
        }
        if let Some(project) = project {
            plugin_roots.push(project.join(".lionagi").join("plugins"));
        }
        Some(Config {
            plugin_roots,
            settings_path: settings.path().to_path_buf(),
            ..Config::default()
        })
    }
}

/// What to activate within a plugin.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// A tool, by its declared name; activates its executable.
    Tool(String),
    /// An agent profile file, by its declared path.
    Agent(String),
    /// A playbook file, by its declared path.
    Playbook(String),
    /// A pack file, by its declared path.
    Pack(String),
    /// A provider definition file, by its declared `module` path.
    Provider(String),
}

impl Target {
    fn describe(&self) -> String {
        match self {
            Target::Tool(name) => format!("tool {name}"),
            Target::Agent(path) => format!("agent {path}"),
            Target::Playbook(path) => format!("playbook {path}"),
            Target::Pack(path) => format!("pack {path}"),
            Target::Provider(path) => format!("provider {path}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum LoadKind {
    Data,
    Executable,
    Provider,
}

#[derive(Debug, Clone)]
enum Loaded {
    Data,
    Executable(SealedFile),
    Provider(Arc<ProviderDefinition>),
}

type CacheKey = (String, String, String, LoadKind);

/// Verified bytes of a declared file and their sha256.
type VerifiedBytes = (Arc<Vec<u8>>, String);

/// A verified target: the bytes that were hashed, and what was loaded from
/// them.
///
/// Take one per use: the checks behind it were made when it was created,
/// and a later change on disk is seen by the next [`Registry::activate`],
/// not by this value.
#[derive(Debug, Clone)]
pub struct Activation {
    plugin: String,
    path: String,
    sha256: String,
    bytes: Arc<Vec<u8>>,
    callable: Option<String>,
    loaded: Loaded,
}

impl Activation {
    /// The plugin.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// The bundle-relative path of the target file.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// sha256 (lowercase hex) of [`Activation::bytes`], equal to the trust
    /// record's.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The verified bytes, from the one read that was hashed.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// A tool's callable.
    pub fn callable(&self) -> Option<&str> {
        self.callable.as_deref()
    }

    /// A provider target's definition.
    pub fn provider(&self) -> Option<&Arc<ProviderDefinition>> {
        match &self.loaded {
            Loaded::Provider(def) => Some(def),
            _ => None,
        }
    }

    /// For a tool: a command running the sealed in-memory copy of the
    /// verified bytes with the callable as first argument. The caller adds
    /// arguments, environment, working directory and stdio.
    pub fn command(&self) -> Option<Command> {
        let Loaded::Executable(sealed) = &self.loaded else {
            return None;
        };
        let mut command = Command::new(sealed.proc_path());
        command.arg0(&self.path);
        if let Some(callable) = &self.callable {
            command.arg(callable);
        }
        inherit_in_child(&mut command, vec![sealed.clone()]);
        Some(command)
    }

    /// The content of the sealed copy a tool runs from (for audits and
    /// tests: it is always equal to [`Activation::bytes`]).
    pub fn sealed_bytes(&self) -> Option<std::io::Result<Vec<u8>>> {
        match &self.loaded {
            Loaded::Executable(sealed) => Some(sealed.read_back()),
            _ => None,
        }
    }
}

/// One hook of an event, verified and ready to run.
#[derive(Debug, Clone)]
pub struct HookActivation {
    /// The plugin.
    pub plugin: String,
    /// The event.
    pub event: String,
    /// The matcher.
    pub matcher: String,
    /// The argv as declared.
    pub argv: Vec<String>,
    sealed: Vec<Option<SealedFile>>,
}

impl HookActivation {
    /// A command for the hook: each `./` argument (including the program)
    /// is replaced by the path of a sealed in-memory copy of the verified
    /// bytes, open in the child only. Other arguments are passed verbatim
    /// and pin nothing, so do not run hooks with the bundle directory as the
    /// working directory: a bare `hooks/x.sh` would then name an unpinned
    /// file. The caller sets working directory, environment and stdio.
    pub fn command(&self) -> Command {
        let resolved: Vec<String> = self
            .argv
            .iter()
            .zip(&self.sealed)
            .map(|(arg, sealed)| match sealed {
                Some(sealed) => sealed.proc_path(),
                None => arg.clone(),
            })
            .collect();
        let mut command = Command::new(&resolved[0]);
        if self.sealed[0].is_some() {
            command.arg0(&self.argv[0]);
        }
        command.args(&resolved[1..]);
        inherit_in_child(
            &mut command,
            self.sealed.iter().flatten().cloned().collect(),
        );
        command
    }
}

#[derive(Debug, Clone)]
struct Discovered {
    dir: PathBuf,
    manifest: Manifest,
}

#[derive(Debug, Default)]
struct Discovery {
    bundles: BTreeMap<String, Discovered>,
    problems: Vec<DiscoveryProblem>,
}

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

struct Eligible {
    dir: BundleDir,
    manifest: Manifest,
    record: TrustRecord,
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

    fn discovery(&self) -> Arc<Discovery> {
        let mut slot = lock(&self.discovery);
        if let Some(found) = slot.as_ref() {
            return Arc::clone(found);
        }
        let found = Arc::new(self.scan());
        *slot = Some(Arc::clone(&found));
        found
    }

    fn scan(&self) -> Discovery {
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
    fn read_manifest(&self, dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST_FILE);
        let bytes = BundleDir::open(dir)
            .and_then(|d| d.read(MANIFEST_FILE, self.config.max_file_size.min(MANIFEST_MAX)))
            .map_err(|source| Error::ManifestRead {
                path: path.clone(),
                source,
            })?;
        Manifest::parse(&bytes, &path)
    }

    fn bundle_dir(&self, plugin: &str) -> Result<PathBuf> {
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
    fn rescan(&self, plugin: &str, dir: &Path) -> Result<Manifest> {
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

    /// The fresh eligibility checks shared by every activation: manifest
    /// re-read, settings re-read, trust record present, bundle location and
    /// manifest hash unchanged, enabled, compatible.
    fn eligible(&self, plugin: &str) -> Result<Eligible> {
        let dir_path = self.bundle_dir(plugin)?;
        let manifest = self.rescan(plugin, &dir_path)?;
        let settings = self.settings.load()?;
        let record = settings.record(plugin).ok_or_else(|| Error::Untrusted {
            plugin: plugin.to_owned(),
        })?;
        if !same_bundle(&record.bundle_path, &dir_path) {
            return Err(Error::Changed {
                plugin: plugin.to_owned(),
                what: format!("the bundle moved to {}", dir_path.display()),
            });
        }
        if record.manifest != manifest.sha256() {
            return Err(Error::Changed {
                plugin: plugin.to_owned(),
                what: "the manifest differs".to_owned(),
            });
        }
        if settings.is_disabled(plugin) {
            return Err(Error::Disabled {
                plugin: plugin.to_owned(),
            });
        }
        if !specifier_admits(&manifest.lionagi, COMPAT_VERSION) {
            return Err(Error::Incompatible {
                plugin: plugin.to_owned(),
                specifier: manifest.lionagi.clone(),
                runtime: COMPAT_VERSION,
            });
        }
        let dir = BundleDir::open(&dir_path).map_err(|source| Error::Unreadable {
            plugin: plugin.to_owned(),
            path: ".".to_owned(),
            source,
        })?;
        Ok(Eligible {
            dir,
            manifest,
            record,
        })
    }

    /// Re-hashes every declared file against the record; the `wanted`
    /// files are read whole and their verified bytes returned (one read
    /// each: the hash is taken over the returned bytes).
    fn verify_files(
        &self,
        plugin: &str,
        eligible: &Eligible,
        wanted: &BTreeSet<String>,
    ) -> Result<BTreeMap<String, VerifiedBytes>> {
        let changed = |what: String| Error::Changed {
            plugin: plugin.to_owned(),
            what,
        };
        let declared = eligible.manifest.declared_paths();
        if let Some(extra) = eligible
            .record
            .targets
            .keys()
            .find(|k| !declared.contains(*k))
        {
            return Err(changed(format!("the record lists undeclared '{extra}'")));
        }
        let mut out = BTreeMap::new();
        let mut buf = vec![0u8; 64 * 1024];
        for path in &declared {
            let Some(Some(recorded)) = eligible.record.targets.get(path) else {
                return Err(changed(format!("'{path}' is not pinned by the record")));
            };
            let unreadable = |source| Error::Unreadable {
                plugin: plugin.to_owned(),
                path: path.clone(),
                source,
            };
            if wanted.contains(path) {
                let (bytes, digest) = eligible
                    .dir
                    .read_hashed(path, self.config.max_file_size, &mut buf)
                    .map_err(unreadable)?;
                let sha = hex(&digest);
                if &sha != recorded {
                    return Err(changed(format!("'{path}' differs")));
                }
                out.insert(path.clone(), (Arc::new(bytes), sha));
            } else {
                let digest = eligible
                    .dir
                    .hash(path, self.config.max_file_size, &mut buf)
                    .map_err(unreadable)?;
                if &hex(&digest) != recorded {
                    return Err(changed(format!("'{path}' differs")));
                }
            }
        }
        Ok(out)
    }

    fn load(
        &self,
        plugin: &str,
        path: &str,
        sha: &str,
        kind: LoadKind,
        bytes: &[u8],
    ) -> Result<Loaded> {
        let key = (plugin.to_owned(), path.to_owned(), sha.to_owned(), kind);
        let mut cache = lock(&self.cache);
        let entry = if let Some(entry) = cache.get(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            entry.clone()
        } else {
            self.loads.fetch_add(1, Ordering::Relaxed);
            let loaded = match kind {
                LoadKind::Data => Ok(Loaded::Data),
                LoadKind::Executable => SealedFile::new(&memfd_name(plugin, path), bytes)
                    .map(Loaded::Executable)
                    .map_err(|e| Arc::from(format!("cannot seal for execution: {e}"))),
                LoadKind::Provider => ProviderDefinition::parse(bytes)
                    .map(|d| Loaded::Provider(Arc::new(d)))
                    .map_err(Arc::from),
            };
            tracing::debug!(plugin, path, sha, ok = loaded.is_ok(), "target loaded");
            cache.insert(key, loaded.clone());
            loaded
        };
        entry.map_err(|reason| Error::Load {
            plugin: plugin.to_owned(),
            path: path.to_owned(),
            reason: reason.to_string(),
        })
    }

    /// Activates one declared target: re-reads `plugin.yaml`, the settings
    /// and every declared file; refuses unless the plugin is trusted for
    /// exactly this content, enabled and compatible; reads the target once,
    /// checks that read's hash and hands out those bytes and what was
    /// loaded from them (cached per plugin, target and content hash,
    /// failures included).
    #[tracing::instrument(skip_all, fields(plugin, target = ?target))]
    pub fn activate(&self, plugin: &str, target: &Target) -> Result<Activation> {
        let eligible = self.eligible(plugin)?;
        let caps = &eligible.manifest.capabilities;
        let unknown = || Error::UnknownTarget {
            plugin: plugin.to_owned(),
            target: target.describe(),
        };
        let (path, callable, kind) = match target {
            Target::Tool(name) => {
                let resolved = eligible.manifest.resolve_tool(name).ok_or_else(unknown)?;
                (resolved.path, Some(resolved.callable), LoadKind::Executable)
            }
            Target::Agent(p) if caps.agents.contains(p) => (p.clone(), None, LoadKind::Data),
            Target::Playbook(p) if caps.playbooks.contains(p) => (p.clone(), None, LoadKind::Data),
            Target::Pack(p) if caps.packs.contains(p) => (p.clone(), None, LoadKind::Data),
            Target::Provider(p) if caps.providers.iter().any(|d| &d.module == p) => {
                (p.clone(), None, LoadKind::Provider)
            }
            _ => return Err(unknown()),
        };
        let wanted = BTreeSet::from([path.clone()]);
        let mut verified = self.verify_files(plugin, &eligible, &wanted)?;
        let (bytes, sha) = verified.remove(&path).ok_or_else(unknown)?;
        let loaded = self.load(plugin, &path, &sha, kind, &bytes)?;
        tracing::debug!(plugin, path, sha, "target activated");
        Ok(Activation {
            plugin: plugin.to_owned(),
            path,
            sha256: sha,
            bytes,
            callable,
            loaded,
        })
    }

    /// Activates every hook of `event`, after the same checks as
    /// [`Registry::activate`]; each `./` argument runs from a sealed copy
    /// of its verified bytes. An event with no hooks gives an empty list.
    #[tracing::instrument(skip_all, fields(plugin, event))]
    pub fn activate_hooks(&self, plugin: &str, event: &str) -> Result<Vec<HookActivation>> {
        let eligible = self.eligible(plugin)?;
        let hooks: Vec<_> = eligible
            .manifest
            .hooks()
            .filter(|(e, _, _)| *e == event)
            .map(|(_, hook, matcher)| (hook.command.clone(), matcher.to_owned()))
            .collect();
        let wanted: BTreeSet<String> = hooks
            .iter()
            .flat_map(|(argv, _)| argv.iter().filter_map(|a| hook_arg_path(a)))
            .map(str::to_owned)
            .collect();
        let verified = self.verify_files(plugin, &eligible, &wanted)?;
        let mut out = Vec::with_capacity(hooks.len());
        for (argv, matcher) in hooks {
            let mut sealed = Vec::with_capacity(argv.len());
            for arg in &argv {
                match hook_arg_path(arg).and_then(|p| verified.get(p).map(|v| (p, v))) {
                    Some((path, (bytes, sha))) => {
                        match self.load(plugin, path, sha, LoadKind::Executable, bytes)? {
                            Loaded::Executable(file) => sealed.push(Some(file)),
                            _ => sealed.push(None),
                        }
                    }
                    None => sealed.push(None),
                }
            }
            out.push(HookActivation {
                plugin: plugin.to_owned(),
                event: event.to_owned(),
                matcher,
                argv,
                sealed,
            });
        }
        Ok(out)
    }

    /// `plugin list`: every discovered plugin with its state checked now.
    pub fn list(&self) -> Result<ListReport> {
        let discovery = self.discovery();
        let mut plugins = Vec::new();
        for (name, bundle) in &discovery.bundles {
            let (state, enabled, compatible, problem) = match self.verify(name) {
                Ok(report) => (report.state, report.enabled, report.compatible, None),
                Err(error @ Error::SettingsRead { .. }) => return Err(error),
                Err(error) => {
                    let settings = self.settings.load()?;
                    let state = if settings.record_names().iter().any(|n| n == name) {
                        TrustState::Changed
                    } else {
                        TrustState::Untrusted
                    };
                    (
                        state,
                        !settings.is_disabled(name),
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
        let settings = self.settings.load()?;
        let record = settings.record(plugin);
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
        let recorded_bundle_path = settings.record_bundle_path(plugin);
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
            enabled: !settings.is_disabled(plugin),
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
    fn trust_checked(&self, plugin: &str, shown: Option<&Disclosure>) -> Result<TrustReport> {
        let dir_path = self.bundle_dir(plugin)?;
        let manifest = self.rescan(plugin, &dir_path)?;
        let dir = BundleDir::open(&dir_path).map_err(|source| Error::Unreadable {
            plugin: plugin.to_owned(),
            path: ".".to_owned(),
            source,
        })?;
        let mut buf = vec![0u8; 64 * 1024];
        let mut targets = BTreeMap::new();
        for path in manifest.declared_paths() {
            let digest = dir
                .hash(&path, self.config.max_file_size, &mut buf)
                .map_err(|source| Error::Unreadable {
                    plugin: plugin.to_owned(),
                    path: path.clone(),
                    source,
                })?;
            targets.insert(path, Some(hex(&digest)));
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
            let now_files: BTreeMap<&str, Option<&str>> = record
                .targets
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
        self.settings
            .update(|settings| settings.set_record(plugin, &record))?;
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
        let removed = self
            .settings
            .update(|settings| settings.remove_record(plugin))?;
        if removed {
            tracing::info!(plugin, "plugin untrusted");
        }
        Ok(removed)
    }

    /// Enables or disables a plugin (`disabled_plugins` in the settings).
    #[tracing::instrument(skip_all, fields(plugin, enabled))]
    pub fn set_enabled(&self, plugin: &str, enabled: bool) -> Result<()> {
        self.settings
            .update(|settings| settings.set_disabled(plugin, !enabled))?;
        tracing::info!(plugin, enabled, "plugin enablement changed");
        Ok(())
    }

    /// `plugin gc`: removes records whose bundle directory no longer
    /// exists, under the settings lock; returns the pruned names, sorted.
    /// Running it again prunes nothing.
    #[tracing::instrument(skip_all)]
    pub fn gc(&self) -> Result<Vec<String>> {
        self.settings.update(|settings: &mut Settings| {
            let mut pruned = Vec::new();
            for name in settings.record_names() {
                let Some(path) = settings.record_bundle_path(&name) else {
                    continue;
                };
                let gone = matches!(
                    std::fs::metadata(&path),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound
                );
                if gone && settings.remove_record(&name) {
                    pruned.push(name);
                }
            }
            pruned.sort();
            pruned
        })
    }
}

/// Whether a recorded `bundle_path` names the discovered (canonical)
/// bundle directory. A record written through a symlinked path by the
/// original still matches; a different directory never does.
fn same_bundle(recorded: &str, discovered: &Path) -> bool {
    let recorded = Path::new(recorded);
    recorded == discovered
        || std::fs::canonicalize(recorded).is_ok_and(|resolved| resolved == discovered)
}

/// A memfd name (shown in `/proc/*/fd` links) within the kernel's 249-byte
/// limit: a long path must not turn into a load failure.
fn memfd_name(plugin: &str, path: &str) -> String {
    let mut name = format!("{plugin}:{path}");
    if name.len() > 200 {
        let mut cut = 200;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
    }
    name
}

fn check(recorded: Option<String>, current: Option<String>) -> HashCheck {
    let matches = matches!((&recorded, &current), (Some(a), Some(b)) if a == b);
    HashCheck {
        recorded,
        current,
        matches,
    }
}
