//! Fail-closed paths: malformed shapes, per-pass budgets, walker exhaustion,
//! annotation siblings beside `$ref`, and the synthetic wrapper's equality.

use mcp_admission::{
    Reason, explain_tool_admission, is_synthetic_mcp_wrapper_schema, validate_mcp_tool_admission,
};
use serde_json::{Value, json};

use crate::{check, report};

const CMD: Option<&str> = Some("unbounded-command-input");
const IDENTITY: Option<&str> = Some("executor-identity-with-insufficient-schema");
const MALFORMED: Option<&str> = Some("malformed-schema");

// contract: ADM-070
#[test]
fn malformed_shapes_deny_where_the_original_raises() {
    // Shapes on which lionagi 0.36.0 raises (its host refuses the tool).
    let raising = [
        // A non-list prefixItems under an enum-pinned array node.
        json!({"type": "object", "properties": {"x": {"type": "array", "enum": [["a"]], "prefixItems": null}}, "additionalProperties": false}),
        json!({"type": "object", "properties": {"x": {"type": "array", "enum": [["a"]], "prefixItems": 1}}, "additionalProperties": false}),
        // An unhashable member of a type list.
        json!({"type": ["object", ["x"]], "properties": {"op": {"enum": ["a"]}}, "additionalProperties": false}),
        json!({"type": "object", "properties": {"x": {"type": ["object", {}]}}, "additionalProperties": false}),
    ];
    for schema in raising {
        check("notebook", schema.clone(), None, MALFORMED);
        // An earlier reason still wins for an executor name.
        check("bash", schema, None, IDENTITY);
    }
    // Every schema-bearing position of the wrong JSON type.
    for schema in [
        json!({"type": "object", "properties": 5}),
        json!({"type": "object", "properties": {"a": 7}}),
        json!({"type": "object", "anyOf": {"a": {}}}),
        json!({"type": "object", "additionalProperties": "no"}),
        json!({"type": "object", "patternProperties": []}),
        json!({"type": "object", "$defs": {"A": 1}}),
        json!({"type": "object", "definitions": []}),
        json!({"type": "object", "properties": {"a": {"$ref": 3}}}),
        json!({"type": "object", "properties": {"a": {"items": "x"}}}),
        json!({"type": "object", "properties": {"a": {"not": null}}}),
    ] {
        let r = report("notebook", &schema, None);
        assert_eq!(r.reason, Some(Reason::MalformedSchema), "{schema}: {r:#?}");
        assert!(!r.malformed.is_empty());
        assert!(r.detail().is_some_and(|d| d.contains("malformed")), "{r:?}");
    }
    // Where the original ignores a value, so does the gate.
    for schema in [
        json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": 5}),
        json!({"type": "object", "properties": {"x": {"enum": 5}}}),
        json!({"type": "object", "properties": {"x": {"type": ["integer", 1]}}}),
        json!({"type": "object", "title": ["a", {"b": 1}]}),
    ] {
        check("notebook", schema, None, None);
    }
}

/// `oneOf` of `n` objects, `width` properties each, with a free command
/// field in the last branch.
fn one_of_with_command_last(n: usize, width: usize) -> Value {
    let mut branches: Vec<Value> = (0..n - 1)
        .map(|i| {
            let props: serde_json::Map<String, Value> = (0..width)
                .map(|w| (format!("k{i}_{w}"), json!({"type": "string"})))
                .collect();
            json!({"type": "object", "properties": props})
        })
        .collect();
    branches.push(json!({"type": "object", "properties": {"command": {"type": "string"}}}));
    json!({"type": "object", "oneOf": branches})
}

// contract: ADM-071
#[test]
fn the_walker_reaches_as_far_as_the_original() {
    // lionagi 0.36.0 denies these (its walker reaches the last branch).
    for (n, width) in [(1_250, 1), (1_600, 1), (1_250, 2), (1_250, 0)] {
        let schema = one_of_with_command_last(n, width);
        let r = report("notebook", &schema, None);
        assert_eq!(r.reason, Some(Reason::UnboundedCommandInput), "{n}x{width}");
        assert!(!r.walker_exhausted, "{n}x{width}: {}", r.nodes_visited);
        assert!(r.free_form_keys.iter().any(|k| k.key == "command"));
    }
}

