//! The script model: entries, `when` matchers and the two-phase `next()`.

use std::collections::BTreeSet;

use regex_automata::nfa::thompson::pikevm::PikeVM;
use serde_json::{Map, Value};

use crate::error::Error;

/// How entries are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScriptMode {
    /// `when` entries first, then positional ones.
    #[default]
    Auto,
    /// Only positional entries; `when` matchers are never consulted.
    Positional,
    /// Only `when` entries; a call matching none is an error.
    WhenOnly,
}

/// A scripted response.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call.
    ToolCall {
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
        /// Its arguments.
        arguments: Value,
    },
    /// A structured (JSON) answer.
    Structured {
        /// The data.
        data: Value,
    },
    /// Text delivered in chunks.
    Stream {
        /// The chunks, in order.
        chunks: Vec<String>,
    },
    /// A failure.
    Error {
        /// The message.
        message: String,
        /// An HTTP-like status, where the script gives one.
        status: Option<u16>,
    },
}

impl Response {
    /// The entry kind's name.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Text { .. } => "text",
            Self::ToolCall { .. } => "tool_call",
            Self::Structured { .. } => "structured",
            Self::Stream { .. } => "stream",
            Self::Error { .. } => "error",
        }
    }
}

/// One call as the script sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptCall {
    /// The prompt.
    pub prompt: String,
    /// Names of the tools offered on this call.
    pub tools: Vec<String>,
}

/// A `when` matcher. Every predicate given must hold (they are ANDed);
/// `after_calls: n` holds once `n` calls have been made before this one.
#[derive(Debug, Clone, Default)]
pub struct When {
    /// Exactly this 0-based call.
    pub call_index: Option<usize>,
    /// At least this many earlier calls.
    pub after_calls: Option<usize>,
    /// The prompt contains this text.
    pub prompt_contains: Option<String>,
    /// The prompt matches this regex (unanchored).
    pub prompt_regex: Option<(String, PikeVM)>,
    /// This tool is offered.
    pub has_tool: Option<String>,
}

impl When {
    /// Whether no predicate is set (such an entry counts as positional).
    pub fn is_empty(&self) -> bool {
        self.call_index.is_none()
            && self.after_calls.is_none()
            && self.prompt_contains.is_none()
            && self.prompt_regex.is_none()
            && self.has_tool.is_none()
    }

    fn matches(&self, call_index: usize, call: &ScriptCall) -> bool {
        self.call_index.is_none_or(|i| i == call_index)
            && self.after_calls.is_none_or(|n| call_index >= n)
            && self
                .prompt_contains
                .as_ref()
                .is_none_or(|s| call.prompt.contains(s.as_str()))
            && self.prompt_regex.as_ref().is_none_or(|(_, vm)| {
                let mut cache = vm.create_cache();
                vm.is_match(&mut cache, call.prompt.as_str())
            })
            && self
                .has_tool
                .as_ref()
                .is_none_or(|t| call.tools.iter().any(|x| x == t))
    }
}

/// One script entry: a response and an optional matcher.
#[derive(Debug, Clone)]
pub struct ScriptEntry {
    /// What to answer.
    pub response: Response,
    /// When to answer it; empty means positional.
    pub when: When,
}

/// A loaded script with its replay state. `Clone` is a deep copy, cursor
/// included, so clones replay independently.
#[derive(Debug, Clone)]
pub struct ScriptModel {
    mode: ScriptMode,
    entries: Vec<ScriptEntry>,
    cursor: usize,
    served_when: BTreeSet<usize>,
    calls: usize,
}

impl ScriptModel {
    /// A script of `entries` in `mode`.
    pub fn new(mode: ScriptMode, entries: Vec<ScriptEntry>) -> Self {
        Self {
            mode,
            entries,
            cursor: 0,
            served_when: BTreeSet::new(),
            calls: 0,
        }
    }

