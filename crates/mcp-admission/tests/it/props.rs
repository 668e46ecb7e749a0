//! Property tests: no panic, determinism, bounded work, and deny-preserving rewrites.

use mcp_admission::{
    Limits, explain_tool_admission, explain_tool_admission_with, validate_tool_admission,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const KEYS: &[&str] = &[
    "cmd",
    "command",
    "commandLine",
    "CMD",
    "program",
    "argv",
    "args",
    "script",
    "text",
    "code",
    "shell",
    "interpreter",
    "cwd",
    "service_id",
    "name",
    "query",
    "mode",
    "target_path",
    "script_path",
    "x",
    "title",
];
const NAMES: &[&str] = &[
    "bash",
    "exec",
    "notebook",
    "search",
    "run_command",
    "worker",
    "Run_Process",
];
const DESCRIPTIONS: &[Option<&str>] = &[
    None,
    Some("Execute terminal commands."),
    Some("Search things."),
    Some("Runs shell commands for you"),
    Some("Open a document."),
];
const TAINTED: &[&str] = &[
    "command_path",
    "script_id",
    "shell",
    "program_path",
    "argv",
    "cmd",
    "run_args",
];
const WORDS: &[&str] = &[
    "type",
    "properties",
    "items",
    "$ref",
    "anyOf",
    "oneOf",
    "allOf",
    "if",
    "then",
    "not",
    "additionalProperties",
    "prefixItems",
    "enum",
    "const",
    "$defs",
    "x-a",
    "$dynamicRef",
    "patternProperties",
    "cmd",
    "#",
    "#/$defs/a",
    "string",
    "object",
    "array",
    "a",
    "required",
    "definitions",
    "#/properties/a",
    "#/anyOf/0",
    "#/items",
    "$recursiveRef",
    "unevaluatedItems",
    "x-meta",
    "null",
    "integer",
    "^c.*$",
    "(a+)+$",
];

/// Any JSON value, biased towards schema vocabulary.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop::sample::select(WORDS).prop_map(Value::from),
        ".{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 96, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(WORDS), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

/// A leaf property schema, free-form or bounded.
fn leaf() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!({"type": "string"}),
        json!({"type": "string", "enum": ["a", "b"]}),
        json!({"type": "integer"}),
        json!({"type": "boolean"}),
        json!({"type": "array", "items": {"type": "string"}}),
        json!({"type": "array", "items": {"enum": ["-q"]}}),
        json!({"type": "array"}),
        json!({"type": "string", "maxLength": 5}),
        json!({"description": "untyped"}),
        json!({}),
        json!(true),
    ])
}

/// A structured object schema (depth <= 3) with keys drawn from the vocabulary.
fn object_schema() -> impl Strategy<Value = Value> {
    let props = |value: BoxedStrategy<Value>| {
        (
            prop::collection::btree_map(prop::sample::select(KEYS), value, 1..5),
            any::<bool>(),
        )
            .prop_map(|(props, closed)| {
                let props: Map<String, Value> =
                    props.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
                let mut schema = json!({"type": "object", "properties": props});
                if closed {
                    schema["additionalProperties"] = json!(false);
                }
                schema
            })
    };
    let level1 = props(leaf().boxed()).boxed();
    let level2 = props(prop_oneof![3 => leaf(), 1 => level1].boxed()).boxed();
    props(prop_oneof![3 => leaf(), 1 => level2].boxed())
}

fn tool() -> impl Strategy<Value = (&'static str, Option<&'static str>, Value)> {
    (
        prop::sample::select(NAMES),
        prop::sample::select(DESCRIPTIONS),
        object_schema(),
    )
}

fn denied(name: &str, schema: &Value, description: Option<&str>) -> bool {
    explain_tool_admission(name, Some(schema), description)
        .reason
        .is_some()
}

/// JSON text of `v` with every object's members in reverse order.
fn reversed_text(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let members: Vec<String> = m
                .iter()
                .rev()
                .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), reversed_text(v)))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(reversed_text).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

