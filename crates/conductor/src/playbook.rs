//! li's playbooks (`NAME.playbook.yaml`): saved prompt templates with
//! typed arguments, read as li writes them, and rendered into a plan.
//!
//! Fields as li accepts them ([`ACCEPTED_FIELDS`]); an unknown one is
//! refused with the accepted list. `args:` (each with `type`, `default`,
//! `help`) wins over `argument-hint` (`[--flag VALUE]` a string argument,
//! bare `[--flag]` a boolean). In `prompt`, `{input}` is the positional
//! text and `{NAME}` an argument's value (command line over default); a
//! prompt without `{input}` gets the positional text appended after a
//! blank line. Braces naming no argument are left as they are (a prompt
//! may hold JSON).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::plan::{Agent, Op, Plan, fanout_plan};

/// Every field li accepts in a playbook.
pub const ACCEPTED_FIELDS: &[&str] = &[
    "agent",
    "args",
    "argument-hint",
    "artifacts",
    "bare",
    "bypass",
    "description",
    "dry_run",
    "effort",
    "links",
    "max-ops",
    "max_agents",
    "max_ops",
    "model",
    "name",
    "pack",
    "permission_mode",
    "prompt",
    "reactive",
    "save",
    "show-graph",
    "show_graph",
    "steps",
    "team_attach",
    "team_mode",
    "use",
    "with_synthesis",
    "workers",
    "yolo",
];

/// Why a playbook or its command line is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlaybookError {
    /// Not YAML, or not a mapping.
    #[error("not a playbook: {0}")]
    Parse(String),
    /// A field li does not accept.
    #[error("unknown playbook field {field:?} (accepted: {})", ACCEPTED_FIELDS.join(", "))]
    UnknownField {
        /// The field.
        field: String,
    },
    /// A field of the wrong shape.
    #[error("playbook field {field:?}: {problem}")]
    BadField {
        /// The field.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// An argument the playbook does not declare.
    #[error("--{arg} is not an argument of playbook {playbook} (its arguments: {known})")]
    UnknownArg {
        /// The playbook.
        playbook: String,
        /// The argument given.
        arg: String,
        /// Its declared arguments, or "none".
        known: String,
    },
    /// A string argument given without a value.
    #[error("--{0} needs a value")]
    MissingValue(String),
    /// A placeholder with no value given and no default.
    #[error("the prompt uses {{{0}}}, but --{0} was not given and has no default")]
    Unset(String),
    /// More than one positional input.
    #[error("more than one input given ({0:?}); quote the input")]
    TwoInputs(String),
}

/// An argument's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// `--flag VALUE`.
    String,
    /// `--flag` (true when given).
    Bool,
}

/// One declared argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgSpec {
    /// Its type.
    pub kind: ArgKind,
    /// Its default, rendered as text.
    pub default: Option<String>,
    /// Its help.
    pub help: Option<String>,
}

/// A playbook, as far as lionrt runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Playbook {
    /// Its name (the file's, unless it names itself).
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// The prompt template.
    pub prompt: String,
    /// `model:` (PROVIDER/MODEL, any provider, scripted included).
    pub model: Option<String>,
    /// `effort:`.
    pub effort: Option<String>,
    /// `agent:` (a profile name; recorded, not resolved yet).
    pub agent: Option<String>,
    /// `max-ops` / `max_ops`.
    pub max_ops: Option<usize>,
    /// `workers` (1-32): a fan-out of this many.
    pub workers: Option<usize>,
    /// `with_synthesis`.
    pub with_synthesis: bool,
    /// The arguments, by name.
    pub args: BTreeMap<String, ArgSpec>,
}

fn bad(field: &str, problem: impl Into<String>) -> PlaybookError {
    PlaybookError::BadField {
        field: field.to_owned(),
        problem: problem.into(),
    }
}

fn text_of(field: &str, v: &Value) -> Result<String, PlaybookError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(bad(field, "must be a string")),
    }
}

fn count_of(
    field: &str,
    v: &Value,
    range: std::ops::RangeInclusive<u64>,
) -> Result<usize, PlaybookError> {
    v.as_u64()
        .filter(|n| range.contains(n))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            bad(
                field,
                format!(
                    "must be a whole number from {} to {}",
                    range.start(),
                    range.end()
                ),
            )
        })
}

