//! The `secrets.lookup` section: the machine-level secret store command a
//! child's declared variables are filled from (see `cli-supervisor`'s
//! `fill_declared_secrets`), validated as a whole.
//!
//! ```yaml
//! secrets:
//!   lookup:
//!     argv: [security, find-generic-password, -s, "{name}", -a, lionagi, -w]
//!     names: [OPENROUTER_API_KEY]
//! ```

use std::time::Duration;

use serde_json::{Map, Value};

use crate::document::Settings;
use crate::error::Error;
use crate::file::SettingsFile;

/// The stable refusal reasons. They never interpolate configured values.
pub mod reason {
    /// The settings file exists but cannot be read.
    pub const SETTINGS_UNREADABLE: &str = "settings_unreadable";
    /// The settings file is not valid YAML.
    pub const SETTINGS_INVALID: &str = "settings_invalid";
    /// `secrets` or `secrets.lookup` is not a mapping.
    pub const LOOKUP_NOT_MAPPING: &str = "lookup_not_mapping";
    /// `enabled` is not a boolean.
    pub const ENABLED_NOT_BOOL: &str = "enabled_not_bool";
    /// `argv` is a string (a command line) or another non-list.
    pub const ARGV_NOT_LIST: &str = "argv_not_list";
    /// `argv` holds something other than strings.
    pub const ARGV_NOT_STRINGS: &str = "argv_not_strings";
    /// `argv` is empty or missing.
    pub const ARGV_EMPTY: &str = "argv_empty";
    /// `argv[0]` contains `{name}`: the program would vary with the variable.
    pub const PROGRAM_VARIES: &str = "program_varies_with_name";
    /// No argument after the program contains `{name}`.
    pub const NO_NAME_PLACEHOLDER: &str = "no_name_placeholder";
    /// `names` is missing or not a list.
    pub const NAMES_NOT_LIST: &str = "names_not_list";
    /// A name is not a valid environment variable name.
    pub const MALFORMED_NAME: &str = "malformed_name";
}

/// The validated `secrets.lookup` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupConfig {
    /// No block (or no settings file).
    NotConfigured,
    /// `enabled: false`.
    Disabled,
    /// A block was configured and refused as a whole, for this reason.
    Rejected(&'static str),
    /// A usable lookup.
    Ready(SecretLookup),
}

/// A validated lookup command and the names it may be asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretLookup {
    argv: Vec<String>,
    names: Vec<String>,
    timeout: Duration,
}

impl SecretLookup {
    /// The default bound on one lookup command.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// The command, with `{name}` placeholders.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// The names that may be looked up.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The bound on one lookup command.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sets the bound on one lookup command.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// Validates the `secrets.lookup` block of a settings document given as
/// text. Every refusal is total: one malformed entry rejects the whole
/// block.
pub fn parse_secret_lookup(yaml: &str) -> LookupConfig {
    match Settings::parse(yaml.as_bytes()) {
        Ok(settings) => settings.secret_lookup(),
        Err(_) => LookupConfig::Rejected(reason::SETTINGS_INVALID),
    }
}

impl Settings {
    /// The validated `secrets.lookup` section. Every refusal is total: one
    /// malformed entry rejects the whole block.
    pub fn secret_lookup(&self) -> LookupConfig {
        let secrets = match self.root.get("secrets") {
            None | Some(Value::Null) => return LookupConfig::NotConfigured,
            Some(secrets) => secrets,
        };
        let Value::Object(secrets) = secrets else {
            return LookupConfig::Rejected(reason::LOOKUP_NOT_MAPPING);
        };
        let lookup = match secrets.get("lookup") {
            None | Some(Value::Null) => return LookupConfig::NotConfigured,
            Some(Value::Object(lookup)) => lookup,
            Some(_) => return LookupConfig::Rejected(reason::LOOKUP_NOT_MAPPING),
        };
        parse_lookup(lookup)
    }
}

impl SettingsFile {
    /// Reads the file and validates `secrets.lookup`. A missing file is
    /// "nothing configured"; an unreadable or unparseable one is a refusal.
    pub fn secret_lookup(&self) -> LookupConfig {
        match self.load() {
            Ok(settings) => settings.secret_lookup(),
            Err(Error::NotConfigured) => LookupConfig::NotConfigured,
            Err(Error::Read { .. } | Error::NotUtf8 { .. }) => {
                LookupConfig::Rejected(reason::SETTINGS_UNREADABLE)
            }
            Err(_) => LookupConfig::Rejected(reason::SETTINGS_INVALID),
        }
    }
}

fn parse_lookup(lookup: &Map<String, Value>) -> LookupConfig {
    match lookup.get("enabled") {
        None | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => return LookupConfig::Disabled,
        Some(_) => return LookupConfig::Rejected(reason::ENABLED_NOT_BOOL),
    }
    let argv = match lookup.get("argv") {
        None | Some(Value::Null) => return LookupConfig::Rejected(reason::ARGV_EMPTY),
        Some(Value::Array(items)) => items,
        Some(_) => return LookupConfig::Rejected(reason::ARGV_NOT_LIST),
    };
    let mut program_and_args = Vec::with_capacity(argv.len());
    for item in argv {
        match item {
            Value::String(arg) => program_and_args.push(arg.clone()),
            _ => return LookupConfig::Rejected(reason::ARGV_NOT_STRINGS),
        }
    }
    let Some((program, args)) = program_and_args.split_first() else {
        return LookupConfig::Rejected(reason::ARGV_EMPTY);
    };
    if program.is_empty() {
        return LookupConfig::Rejected(reason::ARGV_EMPTY);
    }
    if program.contains(PLACEHOLDER) {
        return LookupConfig::Rejected(reason::PROGRAM_VARIES);
    }
    if !args.iter().any(|arg| arg.contains(PLACEHOLDER)) {
        return LookupConfig::Rejected(reason::NO_NAME_PLACEHOLDER);
    }
    let names = match lookup.get("names") {
        Some(Value::Array(names)) => names,
        _ => return LookupConfig::Rejected(reason::NAMES_NOT_LIST),
    };
    let mut valid = Vec::with_capacity(names.len());
    for name in names {
        match name {
            Value::String(name) if is_variable_name(name) => valid.push(name.clone()),
            _ => return LookupConfig::Rejected(reason::MALFORMED_NAME),
        }
    }
    LookupConfig::Ready(SecretLookup {
        argv: program_and_args,
        names: valid,
        timeout: SecretLookup::DEFAULT_TIMEOUT,
    })
}

/// The placeholder the lookup command's arguments carry for the variable name.
pub const PLACEHOLDER: &str = "{name}";

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}
