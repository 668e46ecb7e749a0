//! The plugin trust sections: `trusted_plugins` (one [`TrustRecord`] per
//! plugin name, exactly as the original writes it) and `disabled_plugins`
//! (a list of names), read and written by `plugin-trust`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::document::Settings;

/// The key holding trust records.
pub const TRUSTED_KEY: &str = "trusted_plugins";
/// The key holding the names of disabled plugins.
pub const DISABLED_KEY: &str = "disabled_plugins";

/// One trust record, exactly as the original writes it under
/// `trusted_plugins.<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustRecord {
    /// sha256 of the canonical manifest JSON.
    pub manifest: String,
    /// Every declared bundle-relative path and the sha256 of its bytes
    /// (`None`, written `null`, when it was unreadable; such a target is
    /// never activated).
    pub targets: BTreeMap<String, Option<String>>,
    /// The bundle directory the record was made for.
    pub bundle_path: String,
}

impl Settings {
    /// Checks the shape of both plugin sections: `trusted_plugins` a
    /// mapping, `disabled_plugins` a list of names (either may be absent).
    /// A caller that decides trust refuses the whole file otherwise.
    ///
    /// # Errors
    /// Which section is malformed (never its content).
    ///
    /// The message ends with the published schema's reading of the plugin
    /// sections (`docs/schemas/settings.schema.json`): the JSON path and
    /// what was expected there.
    pub fn check_plugin_sections(&self) -> Result<(), String> {
        let shape = match self.root.get(TRUSTED_KEY) {
            None | Some(Value::Null) | Some(Value::Object(_)) => None,
            Some(_) => Some(format!("'{TRUSTED_KEY}' is not a mapping")),
        };
        let shape = shape.or_else(|| match self.root.get(DISABLED_KEY) {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => None,
            Some(_) => Some(format!("'{DISABLED_KEY}' is not a list of names")),
        });
        let Some(shape) = shape else {
            return Ok(());
        };
        let mut plugin_sections = Map::new();
        for key in [TRUSTED_KEY, DISABLED_KEY] {
            if let Some(v) = self.root.get(key) {
                plugin_sections.insert(key.to_owned(), v.clone());
            }
        }
        let paths = match config_schema::validate(
            config_schema::ConfigKind::Settings,
            "settings",
            &Value::Object(plugin_sections),
        ) {
            Ok(()) => String::new(),
            Err(e) => {
                let listed: Vec<String> = e
                    .violations()
                    .iter()
                    .filter(|v| v.path.matches('/').count() <= 2)
                    .map(ToString::to_string)
                    .collect();
                format!(" ({})", listed.join("; "))
            }
        };
        Err(format!("{shape}{paths}"))
    }

    /// The record for `name`. A record that does not have the record shape
    /// counts as no record (fail closed).
    pub fn trust_record(&self, name: &str) -> Option<TrustRecord> {
        let value = self.root.get(TRUSTED_KEY)?.get(name)?;
        serde_json::from_value(value.clone()).ok()
    }

    /// Names with an entry under `trusted_plugins`, well-formed or not.
    pub fn trust_record_names(&self) -> Vec<String> {
        match self.root.get(TRUSTED_KEY) {
            Some(Value::Object(map)) => map.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// The recorded bundle path of an entry, if it has one.
    pub fn trust_record_bundle_path(&self, name: &str) -> Option<String> {
        self.root
            .get(TRUSTED_KEY)?
            .get(name)?
            .get("bundle_path")?
            .as_str()
            .map(str::to_owned)
    }

    /// Records `record` for `name`, replacing any entry.
    pub fn set_trust_record(&mut self, name: &str, record: &TrustRecord) {
        let value = serde_json::to_value(record).unwrap_or(Value::Null);
        let entry = self
            .root
            .entry(TRUSTED_KEY)
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        if let Value::Object(map) = entry {
            map.insert(name.to_owned(), value);
        }
    }

    /// Removes the entry for `name`; whether there was one.
    pub fn remove_trust_record(&mut self, name: &str) -> bool {
        match self.root.get_mut(TRUSTED_KEY) {
            Some(Value::Object(map)) => map.remove(name).is_some(),
            _ => false,
        }
    }

    /// Whether `name` is listed under `disabled_plugins`.
    pub fn is_plugin_disabled(&self, name: &str) -> bool {
        match self.root.get(DISABLED_KEY) {
            Some(Value::Array(items)) => items.iter().any(|v| v.as_str() == Some(name)),
            _ => false,
        }
    }

    /// Lists or unlists `name` under `disabled_plugins`.
    pub fn set_plugin_disabled(&mut self, name: &str, disabled: bool) {
        let entry = self
            .root
            .entry(DISABLED_KEY)
            .or_insert_with(|| Value::Array(Vec::new()));
        if !entry.is_array() {
            *entry = Value::Array(Vec::new());
        }
        if let Value::Array(items) = entry {
            items.retain(|v| v.as_str() != Some(name));
            if disabled {
                items.push(Value::String(name.to_owned()));
            }
        }
    }
}