/// The arguments an `argument-hint` names: `[--flag VALUE]` strings,
/// `[--flag]` booleans.
fn hinted_args(hint: &str) -> BTreeMap<String, ArgSpec> {
    let mut out = BTreeMap::new();
    let mut rest = hint;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']') else {
            break;
        };
        let inner = &rest[open + 1..open + close];
        rest = &rest[open + close + 1..];
        let mut words = inner.split_whitespace();
        let Some(flag) = words.next().and_then(|w| w.strip_prefix("--")) else {
            continue;
        };
        if flag.is_empty() {
            continue;
        }
        let kind = if words.next().is_some() {
            ArgKind::String
        } else {
            ArgKind::Bool
        };
        out.insert(
            flag.to_owned(),
            ArgSpec {
                kind,
                default: None,
                help: None,
            },
        );
    }
    out
}

fn declared_args(v: &Value) -> Result<BTreeMap<String, ArgSpec>, PlaybookError> {
    let map = v
        .as_object()
        .ok_or_else(|| bad("args", "must be a mapping of argument names"))?;
    let mut out = BTreeMap::new();
    for (name, spec) in map {
        let field = format!("args.{name}");
        let spec = match spec {
            Value::Null => &serde_json::Map::new(),
            Value::Object(m) => m,
            _ => return Err(bad(&field, "must be a mapping (type, default, help)")),
        };
        for key in spec.keys() {
            if !matches!(key.as_str(), "type" | "default" | "help") {
                return Err(bad(
                    &field,
                    format!("unknown key {key:?} (type, default, help)"),
                ));
            }
        }
        let kind = match spec.get("type").and_then(Value::as_str) {
            None | Some("str" | "string" | "int" | "integer" | "float" | "number") => {
                ArgKind::String
            }
            Some("bool" | "boolean" | "flag") => ArgKind::Bool,
            Some(other) => return Err(bad(&field, format!("unknown type {other:?}"))),
        };
        let default = match spec.get("default") {
            None | Some(Value::Null) => None,
            Some(v) => Some(text_of(&field, v)?),
        };
        let help = spec.get("help").map(|v| text_of(&field, v)).transpose()?;
        out.insert(
            name.clone(),
            ArgSpec {
                kind,
                default,
                help,
            },
        );
    }
    Ok(out)
}

