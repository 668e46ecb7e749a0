//! Secret lookup: fill declared variables into a child's environment from a
//! machine-level secret store named in the global `settings.yaml`.
//!
//! ```yaml
//! secrets:
//!   lookup:
//!     argv: [security, find-generic-password, -s, "{name}", -a, lionagi, -w]
//!     names: [OPENROUTER_API_KEY]
//! ```
//!
//! Only the global settings file is read: a project-local file is whatever
//! tree is checked out, and a repository must not name the program that reads
//! this machine's secret store. A looked-up value reaches the child's
//! environment and nothing else: lookup logs carry the program name, the
//! variable name and the exit status only, and stdout is discarded on every
//! failure path.
//!
//! Readings of points the spec leaves open (Ambiguities B.4), each the one
//! that fails closed:
//! - With an inheriting environment, a variable set in this process counts as
//!   "already has a value" (the child would see it) and is never looked up.
//! - With an inheriting environment and at least one resolved secret, the
//!   child gets this process's environment plus the resolved variables.
//! - `reason` is set only for a configuration that was refused; a lookup
//!   command that runs and fails is not a refusal (it is listed in `failed`).
//! - One trailing newline (`\n` or `\r\n`) is trimmed; an empty value counts
//!   as a failed lookup. Each lookup is bounded by a timeout.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::env::{ChildEnv, EnvPolicy};

/// Where the global settings file is, and how to read its `secrets.lookup`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    path: PathBuf,
}

impl SettingsFile {
    /// The variable that points at the global settings file instead of
    /// `$HOME/.lionagi/settings.yaml`.
    pub const PATH_VAR: &'static str = runtime_settings::SETTINGS_PATH_VAR;

    /// The settings file at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The global settings file: `$LIONAGI_SETTINGS_FILE`, else
    /// `$HOME/.lionagi/settings.yaml`; `None` if neither is set.
    pub fn locate() -> Option<Self> {
        Self::locate_with(|name| std::env::var_os(name))
    }

    /// [`SettingsFile::locate`] over any variable source.
    pub fn locate_with(lookup: impl Fn(&str) -> Option<OsString>) -> Option<Self> {
        runtime_settings::locate_settings_with(lookup).map(Self::at)
    }

    /// The path this loader reads.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads and validates `secrets.lookup`. A missing file is "nothing
    /// configured"; an unreadable or unparseable one is a refusal.
    pub fn secret_lookup(&self) -> LookupConfig {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => parse_secret_lookup(&text),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                LookupConfig::NotConfigured
            }
            Err(_) => LookupConfig::Rejected(reason::SETTINGS_UNREADABLE),
        }
    }
}

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

    /// Sets the bound on one lookup command.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// Validates the `secrets.lookup` block of a settings document. Every
/// refusal is total: one malformed entry rejects the whole block.
pub fn parse_secret_lookup(yaml: &str) -> LookupConfig {
    let Ok(root) = serde_saphyr::from_str::<Value>(yaml) else {
        return LookupConfig::Rejected(reason::SETTINGS_INVALID);
    };
    let secrets = match &root {
        Value::Null => return LookupConfig::NotConfigured,
        Value::Object(map) => match map.get("secrets") {
            None | Some(Value::Null) => return LookupConfig::NotConfigured,
            Some(secrets) => secrets,
        },
        _ => return LookupConfig::Rejected(reason::SETTINGS_INVALID),
    };
    let Value::Object(secrets) = secrets else {
        return LookupConfig::Rejected(reason::LOOKUP_NOT_MAPPING);
    };
    let lookup = match secrets.get("lookup") {
        None | Some(Value::Null) => return LookupConfig::NotConfigured,
        Some(Value::Object(lookup)) => lookup,
        Some(_) => return LookupConfig::Rejected(reason::LOOKUP_NOT_MAPPING),
    };
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

const PLACEHOLDER: &str = "{name}";

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// What secret filling did to an environment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SecretResolution {
    /// The environment to spawn with (unchanged when nothing was resolved).
    pub env: EnvPolicy,
    /// Set iff a lookup was configured and refused; a stable identifier.
    pub reason: Option<&'static str>,
    /// Names whose value was looked up and added.
    pub resolved: Vec<String>,
    /// Names whose lookup failed (the child will lack them).
    pub failed: Vec<String>,
    /// Names skipped because they already had a value.
    pub already_set: Vec<String>,
}