    /// Loads a JSON script: either an array of entries, or
    /// `{"mode": "auto"|"positional"|"when_only", "responses": [...]}`.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        Self::from_value(&serde_json::from_str(text).map_err(Error::NotJson)?)
    }

    /// Loads a script from a parsed value.
    ///
    /// The entries are read by the typed parser (whose errors name the
    /// entry, the field and what it must be) and the whole script is then
    /// checked against the published schema
    /// (`docs/schemas/script.schema.json`), so the two can never disagree
    /// silently: a script the schema refuses is [`Error::Schema`].
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let model = Self::from_value_unchecked(v)?;
        config_schema::validate(config_schema::ConfigKind::Script, "script", v)
            .map_err(Error::Schema)?;
        Ok(model)
    }

    fn from_value_unchecked(v: &Value) -> Result<Self, Error> {
        let (mode, items) = match v {
            Value::Array(items) => (ScriptMode::Auto, items),
            Value::Object(o) => {
                if let Some(k) = o
                    .keys()
                    .find(|k| !["mode", "responses"].contains(&k.as_str()))
                {
                    return Err(Error::BadScript(format!("unknown key {k:?}")));
                }
                let mode = match o.get("mode").map(Value::as_str) {
                    None | Some(Some("auto")) => ScriptMode::Auto,
                    Some(Some("positional")) => ScriptMode::Positional,
                    Some(Some("when_only")) => ScriptMode::WhenOnly,
                    Some(_) => {
                        return Err(Error::BadScript(
                            "mode must be auto, positional or when_only".into(),
                        ));
                    }
                };
                match o.get("responses") {
                    Some(Value::Array(items)) => (mode, items),
                    _ => return Err(Error::BadScript("`responses` must be a list".into())),
                }
            }
            _ => return Err(Error::BadScript("must be a list or an object".into())),
        };
        let entries = items
            .iter()
            .enumerate()
            .map(|(i, e)| build_entry(i, e))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::new(mode, entries))
    }

    /// The mode.
    pub fn mode(&self) -> ScriptMode {
        self.mode
    }

    /// The entries.
    pub fn entries(&self) -> &[ScriptEntry] {
        &self.entries
    }

    /// Calls served so far.
    pub fn calls(&self) -> usize {
        self.calls
    }

    /// The response for the next call.
    ///
    /// Phase 1 (unless `positional`): the first entry, in script order,
    /// with a non-empty `when` that matches and has not already been served
    /// by a `when` match. In `when_only` mode no match is an error. Phase 2:
    /// the next entry without a `when` (an empty `when` counts as none),
    /// via an advancing cursor; none left is [`Error::ScriptExhausted`].
    pub fn next(&mut self, call: &ScriptCall) -> Result<Response, Error> {
        let call_index = self.calls;
        if self.mode != ScriptMode::Positional {
            let hit = self.entries.iter().enumerate().find(|(i, e)| {
                !e.when.is_empty()
                    && !self.served_when.contains(i)
                    && e.when.matches(call_index, call)
            });
            if let Some((i, e)) = hit {
                let r = e.response.clone();
                self.served_when.insert(i);
                self.calls += 1;
                return Ok(r);
            }
            if self.mode == ScriptMode::WhenOnly {
                return Err(Error::NoWhenMatch { call_index });
            }
        }
        while let Some(e) = self.entries.get(self.cursor) {
            self.cursor += 1;
            if e.when.is_empty() {
                self.calls += 1;
                return Ok(e.response.clone());
            }
        }
        Err(Error::ScriptExhausted { calls: self.calls })
    }
}

fn bad(index: usize, kind: &'static str, field: &str, problem: &'static str) -> Error {
    Error::InvalidEntry {
        index,
        kind,
        field: field.to_owned(),
        problem,
    }
}

