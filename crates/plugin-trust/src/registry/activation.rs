//! Stage 2, activation: the fresh eligibility checks, verified reads of
//! declared files, the load cache, and the verified targets handed out.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::discovery::same_bundle;
use super::{Registry, lock};
use crate::bundle_fs::BundleDir;
use crate::definition::ProviderDefinition;
use crate::error::{Error, Result};
use crate::manifest::{Manifest, hex, hook_arg_path};
use crate::sealed::{SealedFile, inherit_in_child};
use crate::settings::{self, TrustRecord};
use crate::version::{COMPAT_VERSION, specifier_admits};

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
    pub(super) fn describe(&self) -> String {
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
pub(super) enum LoadKind {
    Data,
    Executable,
    Provider,
}

#[derive(Debug, Clone)]
pub(super) enum Loaded {
    Data,
    Executable(SealedFile),
    Provider(Arc<ProviderDefinition>),
}

pub(super) type CacheKey = (String, String, String, LoadKind);

/// Verified bytes of a declared file and their sha256.
pub(super) type VerifiedBytes = (Arc<Vec<u8>>, String);

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

pub(super) struct Eligible {
    dir: BundleDir,
    manifest: Manifest,
    record: TrustRecord,
}

impl Registry {
    /// The fresh eligibility checks shared by every activation: manifest
    /// re-read, settings re-read, trust record present, bundle location and
    /// manifest hash unchanged, enabled, compatible.
    pub(super) fn eligible(&self, plugin: &str) -> Result<Eligible> {
        let dir_path = self.bundle_dir(plugin)?;
        let manifest = self.rescan(plugin, &dir_path)?;
        let settings = settings::load(&self.settings)?;
        let record = settings
            .trust_record(plugin)
            .map(super::trust::pinned_record)
            .ok_or_else(|| Error::Untrusted {
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
        if settings.is_plugin_disabled(plugin) {
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
    pub(super) fn verify_files(
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

    pub(super) fn load(
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
}

/// A memfd name (shown in `/proc/*/fd` links) within the kernel's 249-byte
/// limit: a long path must not turn into a load failure.
pub(super) fn memfd_name(plugin: &str, path: &str) -> String {
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
