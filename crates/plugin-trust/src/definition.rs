//! The declarative provider definition a plugin's provider capability
//! names: data, never code. Parsed from verified bytes by activation; the
//! registry-miss fallback (`provider`) hands it out.

use serde::{Deserialize, Serialize};

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
        // The published schema (docs/schemas/provider-definition.schema.json)
        // first, naming the JSON path; then the typed parse and checks.
        let value: serde_json::Value = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        if let Err(e) = config_schema::validate(
            config_schema::ConfigKind::ProviderDefinition,
            "provider definition",
            &value,
        ) {
            let typed = serde_json::from_value::<ProviderDefinition>(value)
                .map_err(|e| e.to_string())
                .and_then(|d| d.validate());
            let schema = e
                .violations()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            return Err(match typed {
                Err(reason) => format!("{schema}; {reason}"),
                Ok(()) => schema,
            });
        }
        let def: ProviderDefinition = serde_json::from_value(value).map_err(|e| e.to_string())?;
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
