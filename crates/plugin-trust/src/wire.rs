//! The serde-serialisable results of the trust operations: the `--json`
//! shape of `lionrt plugin ...`, version 1 (fields are only ever added).

use std::path::PathBuf;

use serde::Serialize;

use crate::manifest::{HookKind, ProviderDecl, ToolTarget};
use crate::settings::TrustRecord;

/// Whether a plugin's trust record matches what is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrustState {
    /// No trust record.
    Untrusted,
    /// The record matches the manifest, every declared file and the bundle
    /// location.
    Trusted,
    /// A record exists and something differs.
    Changed,
}

impl TrustState {
    /// `untrusted`, `trusted` or `changed`.
    pub fn as_str(self) -> &'static str {
        match self {
            TrustState::Untrusted => "untrusted",
            TrustState::Trusted => "trusted",
            TrustState::Changed => "changed",
        }
    }
}

/// A bundle that discovery could not use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiscoveryProblem {
    /// The bundle directory or manifest.
    pub path: PathBuf,
    /// What is wrong.
    pub reason: String,
}

/// `plugin list`.
#[derive(Debug, Clone, Serialize)]
pub struct ListReport {
    /// Every discovered plugin, by name.
    pub plugins: Vec<PluginSummary>,
    /// Bundles that were skipped (invalid manifest, duplicate name).
    pub problems: Vec<DiscoveryProblem>,
}

/// One row of `plugin list`.
#[derive(Debug, Clone, Serialize)]
pub struct PluginSummary {
    /// The plugin name.
    pub name: String,
    /// The manifest's version (as discovered).
    pub version: String,
    /// The manifest's description (as discovered).
    pub description: String,
    /// The bundle directory.
    pub bundle_path: PathBuf,
    /// Untrusted, trusted or changed, checked now against disk.
    pub state: TrustState,
    /// False when listed in `disabled_plugins`.
    pub enabled: bool,
    /// Whether the runtime satisfies the `lionagi` specifier.
    pub compatible: bool,
    /// Why the state could not be fully checked, if it could not.
    pub problem: Option<String>,
}

/// `plugin verify`: every hash, recorded and current.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// The plugin name.
    pub name: String,
    /// The resulting state.
    pub state: TrustState,
    /// False when listed in `disabled_plugins`.
    pub enabled: bool,
    /// Whether the runtime satisfies the `lionagi` specifier.
    pub compatible: bool,
    /// The bundle directory found by discovery.
    pub bundle_path: PathBuf,
    /// The bundle directory in the record.
    pub recorded_bundle_path: Option<String>,
    /// The manifest hash check.
    pub manifest: HashCheck,
    /// Each declared (or recorded) file.
    pub files: Vec<FileCheck>,
}

/// A recorded and a current hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HashCheck {
    /// From the trust record.
    pub recorded: Option<String>,
    /// From disk now.
    pub current: Option<String>,
    /// Both present and equal.
    pub matches: bool,
}

/// One file of a [`VerifyReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileCheck {
    /// The bundle-relative path.
    pub path: String,
    /// Whether the current manifest declares it.
    pub declared: bool,
    /// The hashes.
    #[serde(flatten)]
    pub hash: HashCheck,
}

/// `plugin show`: everything the bundle declares, for the user to read
/// before trusting it.
#[derive(Debug, Clone, Serialize)]
pub struct Disclosure {
    /// The plugin name.
    pub name: String,
    /// The manifest's version.
    pub version: String,
    /// The manifest's description.
    pub description: String,
    /// The `lionagi` specifier.
    pub lionagi: String,
    /// Whether [`COMPAT_VERSION`](crate::COMPAT_VERSION) satisfies it.
    pub compatible: bool,
    /// The bundle directory.
    pub bundle_path: PathBuf,
    /// sha256 of the canonical manifest as it is now.
    pub manifest_sha256: String,
    /// The trust state now.
    pub state: TrustState,
    /// False when listed in `disabled_plugins`.
    pub enabled: bool,
    /// Tools with their resolved file and callable.
    pub tools: Vec<DisclosedTool>,
    /// Every hook with its full argv.
    pub hooks: Vec<DisclosedHook>,
    /// Agent files.
    pub agents: Vec<String>,
    /// Playbook files.
    pub playbooks: Vec<String>,
    /// Pack files.
    pub packs: Vec<String>,
    /// Provider definition files.
    pub providers: Vec<ProviderDecl>,
    /// Every declared file with its current hash (`None` if unreadable).
    pub files: Vec<DisclosedFile>,
}

/// A tool in a [`Disclosure`].
#[derive(Debug, Clone, Serialize)]
pub struct DisclosedTool {
    /// The tool name.
    pub name: String,
    /// The declared target.
    pub target: String,
    /// The parsed target.
    pub resolved: ToolTarget,
}

/// A hook in a [`Disclosure`].
#[derive(Debug, Clone, Serialize)]
pub struct DisclosedHook {
    /// The event.
    pub event: String,
    /// The matcher.
    pub matcher: String,
    /// The hook kind.
    #[serde(rename = "type")]
    pub kind: HookKind,
    /// The argv in full.
    pub command: Vec<String>,
}

/// A declared file in a [`Disclosure`].
#[derive(Debug, Clone, Serialize)]
pub struct DisclosedFile {
    /// The bundle-relative path.
    pub path: String,
    /// Its sha256 now, `None` if unreadable.
    pub sha256: Option<String>,
    /// Why it is unreadable.
    pub error: Option<String>,
}

/// `plugin trust`: the record written.
#[derive(Debug, Clone, Serialize)]
pub struct TrustReport {
    /// The plugin name.
    pub name: String,
    /// The record now in the settings file.
    pub record: TrustRecord,
}

/// Counters of the activation cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// Loads performed (cache misses), successful or not.
    pub loads: u64,
    /// Activations answered from the cache.
    pub hits: u64,
}