// contract: ADM-071
#[test]
fn an_exhausted_walker_fails_closed() {
    // Far past any budget: the unseen rest may hold a command key.
    let schema = one_of_with_command_last(8_000, 1);
    let r = report("notebook", &schema, None);
    assert!(r.walker_exhausted);
    assert_eq!(r.reason, Some(Reason::UnboundedCommandInput));
    assert!(r.nodes_visited <= 5_000);
    assert!(
        r.detail().is_some_and(|d| d.contains("node budget")),
        "{r:?}"
    );
    // Even when nothing there is a command key: the gate cannot know.
    let wide = json!({"anyOf": (0..6_000).map(|_| json!({})).collect::<Vec<_>>()});
    check("notebook", wide, None, CMD);
    // A schema within the budget is judged on what it holds.
    let fine = json!({"anyOf": (0..1_000).map(|_| json!({})).collect::<Vec<_>>()});
    check("notebook", fine, None, None);
}

// contract: ADM-028
#[test]
fn each_pass_has_its_own_budget() {
    // 3,000 pinned properties: about 3,000 units in the walker and 3,000 in
    // the coverage proof. One shared budget of 5,000 would deny it.
    let props: serde_json::Map<String, Value> = (0..3_000)
        .map(|i| (format!("op{i}"), json!({"enum": ["a"]})))
        .collect();
    let schema = json!({"type": "object", "properties": props, "additionalProperties": false});
    let r = explain_tool_admission("bash", Some(&schema), None);
    assert_eq!(r.reason, None, "{:?}", r.detail());
    assert!(r.nodes_visited <= 5_000);
    assert!(r.proofs_evaluated);
}

// contract: ADM-035
#[test]
fn annotation_siblings_of_a_root_ref_constrain_nothing() {
    // zod-to-json-schema output: `$schema` + `$ref` + `definitions`.
    let args = json!({"type": "object", "properties": {"op": {"enum": ["status"]}}, "additionalProperties": false});
    let zod = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$ref": "#/definitions/Args",
        "definitions": {"Args": args},
    });
    check("bash", zod.clone(), None, None);
    let mut with_id = zod.clone();
    with_id["$id"] = json!("https://example.test/args.json");
    with_id["format"] = json!("x");
    check("bash", with_id, None, None);
    // A constraining sibling is still its own node.
    let mut open = zod;
    open["type"] = json!("object");
    check("bash", open, None, IDENTITY);
}

// contract: ADM-035
#[test]
fn annotation_siblings_of_a_nested_ref() {
    let closed = json!({"type": "object", "properties": {"op": {"enum": ["a"]}}, "additionalProperties": false});
    let schema = json!({
        "type": "object",
        "properties": {"o": {"$ref": "#/$defs/C", "$comment": "c", "deprecated": true}},
        "additionalProperties": false,
        "$defs": {"C": closed},
    });
    check("exec", schema, None, None);
}

// contract: ADM-086
#[test]
fn synthetic_wrapper_equality_ignores_member_order() {
    // Python dict equality: members in any order.
    let reordered: Value = serde_json::from_str(
        r#"{"required": ["kwargs"], "properties": {"kwargs": {"description": null, "type": "string"}}, "type": "object"}"#,
    )
    .expect("json");
    assert!(is_synthetic_mcp_wrapper_schema(
        "bash",
        "bash",
        Some(&reordered),
        Some("MCP tool: bash")
    ));
    assert!(
        validate_mcp_tool_admission(
            "bash",
            Some("bash"),
            Some(&reordered),
            Some("MCP tool: bash")
        )
        .is_ok()
    );
    // Any other member is not the wrapper.
    let mut extra = reordered;
    extra["additionalProperties"] = json!(true);
    assert!(!is_synthetic_mcp_wrapper_schema(
        "bash",
        "bash",
        Some(&extra),
        Some("MCP tool: bash")
    ));
}

