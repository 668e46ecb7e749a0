//! `plugin.yaml`: the wire format, its validation, the one target parser and
//! the manifest hash.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::canonical::to_canonical_json;
use crate::error::{Error, Result};

/// The file name of a bundle's manifest.
pub const MANIFEST_FILE: &str = "plugin.yaml";

/// A parsed, validated `plugin.yaml`.
///
/// Every field is present after parsing (absent optional fields take their
/// defaults), so serialising it gives the "all fields with their defaults"
/// form the manifest hash is taken over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Lowercase alphanumerics and hyphens, 1-32 chars, starting
    /// alphanumeric.
    pub name: String,
    /// The bundle's own version (free text, shown to the user).
    pub version: String,
    /// Free text; defaults to "".
    #[serde(default)]
    pub description: String,
    /// A version specifier [`COMPAT_VERSION`](crate::COMPAT_VERSION) must
    /// satisfy. Required: a bundle that does not say what it was written
    /// for is refused rather than assumed compatible.
    pub lionagi: String,
    /// What the bundle adds.
    #[serde(default)]
    pub capabilities: Capabilities,
}

/// The capability lists of a manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Tools, each an executable bundle file and the callable it is asked
    /// to run.
    #[serde(default)]
    pub tools: Vec<ToolDecl>,
    /// Hook commands keyed by event name.
    #[serde(default)]
    pub hooks_external: BTreeMap<String, Vec<HookMatcher>>,
    /// Agent profile files.
    #[serde(default)]
    pub agents: Vec<String>,
    /// Playbook files.
    #[serde(default)]
    pub playbooks: Vec<String>,
    /// Pack files.
    #[serde(default)]
    pub packs: Vec<String>,
    /// Declarative provider definitions (see
    /// [`ProviderDefinition`](crate::ProviderDefinition)).
    #[serde(default)]
    pub providers: Vec<ProviderDecl>,
}

/// One declared tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDecl {
    /// The tool's name, unique within the bundle.
    pub name: String,
    /// `relative/path:callable`, parsed by [`parse_tool_target`].
    pub target: String,
}

/// One matcher entry of `hooks_external`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookMatcher {
    /// Which tool calls or events the hooks apply to; "" (the default)
    /// leaves matching to the event.
    #[serde(default)]
    pub matcher: String,
    /// The hook commands.
    pub hooks: Vec<HookDecl>,
}

/// One hook command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookDecl {
    /// Always `command`.
    #[serde(rename = "type")]
    pub kind: HookKind,
    /// The argv, never a shell string. An element starting with `./` names
    /// a bundle file: it is a declared file, pinned by trust, and runs from
    /// a sealed in-memory copy.
    pub command: Vec<String>,
}

/// The kinds of hook. Only commands exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HookKind {
    /// Run an argv.
    Command,
}

/// One declared provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderDecl {
    /// Bundle-relative path of a provider definition file.
    pub module: String,
}

/// A tool target split into its file and callable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolTarget {
    /// The bundle-relative path of the executable.
    pub path: String,
    /// The callable, passed to the executable as its first argument.
    pub callable: String,
}

/// Splits `relative/path:callable`. The only parser of tool targets: the
/// declared-path hashing and target resolution both call it, so they can
/// never disagree about where the path ends.
///
/// Refuses anything but exactly one colon, a safe relative path (see
/// [`validate_relative_path`]) and an ASCII identifier callable.
pub fn parse_tool_target(target: &str) -> std::result::Result<ToolTarget, String> {
    let mut parts = target.split(':');
    let (Some(path), Some(callable), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!(
            "tool target '{target}' must be 'path:callable' with exactly one colon"
        ));
    };
    validate_relative_path(path)?;
    if !is_identifier(callable) {
        return Err(format!(
            "tool target '{target}': callable '{callable}' is not an identifier"
        ));
    }
    Ok(ToolTarget {
        path: path.to_owned(),
        callable: callable.to_owned(),
    })
}

