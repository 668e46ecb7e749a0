//! The verb catalogue of `lionrt mcp serve`'s one tool, `request`: each
//! verb's summary and closed JSON Schema, the tool's own descriptor, and the
//! checks an op's arguments pass before anything runs (an unknown key is
//! refused by name; every other violation carries the schema it was judged
//! against).
//!
//! Only the verbs listed here are reachable. Privilege-granting commands
//! (plugin trust, state migrations and imports, settings edits, schedule
//! or outbox writes) have no verb on purpose: a caller that names one gets
//! the unknown-verb error, whatever it puts in `args`.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

/// At most this many ops in one call (li's limit).
pub(crate) const MAX_OPS: usize = 8;
/// The longest prompt a submission takes, in bytes (inline or from a file).
pub(crate) const MAX_PROMPT_BYTES: usize = 256 * 1024;
/// The largest scripted-provider script a submission takes, in bytes.
pub(crate) const MAX_SCRIPT_BYTES: u64 = 1024 * 1024;
/// The longest `job.wait` in seconds (li's bound).
pub(crate) const MAX_WAIT_SECS: u64 = 600;

/// One verb: its name, what it does and its arguments' schema.
pub(crate) struct Verb {
    /// The name an op gives (`run.submit`).
    pub(crate) name: &'static str,
    /// Another name accepted for it (li's `agent.submit`).
    pub(crate) alias: Option<&'static str>,
    /// One line.
    pub(crate) summary: &'static str,
    /// The closed JSON Schema of its `args`.
    pub(crate) schema: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for Verb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verb")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A `session` argument: an id or a unique prefix of one.
fn session_arg() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 200,
           "description": "session id or unique prefix"})
}

fn closed(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn definitions() -> Vec<(&'static str, Option<&'static str>, &'static str, Value)> {
    let session = session_arg();
    let status = json!({"type": "string", "maxLength": 40});
    vec![
        (
            "run.submit",
            Some("agent.submit"),
            "Start an agent job (a detached `lionrt run`, recorded in the store); returns its session id.",
            closed(
                json!({
                    "prompt": {"type": "string", "maxLength": MAX_PROMPT_BYTES,
                               "description": "the task; or prompt_file"},
                    "prompt_file": {"type": "string", "minLength": 1, "maxLength": 4096,
                                    "description": "a UTF-8 file holding the task"},
                    "provider": {"type": "string",
                                 "enum": ["scripted", "claude", "codex", "gemini", "pi"]},
                    "model": {"type": "string", "minLength": 1, "maxLength": 200,
                              "description": "as the provider names it, or PROVIDER/MODEL"},
                    "effort": {"type": "string",
                               "enum": ["none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra"]},
                    "label": {"type": "string", "maxLength": 200},
                    "session": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$",
                                "description": "the new session's id (default mcp-<microseconds>)"},
                    "workspace": {"type": "string", "minLength": 1, "maxLength": 4096,
                                  "description": "the agent's directory (default: the server's)"},
                    "script_path": {"type": "string", "minLength": 1, "maxLength": 4096,
                                    "description": "scripted provider: its JSON script file"},
                }),
                &[],
            ),
        ),
        (
            "job.status",
            None,
            "One job's session row: status, reason, provider, model, times, tokens.",
            closed(json!({"session": session}), &["session"]),
        ),
        (
            "job.output",
            None,
            "The tail of a job's recorded messages and of its log, and its final report once ended.",
            closed(
                json!({
                    "session": session,
                    "tail": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20},
                    "log_bytes": {"type": "integer", "minimum": 0, "maximum": 65536, "default": 4096},
                }),
                &["session"],
            ),
        ),
        (
            "job.list",
            None,
            "Sessions, newest first.",
            closed(
                json!({
                    "status": status,
                    "open": {"type": "boolean", "description": "only those not yet ended"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20},
                }),
                &[],
            ),
        ),
        (
            "job.wait",
            None,
            "Wait until a job ends or timeout_s passes (at most 600); returns its row and whether it ended.",
            closed(
                json!({
                    "session": session,
                    "timeout_s": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_SECS, "default": 60},
                }),
                &["session"],
            ),
        ),
        (
            "job.kill",
            None,
            "End a live job's leg (as `lionrt kill`): cancelled, its process group signalled.",
            closed(
                json!({
                    "session": session,
                    "grace_s": {"type": "number", "minimum": 0, "maximum": 60, "default": 5},
                }),
                &["session"],
            ),
        ),
        (
            "job.timeline",
            None,
            "The status history of everything an id names (as `lionrt lifecycle`), with actors.",
            closed(json!({"id": session}), &["id"]),
        ),
        (
            "state.health",
            None,
            "The store's health (as `lionrt state health`).",
            closed(json!({"all": {"type": "boolean"}}), &[]),
        ),
        (
            "state.stats",
            None,
            "Row counts and sizes (as `lionrt state stats`).",
            closed(json!({}), &[]),
        ),
        (
            "monitor",
            None,
            "Everything in flight: open sessions and other open entities (as `lionrt monitor`).",
            closed(json!({}), &[]),
        ),
        (
            "schedule.ls",
            None,
            "The schedules with their next due instant.",
            closed(json!({}), &[]),
        ),
        (
            "schedule.show",
            None,
            "One schedule's definition and state.",
            closed(
                json!({"name": {"type": "string", "minLength": 1, "maxLength": 200}}),
                &["name"],
            ),
        ),
        (
            "schedule.runs",
            None,
            "The fires of one schedule (or all), newest first.",
            closed(
                json!({
                    "name": {"type": "string", "minLength": 1, "maxLength": 200},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50},
                }),
                &[],
            ),
        ),
        (
            "outbox.ls",
            None,
            "Outbox rows, oldest first.",
            closed(
                json!({
                    "status": status,
                    "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50},
                }),
                &[],
            ),
        ),
        (
            "outbox.show",
            None,
            "One outbox row and its status history.",
            closed(
                json!({"id": {"type": "string", "minLength": 1, "maxLength": 200}}),
                &["id"],
            ),
        ),
    ]
}

