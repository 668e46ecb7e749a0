//! `notify.on_terminal` resolution: settings values to a handler or to
//! disabled.
//!
//! Precedence is per-run override, then project settings, then global
//! settings, else disabled; the highest level that sets `on_terminal` (to
//! anything but null) decides, so an explicit `enabled: false` there masks
//! lower levels. The library never reads files or the environment: the
//! caller passes parsed values (see [`on_terminal_in`]).
//!
//! No configuration shape reaches a shell. A string is split into words by
//! POSIX shell-word rules (the `shlex` crate) and run directly; a string
//! that needs shell features, cannot be split or yields no words resolves
//! to disabled with a migration warning. Warnings name an adapter only by
//! its program's basename.

mod shell;

use std::fmt;

use serde_json::Value;

use crate::redact::{Argv, adapter_label};
use crate::registry::Filter;

pub use shell::needs_shell;

/// Which settings level a value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The run's own override (e.g. a command-line flag).
    PerRun,
    /// The project's settings.
    Project,
    /// The user-level (global) settings.
    Global,
}

impl Level {
    /// The level's name in warnings.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PerRun => "override",
            Self::Project => "project settings",
            Self::Global => "settings",
        }
    }
}

/// Why a configured notifier resolved to disabled. The text of
/// [`Refusal::as_str`] is what `notify_outcome.json` records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The value is neither a string nor a mapping.
    NotStringOrMapping,
    /// The string needs a shell (pipe, redirection, conjunction, expansion).
    RequiresShellFeatures,
    /// The string cannot be split (e.g. an unbalanced quote).
    NotParseable,
    /// The command has no words.
    EmptyCommand,
    /// `enabled` is not a boolean.
    EnabledNotBoolean,
    /// The mapping says `enabled: true` but has no `adapter`.
    EnabledWithoutAdapter,
    /// `adapter.kind` is neither `exec` nor `python`.
    AdapterKindUnsupported,
    /// `adapter.kind: python` names in-process Python code, which this
    /// runtime cannot load.
    PythonAdapterUnsupported,
    /// `adapter.argv` is not a list of strings (or holds a NUL byte).
    ArgvNotListOfStrings,
    /// `filter` is not a mapping.
    FilterNotMapping,
    /// `filter.kinds` is not a non-empty list of strings.
    FilterKindsInvalid,
    /// `filter.ids` is not a non-empty list of strings.
    FilterIdsInvalid,
}

impl Refusal {
    /// The stable reason code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotStringOrMapping => "on_terminal_not_string_or_mapping",
            Self::RequiresShellFeatures => "on_terminal_command_requires_shell_features",
            Self::NotParseable => "on_terminal_command_not_parseable",
            Self::EmptyCommand => "on_terminal_command_is_empty",
            Self::EnabledNotBoolean => "on_terminal_enabled_not_a_boolean",
            Self::EnabledWithoutAdapter => "enabled_without_adapter",
            Self::AdapterKindUnsupported => "adapter_kind_unsupported",
            Self::PythonAdapterUnsupported => "python_adapter_unsupported",
            Self::ArgvNotListOfStrings => "exec_adapter_argv_not_a_list_of_strings",
            Self::FilterNotMapping => "filter_not_a_mapping",
            Self::FilterKindsInvalid => "filter_kinds_not_a_list_of_strings",
            Self::FilterIdsInvalid => "filter_ids_not_a_list_of_strings",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a resolved notifier runs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Adapter {
    /// Run this argv directly (never a shell), the envelope as JSON on stdin.
    Exec(Argv),
}

/// An installable notifier: an adapter and its filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedHandler {
    /// What to run.
    pub adapter: Adapter,
    /// Which envelopes it accepts.
    pub filter: Filter,
}

impl ResolvedHandler {
    /// The adapter's label (its program's basename).
    pub fn label(&self) -> String {
        match &self.adapter {
            Adapter::Exec(argv) => argv.label(),
        }
    }
}