/// Checks a declared bundle-relative path: non-empty, not absolute, `/`
/// separated, no empty, `.` or `..` component, no backslash or NUL, at most
/// 4096 bytes. Symlinks are refused later, when the file is opened.
pub fn validate_relative_path(path: &str) -> std::result::Result<(), String> {
    if path.is_empty() {
        return Err("empty path".to_owned());
    }
    if path.len() > 4096 {
        return Err(format!("path '{path}' is too long"));
    }
    if path.starts_with('/') {
        return Err(format!("path '{path}' is absolute"));
    }
    if path.contains('\0') || path.contains('\\') {
        return Err(format!("path '{path}' contains a NUL or backslash"));
    }
    if path
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err(format!("path '{path}' has an empty, '.' or '..' component"));
    }
    Ok(())
}

/// The bundle file a hook argv element names, if it names one (`./x`).
pub fn hook_arg_path(arg: &str) -> Option<&str> {
    arg.strip_prefix("./")
}

/// The bundle path a trust record's key names: the key with one leading
/// `./` dropped, as [`hook_arg_path`] reads a hook argument (the original
/// keys a hook's file `./hooks/x.sh`, the same file as `hooks/x.sh`).
pub(crate) fn record_key_path(key: &str) -> &str {
    key.strip_prefix("./").unwrap_or(key)
}