/// Every verb, compiled once.
pub(crate) fn catalogue() -> &'static [Verb] {
    static VERBS: OnceLock<Vec<Verb>> = OnceLock::new();
    VERBS.get_or_init(|| {
        definitions()
            .into_iter()
            .map(|(name, alias, summary, schema)| {
                let validator = jsonschema::validator_for(&schema)
                    .unwrap_or_else(|e| panic!("the schema of {name} compiles: {e}"));
                Verb {
                    name,
                    alias,
                    summary,
                    schema,
                    validator,
                }
            })
            .collect()
    })
}

/// The verb `name` (or its alias) names.
pub(crate) fn find(name: &str) -> Option<&'static Verb> {
    catalogue()
        .iter()
        .find(|v| v.name == name || v.alias == Some(name))
}

/// The names an op may give, aliases included.
fn names() -> Vec<&'static str> {
    catalogue()
        .iter()
        .flat_map(|v| std::iter::once(v.name).chain(v.alias))
        .collect()
}

/// `help=true`: the catalogue.
pub(crate) fn help_all() -> Value {
    let verbs: Vec<Value> = catalogue()
        .iter()
        .map(|v| json!({"verb": v.name, "alias": v.alias, "summary": v.summary}))
        .collect();
    json!({
        "verbs": verbs,
        "limits": {"ops_per_call": MAX_OPS, "prompt_bytes": MAX_PROMPT_BYTES,
                   "script_bytes": MAX_SCRIPT_BYTES, "wait_s": MAX_WAIT_SECS},
        "usage": "request(ops=[{op: VERB, args: {...}}]); help=\"VERB\" gives one verb's args schema",
    })
}

/// `help="VERB"`: one verb's schema, or `None` for an unknown verb.
pub(crate) fn help_one(name: &str) -> Option<Value> {
    find(name).map(
        |v| json!({"verb": v.name, "alias": v.alias, "summary": v.summary, "schema": v.schema}),
    )
}

/// Why an op was refused before it ran: a message, and the schema it was
/// judged against when there is one.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) message: String,
    pub(crate) schema: Option<Value>,
}