/// Patterns over key words, written without classes, escapes or spaces.
const PATTERNS: &[&str] = &[
    "^cmd$",
    "command",
    "^(args|argv)$",
    "^x-",
    "scr.pt",
    "^shell_command$",
    "prog",
    "^code",
    "text$",
    "^(sh|bash)ell$",
    "^interp",
    "^mode$",
    "^q",
    "^commandLine$",
    "^arg",
    "^CMD$",
];

/// Rewrites a pattern into one Python reads as equivalent (for searching).
fn rewrite_pattern(p: &str, how: usize) -> String {
    match how {
        0 => format!("(?:{p})"),
        1 => format!("(?P<g>{p})"),
        2 => p.replace('^', r"\A").replace('$', r"\Z"),
        3 => format!("(?#note){p}"),
        4 => format!(
            "(?x){}",
            p.chars().map(String::from).collect::<Vec<_>>().join(" ")
        ),
        5 => p.replacen('c', r"\x63", 1),
        6 => p.replacen('m', "[m]", 1),
        7 => format!("{p}|{p}"),
        8 => format!("(?>{p})"),
        9 => format!("(?=[\\s\\S]){p}"),
        10 => p.replacen('o', r"\157", 1),
        _ => format!("(?s:{p}){{1}}"),
    }
}

/// Wraps the value of top-level property `key` in one of the indirections.
fn wrap(schema: &Value, key: &str, how: usize) -> Value {
    let mut out = schema.clone();
    let original = out["properties"][key].clone();
    let wrapped = match how {
        0 => json!({"anyOf": [original]}),
        1 => json!({"oneOf": [{"type": "null"}, original]}),
        2 => {
            out["$defs"] = json!({"Wrapped": original});
            json!({"$ref": "#/$defs/Wrapped"})
        }
        3 => json!({"if": {"type": "object"}, "then": original}),
        4 => json!({"type": "array", "items": original}),
        _ => json!({"type": "array", "items": {"type": "array", "items": original}}),
    };
    out["properties"][key] = wrapped;
    out
}

