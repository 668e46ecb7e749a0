//! The CLI flag metadata protocol: request fields declare a flag and a kind,
//! and argv is built from that metadata alone.

use std::collections::BTreeMap;

use crate::error::Error;

/// How one request field becomes argv elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
    /// `--flag <string of value>`.
    Value,
    /// `--flag` when true, nothing when false or unset.
    Bool,
    /// `--flag` when true, `--<negative>` when false, nothing when unset.
    BoolPair {
        /// The negative flag, e.g. `--no-color`.
        negative: &'static str,
    },
    /// The flag once, followed by every item as its own argument.
    ListArgs,
    /// The flag followed by an object or array serialised as compact JSON.
    JsonValue,
    /// The flag repeated once per item: `--flag a --flag b`.
    Repeat,
    /// The flag joined to each item with `=`, once per item:
    /// `--flag=a --flag=b`. For a flag that takes several values (codex's
    /// `-i/--image FILE...`), the separate form would read whatever follows
    /// as more values; the joined form gives each occurrence exactly one.
    RepeatJoined,
}

impl FlagKind {
    /// The kind's protocol name (`value`, `bool`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Value => "value",
            Self::Bool => "bool",
            Self::BoolPair { .. } => "bool_pair",
            Self::ListArgs => "list_args",
            Self::JsonValue => "json_value",
            Self::Repeat => "repeat",
            Self::RepeatJoined => "repeat_joined",
        }
    }
}

/// The metadata of one CLI-mappable request field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagSpec {
    /// The request field's name.
    pub field: &'static str,
    /// The flag, including its dashes (`--model`).
    pub flag: &'static str,
    /// How the value is rendered.
    pub kind: FlagKind,
    /// The provider-neutral [`AgentRequest`](crate::AgentRequest) field this
    /// one is filled from (`"effort"`, `"resume"`, `"model"`, ...), when the
    /// provider derives it rather than taking it as an option: callers set
    /// it through that neutral field, never directly.
    pub set_by: Option<&'static str>,
}

impl FlagSpec {
    /// A spec for `field` rendered as `flag` with `kind`.
    pub const fn new(field: &'static str, flag: &'static str, kind: FlagKind) -> Self {
        Self {
            field,
            flag,
            kind,
            set_by: None,
        }
    }

    /// The same spec, filled from the neutral request field `neutral`
    /// (see [`FlagSpec::set_by`]).
    #[must_use]
    pub const fn set_by(mut self, neutral: &'static str) -> Self {
        self.set_by = Some(neutral);
        self
    }

    /// The neutral field that fills this one: its [`FlagSpec::set_by`], or
    /// the field itself when it bears a neutral field's name.
    pub fn neutral_field(&self) -> Option<&'static str> {
        const NEUTRAL: &[&str] = &["prompt", "model", "effort", "workspace", "resume"];
        self.set_by
            .or_else(|| NEUTRAL.iter().copied().find(|n| *n == self.field))
    }
}

/// A set field's value. Unset fields are `None` at the call sites.
#[derive(Debug, Clone, PartialEq)]
pub enum FlagValue {
    /// A scalar rendered as its string.
    Str(String),
    /// A boolean.
    Bool(bool),
    /// A list of strings.
    List(Vec<String>),
    /// A JSON object or array.
    Json(serde_json::Value),
}

impl FlagValue {
    fn shape(&self) -> &'static str {
        match self {
            Self::Str(_) => "string",
            Self::Bool(_) => "bool",
            Self::List(_) => "list",
            Self::Json(_) => "json",
        }
    }
}

/// A request whose CLI-mappable fields carry flag metadata.
pub trait CliFields {
    /// Every CLI-mappable field, in argv order.
    fn flag_specs(&self) -> &'static [FlagSpec];
    /// The value of `field`, `None` when unset.
    fn flag_value(&self, field: &str) -> Option<FlagValue>;

    /// The argv elements for every set field (no program, no prompt).
    fn cli_args(&self) -> Result<Vec<String>, Error> {
        build_declarative_cli_args(self.flag_specs(), |f| self.flag_value(f))
    }
}

/// Builds argv elements for `specs`, asking `value_of` for each field.
///
/// Every value lands in argv as its own element, never joined or quoted, so
/// no element is ever a shell string.
pub fn build_declarative_cli_args(
    specs: &[FlagSpec],
    value_of: impl Fn(&str) -> Option<FlagValue>,
) -> Result<Vec<String>, Error> {
    let mut argv = Vec::new();
    for spec in specs {
        if let Some(value) = value_of(spec.field) {
            push_flag(&mut argv, spec, value)?;
        }
    }
    Ok(argv)
}

/// Builds argv elements from a map of field values; a field without
/// metadata is refused rather than dropped.
pub fn build_cli_args_from_map(
    specs: &[FlagSpec],
    values: &BTreeMap<String, FlagValue>,
) -> Result<Vec<String>, Error> {
    if let Some(unknown) = values
        .keys()
        .find(|k| !specs.iter().any(|s| s.field == k.as_str()))
    {
        return Err(Error::UnknownField(unknown.clone()));
    }
    build_declarative_cli_args(specs, |f| values.get(f).cloned())
}

