//! The crate docs' deliberate differences from the original (all toward denying)
//! and its readings of the spec's ambiguities, one check per documented case.

use serde_json::json;

use crate::check;

const CMD: Option<&str> = Some("unbounded-command-input");
const PROCESS: Option<&str> = Some("unbounded-process-input");
const DESCRIPTION: Option<&str> = Some("executor-description-with-broad-input");
const IDENTITY: Option<&str> = Some("executor-identity-with-insufficient-schema");

#[test]
fn documented_differences() {
    // PE027: a free-form command field with an inert object keyword beside it.
    check(
        "notebook",
        json!({"type": "object", "properties": {"cmd": {"type": "string", "properties": {"x": {"type": "integer"}}}}}),
        None,
        CMD,
    );
    // Unreferenced $defs constrain nothing and are not walked (as in the
    // original); referenced ones are.
    check(
        "notebook",
        json!({"type": "object", "$defs": {"X": {"properties": {"cmd": {"type": "string"}}}}}),
        None,
        None,
    );
    check(
        "notebook",
        json!({"type": "object", "properties": {"o": {"$ref": "#/$defs/X"}}, "$defs": {"X": {"properties": {"cmd": {"type": "string"}}}}}),
        None,
        CMD,
    );
    // A coverage failure counts as unresolvable for the description rule.
    check(
        "worker",
        json!({"type": "object", "properties": {"op": {"enum": ["a"]}}, "additionalProperties": false, "not": {}}),
        Some("Runs shell commands"),
        DESCRIPTION,
    );
    // Falsy non-null schemas are malformed, not "no schema".
    for schema in [json!([]), json!(false), json!(0), json!("")] {
        check("bash", schema, None, IDENTITY);
    }
    // A root `true` is an unresolvable channel.
    check(
        "worker",
        json!(true),
        Some("Execute terminal commands"),
        DESCRIPTION,
    );
    // An untyped item with no branch admits any string.
    check(
        "runner",
        json!({"type": "object", "properties": {"program": {"type": "string"}, "argv": {"type": "array", "items": {"description": "an argument"}}}}),
        None,
        PROCESS,
    );
    // Unresolvable references make a key free-form.
    check(
        "notebook",
        json!({"type": "object", "properties": {"cmd": {"$ref": "https://x/y"}}}),
        None,
        CMD,
    );
    // Exec-tainted auxiliary keys count against strong names and descriptions.
    check(
        "exec",
        json!({"type": "object", "properties": {"shell": {"type": "string"}}, "additionalProperties": false}),
        None,
        IDENTITY,
    );
    check(
        "worker",
        json!({"type": "object", "properties": {"shell": {"type": "string"}}}),
        Some("Runs shell commands"),
        DESCRIPTION,
    );
    // Required but undeclared keys are judged with additionalProperties' schema.
    check(
        "notebook",
        json!({"type": "object", "required": ["command"]}),
        None,
        CMD,
    );
    check(
        "notebook",
        json!({"type": "object", "required": ["cmd"], "additionalProperties": {"type": "string"}}),
        None,
        CMD,
    );
    check(
        "notebook",
        json!({"type": "object", "required": ["cmd"], "additionalProperties": {"type": "integer"}}),
        None,
        None,
    );
    check(
        "notebook",
        json!({"type": "object", "required": ["cmd"], "additionalProperties": false}),
        None,
        None,
    );
    // Names declared anywhere (e.g. required-only oneOf branches) add nothing.
    check(
        "worker",
        json!({"type": "object", "additionalProperties": false,
               "properties": {"a": {"enum": [1]}, "b": {"enum": [2]}},
               "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
        Some("Runs shell commands"),
        None,
    );
    // A malformed type may admit anything.
    check(
        "notebook",
        json!({"type": "object", "properties": {"cmd": {"type": "String"}}}),
        None,
        CMD,
    );
    check(
        "exec",
        json!({"type": ["object", "Null"], "properties": {"op": {"enum": ["a"]}}, "additionalProperties": false}),
        None,
        IDENTITY,
    );
    // Untyped values under exec-tainted keys are free-form.
    check(
        "exec",
        json!({"type": "object", "properties": {"command_path": {"description": "where"}}, "additionalProperties": false}),
        None,
        IDENTITY,
    );
}

#[test]
fn documented_readings_of_ambiguities() {
    // 13: the type gate runs before the pin.
    check(
        "exec",
        json!({"type": "string", "const": "x"}),
        None,
        IDENTITY,
    );
    check("exec", json!({"const": {"op": "ping"}}), None, None);
    // 14: structural $ref siblings are their own node.
    check(
        "exec",
        json!({"$ref": "#/$defs/C", "type": "object",
               "$defs": {"C": {"type": "object", "additionalProperties": false}}}),
        None,
        IDENTITY,
    );
    // 19: unevaluatedItems must be absent or false.
    check(
        "exec",
        json!({"type": "object", "additionalProperties": false, "properties": {
            "flags": {"type": "array", "items": {"enum": ["a"]}, "unevaluatedItems": {}}}}),
        None,
        IDENTITY,
    );
}