/// A record's targets keyed by the bundle path each names
/// ([`record_key_path`]). Two keys naming one file must pin the same hash;
/// if they disagree the file counts as unpinned (`None`), so it is never
/// trusted: fail closed.
pub(crate) fn pinned_targets(
    targets: &std::collections::BTreeMap<String, Option<String>>,
) -> std::collections::BTreeMap<String, Option<String>> {
    let mut pinned = std::collections::BTreeMap::new();
    for (key, hash) in targets {
        let path = record_key_path(key).to_owned();
        match pinned.get(&path) {
            Some(seen) if seen != hash => {
                pinned.insert(path, None);
            }
            Some(_) => {}
            None => {
                pinned.insert(path, hash.clone());
            }
        }
    }
    pinned
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (1..=32).contains(&bytes.len())
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

/// True when `name` is a valid plugin name.
pub fn is_plugin_name(name: &str) -> bool {
    is_valid_name(name)
}

impl Manifest {
    /// Parses and validates manifest bytes; `path` only names the file in
    /// errors. Top-level keys starting with `x-` are dropped; any other
    /// unknown key is an error.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<Manifest> {
        let invalid = |reason: String| Error::ManifestInvalid {
            path: path.to_path_buf(),
            reason,
        };
        let text = std::str::from_utf8(bytes).map_err(|_| invalid("not UTF-8".to_owned()))?;
        let value: Value = serde_saphyr::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let Value::Object(mut map) = value else {
            return Err(invalid("the document is not a mapping".to_owned()));
        };
        // The published schema (docs/schemas/plugin.schema.json) names the
        // JSON path of every violation; the typed parse and the checks the
        // schema cannot express (duplicate tools, path safety) follow, and a
        // refusal carries both readings.
        let schema = config_schema::validate(
            config_schema::ConfigKind::PluginManifest,
            path,
            &Value::Object(map.clone()),
        )
        .err()
        .map(|e| {
            e.violations()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        });
        map.retain(|key, _| !key.starts_with("x-"));
        let typed = serde_json::from_value::<Manifest>(Value::Object(map))
            .map_err(|e| e.to_string())
            .and_then(|m| m.validate().map(|()| m));
        match (schema, typed) {
            (None, Ok(manifest)) => Ok(manifest),
            (Some(schema), Ok(_)) => Err(invalid(schema)),
            (None, Err(reason)) => Err(invalid(reason)),
            (Some(schema), Err(reason)) => Err(invalid(format!("{schema}; {reason}"))),
        }
    }

    fn validate(&self) -> std::result::Result<(), String> {
        if !is_valid_name(&self.name) {
            return Err(format!(
                "name '{}' must be 1-32 lowercase alphanumerics or hyphens, starting alphanumeric",
                self.name
            ));
        }
        if self.version.trim().is_empty() {
            return Err("version is empty".to_owned());
        }
        let caps = &self.capabilities;
        let mut tool_names = BTreeSet::new();
        for tool in &caps.tools {
            if tool.name.is_empty() {
                return Err("a tool has an empty name".to_owned());
            }
            if !tool_names.insert(tool.name.as_str()) {
                return Err(format!("tool '{}' is declared twice", tool.name));
            }
            parse_tool_target(&tool.target)?;
        }
        for (event, matchers) in &caps.hooks_external {
            if event.is_empty() {
                return Err("a hook event name is empty".to_owned());
            }
            for matcher in matchers {
                for hook in &matcher.hooks {
                    if hook.command.is_empty() || hook.command[0].is_empty() {
                        return Err(format!("a '{event}' hook has an empty argv"));
                    }
                    for arg in &hook.command {
                        if arg.contains('\0') {
                            return Err(format!("a '{event}' hook argument contains NUL"));
                        }
                        if let Some(path) = hook_arg_path(arg) {
                            validate_relative_path(path)
                                .map_err(|e| format!("'{event}' hook: {e}"))?;
                        }
                    }
                }
            }
        }
        for path in caps.agents.iter().chain(&caps.playbooks).chain(&caps.packs) {
            validate_relative_path(path)?;
        }
        for provider in &caps.providers {
            validate_relative_path(&provider.module)?;
        }
        Ok(())
    }

    /// The sha256 (lowercase hex) of the manifest as canonical JSON: all
    /// fields with their defaults, keys sorted, separators `,` and `:`.
    pub fn sha256(&self) -> String {
        // Serialising plain strings, vectors and maps cannot fail.
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        hex_sha256(to_canonical_json(&value).as_bytes())
    }

    /// Every bundle file the manifest declares, as a bundle path: tool
    /// target paths, `./` hook arguments (without the `./`), agents,
    /// playbooks, packs and provider modules; the
    /// [`declared_record_keys`](Self::declared_record_keys) read through
    /// [`record_key_path`].
    pub fn declared_paths(&self) -> BTreeSet<String> {
        self.declared_record_keys()
            .iter()
            .map(|key| record_key_path(key).to_owned())
            .collect()
    }

    /// The keys a trust record gives the declared files, spelled as the
    /// original writes them, so a record either tool writes reads the same
    /// in the other: a hook argument as written (`./hooks/audit.sh`), every
    /// other path as declared. [`record_key_path`] maps each back to the
    /// bundle path of [`declared_paths`](Self::declared_paths).
    pub fn declared_record_keys(&self) -> BTreeSet<String> {
        let caps = &self.capabilities;
        let mut keys = BTreeSet::new();
        for tool in &caps.tools {
            if let Ok(target) = parse_tool_target(&tool.target) {
                keys.insert(target.path);
            }
        }
        for hook in self.hooks() {
            for arg in &hook.1.command {
                if hook_arg_path(arg).is_some() {
                    keys.insert(arg.clone());
                }
            }
        }
        for path in caps.agents.iter().chain(&caps.playbooks).chain(&caps.packs) {
            keys.insert(path.clone());
        }
        for provider in &caps.providers {
            keys.insert(provider.module.clone());
        }
        keys
    }

    /// Resolves a tool name to its file and callable, through
    /// [`parse_tool_target`].
    pub fn resolve_tool(&self, name: &str) -> Option<ToolTarget> {
        self.capabilities
            .tools
            .iter()
            .find(|tool| tool.name == name)
            .and_then(|tool| parse_tool_target(&tool.target).ok())
    }

    /// Every hook as (event, hook, matcher), in event order.
    pub(crate) fn hooks(&self) -> impl Iterator<Item = (&str, &HookDecl, &str)> {
        self.capabilities
            .hooks_external
            .iter()
            .flat_map(|(event, matchers)| {
                matchers.iter().flat_map(move |m| {
                    m.hooks
                        .iter()
                        .map(move |h| (event.as_str(), h, m.matcher.as_str()))
                })
            })
    }
}

/// Lowercase hex sha256 of `bytes`.
pub(crate) fn hex_sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of a digest.
pub(crate) fn hex(digest: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(digest.len() * 2);
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}