fn mismatch(spec: &FlagSpec, value: &FlagValue) -> Error {
    Error::KindMismatch {
        field: spec.field.to_owned(),
        kind: spec.kind.name(),
        got: value.shape(),
    }
}

fn push_flag(argv: &mut Vec<String>, spec: &FlagSpec, value: FlagValue) -> Result<(), Error> {
    match (spec.kind, value) {
        (FlagKind::Value, FlagValue::Str(s)) => {
            argv.push(spec.flag.to_owned());
            argv.push(s);
        }
        (FlagKind::Value, FlagValue::Json(v)) if is_scalar(&v) => {
            argv.push(spec.flag.to_owned());
            argv.push(match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            });
        }
        (FlagKind::Bool, FlagValue::Bool(b)) => {
            if b {
                argv.push(spec.flag.to_owned());
            }
        }
        (FlagKind::BoolPair { negative }, FlagValue::Bool(b)) => {
            argv.push(if b { spec.flag } else { negative }.to_owned());
        }
        (FlagKind::ListArgs, FlagValue::List(items)) => {
            if !items.is_empty() {
                argv.push(spec.flag.to_owned());
                argv.extend(items);
            }
        }
        (FlagKind::Repeat, FlagValue::List(items)) => {
            for item in items {
                argv.push(spec.flag.to_owned());
                argv.push(item);
            }
        }
        (FlagKind::RepeatJoined, FlagValue::List(items)) => {
            argv.extend(
                items
                    .into_iter()
                    .map(|item| format!("{}={item}", spec.flag)),
            );
        }
        (FlagKind::JsonValue, FlagValue::Json(v)) if v.is_object() || v.is_array() => {
            argv.push(spec.flag.to_owned());
            argv.push(v.to_string());
        }
        (_, value) => return Err(mismatch(spec, &value)),
    }
    Ok(())
}

fn is_scalar(v: &serde_json::Value) -> bool {
    v.is_string() || v.is_number() || v.is_boolean()
}

/// The inverse of [`build_declarative_cli_args`]: reads argv elements back
/// into field values. Used to prove that every kind round-trips.
///
/// A `list_args` flag consumes arguments up to the next known flag.
pub fn parse_declarative_cli_args(
    specs: &[FlagSpec],
    argv: &[String],
) -> Result<BTreeMap<&'static str, FlagValue>, Error> {
    let mut out: BTreeMap<&'static str, FlagValue> = BTreeMap::new();
    let find = |arg: &str| {
        specs.iter().find_map(|s| {
            if s.flag == arg {
                Some((s, true))
            } else if matches!(s.kind, FlagKind::BoolPair { negative } if negative == arg) {
                Some((s, false))
            } else {
                None
            }
        })
    };
    let joined = |arg: &str| {
        specs.iter().find_map(|s| {
            let rest = arg.strip_prefix(s.flag)?.strip_prefix('=')?;
            (s.kind == FlagKind::RepeatJoined).then(|| (s, rest.to_owned()))
        })
    };
    let mut i = 0;
    while i < argv.len() {
        let arg = &argv[i];
        if let Some((spec, item)) = joined(arg) {
            i += 1;
            match out
                .entry(spec.field)
                .or_insert_with(|| FlagValue::List(Vec::new()))
            {
                FlagValue::List(items) => items.push(item),
                other => *other = FlagValue::List(vec![item]),
            }
            continue;
        }
        let (spec, positive) = find(arg).ok_or_else(|| Error::UnknownFlag(arg.clone()))?;
        i += 1;
        let take = |i: usize| {
            argv.get(i)
                .cloned()
                .ok_or_else(|| Error::MissingFlagValue(spec.flag.to_owned()))
        };
        match spec.kind {
            FlagKind::Value => {
                out.insert(spec.field, FlagValue::Str(take(i)?));
                i += 1;
            }
            FlagKind::Bool | FlagKind::BoolPair { .. } => {
                out.insert(spec.field, FlagValue::Bool(positive));
            }
            FlagKind::ListArgs => {
                let mut items = Vec::new();
                while let Some(next) = argv.get(i) {
                    if find(next).is_some() {
                        break;
                    }
                    items.push(next.clone());
                    i += 1;
                }
                out.insert(spec.field, FlagValue::List(items));
            }
            // Only ever written joined; a bare occurrence has no value.
            FlagKind::RepeatJoined => {
                return Err(Error::MissingFlagValue(spec.flag.to_owned()));
            }
            FlagKind::Repeat => {
                let item = take(i)?;
                i += 1;
                match out
                    .entry(spec.field)
                    .or_insert_with(|| FlagValue::List(Vec::new()))
                {
                    FlagValue::List(items) => items.push(item),
                    other => *other = FlagValue::List(vec![item]),
                }
            }
            FlagKind::JsonValue => {
                let raw = take(i)?;
                i += 1;
                let v = serde_json::from_str(&raw).map_err(|_| Error::InvalidJsonFlag {
                    flag: spec.flag.to_owned(),
                })?;
                out.insert(spec.field, FlagValue::Json(v));
            }
        }
    }
    Ok(out)
}