/// Builds an entry by dispatching on `type` by hand, so a malformed entry
/// is reported against its own kind and field.
fn build_entry(index: usize, v: &Value) -> Result<ScriptEntry, Error> {
    let Some(o) = v.as_object() else {
        return Err(Error::BadScript(format!("entry {index} is not an object")));
    };
    let kind = match o.get("type") {
        None => return Err(Error::MissingType { index }),
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(Error::UnknownType {
                index,
                kind: other.to_string(),
            });
        }
    };
    let (kind, allowed): (&'static str, &[&str]) = match kind {
        "text" => ("text", &["text"]),
        "tool_call" => ("tool_call", &["id", "name", "arguments"]),
        "structured" => ("structured", &["data"]),
        "stream" => ("stream", &["chunks"]),
        "error" => ("error", &["message", "status"]),
        other => {
            return Err(Error::UnknownType {
                index,
                kind: other.to_owned(),
            });
        }
    };
    if let Some(k) = o
        .keys()
        .find(|k| !["type", "when"].contains(&k.as_str()) && !allowed.contains(&k.as_str()))
    {
        return Err(bad(index, kind, k, "is not a field of this kind"));
    }
    let string = |field: &str| -> Result<String, Error> {
        match o.get(field) {
            Some(Value::String(s)) => Ok(s.clone()),
            None => Err(bad(index, kind, field, "is required")),
            Some(_) => Err(bad(index, kind, field, "must be a string")),
        }
    };
    let response = match kind {
        "text" => Response::Text {
            text: string("text")?,
        },
        "tool_call" => Response::ToolCall {
            id: match o.get("id") {
                None => format!("call_{index}"),
                Some(Value::String(s)) => s.clone(),
                Some(_) => return Err(bad(index, kind, "id", "must be a string")),
            },
            name: string("name")?,
            arguments: match o.get("arguments") {
                None => Value::Object(Map::new()),
                Some(a @ Value::Object(_)) => a.clone(),
                Some(_) => return Err(bad(index, kind, "arguments", "must be an object")),
            },
        },
        "structured" => Response::Structured {
            data: match o.get("data") {
                Some(d @ (Value::Object(_) | Value::Array(_))) => d.clone(),
                None => return Err(bad(index, kind, "data", "is required")),
                Some(_) => return Err(bad(index, kind, "data", "must be an object or a list")),
            },
        },
        "stream" => Response::Stream {
            chunks: match o.get("chunks") {
                Some(Value::Array(items)) if !items.is_empty() => items
                    .iter()
                    .map(|c| c.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad(index, kind, "chunks", "must hold only strings"))?,
                Some(Value::Array(_)) => {
                    return Err(bad(index, kind, "chunks", "must not be empty"));
                }
                None => return Err(bad(index, kind, "chunks", "is required")),
                Some(_) => return Err(bad(index, kind, "chunks", "must be a list of strings")),
            },
        },
        _ => Response::Error {
            message: string("message")?,
            status: match o.get("status") {
                None => None,
                Some(s) => Some(
                    s.as_u64()
                        .and_then(|n| u16::try_from(n).ok())
                        .ok_or_else(|| bad(index, kind, "status", "must be an integer status"))?,
                ),
            },
        },
    };
    let when = match o.get("when") {
        None | Some(Value::Null) => When::default(),
        Some(Value::Object(w)) => build_when(index, kind, w)?,
        Some(_) => return Err(bad(index, kind, "when", "must be an object")),
    };
    Ok(ScriptEntry { response, when })
}

fn build_when(index: usize, kind: &'static str, w: &Map<String, Value>) -> Result<When, Error> {
    let mut when = When::default();
    for (k, v) in w {
        let field = format!("when.{k}");
        let count = || {
            v.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| bad(index, kind, &field, "must be a non-negative integer"))
        };
        let text = || {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| bad(index, kind, &field, "must be a string"))
        };
        match k.as_str() {
            "call_index" => when.call_index = Some(count()?),
            "after_calls" => when.after_calls = Some(count()?),
            "prompt_contains" => when.prompt_contains = Some(text()?),
            "prompt_regex" => {
                let pattern = text()?;
                let vm = PikeVM::new(&pattern)
                    .map_err(|_| bad(index, kind, &field, "is not a valid regex"))?;
                when.prompt_regex = Some((pattern, vm));
            }
            "has_tool" => when.has_tool = Some(text()?),
            _ => return Err(bad(index, kind, &field, "is not a when predicate")),
        }
    }
    Ok(when)
}