/// The verb an op names and its checked arguments.
pub(crate) fn check(op: &Value) -> Result<(&'static Verb, Map<String, Value>), Refusal> {
    let refuse = |message: String| Refusal {
        message,
        schema: None,
    };
    let Some(op) = op.as_object() else {
        return Err(refuse("an op is an object {op, args}".into()));
    };
    if let Some(key) = op.keys().find(|k| *k != "op" && *k != "args") {
        return Err(refuse(format!(
            "unknown key {key:?} in an op (an op has `op` and `args`)"
        )));
    }
    let Some(name) = op.get("op").and_then(Value::as_str) else {
        return Err(refuse("an op needs `op`, a verb name".into()));
    };
    let Some(verb) = find(name) else {
        return Err(refuse(format!(
            "unknown verb {name:?} (verbs: {})",
            names().join(", ")
        )));
    };
    let args = match op.get("args") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => {
            return Err(Refusal {
                message: format!("the args of {} must be an object", verb.name),
                schema: Some(verb.schema.clone()),
            });
        }
    };
    let known = verb.schema["properties"].as_object();
    if let Some(key) = args
        .keys()
        .find(|k| known.is_none_or(|p| !p.contains_key(*k)))
    {
        let names: Vec<&str> = known
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        return Err(Refusal {
            message: format!(
                "unknown argument {key:?} for {} (it takes: {})",
                verb.name,
                if names.is_empty() {
                    "nothing".to_owned()
                } else {
                    names.join(", ")
                }
            ),
            schema: Some(verb.schema.clone()),
        });
    }
    let instance = Value::Object(args.clone());
    let errors: Vec<String> = verb
        .validator
        .iter_errors(&instance)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if !errors.is_empty() {
        return Err(Refusal {
            message: format!("invalid args for {}: {}", verb.name, errors.join("; ")),
            schema: Some(verb.schema.clone()),
        });
    }
    Ok((verb, args))
}

/// The name of the server's one tool.
pub(crate) const TOOL: &str = "request";

/// The tool's description (kept short: it is in every caller's context).
pub(crate) const DESCRIPTION: &str = "lionrt agent jobs: submit, status, output, list, wait, kill; \
     read state, schedules and the outbox. Up to 8 ops a call, answered in order. \
     help=true lists the verbs; help=\"VERB\" gives one verb's args schema.";

/// The tool's input schema.
pub(crate) fn tool_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "ops": {
                "type": "array",
                "maxItems": MAX_OPS,
                "items": {
                    "type": "object",
                    "properties": {
                        "op": {"type": "string", "enum": names()},
                        "args": {"type": "object"},
                    },
                    "required": ["op"],
                    "additionalProperties": false,
                },
            },
            "help": {"type": ["boolean", "string"], "maxLength": 40},
        },
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{catalogue, check};

    #[test]
    fn every_verb_schema_is_closed() {
        for v in catalogue() {
            assert_eq!(v.schema["additionalProperties"], false, "{}", v.name);
            assert_eq!(v.schema["type"], "object", "{}", v.name);
        }
    }

    #[test]
    fn an_unknown_argument_is_refused_by_name_with_the_schema() {
        let e = check(&json!({"op": "job.status", "args": {"session": "a", "sessoin": "b"}}))
            .expect_err("unknown key");
        assert!(e.message.contains("\"sessoin\""), "{}", e.message);
        assert_eq!(e.schema.expect("schema")["required"], json!(["session"]));
        let e = check(&json!({"op": "job.wait", "args": {"session": "a", "timeout_s": 601}}))
            .expect_err("over the bound");
        assert!(e.message.contains("timeout_s"), "{}", e.message);
        assert!(e.schema.is_some());
    }

    #[test]
    fn privileged_commands_have_no_verb() {
        for name in [
            "plugin.trust",
            "plugin.enable",
            "state.migrate",
            "state.init",
            "state.import",
            "state.transition",
            "settings.set",
            "schedule.create",
            "outbox.enqueue",
            "hooks.trust",
        ] {
            let e = check(&json!({"op": name, "args": {}})).expect_err(name);
            assert!(
                e.message.starts_with("unknown verb"),
                "{name}: {}",
                e.message
            );
        }
        assert!(check(&json!({"op": "agent.submit"})).is_ok());
    }
}