impl Playbook {
    /// Reads a playbook named `name` (its file's stem) from YAML text.
    pub fn from_yaml(name: &str, text: &str) -> Result<Self, PlaybookError> {
        let value: Value =
            serde_saphyr::from_str(text).map_err(|e| PlaybookError::Parse(e.to_string()))?;
        let map = value
            .as_object()
            .ok_or_else(|| PlaybookError::Parse("the document is not a mapping".into()))?;
        if let Some(field) = map.keys().find(|k| !ACCEPTED_FIELDS.contains(&k.as_str())) {
            return Err(PlaybookError::UnknownField {
                field: field.clone(),
            });
        }
        let opt_text = |f: &str| {
            map.get(f)
                .filter(|v| !v.is_null())
                .map(|v| text_of(f, v))
                .transpose()
        };
        let prompt = opt_text("prompt")?
            .filter(|p| !p.trim().is_empty())
            .ok_or_else(|| bad("prompt", "is required"))?;
        let mut args = match map.get("argument-hint").filter(|v| !v.is_null()) {
            Some(v) => hinted_args(&text_of("argument-hint", v)?),
            None => BTreeMap::new(),
        };
        if let Some(v) = map.get("args").filter(|v| !v.is_null()) {
            args.extend(declared_args(v)?);
        }
        if args.contains_key("input") {
            return Err(bad(
                "args",
                "\"input\" names the positional text; pick another name",
            ));
        }
        let max_ops = match (map.get("max-ops"), map.get("max_ops")) {
            (Some(v), _) if !v.is_null() => Some(count_of("max-ops", v, 1..=10_000)?),
            (_, Some(v)) if !v.is_null() => Some(count_of("max_ops", v, 1..=10_000)?),
            _ => None,
        };
        let workers = map
            .get("workers")
            .filter(|v| !v.is_null())
            .map(|v| count_of("workers", v, 1..=32))
            .transpose()?;
        let with_synthesis = match map.get("with_synthesis") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(bad("with_synthesis", "must be true or false")),
        };
        Ok(Self {
            name: opt_text("name")?.unwrap_or_else(|| name.to_owned()),
            description: opt_text("description")?,
            prompt,
            model: opt_text("model")?,
            effort: opt_text("effort")?,
            agent: opt_text("agent")?,
            max_ops,
            workers,
            with_synthesis,
            args,
        })
    }

    /// The positional input and the argument values of a command line
    /// (`INPUT --scope core --poll`): `--NAME VALUE` or `--NAME=VALUE` for
    /// a string argument, `--NAME` for a boolean (`true`).
    pub fn parse_args(
        &self,
        words: &[String],
    ) -> Result<(Option<String>, BTreeMap<String, String>), PlaybookError> {
        let mut input: Option<String> = None;
        let mut values = BTreeMap::new();
        let mut it = words.iter();
        while let Some(word) = it.next() {
            let Some(flag) = word.strip_prefix("--").filter(|f| !f.is_empty()) else {
                if let Some(first) = &input {
                    return Err(PlaybookError::TwoInputs(format!("{first} / {word}")));
                }
                input = Some(word.clone());
                continue;
            };
            let (name, inline) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (flag, None),
            };
            let Some(spec) = self.args.get(name) else {
                return Err(PlaybookError::UnknownArg {
                    playbook: self.name.clone(),
                    arg: name.to_owned(),
                    known: if self.args.is_empty() {
                        "none".into()
                    } else {
                        self.args
                            .keys()
                            .map(|k| format!("--{k}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    },
                });
            };
            let value = match (spec.kind, inline) {
                (_, Some(v)) => v,
                (ArgKind::Bool, None) => "true".to_owned(),
                (ArgKind::String, None) => it
                    .next()
                    .cloned()
                    .ok_or_else(|| PlaybookError::MissingValue(name.to_owned()))?,
            };
            values.insert(name.to_owned(), value);
        }
        Ok((input, values))
    }

    /// The prompt with `{input}` and every `{ARG}` filled in.
    pub fn render(
        &self,
        input: Option<&str>,
        values: &BTreeMap<String, String>,
    ) -> Result<String, PlaybookError> {
        let mut out = String::with_capacity(self.prompt.len());
        let mut rest = self.prompt.as_str();
        let mut used_input = false;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let name = after.find('}').map(|close| &after[..close]).filter(|n| {
                !n.is_empty()
                    && n.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
            });
            match name {
                Some("input") => {
                    used_input = true;
                    out.push_str(input.unwrap_or_default());
                    rest = &after["input".len() + 1..];
                }
                Some(n) if self.args.contains_key(n) => {
                    let spec = &self.args[n];
                    let value = match (values.get(n), &spec.default, spec.kind) {
                        (Some(v), _, _) => v.clone(),
                        (None, Some(d), _) => d.clone(),
                        (None, None, ArgKind::Bool) => "false".to_owned(),
                        (None, None, ArgKind::String) => {
                            return Err(PlaybookError::Unset(n.to_owned()));
                        }
                    };
                    out.push_str(&value);
                    rest = &after[n.len() + 1..];
                }
                _ => {
                    out.push('{');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        if let Some(input) = input.filter(|i| !used_input && !i.trim().is_empty()) {
            out.push_str("\n\n");
            out.push_str(input);
        }
        Ok(out)
    }

    /// The plan of a play: one op `play` with the rendered prompt, or with
    /// `workers: N` a fan-out of N (and a synthesis with
    /// `with_synthesis`). `agent` is the leg's agent without its prompt
    /// (`model`/`effort` come from the playbook unless set).
    pub fn plan(&self, prompt: &str, agent: &Agent) -> Plan {
        let agent = Agent {
            model: agent.model.clone().or_else(|| self.model.clone()),
            effort: agent.effort.clone().or_else(|| self.effort.clone()),
            ..agent.clone()
        };
        match self.workers {
            Some(n) if n > 1 => {
                let synthesis = self.with_synthesis.then_some(&agent);
                let mut plan = fanout_plan(n, prompt, &agent, synthesis);
                plan.name = Some(self.name.clone());
                plan
            }
            _ => Plan {
                name: Some(self.name.clone()),
                ops: vec![Op {
                    id: "play".into(),
                    agent: Agent {
                        prompt: Some(prompt.to_owned()),
                        prompt_file: None,
                        ..agent
                    },
                    depends_on: Vec::new(),
                    artifacts: Vec::new(),
                    synthesis: false,
                }],
            },
        }
    }

    /// A `--help` text: the description and each argument.
    pub fn help(&self) -> String {
        let mut out = format!("lionrt play {}", self.name);
        for (name, spec) in &self.args {
            match spec.kind {
                ArgKind::Bool => out.push_str(&format!(" [--{name}]")),
                ArgKind::String => out.push_str(&format!(" [--{name} VALUE]")),
            }
        }
        out.push_str(" [INPUT]\n");
        if let Some(d) = &self.description {
            out.push_str(&format!("\n{}\n", d.trim()));
        }
        if !self.args.is_empty() {
            out.push_str("\nArguments:\n");
            for (name, spec) in &self.args {
                out.push_str(&format!("  --{name}"));
                if let Some(h) = &spec.help {
                    out.push_str(&format!("  {h}"));
                }
                if let Some(d) = &spec.default {
                    out.push_str(&format!(" (default: {d})"));
                }
                out.push('\n');
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