proptest! {
    #![proptest_config(ProptestConfig {  max_global_rejects: 100_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_any_json(schema in any_json(), name in ".{0,6}", description in proptest::option::of(".{0,20}")) {
        let _ = explain_tool_admission(&name, Some(&schema), description.as_deref());
        for name in NAMES {
            let _ = explain_tool_admission(name, Some(&schema), Some("Execute terminal commands"));
        }
    }

    #[test]
    fn verdicts_are_deterministic(schema in any_json(), (name, description, structured) in tool()) {
        for schema in [&schema, &structured] {
            let a = explain_tool_admission(name, Some(schema), description);
            let b = explain_tool_admission(name, Some(&schema.clone()), description);
            prop_assert_eq!(a, b);
        }
    }

    /// `validate_tool_admission` builds no report (no key, path or cause
    /// strings); its verdict must be the explained one, whatever the input.
    #[test]
    fn the_plain_verdict_is_the_explained_one(schema in any_json(), (name, description, structured) in tool(), free_name in ".{0,6}", free_description in proptest::option::of(".{0,30}")) {
        for schema in [&schema, &structured] {
            for (name, description) in [(name, description), (free_name.as_str(), free_description.as_deref())] {
                let explained = explain_tool_admission(name, Some(schema), description).reason;
                let plain = validate_tool_admission(name, Some(schema), description).err().map(|e| e.reason());
                prop_assert_eq!(plain, explained);
            }
        }
    }

    #[test]
    fn work_stays_within_the_budget(schema in any_json(), max_nodes in 1usize..300, max_depth in 0usize..14) {
        let limits = Limits { max_depth, max_nodes };
        for name in ["exec", "worker"] {
            let r = explain_tool_admission_with(limits, name, Some(&schema), Some("Execute terminal commands"));
            prop_assert!(r.nodes_visited <= max_nodes, "{} > {}", r.nodes_visited, max_nodes);
        }
        let r = explain_tool_admission(NAMES[0], Some(&schema), None);
        prop_assert!(r.nodes_visited <= Limits::default().max_nodes);
    }

    #[test]
    fn wrapping_never_turns_deny_into_allow((name, description, schema) in tool(), how in 0usize..6, pick in any::<prop::sample::Index>()) {
        prop_assume!(denied(name, &schema, description));
        let keys: Vec<String> = schema["properties"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        let key = &keys[pick.index(keys.len())];
        let wrapped = wrap(&schema, key, how);
        prop_assert!(denied(name, &wrapped, description), "wrapped {}: {}", key, wrapped);
    }

    #[test]
    fn rewriting_a_pattern_equivalently_never_turns_deny_into_allow(
        pattern in prop::sample::select(PATTERNS),
        letters in prop::sample::select(vec![None, Some(2usize), Some(4), Some(5), Some(6), Some(10)]),
        wrapping in prop::sample::select(vec![0usize, 1, 3, 7, 8, 9, 11]),
        name in prop::sample::select(NAMES),
        description in prop::sample::select(DESCRIPTIONS),
        value in leaf(),
    ) {
        let schema = |p: &str| json!({"type": "object", "patternProperties": {p: value.clone()}});
        prop_assume!(denied(name, &schema(pattern), description));
        // One rewrite of the letters, then one around the whole (a
        // rewrite Python rejects would only widen the reading).
        let mut rewritten = pattern.to_owned();
        if let Some(how) = letters {
            rewritten = rewrite_pattern(&rewritten, how);
        }
        rewritten = rewrite_pattern(&rewritten, wrapping);
        prop_assert!(denied(name, &schema(&rewritten), description), "{} -> {}", pattern, rewritten);
    }

    #[test]
    fn member_reordering_never_changes_the_verdict((name, description, schema) in tool(), noise in any_json()) {
        for schema in [&schema, &noise] {
            let reordered: Value = serde_json::from_str(&reversed_text(schema)).expect("json");
            let a = explain_tool_admission(name, Some(schema), description);
            let b = explain_tool_admission(name, Some(&reordered), description);
            prop_assert_eq!(a.reason, b.reason, "{}", reversed_text(schema));
        }
    }

    #[test]
    fn schema_shaped_unknown_keywords_never_turn_deny_into_allow((name, description, schema) in tool(), at_property in any::<bool>(), pick in any::<prop::sample::Index>()) {
        prop_assume!(denied(name, &schema, description));
        let mut changed = schema.clone();
        let extra = json!({"type": "string", "properties": {"cmd": {"type": "string"}}});
        if at_property {
            let keys: Vec<String> = schema["properties"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
            let key = &keys[pick.index(keys.len())];
            if let Some(m) = changed["properties"][key.as_str()].as_object_mut() {
                m.insert("fancyKeyword".to_owned(), extra);
            }
        } else if let Some(m) = changed.as_object_mut() {
            m.insert("fancyKeyword".to_owned(), extra);
        }
        prop_assert!(denied(name, &changed, description), "{}", changed);
    }

    #[test]
    fn renaming_to_an_exec_tainted_key_never_turns_deny_into_allow((name, description, schema) in tool(), pick in any::<prop::sample::Index>(), new_key in prop::sample::select(TAINTED)) {
        let before = explain_tool_admission(name, Some(&schema), description);
        prop_assume!(before.reason.is_some());
        // Top-level free-form keys that are not the categorised key a
        // content rule (command/process/payload) may hinge on, unless the
        // name or description already signals an executor.
        let signalled = before.strong_executor_name || before.description_signals_execution;
        let candidates: Vec<&str> = before
            .free_form_keys
            .iter()
            .filter(|k| k.path.matches('/').count() == 2)
            .filter(|k| signalled || !(k.categories.command || k.categories.program || k.categories.argument || k.categories.payload || k.categories.selector))
            .map(|k| k.key.as_str())
            .collect();
        prop_assume!(!candidates.is_empty());
        let old_key = candidates[pick.index(candidates.len())];
        let mut renamed = schema.clone();
        let props = renamed["properties"].as_object_mut().expect("properties");
        prop_assume!(!props.contains_key(new_key));
        let value = props.remove(old_key).expect("key");
        props.insert(new_key.to_owned(), value);
        prop_assert!(denied(name, &renamed, description), "{} -> {}: {}", old_key, new_key, renamed);
    }
}