/// Adds each declared, unset variable to `env` by running the lookup
/// command. Purely additive: nothing configured returns `env` unchanged
/// (`Inherit` stays `Inherit`), and a failed lookup leaves the variable out.
///
/// Readings of what the spec leaves open (Ambiguities B.4), each the one
/// that fails closed: with `Inherit`, a variable set in this process counts
/// as already set; with `Inherit` and a resolved secret the child gets this
/// process's environment plus the secret; `reason` is set only for a refused
/// configuration (a store that runs and fails is listed in `failed`); one
/// trailing newline is trimmed, an empty value is a failure, and each lookup
/// is bounded by [`SecretLookup::DEFAULT_TIMEOUT`].
pub async fn fill_declared_secrets(config: &LookupConfig, env: EnvPolicy) -> SecretResolution {
    let mut resolution = SecretResolution {
        env,
        reason: None,
        resolved: Vec::new(),
        failed: Vec::new(),
        already_set: Vec::new(),
    };
    let lookup = match config {
        LookupConfig::NotConfigured | LookupConfig::Disabled => return resolution,
        LookupConfig::Rejected(why) => {
            tracing::warn!(reason = why, "secrets.lookup refused");
            resolution.reason = Some(why);
            return resolution;
        }
        LookupConfig::Ready(lookup) => lookup,
    };
    let mut found: Vec<(String, OsString)> = Vec::new();
    for name in &lookup.names {
        let already = match &resolution.env {
            EnvPolicy::Inherit => std::env::var_os(name).is_some(),
            EnvPolicy::Explicit(env) => env.contains(name),
        };
        if already || found.iter().any(|(n, _)| n == name) {
            resolution.already_set.push(name.clone());
            continue;
        }
        match run_lookup(lookup, name).await {
            Some(value) => found.push((name.clone(), value)),
            None => resolution.failed.push(name.clone()),
        }
    }
    if found.is_empty() {
        return resolution;
    }
    let mut env = match std::mem::take(&mut resolution.env) {
        EnvPolicy::Inherit => ChildEnv::from_current_process(),
        EnvPolicy::Explicit(env) => env,
    };
    for (name, value) in found {
        match env.insert(name.clone(), value) {
            Ok(()) => resolution.resolved.push(name),
            Err(_) => resolution.failed.push(name),
        }
    }
    resolution.env = EnvPolicy::Explicit(env);
    resolution
}

/// Runs one lookup; the value on success, `None` (stdout discarded) on any failure.
async fn run_lookup(lookup: &SecretLookup, name: &str) -> Option<OsString> {
    let (program, args) = lookup.argv.split_first()?;
    let program_name = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut command = Command::new(program);
    command
        .args(args.iter().map(|arg| arg.replace(PLACEHOLDER, name)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            tracing::warn!(program = %program_name, name, kind = ?error.kind(), "secret lookup failed to start");
            return None;
        }
    };
    let mut stdout = child.stdout.take()?;
    let run = async {
        let mut out = Vec::new();
        let read = (&mut stdout).take(1024 * 1024).read_to_end(&mut out).await;
        let status = child.wait().await;
        (read, status, out)
    };
    let (read, status, mut out) = match tokio::time::timeout(lookup.timeout, run).await {
        Ok(done) => done,
        Err(_) => {
            tracing::warn!(program = %program_name, name, "secret lookup timed out");
            return None;
        }
    };
    let status = match (read, status) {
        (Ok(_), Ok(status)) => status,
        _ => {
            tracing::warn!(program = %program_name, name, "secret lookup i/o failed");
            return None;
        }
    };
    if !status.success() {
        out.fill(0);
        tracing::warn!(program = %program_name, name, status = status.code(), "secret lookup exited unsuccessfully");
        return None;
    }
    if out.ends_with(b"\n") {
        out.pop();
        if out.ends_with(b"\r") {
            out.pop();
        }
    }
    if out.is_empty() || out.contains(&0) {
        tracing::warn!(program = %program_name, name, status = status.code(), "secret lookup printed no usable value");
        return None;
    }
    tracing::info!(program = %program_name, name, status = status.code(), "secret looked up");
    use std::os::unix::ffi::OsStringExt;
    Some(OsString::from_vec(out))
}