/// The result of resolving `notify.on_terminal`.
///
/// Three shapes: a handler (`handler` set); disabled because nothing is
/// configured or `enabled: false` (neither set: benign); disabled because
/// the configuration was refused (`refusal` set, with a `warning`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Resolution {
    /// The notifier to install, if any.
    pub handler: Option<ResolvedHandler>,
    /// Why a configured notifier was refused.
    pub refusal: Option<Refusal>,
    /// The level that decided (`None`: no level configured anything).
    pub level: Option<Level>,
    /// The migration warning for a refusal; it carries no argument value.
    pub warning: Option<String>,
}

impl Resolution {
    /// Whether no notifier will run.
    pub fn is_disabled(&self) -> bool {
        self.handler.is_none()
    }

    fn handler(level: Level, handler: ResolvedHandler) -> Self {
        Self {
            handler: Some(handler),
            level: Some(level),
            ..Self::default()
        }
    }

    fn disabled(level: Level) -> Self {
        Self {
            level: Some(level),
            ..Self::default()
        }
    }

    fn refused(level: Level, refusal: Refusal, what: String) -> Self {
        let warning = format!(
            "notify.on_terminal ({}) {what}; resolving to disabled ({})",
            level.as_str(),
            refusal.as_str()
        );
        tracing::warn!(level = level.as_str(), reason = refusal.as_str(), %warning, "notify setting refused");
        Self {
            handler: None,
            refusal: Some(refusal),
            level: Some(level),
            warning: Some(warning),
        }
    }
}

/// The `notify.on_terminal` value inside a parsed settings document, if
/// set (a null counts as not set).
pub fn on_terminal_in(settings: &Value) -> Option<&Value> {
    settings
        .get("notify")
        .and_then(|n| n.get("on_terminal"))
        .filter(|v| !v.is_null())
}

/// Resolves `notify.on_terminal` across the three levels: each argument is
/// that level's `on_terminal` value (see [`on_terminal_in`]); the first
/// one present (and not null) decides alone.
///
/// Never fails and never blocks: a bad value is a [`Refusal`], logged as a
/// warning and returned for the caller to record.
pub fn resolve_on_terminal(
    per_run: Option<&Value>,
    project: Option<&Value>,
    global: Option<&Value>,
) -> Resolution {
    [
        (Level::PerRun, per_run),
        (Level::Project, project),
        (Level::Global, global),
    ]
    .into_iter()
    .find_map(|(level, value)| value.filter(|v| !v.is_null()).map(|v| (level, v)))
    .map_or_else(Resolution::default, |(level, value)| {
        resolve_value(value, level)
    })
}

/// Resolves one level's `on_terminal` value.
pub fn resolve_value(value: &Value, level: Level) -> Resolution {
    match value {
        Value::String(command) => resolve_string(command, level, Filter::default()),
        Value::Object(map) => resolve_mapping(map, level),
        other => Resolution::refused(
            level,
            Refusal::NotStringOrMapping,
            format!("must be a string or mapping, got {}", kind_of(other)),
        ),
    }
}

fn resolve_string(command: &str, level: Level, filter: Filter) -> Resolution {
    if needs_shell(command) {
        return Resolution::refused(
            level,
            Refusal::RequiresShellFeatures,
            "command string needs shell features (pipes, redirection, conjunction or \
             variable expansion) that are never honoured: no configuration reaches a shell; \
             use the mapping form {adapter: {kind: exec, argv: [...]}}"
                .to_owned(),
        );
    }
    let Some(words) = shlex::split(command) else {
        return Resolution::refused(
            level,
            Refusal::NotParseable,
            "command string cannot be split into words (e.g. an unbalanced quote); \
             use the mapping form {adapter: {kind: exec, argv: [...]}}"
                .to_owned(),
        );
    };
    exec_handler(words, level, filter)
}

