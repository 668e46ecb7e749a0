//! Content-pinned plugin trust: discovery, trust records and verify-then-use
//! activation, the single chokepoint through which anything a plugin
//! carries is used.
//!
//! ```
//! use plugin_trust::{Config, Registry, Target, TrustState};
//! # let tmp = tempfile::tempdir()?;
//! # let root = tmp.path().join("plugins");
//! # let bundle = root.join("hello");
//! # std::fs::create_dir_all(bundle.join("bin"))?;
//! # std::fs::write(bundle.join("plugin.yaml"), "name: hello\nversion: '1.0'\nlionagi: '>=0.9'\n\
//! #   capabilities:\n  tools:\n    - {name: greet, target: 'bin/greet.sh:main'}\n")?;
//! # std::fs::write(bundle.join("bin/greet.sh"), "#!/bin/sh\necho \"hello from $1\"\n")?;
//!
//! let registry = Registry::new(Config {
//!     plugin_roots: vec![root],
//!     settings_path: tmp.path().join("settings.yaml"),
//!     ..Config::default()
//! });
//!
//! // Nothing runs before the user trusted exactly these bytes.
//! assert_eq!(registry.list()?.plugins[0].state, TrustState::Untrusted);
//! assert!(registry.activate("hello", &Target::Tool("greet".into())).is_err());
//!
//! let disclosure = registry.show("hello")?; // what `plugin show` prints
//! assert_eq!(disclosure.tools[0].resolved.callable, "main");
//! registry.trust("hello")?;
//!
//! // The tool runs from a sealed in-memory copy of the verified bytes.
//! let tool = registry.activate("hello", &Target::Tool("greet".into()))?;
//! let out = tool.command().expect("a tool is executable").output()?;
//! assert_eq!(out.stdout, b"hello from main\n");
//!
//! // Any change to a declared file stops the plugin until trusted again.
//! # std::fs::write(bundle.join("bin/greet.sh"), "#!/bin/sh\necho tampered\n")?;
//! assert!(registry.activate("hello", &Target::Tool("greet".into())).is_err());
//! assert_eq!(registry.verify("hello")?.state, TrustState::Changed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Bundles
//!
//! A bundle is a directory holding `plugin.yaml` (see [`Manifest`]) under one
//! of [`Config::plugin_roots`]. Declared files are bundle-relative: tool
//! targets `path:callable` (split by [`parse_tool_target`], the one parser
//! hashing and resolution share), hook arguments starting with `./`, and the
//! `agents`, `playbooks`, `packs` and `providers[].module` lists. Absolute
//! paths, `..`, empty or `.` components are refused when the manifest is
//! parsed; a symlink anywhere in a declared path, or a file that is not
//! regular, is refused when the file is opened (every component is opened
//! with `O_NOFOLLOW` relative to its parent).
//!
//! # Trust records
//!
//! Trust lives only in the user-level settings file (never in a project):
//!
//! ```yaml
//! trusted_plugins:
//!   hello:
//!     manifest: <sha256 of the canonical manifest JSON>
//!     targets: {bin/greet.sh: <sha256 of the file>}
//!     bundle_path: /home/me/.lionagi/plugins/hello
//! disabled_plugins: [other]
//! ```
//!
//! The manifest hash is sha256 of the manifest with all defaults filled in,
//! as canonical JSON byte-identical to Python's `json.dumps(...,
//! sort_keys=True, separators=(",", ":"))` (ASCII escapes included), so
//! records written by the original keep matching. Writes (trust, untrust,
//! enable/disable, gc) are read-modify-write under an exclusive `flock` on
//! `<settings>.lock`, keep every other key and replace the file by rename.
//! `disabled_plugins` is this runtime's name for the enabled switch. The
//! file is YAML re-rendered on write: comments are not kept.
//!
//! # Activation
//!
//! [`Registry::activate`] (and [`Registry::activate_hooks`]) re-read
//! `plugin.yaml`, the settings and every declared file on every call, and
//! refuse unless the plugin is trusted for exactly this content (manifest
//! hash, every file hash, bundle location), enabled and compatible. The
//! target is read once; that read is hashed and compared, and the same
//! bytes are handed out. Executables (tool targets, `./` hook arguments)
//! run from a sealed memfd holding those bytes, reached as
//! `/proc/self/fd/N` and open in the spawned child only, so swapping the
//! file on disk at any moment has no effect on what runs. Load results
//! (sealed memfd, parsed provider definition, or failure) are cached per
//! (plugin, path, content hash): a re-trusted edit is always a miss, and
//! nothing is validated by mtime. A tool runs as `<sealed copy> <callable>
//! [args...]`.
//!
//! # Compatibility
//!
//! A manifest's `lionagi` specifier must admit [`COMPAT_VERSION`]
//! (`1.0.0`); `>=`, `<=`, `>`, `<`, `==`, `!=`, `~=` and `==X.*` clauses,
//! comma-separated, are understood. A specifier that does not parse (or is
//! empty, or missing) makes the plugin incompatible.
//!
//! # Providers
//!
//! A provider capability names a declarative [`ProviderDefinition`] file
//! (data, never code). [`ProviderFallback::lookup`] is the registry-miss
//! step: it reaches plugin providers only through activation and drops a
//! remembered entry as soon as its activation fails.
//!
//! # Command line surface
//!
//! `lionrt plugin list|show|trust|untrust|verify|gc` map to
//! [`Registry::list`] ([`ListReport`]), [`Registry::show`]
//! ([`Disclosure`]), [`Registry::trust`] or, after an interactive
//! confirmation, [`Registry::trust_as_disclosed`] ([`TrustReport`]),
//! [`Registry::untrust`] (`bool`), [`Registry::verify`] ([`VerifyReport`])
//! and [`Registry::gc`] (pruned names); every report is `Serialize` for
//! `--json`. [`Registry::set_enabled`] writes `disabled_plugins`. Hook
//! dispatch uses [`Registry::activate_hooks`]; [`Registry::cache_stats`]
//! exposes the activation cache counters. [`Config::from_env`] is the one place that reads the
//! environment (`LIONAGI_SETTINGS_FILE`, `LIONAGI_PLUGINS_DIR`, `HOME`).
//!
//! # Choices where the spec is open
//!
//! - Discovery is cached for the life of a [`Registry`]; a bundle installed
//!   after the first scan is not seen until [`Registry::rediscover`]
//!   (Ambiguity B.20). Trust state is never cached.
//! - A registry miss activates the provider modules of every plugin until
//!   one answers (B.19); provider definitions are data, so this runs
//!   nothing.
//! - A record whose `bundle_path` differs from where the bundle is found
//!   is `changed`: a same-named bundle elsewhere is not trusted.
//! - Linux only (memfd, `/proc/self/fd`).
//!
//! No features.

mod bundle_fs;
mod canonical;
mod definition;
mod error;
mod manifest;
mod provider;
mod registry;
mod sealed;
mod settings;
mod version;
mod wire;

pub use definition::{ProviderDefinition, ProviderKind};
pub use error::{Error, Result};
pub use manifest::{
    Capabilities, HookDecl, HookKind, HookMatcher, MANIFEST_FILE, Manifest, ProviderDecl, ToolDecl,
    ToolTarget, hook_arg_path, is_plugin_name, parse_tool_target, validate_relative_path,
};
pub use provider::{PluginProvider, ProviderFallback};
pub use registry::{Activation, Config, HookActivation, Registry, Target};
pub use settings::{SettingsFile, TrustRecord};
pub use version::{COMPAT_VERSION, specifier_admits};
pub use wire::{
    CacheStats, DisclosedFile, DisclosedHook, DisclosedTool, Disclosure, DiscoveryProblem,
    FileCheck, HashCheck, ListReport, PluginSummary, TrustReport, TrustState, VerifyReport,
};
