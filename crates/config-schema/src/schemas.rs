//! The schemas (the files under `docs/schemas/`, compiled in) and the one
//! validation entry point. Each schema is compiled on first use and kept
//! for the life of the process.

use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

use crate::error::{Error, Violation};

/// The configuration files that have a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigKind {
    /// `settings.yaml`: the sections the runtime reads.
    Settings,
    /// A plugin bundle's `plugin.yaml`.
    PluginManifest,
    /// A plugin's declarative provider definition.
    ProviderDefinition,
    /// A scripted provider's script (`lionrt run --script`).
    Script,
}

impl ConfigKind {
    /// Every kind.
    pub const ALL: [ConfigKind; 4] = [
        ConfigKind::Settings,
        ConfigKind::PluginManifest,
        ConfigKind::ProviderDefinition,
        ConfigKind::Script,
    ];

    /// The schema's short name, as in `docs/schemas/<name>.schema.json`.
    pub fn name(self) -> &'static str {
        match self {
            ConfigKind::Settings => "settings",
            ConfigKind::PluginManifest => "plugin",
            ConfigKind::ProviderDefinition => "provider-definition",
            ConfigKind::Script => "script",
        }
    }

    fn index(self) -> usize {
        match self {
            ConfigKind::Settings => 0,
            ConfigKind::PluginManifest => 1,
            ConfigKind::ProviderDefinition => 2,
            ConfigKind::Script => 3,
        }
    }
}

/// The published schema text of `kind` (the file under `docs/schemas/`).
pub fn schema_text(kind: ConfigKind) -> &'static str {
    match kind {
        ConfigKind::Settings => include_str!("../../../docs/schemas/settings.schema.json"),
        ConfigKind::PluginManifest => include_str!("../../../docs/schemas/plugin.schema.json"),
        ConfigKind::ProviderDefinition => {
            include_str!("../../../docs/schemas/provider-definition.schema.json")
        }
        ConfigKind::Script => include_str!("../../../docs/schemas/script.schema.json"),
    }
}

type Compiled = Result<jsonschema::Validator, String>;

static COMPILED: [OnceLock<Compiled>; 4] = [
    OnceLock::new(),
    OnceLock::new(),
    OnceLock::new(),
    OnceLock::new(),
];

fn compiled(kind: ConfigKind) -> &'static Compiled {
    COMPILED[kind.index()].get_or_init(|| {
        let schema: Value = serde_json::from_str(schema_text(kind)).map_err(|e| e.to_string())?;
        jsonschema::validator_for(&schema).map_err(|e| e.to_string())
    })
}

/// Checks `doc` (already parsed, YAML or JSON) against `kind`'s schema;
/// `file` only names the file in the error.
///
/// # Errors
/// [`Error::Invalid`] with every violation (path and expectation, never the
/// value), or [`Error::Schema`] if the schema itself does not compile.
pub fn validate(kind: ConfigKind, file: impl AsRef<Path>, doc: &Value) -> Result<(), Error> {
    let validator = compiled(kind).as_ref().map_err(|reason| Error::Schema {
        schema: kind.name(),
        reason: reason.clone(),
    })?;
    let mut violations: Vec<Violation> = validator
        .iter_errors(doc)
        .map(|e| Violation {
            path: e.instance_path().to_string(),
            expected: e.masked().to_string(),
        })
        .collect();
    if violations.is_empty() {
        return Ok(());
    }
    violations.sort_by(|a, b| a.path.cmp(&b.path));
    violations.dedup();
    Err(Error::Invalid {
        file: file.as_ref().to_path_buf(),
        schema: kind.name(),
        violations,
    })
}