fn exec_handler(words: Vec<String>, level: Level, filter: Filter) -> Resolution {
    if words.iter().any(|w| w.contains('\0')) {
        return Resolution::refused(
            level,
            Refusal::ArgvNotListOfStrings,
            format!(
                "exec adapter {} has an argument with a NUL byte",
                adapter_label(&words)
            ),
        );
    }
    match Argv::new(words) {
        Some(argv) => Resolution::handler(
            level,
            ResolvedHandler {
                adapter: Adapter::Exec(argv),
                filter,
            },
        ),
        None => Resolution::refused(
            level,
            Refusal::EmptyCommand,
            "resolved to an empty command; use the mapping form \
             {adapter: {kind: exec, argv: [...]}} to configure a real command"
                .to_owned(),
        ),
    }
}

fn resolve_mapping(map: &serde_json::Map<String, Value>, level: Level) -> Resolution {
    // A null `enabled` (an empty YAML value) reads as absent: enabled.
    let explicit = match map.get("enabled") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(true)) => true,
        Some(Value::Bool(false)) => return Resolution::disabled(level),
        Some(other) => {
            return Resolution::refused(
                level,
                Refusal::EnabledNotBoolean,
                format!("enabled must be true or false, got {}", kind_of(other)),
            );
        }
    };
    let filter = match parse_filter(map.get("filter")) {
        Ok(filter) => filter,
        Err((refusal, what)) => return Resolution::refused(level, refusal, what),
    };
    let adapter = match map.get("adapter") {
        Some(Value::Object(adapter)) => adapter,
        // A mapping naming no adapter configures nothing, unless it asked
        // explicitly to be enabled.
        None | Some(Value::Null) if !explicit => return Resolution::disabled(level),
        None | Some(Value::Null) => {
            return Resolution::refused(
                level,
                Refusal::EnabledWithoutAdapter,
                "enabled: true needs an adapter mapping {kind: exec, argv: [...]}".to_owned(),
            );
        }
        Some(other) => {
            return Resolution::refused(
                level,
                Refusal::AdapterKindUnsupported,
                format!(
                    "adapter must be a mapping {{kind: exec, argv: [...]}}, got {}",
                    kind_of(other)
                ),
            );
        }
    };
    match adapter.get("kind").and_then(Value::as_str) {
        Some("exec") => match adapter.get("argv") {
            Some(Value::Array(items)) => {
                let words: Option<Vec<String>> = items
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect();
                match words {
                    Some(words) => exec_handler(words, level, filter),
                    None => Resolution::refused(
                        level,
                        Refusal::ArgvNotListOfStrings,
                        "exec adapter argv must be a list of strings".to_owned(),
                    ),
                }
            }
            other => Resolution::refused(
                level,
                Refusal::ArgvNotListOfStrings,
                format!(
                    "exec adapter requires an argv list of strings, got {}",
                    other.map_or("nothing", kind_of)
                ),
            ),
        },
        Some("python") => Resolution::refused(
            level,
            Refusal::PythonAdapterUnsupported,
            "python adapters load in-process Python code, which this runtime cannot do; \
             run the code as {adapter: {kind: exec, argv: [python3, -m, module]}} instead"
                .to_owned(),
        ),
        _ => Resolution::refused(
            level,
            Refusal::AdapterKindUnsupported,
            "adapter kind must be exec or python".to_owned(),
        ),
    }
}

fn parse_filter(value: Option<&Value>) -> Result<Filter, (Refusal, String)> {
    let map = match value {
        None | Some(Value::Null) => return Ok(Filter::default()),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err((
                Refusal::FilterNotMapping,
                format!("filter must be a mapping, got {}", kind_of(other)),
            ));
        }
    };
    let list = |key: &str, refusal: Refusal| -> Result<Option<Vec<String>>, (Refusal, String)> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(Some)
                .ok_or_else(|| {
                    (
                        refusal,
                        format!("filter.{key} must be a list of strings with at least one value"),
                    )
                }),
            Some(_) => Err((
                refusal,
                format!("filter.{key} must be a list of strings with at least one value"),
            )),
        }
    };
    Ok(Filter {
        kinds: list("kinds", Refusal::FilterKindsInvalid)?,
        ids: list("ids", Refusal::FilterIdsInvalid)?,
    })
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}