/// A closed root object with the given properties.
fn closed(props: Value) -> Value {
    json!({"type": "object", "properties": props, "additionalProperties": false})
}

// contract: ADM-001
#[test]
fn shapes_the_differential_test_found_the_original_refusing() {
    const DESCRIPTION: Option<&str> = Some("executor-description-with-broad-input");
    let exec = Some("Execute terminal commands.");
    let pinned = json!({"type": "string", "enum": ["a"]});
    // `not` never bounds a value; an incomplete conditional leaves one path open.
    check(
        "notebook",
        json!({"properties": {"cmd": {"not": {"not": pinned}}}}),
        None,
        CMD,
    );
    check(
        "notebook",
        json!({"properties": {"cmd": {"not": pinned}}}),
        None,
        CMD,
    );
    check(
        "notebook",
        json!({"properties": {"cmd": {"if": pinned, "then": pinned}}}),
        None,
        CMD,
    );
    // A `$ref` to an ancestor loops; a branch with only object keywords admits any string.
    check(
        "notebook",
        json!({"type": "object", "properties": {"cmd": {"type": "array", "items": {"$ref": "#"}}}}),
        None,
        CMD,
    );
    check(
        "notebook",
        json!({"properties": {"cmd": {"$ref": "#"}}}),
        None,
        CMD,
    );
    check(
        "notebook",
        json!({"properties": {"cmd": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"properties": {}}}}),
        None,
        CMD,
    );
    // An untyped additionalProperties schema is a free-form map.
    for ap in [
        json!({}),
        json!({"a": 1}),
        json!({"properties": {}}),
        json!({"description": "d"}),
    ] {
        check(
            "notebook",
            json!({"type": "object", "additionalProperties": ap}),
            exec,
            DESCRIPTION,
        );
    }
    check(
        "notebook",
        json!({"type": "object", "additionalProperties": {"type": "integer"}}),
        exec,
        None,
    );
    // Object or composition keywords make a value object-shaped whatever its type.
    for kw in ["properties", "$defs", "definitions"] {
        check(
            "bash",
            closed(json!({"x": {"type": "string", "enum": ["a"], kw: {}}})),
            None,
            IDENTITY,
        );
    }
    check(
        "bash",
        closed(json!({"x": {"type": "integer", "allOf": [{"enum": [1]}]}})),
        None,
        IDENTITY,
    );
    // allOf with no bounded branch, nested boolean schemas, empty compositions.
    let mut root = closed(json!({"op": {"enum": ["a"]}}));
    for (kw, v) in [
        ("allOf", json!([])),
        ("allOf", json!([true])),
        ("$defs", json!({"D": true})),
        ("$defs", json!({"D": {"anyOf": []}})),
        ("items", json!(false)),
    ] {
        root[kw] = v;
        check("bash", root.clone(), None, IDENTITY);
        root.as_object_mut().map(|m| m.remove(kw));
    }
    check("bash", closed(json!({"op": false})), None, IDENTITY);
    // A composition branch of a bounded value is still walked.
    check(
        "worker",
        closed(json!({"args": {"type": "array", "items": {"enum": ["a"]}, "allOf": [{}]}})),
        exec,
        DESCRIPTION,
    );
    // An empty composition list constrains nothing; a `$ref` cycle fails coverage.
    check(
        "notebook",
        json!({"properties": {"cmd": {"type": "array", "items": {"anyOf": []}}}}),
        None,
        CMD,
    );
    check(
        "notebook",
        json!({"properties": {"cmd": {"oneOf": []}}}),
        None,
        CMD,
    );
    check(
        "bash",
        json!({"type": "object", "additionalProperties": false, "$defs": {"A": {"$ref": "#/$defs/A"}}}),
        None,
        IDENTITY,
    );
    // And the bounded-array exception holds for a pinned value (the original admits it).
    check(
        "bash",
        closed(json!({"x": {"type": "string", "enum": ["a"], "prefixItems": [{"enum": ["a"]}]}})),
        None,
        None,
    );
}
