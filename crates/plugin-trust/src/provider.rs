//! Plugin-declared providers: a declarative definition format and the
//! registry-miss fallback that reaches it only through activation.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::registry::{Registry, Target};

/// A provider a plugin adds: data, never code.
///
/// The file a manifest names under `capabilities.providers[].module` is
/// YAML (so JSON too) of this shape:
///
/// ```yaml
/// name: acme-cli            # the provider name a registry miss matches
/// aliases: [acme]           # optional further names
/// kind: cli                 # optional; the only kind is `cli`
/// binary: acme              # program on PATH, or an absolute path
/// args: ["--json"]          # optional default arguments
/// env_keys: [ACME_API_KEY]  # optional names of the variables it needs
/// description: Acme's CLI   # optional
/// ```
///
/// Unknown keys are errors. `binary` may not be a relative path with a
/// `/` (it would resolve against whatever the working directory is), and
/// `env_keys` holds names only: a definition never carries a secret value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderDefinition {
    /// The provider name.
    pub name: String,
    /// Further names that select this provider.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The provider kind.
    #[serde(default)]
    pub kind: ProviderKind,
    /// The CLI program.
    pub binary: String,
    /// Default arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Names of environment variables the CLI needs.
    #[serde(default)]
    pub env_keys: Vec<String>,
    /// Free text.
    #[serde(default)]
    pub description: String,
}

/// Provider kinds a definition can declare.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// A CLI driven through argv.
    #[default]
    Cli,
}

impl ProviderDefinition {
    /// Parses and validates a definition from (verified) bytes.
    pub fn parse(bytes: &[u8]) -> Result<ProviderDefinition, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_owned())?;
        let def: ProviderDefinition = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        def.validate()?;
        Ok(def)
    }

    fn validate(&self) -> Result<(), String> {
        let name_ok = |n: &str| {
            !n.is_empty()
                && n.len() <= 64
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        };
        if !name_ok(&self.name) {
            return Err(format!("provider name '{}' is not valid", self.name));
        }
        if let Some(bad) = self.aliases.iter().find(|a| !name_ok(a)) {
            return Err(format!("provider alias '{bad}' is not valid"));
        }
        if self.binary.is_empty() || self.binary.contains('\0') {
            return Err("binary is empty or contains NUL".to_owned());
        }
        if self.binary.contains('/') && !self.binary.starts_with('/') {
            return Err(format!(
                "binary '{}' is a relative path; name a program on PATH or an absolute path",
                self.binary
            ));
        }
        if self.args.iter().any(|a| a.contains('\0')) {
            return Err("an argument contains NUL".to_owned());
        }
        let key_ok = |k: &str| {
            let mut bytes = k.bytes();
            matches!(bytes.next(), Some(b) if b.is_ascii_uppercase() || b == b'_')
                && bytes.all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        };
        if let Some(bad) = self.env_keys.iter().find(|k| !key_ok(k)) {
            return Err(format!("env key '{bad}' is not a variable name"));
        }
        Ok(())
    }

    /// True when `name` selects this provider.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.iter().any(|a| a == name)
    }
}

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
