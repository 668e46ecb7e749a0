//! One test (or a few) per ADM contract, each citing the IDs it checks.

use mcp_admission::{
    FreeFormCause, InsufficiencyCause, KeywordClass, Limits, Proof, Reason, UnresolvedCause,
    classify_keyword, could_carry_subschema, explain_tool_admission_with,
    has_structural_ref_siblings, is_exec_tainted_key, is_identifier_like_key,
    is_inert_annotation_value, is_synthetic_mcp_wrapper_schema, lists,
    object_boundedness_insufficient, property_value_may_be_object_shaped, schema_is_insufficient,
    structural_coverage_insufficient, synthetic_wrapper_schema, validate_mcp_tool_admission,
    validate_tool_admission,
};
use serde_json::{Value, json};

use crate::{check, report, verdict};

const CMD: Option<&str> = Some("unbounded-command-input");
const PROCESS: Option<&str> = Some("unbounded-process-input");
const SCRIPT: Option<&str> = Some("unbounded-script-payload");
const DESCRIPTION: Option<&str> = Some("executor-description-with-broad-input");
const IDENTITY: Option<&str> = Some("executor-identity-with-insufficient-schema");
const EXEC_DESCRIPTION: Option<&str> = Some("Runs shell commands on the host.");

fn lim() -> Limits {
    Limits::default()
}

/// A closed object with one bounded operation plus `extra` keywords at the root.
fn closed_with(extra: Value) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": {"op": {"type": "string", "enum": ["ping"]}},
        "additionalProperties": false
    });
    if let (Value::Object(m), Value::Object(e)) = (&mut schema, extra) {
        m.extend(e);
    }
    schema
}

fn closed_props(props: Value) -> Value {
    json!({"type": "object", "properties": props, "additionalProperties": false})
}

fn bounded_cause(schema: &Value) -> Option<InsufficiencyCause> {
    object_boundedness_insufficient(schema, lim()).map(|i| i.cause)
}

fn unresolved_causes(name: &str, schema: &Value) -> Vec<UnresolvedCause> {
    report(name, schema, None)
        .unresolved
        .into_iter()
        .map(|u| u.cause)
        .collect()
}

// ---------------------------------------------------------------- scope

// contract: ADM-001
#[test]
fn bash_in_disguise_is_refused() {
    // An innocent name, one enum field, and a command string behind oneOf.
    check(
        "notebook",
        json!({"type": "object", "properties": {
            "mode": {"type": "string", "enum": ["fast"]},
            "payload": {"type": "object", "properties": {"cmd": {"oneOf": [{"type": "null"}, {"type": "string"}]}}}
        }}),
        Some("Evaluate cells."),
        CMD,
    );
    check(
        "bash",
        json!({"type": "object", "properties": {"cmd": {"type": "string"}}}),
        None,
        CMD,
    );
}

// ---------------------------------------------------------------- identifier/key classification

// contract: ADM-004
#[test]
fn identifier_like_keys() {
    for key in [
        "service_id",
        "resource_path",
        "request_id",
        "id",
        "user_ids",
        "file_paths",
        "doc_uri",
        "page_url",
        "order_uuid",
        "metric_slug",
        "a1_b2_id",
    ] {
        assert!(is_identifier_like_key(key), "{key}");
    }
    for key in [
        "command",
        "query",
        "text",
        "identity",
        "paths_list",
        "_id",
        "idx",
        "servíce_id",
    ] {
        assert!(!is_identifier_like_key(key), "{key}");
    }
}

// contract: ADM-005
// contract: ADM-025
#[test]
fn strong_name_with_only_identifier_free_form_is_admitted() {
    check(
        "exec",
        closed_props(json!({"service_id": {"type": "string"}})),
        None,
        None,
    );
    check(
        "exec",
        closed_props(json!({"op": {"enum": ["restart"]}, "service_id": {"type": "string"}})),
        None,
        None,
    );
    // Beside a fixed operation on an ordinary tool it also stays admitted.
    check(
        "restart_service",
        json!({"type": "object", "properties": {"op": {"enum": ["restart"]}, "service_id": {"type": "string"}}}),
        None,
        None,
    );
}

// contract: ADM-006
// contract: ADM-008
#[test]
fn exec_taint_is_per_whole_token() {
    for key in [
        "command",
        "cmd",
        "shell",
        "script",
        "program",
        "binary",
        "executable",
        "argv",
        "args",
        "executable_path",
        "script_path",
        "command_path",
        "my_shell_id",
        "args_list",
    ] {
        assert!(is_exec_tainted_key(key), "{key}");
    }
    for key in [
        "transcript_id",
        "subscription_id",
        "commands",
        "shellfish",
        "programme",
        "arg",
        "scripted",
    ] {
        assert!(!is_exec_tainted_key(key), "{key}");
    }
}

// contract: ADM-007
#[test]
fn tainted_identifier_keys_do_not_get_the_exemption() {
    for key in [
        "executable_path",
        "script_path",
        "command_path",
        "program_path",
    ] {
        check(
            "exec",
            closed_props(json!({key: {"type": "string"}})),
            None,
            IDENTITY,
        );
    }
    check(
        "exec",
        closed_props(json!({"transcript_id": {"type": "string"}})),
        None,
        None,
    );
}

// contract: ADM-009
#[test]
fn unbounded_non_object_types_are_exactly_four() {
    assert_eq!(
        lists::UNBOUNDED_NON_OBJECT_TYPES,
        ["string", "number", "integer", "array"]
    );
    let with = |t: &str| closed_with(json!({"type": ["object", t]}));
    for t in ["string", "number", "integer", "array"] {
        assert_eq!(
            bounded_cause(&with(t)),
            Some(InsufficiencyCause::FreeFormTypeAlternative),
            "{t}"
        );
    }
    for t in ["boolean", "null"] {
        assert_eq!(bounded_cause(&with(t)), None, "{t}");
    }
}

// contract: ADM-010
// contract: ADM-031
#[test]
fn type_union_weak_link() {
    let schema = closed_with(json!({"type": ["object", "string"]}));
    assert_eq!(
        bounded_cause(&schema),
        Some(InsufficiencyCause::FreeFormTypeAlternative)
    );
    check("exec", schema, None, IDENTITY);
    check(
        "exec",
        closed_with(json!({"type": ["array", "object", "null"]})),
        None,
        IDENTITY,
    );
}

// contract: ADM-011
#[test]
fn pinned_type_union_is_not_insufficient_on_that_ground() {
    let schema = json!({"type": ["object", "string"], "enum": [{"op": "a"}, "b"]});
    assert_eq!(bounded_cause(&schema), None);
    check("exec", schema, None, None);
    let schema = json!({"type": ["object", "integer"], "const": 3});
    assert_eq!(bounded_cause(&schema), None);
}

// contract: ADM-012
// contract: ADM-035
#[test]
fn annotation_only_ref_siblings() {
    assert_eq!(
        lists::ANNOTATION_REF_SIBLINGS,
        [
            "description",
            "title",
            "$comment",
            "examples",
            "default",
            "$defs",
            "definitions"
        ]
    );
    let closed = json!({"type": "object", "properties": {"op": {"enum": ["a"]}}, "additionalProperties": false});
    let open = json!({"type": "object", "properties": {"op": {"enum": ["a"]}}});
    let node = |target: &str| {
        json!({"$ref": format!("#/$defs/{target}"), "description": "d", "title": "t", "$comment": "c",
               "examples": [{}], "default": {}, "definitions": {},
               "$defs": {"Closed": closed.clone(), "Open": open.clone()}})
    };
    assert!(!has_structural_ref_siblings(&node("Closed")));
    // Exactly the target's verdict.
    assert_eq!(bounded_cause(&node("Closed")), None);
    assert_eq!(
        bounded_cause(&node("Open")),
        Some(InsufficiencyCause::OpenObject)
    );
    // An annotated reference to a closed target inside a closed object
    // drags nothing onto it.
    let schema = json!({
        "type": "object", "additionalProperties": false,
        "properties": {"inner": {"$ref": "#/$defs/Closed", "description": "x"}},
        "$defs": {"Closed": closed}
    });
    assert_eq!(bounded_cause(&schema), None);
    check("exec", schema, None, None);
}

// contract: ADM-013
// contract: ADM-034
#[test]
fn structural_ref_siblings_are_evaluated() {
    let defs = json!({"Closed": {"type": "object", "properties": {"op": {"enum": ["a"]}}, "additionalProperties": false}});
    for sibling in [
        json!({"additionalProperties": true}),
        json!({"properties": {"cmd2": {"type": "string"}}}),
        json!({"type": "object"}),
    ] {
        let mut node = json!({"$ref": "#/$defs/Closed", "$defs": defs.clone()});
        if let (Value::Object(m), Value::Object(s)) = (&mut node, sibling.clone()) {
            m.extend(s);
        }
        assert!(has_structural_ref_siblings(&node), "{sibling}");
        assert!(bounded_cause(&node).is_some(), "{sibling}");
        check("exec", node, None, IDENTITY);
    }
    // A sibling that is itself closed keeps the node sufficient.
    let node = json!({"$ref": "#/$defs/Closed", "$defs": defs, "type": "object",
                      "properties": {"op": {"enum": ["a"]}}, "additionalProperties": false});
    assert_eq!(bounded_cause(&node), None);
}

// ---------------------------------------------------------------- keyword registry

const DRAFT_2020_12: &[&str] = &[
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    "prefixItems",
    "items",
    "contains",
    "additionalProperties",
    "properties",
    "patternProperties",
    "dependentSchemas",
    "propertyNames",
    "if",
    "then",
    "else",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "unevaluatedItems",
    "unevaluatedProperties",
    "type",
    "const",
    "enum",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
];

// contract: ADM-014
#[test]
fn registry_classes_partition_draft_2020_12() {
    let classes = [lists::INERT, lists::BOUNDING, lists::MODELED, lists::DENIED];
    for kw in DRAFT_2020_12 {
        let n = classes.iter().filter(|c| c.contains(kw)).count();
        assert_eq!(n, 1, "{kw} is in {n} classes");
        assert_ne!(classify_keyword(kw), KeywordClass::Unknown, "{kw}");
    }
    for (i, a) in classes.iter().enumerate() {
        for b in &classes[i + 1..] {
            assert!(a.iter().all(|k| !b.contains(k)), "classes overlap");
        }
    }
    assert_eq!(classify_keyword("contentSchema"), KeywordClass::Inert);
    assert_eq!(classify_keyword("maxLength"), KeywordClass::Bounding);
    assert_eq!(classify_keyword("$ref"), KeywordClass::Modeled);
    assert_eq!(classify_keyword("if"), KeywordClass::Denied);
}

// contract: ADM-015
#[test]
fn registry_is_a_closed_exact_lookup() {
    for kw in [
        "Properties",
        "propertiesX",
        "ITEMS",
        "$Ref",
        "allof",
        "x-foo",
        "minCustomThing",
        "",
    ] {
        assert_eq!(classify_keyword(kw), KeywordClass::Unknown, "{kw}");
    }
}

// contract: ADM-016
// contract: ADM-045
#[test]
fn unknown_keyword_fails_closed_only_when_schema_shaped() {
    for value in [
        json!({"type": "integer"}),
        json!([{"type": "string"}]),
        json!({}),
    ] {
        let schema = closed_with(json!({"maxWidgets": value}));
        assert_eq!(
            structural_coverage_insufficient(&schema, lim()).map(|i| i.cause),
            Some(InsufficiencyCause::UnknownKeyword("maxWidgets".into()))
        );
        check("exec", schema, None, IDENTITY);
    }
    for value in [json!(3), json!("wide"), json!([1, "a", null]), json!(true)] {
        let schema = closed_with(json!({"maxWidgets": value}));
        assert_eq!(structural_coverage_insufficient(&schema, lim()), None);
        check("exec", schema, None, None);
    }
}

// contract: ADM-017
// contract: ADM-048
#[test]
fn denied_keywords_are_found_at_any_depth() {
    let deep = [
        json!({"allOf": [{"properties": {"a": {"type": "object", "properties": {"b": {"contains": {}}}}}}]}),
        json!({"$defs": {"X": {"anyOf": [{"properties": {"y": {"propertyNames": {}}}}]}}}),
        json!({"properties": {"a": {"additionalProperties": {"properties": {"b": {"unevaluatedProperties": false}}}}}}),
        json!({"oneOf": [{"$ref": "#/$defs/Y"}], "$defs": {"Y": {"properties": {"z": {"not": {}}}}}}),
    ];
    for schema in deep {
        assert!(
            structural_coverage_insufficient(&schema, lim()).is_some(),
            "{schema}"
        );
    }
    // Under items and prefixItems that pass the bounded-array proof (so do
    // not deny by themselves), a denied keyword further down is still found.
    for (flags, nested) in [
        (
            json!({"type": "array", "items": {"enum": ["a"], "allOf": [{"not": {}}]}}),
            "not",
        ),
        (
            json!({"type": "array", "prefixItems": [{"const": "x", "anyOf": [{"if": {}}]}], "items": false}),
            "if",
        ),
    ] {
        let schema = closed_props(json!({"flags": flags}));
        assert_eq!(
            structural_coverage_insufficient(&schema, lim()).map(|i| i.cause),
            Some(InsufficiencyCause::DeniedKeyword(nested.into())),
            "{schema}"
        );
    }
}

// contract: ADM-018
#[test]
fn content_keywords_are_inert() {
    let schema = closed_props(json!({"blob_id": {
        "type": "string", "contentEncoding": "base64", "contentMediaType": "application/json",
        "contentSchema": {"type": "object", "properties": {"cmd": {"type": "string"}}}
    }}));
    assert_eq!(schema_is_insufficient(&schema, lim()), None);
    check("exec", schema, None, None);
}

// contract: ADM-019
#[test]
fn content_schema_tripwire_keeps_both_lists_in_sync() {
    assert_eq!(
        lists::INERT.contains(&"contentSchema"),
        lists::WALKER_SCALAR_ONLY.contains(&"contentSchema"),
        "contentSchema must be in both the inert class and the walker's scalar-only set, or in neither"
    );
    assert!(lists::INERT.contains(&"contentSchema"));
}

// contract: ADM-020
#[test]
fn each_denied_applicator_makes_its_node_insufficient() {
    // The catalogue's list, typed in here rather than read back from the
    // registry under test.
    const DENIED: &[&str] = &[
        "patternProperties",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "dependentSchemas",
        "if",
        "then",
        "else",
        "not",
        "contains",
        "items",
        "prefixItems",
        "$dynamicRef",
        "$dynamicAnchor",
        "$recursiveRef",
        "$recursiveAnchor",
    ];
    for kw in DENIED {
        assert_eq!(classify_keyword(kw), KeywordClass::Denied, "{kw}");
        let value = match *kw {
            "prefixItems" => json!([{"type": "string"}]),
            "$dynamicRef" | "$recursiveRef" => json!("#"),
            "$dynamicAnchor" | "$recursiveAnchor" => json!("node"),
            "unevaluatedItems" | "unevaluatedProperties" => json!(true),
            _ => json!({"type": "string"}),
        };
        let schema = closed_with(json!({*kw: value}));
        let insufficiency = structural_coverage_insufficient(&schema, lim());
        assert_eq!(
            insufficiency.map(|i| (i.proof, i.cause)),
            Some((
                Proof::Coverage,
                InsufficiencyCause::DeniedKeyword((*kw).to_owned())
            )),
            "{kw}"
        );
    }
}

// contract: ADM-021
#[test]
fn bounded_array_exception() {
    let arrays = [
        json!({"type": "array", "items": {"enum": ["-q", "-v"]}}),
        json!({"type": "array", "prefixItems": [{"const": "-q"}, false], "items": {"enum": ["a"]}}),
        json!({"type": "array", "prefixItems": [{"const": "x"}], "items": false}),
        json!({"type": "array", "items": {"type": "array", "items": {"enum": [1, 2]}}}),
        json!({"type": ["array", "null"], "items": {"const": 1}, "unevaluatedItems": false}),
    ];
    for array in arrays {
        let schema = closed_props(json!({"flags": array.clone()}));
        assert_eq!(schema_is_insufficient(&schema, lim()), None, "{array}");
        check("exec", schema, None, None);
    }
}

// contract: ADM-022
#[test]
fn bounded_array_exception_fails() {
    let arrays = [
        json!({"type": "array", "prefixItems": [{"const": "-q"}]}),
        json!({"type": "array", "prefixItems": [{"type": "string"}], "items": {"enum": ["a"]}}),
        json!({"type": "array", "items": {"type": "string"}}),
        json!({"type": "array", "items": {"type": "array", "items": {"type": "string"}}}),
        json!({"type": "array", "items": {"const": 1}, "unevaluatedItems": true}),
    ];
    for array in arrays {
        let schema = closed_props(json!({"flags": array.clone()}));
        assert!(
            structural_coverage_insufficient(&schema, lim()).is_some(),
            "{array}"
        );
        check("exec", schema, None, IDENTITY);
    }
}

// contract: ADM-023
#[test]
fn bounded_items_are_still_visited() {
    let schema = closed_props(json!({"flags": {
        "type": "array", "items": {"enum": ["a"], "propertyNames": {"minLength": 1}}
    }}));
    assert_eq!(
        structural_coverage_insufficient(&schema, lim()).map(|i| i.cause),
        Some(InsufficiencyCause::DeniedKeyword("propertyNames".into()))
    );
    let schema = closed_props(json!({"flags": {
        "type": "array", "items": {"enum": ["a"], "fancy": {"type": "string"}}
    }}));
    assert_eq!(
        structural_coverage_insufficient(&schema, lim()).map(|i| i.cause),
        Some(InsufficiencyCause::UnknownKeyword("fancy".into()))
    );
    check("exec", schema, None, IDENTITY);
}

// ---------------------------------------------------------------- object boundedness

// contract: ADM-024
#[test]
fn object_shaped_property_values() {
    for v in [
        json!({"type": "object"}),
        json!({"type": ["null", "object"]}),
        json!({"properties": {}}),
        json!({"$ref": "#/x"}),
        json!({"anyOf": []}),
    ] {
        assert!(property_value_may_be_object_shaped(&v), "{v}");
    }
    for v in [
        json!({"type": "string"}),
        json!({"type": "array", "items": {"type": "object"}}),
        json!({"description": "annotation only"}),
        json!({"type": "integer", "minimum": 1}),
        json!(true),
        json!("string"),
    ] {
        assert!(!property_value_may_be_object_shaped(&v), "{v}");
    }
}

// contract: ADM-026
#[test]
fn insufficiency_is_the_or_of_two_independent_proofs() {
    let coverage_only = closed_with(json!({"not": {"type": "null"}}));
    assert_eq!(object_boundedness_insufficient(&coverage_only, lim()), None);
    assert!(structural_coverage_insufficient(&coverage_only, lim()).is_some());
    assert!(schema_is_insufficient(&coverage_only, lim()).is_some());

    let boundedness_only = json!({"type": "object", "properties": {"op": {"enum": ["a"]}}});
    assert!(object_boundedness_insufficient(&boundedness_only, lim()).is_some());
    assert_eq!(
        structural_coverage_insufficient(&boundedness_only, lim()),
        None
    );
    assert!(schema_is_insufficient(&boundedness_only, lim()).is_some());

    assert_eq!(schema_is_insufficient(&closed_with(json!({})), lim()), None);
    check("exec", coverage_only, None, IDENTITY);
    check("exec", boundedness_only, None, IDENTITY);
}

// contract: ADM-027
// contract: ADM-044
#[test]
fn boundedness_never_judges_keyword_identity() {
    // Unknown and denied keywords on a closed object or on non-object
    // property values do not fail the boundedness proof; coverage catches them.
    let schema = closed_with(json!({
        "maxWidgets": {"type": "integer"},
        "properties": {
            "op": {"enum": ["ping"]},
            "note": {"type": "string", "not": {"const": ""}, "if": {"minLength": 2}}
        }
    }));
    assert_eq!(object_boundedness_insufficient(&schema, lim()), None);
    assert!(structural_coverage_insufficient(&schema, lim()).is_some());
}

// contract: ADM-028
#[test]
fn limits_fail_the_boundedness_proof_closed() {
    let mut schema = json!({"type": "object", "properties": {}, "additionalProperties": false});
    for _ in 0..20 {
        schema = json!({"type": "object", "properties": {"inner": schema}, "additionalProperties": false});
    }
    assert_eq!(
        bounded_cause(&schema),
        Some(InsufficiencyCause::LimitReached)
    );
    let roomy = Limits {
        max_depth: 100,
        max_nodes: 5_000,
    };
    assert_eq!(object_boundedness_insufficient(&schema, roomy), None);
    let tight = Limits {
        max_depth: 100,
        max_nodes: 5,
    };
    assert_eq!(
        object_boundedness_insufficient(&schema, tight).map(|i| i.cause),
        Some(InsufficiencyCause::LimitReached)
    );
    check("exec", schema, None, IDENTITY);
    // Check (1) runs first: out of budget, a node the type gate (2) would
    // refuse reports the limit, not its type.
    let spent = Limits {
        max_depth: 12,
        max_nodes: 0,
    };
    assert_eq!(
        bounded_cause(&json!({"type": "string"})),
        Some(InsufficiencyCause::TypeExcludesObject)
    );
    assert_eq!(
        object_boundedness_insufficient(&json!({"type": "string"}), spent).map(|i| i.cause),
        Some(InsufficiencyCause::LimitReached)
    );
}

// contract: ADM-029
#[test]
fn type_excluding_object_is_insufficient() {
    for t in [
        json!("string"),
        json!("array"),
        json!(["null", "boolean"]),
        json!("integer"),
    ] {
        assert_eq!(
            bounded_cause(&json!({"type": t, "additionalProperties": false})),
            Some(InsufficiencyCause::TypeExcludesObject)
        );
    }
    // Reading of ambiguity 13: the type gate runs before the pin.
    assert_eq!(
        bounded_cause(&json!({"type": "string", "const": "x"})),
        Some(InsufficiencyCause::TypeExcludesObject)
    );
    check(
        "exec",
        json!({"type": "string", "const": "x"}),
        None,
        IDENTITY,
    );
}

// contract: ADM-030
#[test]
fn type_array_containing_object_is_still_an_object_schema() {
    assert_eq!(
        bounded_cause(&closed_with(json!({"type": ["object", "null"]}))),
        None
    );
    // Its properties are inspected: an open inner object is found.
    let schema = closed_with(json!({
        "type": ["object", "null"],
        "properties": {"inner": {"type": "object", "properties": {"a": {"enum": [1]}}}}
    }));
    assert_eq!(bounded_cause(&schema), Some(InsufficiencyCause::OpenObject));
}

// contract: ADM-032
#[test]
fn applicator_delegation_runs_before_the_omitted_type_denial() {
    let closed = json!({"type": "object", "properties": {"op": {"enum": ["a"]}}, "additionalProperties": false});
    let by_ref = json!({"$ref": "#/$defs/C", "$defs": {"C": closed.clone()}});
    let by_any = json!({"anyOf": [closed.clone(), closed.clone()]});
    let by_one = json!({"oneOf": [closed.clone()]});
    let by_all = json!({"allOf": [{"required": ["op"]}, closed]});
    for schema in [by_ref, by_any, by_one, by_all] {
        assert_eq!(bounded_cause(&schema), None, "{schema}");
        check("exec", schema, None, None);
    }
}

// contract: ADM-033
#[test]
fn only_local_references_are_followed() {
    for (schema, cause) in [
        (json!({"$ref": "https://example.com/s.json"}), "external"),
        (json!({"$ref": "other.json#/a"}), "external"),
        (json!({"$ref": "#anchor"}), "external"),
        (json!({"$ref": "#/$defs/Missing", "$defs": {}}), "dangling"),
        (
            json!({"$ref": "#/$defs/%41", "$defs": {"A": {"const": 1}}}),
            "dangling",
        ),
    ] {
        let got = bounded_cause(&schema);
        assert!(
            matches!(got, Some(InsufficiencyCause::Reference(_))),
            "{cause}: {got:?}"
        );
        check("exec", schema, None, IDENTITY);
    }
    // Cycles terminate and are insufficient.
    let cyclic = json!({"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}});
    assert!(matches!(
        bounded_cause(&cyclic),
        Some(InsufficiencyCause::Reference(
            UnresolvedCause::CyclicReference(_)
        ))
    ));
    let self_ref = json!({"$ref": "#"});
    assert!(bounded_cause(&self_ref).is_some());
    check("exec", cyclic, None, IDENTITY);
    // Exhausting the budget while resolving fails closed too.
    let wide = json!({"anyOf": (0..50).map(|_| json!({"$ref": "#/$defs/C"})).collect::<Vec<_>>(),
                      "$defs": {"C": {"type": "object", "additionalProperties": false}}});
    assert_eq!(bounded_cause(&wide), None);
    assert_eq!(
        object_boundedness_insufficient(
            &wide,
            Limits {
                max_depth: 12,
                max_nodes: 10
            }
        )
        .map(|i| i.cause),
        Some(InsufficiencyCause::LimitReached)
    );
}

// contract: ADM-036
#[test]
fn unions_need_every_branch() {
    let closed = json!({"type": "object", "additionalProperties": false});
    let open = json!({"type": "object", "properties": {}});
    for kw in ["anyOf", "oneOf"] {
        let schema = json!({kw: [closed.clone(), open.clone()]});
        assert!(bounded_cause(&schema).is_some(), "{kw}");
        check("exec", schema, None, IDENTITY);
    }
}

// contract: ADM-037
#[test]
fn all_of_needs_one_bounded_branch() {
    let schema = json!({"allOf": [
        {"type": "object", "properties": {"x": {"type": "string"}}},
        {"type": "object", "properties": {"op": {"enum": ["a"]}}, "additionalProperties": false}
    ]});
    assert_eq!(bounded_cause(&schema), None);
}

// contract: ADM-038
#[test]
fn const_or_enum_pins_the_instance() {
    for schema in [
        json!({"const": {"op": "ping"}}),
        json!({"enum": [{"op": "a"}, {"op": "b"}]}),
        json!({"type": "object", "enum": [{"op": "a"}]}),
        json!({"type": "object", "const": {}, "properties": {"x": {"type": "string"}}}),
    ] {
        assert_eq!(bounded_cause(&schema), None, "{schema}");
    }
}

// contract: ADM-039
#[test]
fn omitted_type_without_pin_is_insufficient() {
    let schema = json!({"properties": {"op": {"enum": ["a"]}}, "additionalProperties": false});
    assert_eq!(
        bounded_cause(&schema),
        Some(InsufficiencyCause::TypeOmitted)
    );
    check("exec", schema, None, IDENTITY);
}

// contract: ADM-040
#[test]
fn closedness_default_trap() {
    let schema = json!({"type": "object", "properties": {"action": {"type": "string", "enum": ["start", "stop"]}}});
    assert_eq!(bounded_cause(&schema), Some(InsufficiencyCause::OpenObject));
    check("shell", schema, None, IDENTITY);
}

// contract: ADM-041
#[test]
fn closed_objects() {
    let props = json!({"op": {"enum": ["a"]}});
    for ap in [json!(false), json!({"enum": [1, 2]}), json!({"const": "x"})] {
        let schema =
            json!({"type": "object", "properties": props.clone(), "additionalProperties": ap});
        assert_eq!(bounded_cause(&schema), None, "{schema}");
    }
    for ap in [json!(true), json!({"type": "integer"}), json!({})] {
        let schema =
            json!({"type": "object", "properties": props.clone(), "additionalProperties": ap});
        assert_eq!(
            bounded_cause(&schema),
            Some(InsufficiencyCause::OpenObject),
            "{schema}"
        );
    }
}

// contract: ADM-042
#[test]
fn empty_objects_need_additional_properties_false() {
    assert_eq!(
        bounded_cause(&json!({"type": "object"})),
        Some(InsufficiencyCause::OpenObject)
    );
    assert_eq!(
        bounded_cause(&json!({"type": "object", "properties": {}})),
        Some(InsufficiencyCause::OpenObject)
    );
    assert_eq!(
        bounded_cause(
            &json!({"type": "object", "properties": {}, "additionalProperties": {"enum": [1]}})
        ),
        Some(InsufficiencyCause::OpenObject)
    );
    assert_eq!(
        bounded_cause(&json!({"type": "object", "additionalProperties": false})),
        None
    );
    check("exec", json!({"type": "object"}), None, IDENTITY);
}

// contract: ADM-043
#[test]
fn inner_objects_are_rechecked() {
    let schema = closed_props(json!({
        "op": {"enum": ["a"]},
        "options": {"type": "object", "properties": {"verbose": {"type": "boolean"}}}
    }));
    let got = object_boundedness_insufficient(&schema, lim()).expect("insufficient");
    assert_eq!(got.cause, InsufficiencyCause::OpenObject);
    assert_eq!(got.path, "/properties/options");
    check("exec", schema, None, IDENTITY);
}

// ---------------------------------------------------------------- structural coverage

// contract: ADM-046
#[test]
fn coverage_applies_no_type_gate_or_closedness() {
    for schema in [
        json!({"type": "string"}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        json!(true),
        json!({"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/A"}], "$defs": {"A": {"type": "object"}}}),
    ] {
        assert_eq!(
            structural_coverage_insufficient(&schema, lim()),
            None,
            "{schema}"
        );
    }
}

// contract: ADM-047
#[test]
fn coverage_visits_every_schema_bearing_position() {
    let bad = json!({"if": {}});
    let positions = [
        json!({"properties": {"a": bad.clone()}}),
        json!({"additionalProperties": bad.clone()}),
        json!({"allOf": [{}, bad.clone()]}),
        json!({"anyOf": [bad.clone()]}),
        json!({"oneOf": [{}, {}, bad.clone()]}),
        json!({"$ref": "#/$defs/B", "$defs": {"B": {"properties": {"x": bad.clone()}}}}),
        json!({"type": "object", "$defs": {"Unreferenced": bad.clone()}}),
        json!({"type": "object", "definitions": {"Unreferenced": bad}}),
    ];
    for schema in positions {
        assert!(
            structural_coverage_insufficient(&schema, lim()).is_some(),
            "{schema}"
        );
    }
    // The unreferenced-$defs case on a strong name (public case PE007 shape).
    check(
        "exec",
        closed_with(json!({"$defs": {"Spare": {"if": {"type": "string"}}}})),
        None,
        IDENTITY,
    );
}

// contract: ADM-049
// contract: ADM-054
#[test]
fn every_prefix_member_is_checked() {
    let flags = json!({"type": "array", "prefixItems": [{"enum": ["-q"]}, {"type": "string"}], "items": {"enum": ["x"]}});
    let schema = closed_props(json!({"flags": flags}));
    assert!(structural_coverage_insufficient(&schema, lim()).is_some());
    let r = report("exec", &schema, None);
    assert_eq!(r.free_form_keys.len(), 1);
    assert_eq!(
        r.free_form_keys[0].cause,
        FreeFormCause::ArrayReachesFreeForm
    );
    check("exec", schema, None, IDENTITY);
    check(
        "runner",
        json!({"type": "object", "properties": {
            "program": {"type": "string"},
            "argv": {"type": "array", "prefixItems": [{"const": "-c"}, {"type": "string"}], "items": false}
        }}),
        None,
        PROCESS,
    );
}

fn process_with_argv(argv: Value) -> Value {
    json!({"type": "object", "properties": {"program": {"type": "string"}, "argv": argv}})
}

// contract: ADM-050
#[test]
fn item_schemas_are_judged_conservatively() {
    for items in [
        json!({"type": "string"}),
        json!({}),
        json!(true),
        json!(5),
        json!("string"),
        json!([{"type": "string"}]),
        json!({"description": "an argument"}),
        json!({"type": "string", "pattern": "^[a-z]+$", "maxLength": 8}),
    ] {
        check(
            "runner",
            process_with_argv(json!({"type": "array", "items": items})),
            None,
            PROCESS,
        );
    }
    // No identifier exemption for items: an argument list of "paths" is still argv.
    check(
        "runner",
        process_with_argv(json!({"type": "array", "items": {"type": "string", "format": "uri"}})),
        None,
        PROCESS,
    );
    for items in [
        json!({"type": "integer"}),
        json!({"enum": ["a"]}),
        json!(false),
        json!({"type": "object"}),
    ] {
        check(
            "runner",
            process_with_argv(json!({"type": "array", "items": items})),
            None,
            None,
        );
    }
}

// contract: ADM-051
#[test]
fn item_indirection_is_resolved() {
    let string = json!({"type": "string"});
    let wrappers = [
        json!({"$ref": "#/$defs/S"}),
        json!({"allOf": [string.clone()]}),
        json!({"anyOf": [{"type": "integer"}, string.clone()]}),
        json!({"oneOf": [string.clone()]}),
        json!({"if": string.clone()}),
        json!({"then": string.clone()}),
        json!({"else": string.clone()}),
        json!({"not": string}),
        json!({"$ref": "#/$defs/Loop"}),
        json!({"$ref": "https://example.com/x"}),
    ];
    for items in wrappers {
        let mut schema = process_with_argv(json!({"type": "array", "items": items.clone()}));
        schema["$defs"] = json!({"S": {"type": "string"}, "Loop": {"$ref": "#/$defs/Loop"}});
        check("runner", schema, None, PROCESS);
    }
}

// contract: ADM-052
#[test]
fn nested_arrays_are_bounded_only_by_their_own_items() {
    check(
        "runner",
        process_with_argv(
            json!({"type": "array", "items": {"type": "array", "items": {"type": "string"}}}),
        ),
        None,
        PROCESS,
    );
    check(
        "runner",
        process_with_argv(
            json!({"type": "array", "items": {"type": "array", "items": {"enum": ["-v"]}}}),
        ),
        None,
        None,
    );
}

// contract: ADM-053
#[test]
fn missing_items_is_an_unconstrained_rest() {
    check(
        "runner",
        process_with_argv(json!({"type": "array", "prefixItems": [{"enum": ["-q"]}]})),
        None,
        PROCESS,
    );
    check(
        "runner",
        process_with_argv(json!({"type": "array"})),
        None,
        PROCESS,
    );
    check(
        "runner",
        process_with_argv(
            json!({"type": "array", "prefixItems": [{"enum": ["-q"]}], "items": false}),
        ),
        None,
        None,
    );
    check(
        "runner",
        process_with_argv(json!({"type": "array", "items": {"enum": ["-q"]}})),
        None,
        None,
    );
}

// ---------------------------------------------------------------- walker

// contract: ADM-055
#[test]
fn walker_whitelist_marks_unknown_applicators_unresolvable() {
    for kw in [
        "unevaluatedProperties",
        "dependentSchemas",
        "contains",
        "propertyNames",
    ] {
        let schema = json!({"type": "object", "properties": {"q": {"type": "integer"}}, kw: {"type": "string"}});
        assert!(
            unresolved_causes("worker", &schema)
                .contains(&UnresolvedCause::UnknownKeyword(kw.into())),
            "{kw}"
        );
        check("worker", schema.clone(), EXEC_DESCRIPTION, DESCRIPTION);
        check("exec", schema, None, IDENTITY);
    }
}

// contract: ADM-056
#[test]
fn unresolvable_alone_does_not_deny_an_ordinary_tool() {
    let schema = json!({"type": "object", "properties": {"opt": {"$recursiveRef": "#"}, "q": {"fancy": {}}}});
    assert!(!report("notebook", &schema, None).unresolved.is_empty());
    check("notebook", schema, Some("Keep notes."), None);
}

// contract: ADM-057
#[test]
fn scalar_only_keywords_are_never_flagged() {
    let schema = json!({
        "type": "object", "title": "t", "description": "d", "format": "f", "pattern": "p",
        "required": ["a"], "enum": [{"properties": {}}], "const": {"items": {}},
        "default": {"anyOf": []}, "examples": [{"if": {}}],
        "contentSchema": {"type": "object"},
        "$defs": {}, "definitions": {},
        "minLength": 1, "maxItems": 3, "multipleOf": 2
    });
    assert_eq!(report("notebook", &schema, None).unresolved, vec![]);
}

// contract: ADM-058
#[test]
fn dynamic_references_are_unresolvable_by_identity() {
    for kw in ["$dynamicRef", "$recursiveRef"] {
        let schema = json!({"type": "object", "properties": {"cmd": {kw: "#meta"}}});
        assert!(
            unresolved_causes("notebook", &schema)
                .contains(&UnresolvedCause::DynamicReference(kw.into()))
        );
        check("notebook", schema, None, CMD);
        let schema = json!({"type": "object", "properties": {"opt": {kw: "#"}}});
        check("worker", schema.clone(), EXEC_DESCRIPTION, DESCRIPTION);
        check("exec", schema, None, IDENTITY);
    }
}

// contract: ADM-059
#[test]
fn numeric_bounds_are_an_explicit_list() {
    let flagged = json!({"type": "object", "minCustomThing": {"type": "string"}});
    assert!(
        unresolved_causes("n", &flagged)
            .contains(&UnresolvedCause::UnknownKeyword("minCustomThing".into()))
    );
    assert!(lists::NUMERIC_BOUNDS.contains(&"minLength"));
    assert!(!lists::NUMERIC_BOUNDS.contains(&"minCustomThing"));
    // A real bound never is, even with a (malformed) mapping value.
    let bound = json!({"type": "object", "minLength": {"weird": 1}, "maxContains": {"x": 1}});
    assert_eq!(report("n", &bound, None).unresolved, vec![]);
}

// contract: ADM-060
#[test]
fn could_carry_subschema_shapes() {
    for v in [
        json!({}),
        json!({"type": "string"}),
        json!([[[{"type": "string"}]]]),
        json!([1, [2, [{}]]]),
    ] {
        assert!(could_carry_subschema(&v, lim()), "{v}");
    }
    for v in [
        json!(1),
        json!("s"),
        json!(null),
        json!([1, "a", [true, [null]]]),
        json!([]),
    ] {
        assert!(!could_carry_subschema(&v, lim()), "{v}");
    }
}

// contract: ADM-061
// contract: ADM-067
#[test]
fn value_inspection_is_budgeted_and_fails_closed() {
    let wide = Value::Array((0..20_000).map(Value::from).collect());
    assert!(could_carry_subschema(&wide, lim()));
    assert!(!could_carry_subschema(
        &wide,
        Limits {
            max_depth: 12,
            max_nodes: 30_000
        }
    ));
    let mut deep = json!(1);
    for _ in 0..40 {
        deep = json!([deep]);
    }
    assert!(could_carry_subschema(&deep, lim()));
    assert!(!is_inert_annotation_value(&wide, lim()));
    // Inside a verdict: a huge scalar list under an unknown keyword or a
    // vendor annotation is unresolvable, not laundered, and stays in budget.
    for kw in ["bigList", "x-big"] {
        let schema = closed_with(json!({kw: wide.clone()}));
        let r = report("exec", &schema, None);
        assert!(r.nodes_visited <= 5_000);
        assert!(!r.unresolved.is_empty(), "{kw}");
        assert_eq!(
            r.reason,
            Some(Reason::ExecutorIdentityWithInsufficientSchema)
        );
    }
    // The inspection is charged to the walker's own budget: with room to
    // spare, a 1,000-element inert value is admitted and its elements are
    // counted among the nodes the verdict visited.
    let roomy = Limits {
        max_depth: 12,
        max_nodes: 100_000,
    };
    let list = Value::Array((0..1_000).map(Value::from).collect());
    let r = explain_tool_admission_with(
        roomy,
        "exec",
        Some(&closed_with(json!({"x-big": list}))),
        None,
    );
    assert_eq!(r.reason, None);
    assert!(r.nodes_visited >= 1_000, "{}", r.nodes_visited);
}

// contract: ADM-062
#[test]
fn inert_annotation_values() {
    for v in [
        json!("text"),
        json!(["a", 1, null]),
        json!({"icon": "bolt", "order": 2, "tags": ["x"], "nested": {"color": "red"}}),
    ] {
        assert!(is_inert_annotation_value(&v, lim()), "{v}");
    }
    for v in [
        json!({"items": []}),
        json!({"meta": {"deep": [{"type": "string"}]}}),
        json!([{"description": "annotation words are schema vocabulary too"}]),
    ] {
        assert!(!is_inert_annotation_value(&v, lim()), "{v}");
    }
    let big = json!({"a": (0..100).collect::<Vec<_>>()});
    assert!(!is_inert_annotation_value(
        &big,
        Limits {
            max_depth: 12,
            max_nodes: 50
        }
    ));
}

// contract: ADM-063
// contract: ADM-066
#[test]
fn vendor_annotations_are_narrow() {
    check(
        "exec",
        closed_with(json!({"x-display": {"icon": "bolt", "order": 2}})),
        None,
        None,
    );
    check(
        "exec",
        closed_with(json!({"$comment": "kept for docs"})),
        None,
        None,
    );
    check(
        "exec",
        closed_with(json!({"x-form": {"items": []}})),
        None,
        IDENTITY,
    );
    check(
        "exec",
        closed_with(json!({"vendor-display": {"icon": "bolt"}})),
        None,
        IDENTITY,
    );
    check(
        "exec",
        closed_with(json!({"X-display": {"icon": "bolt"}})),
        None,
        IDENTITY,
    );
}

// contract: ADM-064
#[test]
fn dollar_keywords_are_not_exempt_as_a_group() {
    let schema = closed_with(json!({"$foo": {"type": "string"}}));
    assert!(
        unresolved_causes("exec", &schema)
            .contains(&UnresolvedCause::UnknownKeyword("$foo".into()))
    );
    check("exec", schema, None, IDENTITY);
    check("exec", closed_with(json!({"$foo": "scalar"})), None, None);
}

// contract: ADM-065
#[test]
fn whitelist_applies_to_leaf_property_schemas() {
    let schema = json!({"type": "object", "properties": {"note": {"type": "string", "dependentSchemas": {"a": {}}}}});
    let r = report("worker", &schema, None);
    assert_eq!(r.unresolved.len(), 1);
    assert_eq!(r.unresolved[0].path, "/properties/note/dependentSchemas");
    check("worker", schema, EXEC_DESCRIPTION, DESCRIPTION);
}

// contract: ADM-068
// contract: ADM-076
#[test]
fn container_property_schemas_are_recursed() {
    let cmd = json!({"type": "object", "properties": {"cmd": {"type": "string"}}});
    let wrappers = [
        json!({"properties": {"inner": cmd.clone()}}),
        json!({"patternProperties": {"^x$": cmd.clone()}}),
        json!({"additionalProperties": cmd.clone()}),
        json!({"$ref": "#/$defs/C"}),
        json!({"allOf": [cmd.clone()]}),
        json!({"anyOf": [cmd.clone()]}),
        json!({"oneOf": [cmd.clone()]}),
        json!({"if": cmd.clone()}),
        json!({"then": cmd.clone()}),
        json!({"else": cmd.clone()}),
        json!({"not": cmd.clone()}),
        json!({"type": "array", "items": cmd.clone()}),
        json!({"type": "array", "items": [cmd.clone()]}),
        json!({"type": "array", "prefixItems": [cmd.clone()], "items": false}),
    ];
    for wrapper in wrappers {
        let schema = json!({"type": "object", "properties": {"settings": wrapper.clone()}, "$defs": {"C": cmd.clone()}});
        check("notebook", schema, None, CMD);
    }
    // Self-referencing schemas terminate.
    let recursive = json!({"type": "object", "properties": {"child": {"$ref": "#"}, "cmd": {"type": "string"}}});
    check("notebook", recursive, None, CMD);
}

// contract: ADM-069
#[test]
fn arrays_are_leaf_channels_and_item_containers() {
    check(
        "notebook",
        json!({"type": "object", "properties": {"argv": {"type": "array", "items": {"type": "string"}}, "program": {"type": "string"}}}),
        None,
        PROCESS,
    );
    check(
        "notebook",
        json!({"type": "object", "properties": {"steps": {"type": "array", "items": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}}),
        None,
        CMD,
    );
    // Both at once: the array itself is free-form and it hides a command.
    let r = report(
        "notebook",
        &json!({"type": "object", "properties": {"argv": {"type": "array", "prefixItems": [{"type": "object", "properties": {"cmd": {"type": "string"}}}]}}}),
        None,
    );
    let keys: Vec<&str> = r.free_form_keys.iter().map(|k| k.key.as_str()).collect();
    assert_eq!(keys, ["argv", "cmd"]);
}

// contract: ADM-070
#[test]
fn causes_of_unresolvable_walks() {
    let cases = [
        (
            json!({"properties": {"a": {"$ref": "#/nowhere"}}}),
            "dangling",
        ),
        (
            json!({"properties": {"a": {"$ref": "http://x/y"}}}),
            "external",
        ),
        (
            json!({"$ref": "#/$defs/A", "$defs": {"A": {"properties": {"b": {"$ref": "#/$defs/A"}}}}}),
            "cyclic",
        ),
        (json!({"properties": 5}), "malformed"),
        (json!({"properties": {"a": 7}}), "malformed"),
        (json!({"widget": {"a": 1}}), "unknown"),
    ];
    for (schema, what) in cases {
        let causes = unresolved_causes("n", &schema);
        let found = causes.iter().any(|c| match c {
            UnresolvedCause::DanglingReference(_) => what == "dangling",
            UnresolvedCause::ExternalReference(_) => what == "external",
            UnresolvedCause::CyclicReference(_) => what == "cyclic",
            UnresolvedCause::Malformed(_) => what == "malformed",
            UnresolvedCause::UnknownKeyword(_) => what == "unknown",
            _ => false,
        });
        assert!(found, "{what}: {causes:?}");
    }
    let mut deep = json!({"type": "string"});
    for _ in 0..20 {
        deep = json!({"type": "object", "properties": {"a": deep}});
    }
    assert!(unresolved_causes("n", &deep).contains(&UnresolvedCause::DepthLimit));
    let wide = json!({"anyOf": (0..6_000).map(|_| json!({})).collect::<Vec<_>>()});
    assert!(unresolved_causes("n", &wide).contains(&UnresolvedCause::NodeBudget));
}

// contract: ADM-071
// contract: ADM-072
#[test]
fn node_budget_caps_wide_fan_out() {
    let branches: Vec<Value> = (0..50_000)
        .map(|i| json!({"type": "object", "properties": {format!("k{i}"): {"type": "integer"}}}))
        .collect();
    let schema = json!({"anyOf": branches});
    let started = std::time::Instant::now();
    let r = report("notebook", &schema, None);
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    assert!(r.nodes_visited <= 5_000);
    assert!(
        r.unresolved
            .iter()
            .any(|u| u.cause == UnresolvedCause::NodeBudget)
    );
    // Stops as soon as it is spent, with any budget.
    for max_nodes in [1, 7, 100] {
        let r = explain_tool_admission_with(
            Limits {
                max_depth: 12,
                max_nodes,
            },
            "exec",
            Some(&schema),
            None,
        );
        assert!(r.nodes_visited <= max_nodes);
        assert_eq!(
            r.reason,
            Some(Reason::ExecutorIdentityWithInsufficientSchema)
        );
    }
}

// contract: ADM-073
#[test]
fn composed_free_form_leaf_is_attributed_to_its_key() {
    for value in [
        json!({"anyOf": [{"type": "string"}]}),
        json!({"oneOf": [{"type": "integer"}, {"type": "string"}]}),
        json!({"allOf": [{"minLength": 1}, {"type": "string"}]}),
        json!({"if": {"type": "object"}, "then": {"type": "string"}}),
        json!({"$ref": "#/$defs/S"}),
        json!({"anyOf": [{"$ref": "#/$defs/S"}]}),
    ] {
        let schema = json!({"type": "object", "properties": {"command": value.clone()}, "$defs": {"S": {"type": "string"}}});
        check("notebook", schema, None, CMD);
    }
}

// contract: ADM-074
#[test]
fn composed_leaf_is_attributed_before_recursing_into_a_container() {
    let schema = json!({"type": "object", "properties": {"cmd": {
        "properties": {"x": {"type": "integer"}},
        "anyOf": [{"type": "object"}, {"type": "string"}]
    }}});
    let r = report("notebook", &schema, None);
    assert_eq!(r.free_form_keys[0].key, "cmd");
    assert_eq!(r.free_form_keys[0].cause, FreeFormCause::CompositionBranch);
    check("notebook", schema, None, CMD);
}

// contract: ADM-075
#[test]
fn a_container_key_is_not_a_command_value() {
    let schema = json!({"type": "object", "properties": {"command": {
        "type": "object", "properties": {"name": {"type": "string"}, "verbose": {"type": "boolean"}}
    }}});
    let r = report("notebook", &schema, None);
    let keys: Vec<&str> = r.free_form_keys.iter().map(|k| k.key.as_str()).collect();
    assert_eq!(keys, ["name"]);
    check("notebook", schema, None, None);
    check(
        "notebook",
        json!({"type": "object", "properties": {"cmd": {"properties": {"a": {"type": "integer"}}}}}),
        None,
        None,
    );
}

// contract: ADM-077
#[test]
fn ref_siblings_are_walked() {
    let schema = json!({
        "$ref": "#/$defs/Safe",
        "properties": {"command": {"type": "string"}},
        "$defs": {"Safe": {"type": "object", "properties": {"op": {"enum": ["a"]}}, "additionalProperties": false}}
    });
    check("notebook", schema, None, CMD);
}

// contract: ADM-078
#[test]
fn additional_properties_schema_is_walked() {
    check(
        "notebook",
        json!({"type": "object", "additionalProperties": {"type": "object", "properties": {"cmd": {"type": "string"}}}}),
        None,
        CMD,
    );
}

// contract: ADM-079
#[test]
fn free_form_map_channels_need_corroboration() {
    for ap in [json!({"type": "string"}), json!(true)] {
        let schema = json!({"type": "object", "properties": {"mode": {"enum": ["a"]}}, "additionalProperties": ap});
        let r = report("settings", &schema, None);
        assert_eq!(
            r.free_form_map_channels,
            vec!["/additionalProperties".to_owned()]
        );
        check("settings", schema.clone(), Some("Store settings."), None);
        check("settings", schema.clone(), EXEC_DESCRIPTION, DESCRIPTION);
        check("exec", schema, None, IDENTITY);
    }
}

// contract: ADM-080
#[test]
fn payload_keys_need_corroboration() {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    check(
        "proofread",
        schema.clone(),
        Some("Proofread a paragraph."),
        None,
    );
    check(
        "proofread",
        schema.clone(),
        Some("Execute scripts safely."),
        SCRIPT,
    );
    check("bash", schema, None, SCRIPT);
    check(
        "proofread",
        json!({"type": "object", "properties": {"code": {"type": "string"}, "interpreter": {"enum": ["python"]}}}),
        None,
        SCRIPT,
    );
}

// ---------------------------------------------------------------- top-level classification

// contract: ADM-081
#[test]
fn a_free_form_command_denies_on_its_own() {
    let schema = json!({"type": "object", "properties": {
        "cmd": {"type": "string"},
        "title": {"type": "string"}, "tags": {"type": "array", "items": {"enum": ["a"]}}
    }, "additionalProperties": false});
    check(
        "format_document",
        schema.clone(),
        Some("Formats a document nicely."),
        CMD,
    );
    check("format_document", schema, None, CMD);
}

// contract: ADM-082
#[test]
fn command_input_is_reported_first() {
    let schema = json!({"type": "object", "properties": {
        "cmd": {"type": "string"}, "program": {"type": "string"}, "argv": {"type": "array"},
        "script": {"type": "string"}, "shell": {"enum": ["sh"]}, "other": {"type": "string"}
    }});
    check("bash", schema, EXEC_DESCRIPTION, CMD);
}

// contract: ADM-083
#[test]
fn strong_names_admitted_only_when_proven_safe() {
    for name in [
        "bash",
        "exec",
        "run_command",
        "RunCommand",
        "ſhell",
        "SPAWN-PROCESS",
    ] {
        // No schema at all proves nothing: lionagi 0.36.0 refuses an
        // executor name with an absent, null or empty schema (found by the
        // differential test), and so does this gate.
        for schema in [None, Some(&Value::Null), Some(&json!({}))] {
            assert_eq!(
                validate_tool_admission(name, schema, None).map_err(|e| e.reason()),
                Err(Reason::ExecutorIdentityWithInsufficientSchema),
                "{name}"
            );
        }
        check(
            name,
            closed_props(json!({"op": {"enum": ["status"]}, "level": {"const": 2}})),
            None,
            None,
        );
        check(
            name,
            closed_props(
                json!({"op": {"enum": ["status"]}, "cwd": {"type": "string"}, "timeout": {"type": "integer"}, "job_id": {"type": "string"}}),
            ),
            None,
            None,
        );
    }
}

// contract: ADM-084
#[test]
fn strong_names_deny_by_default() {
    for name in ["bash", "exec", "run_command", "pwsh"] {
        check(
            name,
            closed_props(json!({"target": {"type": "string"}})),
            None,
            IDENTITY,
        );
        check(
            name,
            closed_props(json!({"opt": {"$ref": "#/missing"}})),
            None,
            IDENTITY,
        );
        check(
            name,
            closed_with(json!({"widget": {"type": "string"}})),
            None,
            IDENTITY,
        );
        check(name, json!(["not", "a", "schema"]), None, IDENTITY);
        check(name, json!(true), None, IDENTITY);
    }
}

// contract: ADM-085
#[test]
fn synthetic_wrapper_is_recognised_and_exempt() {
    let schema = synthetic_wrapper_schema();
    assert_eq!(
        schema,
        json!({"type": "object", "properties": {"kwargs": {"type": "string", "description": null}}, "required": ["kwargs"]})
    );
    assert!(is_synthetic_mcp_wrapper_schema(
        "bash",
        "bash",
        Some(&schema),
        Some("MCP tool: bash")
    ));
    assert_eq!(
        validate_mcp_tool_admission("bash", Some("bash"), Some(&schema), Some("MCP tool: bash")),
        Ok(())
    );
    // Judged as remote metadata, the same descriptor is refused.
    assert!(validate_tool_admission("bash", Some(&schema), Some("MCP tool: bash")).is_err());
}

// contract: ADM-086
#[test]
fn only_the_exact_synthetic_shape_is_exempt() {
    let exact = synthetic_wrapper_schema();
    let mut variants = Vec::new();
    let mut v = exact.clone();
    v["properties"]["kwargs"]["description"] = json!("kwargs");
    variants.push(v);
    let mut v = exact.clone();
    v["properties"]["kwargs"]
        .as_object_mut()
        .expect("object")
        .remove("description");
    variants.push(v);
    let mut v = exact.clone();
    v["additionalProperties"] = json!(true);
    variants.push(v);
    let mut v = exact.clone();
    v["required"] = json!([]);
    variants.push(v);
    let mut v = exact.clone();
    v["properties"]["cmd"] = json!({"type": "string"});
    variants.push(v);
    for v in variants {
        assert!(
            !is_synthetic_mcp_wrapper_schema("bash", "bash", Some(&v), Some("MCP tool: bash")),
            "{v}"
        );
        assert!(
            validate_mcp_tool_admission("bash", Some("bash"), Some(&v), Some("MCP tool: bash"))
                .is_err(),
            "{v}"
        );
    }
    assert!(!is_synthetic_mcp_wrapper_schema(
        "bash",
        "bash",
        Some(&exact),
        Some("MCP tool: bash ")
    ));
    assert!(!is_synthetic_mcp_wrapper_schema(
        "bash",
        "bash",
        Some(&exact),
        None
    ));
    assert!(!is_synthetic_mcp_wrapper_schema(
        "bash",
        "bash",
        None,
        Some("MCP tool: bash")
    ));
}

// contract: ADM-087
#[test]
fn synthetic_check_uses_the_registered_name() {
    let schema = synthetic_wrapper_schema();
    // Advertised "bash", registered "shell": not the wrapper of this tool.
    assert!(!is_synthetic_mcp_wrapper_schema(
        "shell",
        "bash",
        Some(&schema),
        Some("MCP tool: bash")
    ));
    assert!(!is_synthetic_mcp_wrapper_schema(
        "shell",
        "bash",
        Some(&schema),
        Some("MCP tool: shell")
    ));
    assert!(
        validate_mcp_tool_admission(
            "bash",
            Some("shell"),
            Some(&schema),
            Some("MCP tool: shell")
        )
        .is_err()
    );
    assert!(
        validate_mcp_tool_admission("bash", None, Some(&schema), Some("MCP tool: bash")).is_err()
    );
    assert!(is_synthetic_mcp_wrapper_schema(
        "shell",
        "shell",
        Some(&schema),
        Some("MCP tool: shell")
    ));
}

// contract: ADM-088
#[test]
fn denial_is_an_error_carrying_the_reason() {
    let err = validate_tool_admission(
        "it's",
        Some(&json!({"type": "object", "properties": {"cmd": {"type": "string"}}})),
        None,
    )
    .expect_err("denied");
    assert_eq!(err.reason(), Reason::UnboundedCommandInput);
    assert_eq!(err.tool_name(), "it's");
    assert_eq!(
        err.to_string(),
        "MCP tool \"it's\" was not registered: generic executor surface detected [unbounded-command-input]. Expose a structured, bounded operation instead; this admission rule has no configuration opt-out."
    );
    let source: &dyn std::error::Error = &err;
    assert!(source.source().is_none());
    assert_eq!(
        validate_tool_admission("search", Some(&json!({"type": "object"})), None),
        Ok(())
    );
    for r in Reason::ALL {
        assert_eq!(Reason::from_code(r.as_str()), Some(r));
    }
}

// contract: ADM-089
#[test]
fn verdicts_depend_only_on_arguments() {
    let deny = json!({"type": "object", "properties": {"cmd": {"type": "string"}}});
    let allow = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    let expected = (verdict("t", &deny, None), verdict("t", &allow, None));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (deny, allow) = (deny.clone(), allow.clone());
            std::thread::spawn(move || {
                (0..50)
                    .map(|_| (verdict("t", &deny, None), verdict("t", &allow, None)))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for h in handles {
        for got in h.join().expect("thread") {
            assert_eq!(got, expected);
        }
    }
    assert_eq!(expected, (Some(Reason::UnboundedCommandInput), None));
    // Nothing else can feed the verdict: no module of the crate touches the
    // environment, files, processes, the network, clocks or shared mutable
    // state.
    let mut dirs = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    let mut files = 0;
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read source");
            for banned in [
                "std::env",
                "env::var",
                "std::fs",
                "std::io",
                "std::process",
                "std::net",
                "SystemTime",
                "Instant",
                "thread_local!",
                "static mut",
                "Mutex",
                "RwLock",
                "Atomic",
                "OnceLock",
                "LazyLock",
                "Cell<",
                "async fn",
            ] {
                assert!(!text.contains(banned), "{} uses {banned}", path.display());
            }
            files += 1;
        }
    }
    assert!(files > 5, "scanned the crate sources");
}

// ---------------------------------------------------------------- normalisation facts

#[test]
fn names_and_keys_are_case_folded_and_split() {
    use mcp_admission::{is_strong_executor_name, normalize_key};
    assert_eq!(normalize_key("commandLine"), "command_line");
    assert_eq!(normalize_key("HTTPServer"), "http_server");
    assert_eq!(normalize_key("__Shell--Command__"), "shell_command");
    assert_eq!(normalize_key("ſhell"), "shell");
    assert_eq!(normalize_key("execShell"), "exec_shell");
    assert!(is_strong_executor_name("Run_Process"));
    assert!(!is_strong_executor_name("execShell"));
    check(
        "notebook",
        json!({"type": "object", "properties": {"ſhellCommand": {"type": "string"}}}),
        None,
        CMD,
    );
}

#[test]
fn patterns_fail_closed() {
    let schema =
        json!({"type": "object", "patternProperties": {"^command_line$": {"type": "string"}}});
    check("notebook", schema, None, CMD);
    // A lookahead cannot be judged exactly: unresolvable, and it counts as
    // matching every categorised key word, under any name.
    let schema = json!({"type": "object", "patternProperties": {"^(?!x-).*$": {"type": "string"}}});
    let r = report("worker", &schema, None);
    assert!(
        r.unresolved
            .iter()
            .any(|u| matches!(u.cause, UnresolvedCause::Pattern(_)))
    );
    check("worker", schema.clone(), EXEC_DESCRIPTION, CMD);
    check("notebook", schema, None, CMD);
    // The value it guards still decides: a bounded value is no channel.
    let schema =
        json!({"type": "object", "patternProperties": {"^(?!x-).*$": {"type": "integer"}}});
    check("notebook", schema, None, None);
}

#[cfg(feature = "regex")]
#[test]
fn patterns_are_matched_against_key_spellings() {
    let schema = json!({"type": "object", "patternProperties": {"^(c|C)md$": {"type": "string"}}});
    check("notebook", schema, None, CMD);
    let schema = json!({"type": "object", "patternProperties": {"(?i)^SHELL[-_]?COMMAND$": {"type": "string"}}});
    check("notebook", schema, None, CMD);
    let schema = json!({"type": "object", "patternProperties": {"^_cmd$": {"type": "string"}}});
    check("notebook", schema, None, CMD);
    let schema = json!({"type": "object", "patternProperties": {"^x-": {"type": "string"}}});
    check("notebook", schema, None, None);
    // A catastrophic-backtracking pattern is linear here.
    let schema = json!({"type": "object", "patternProperties": {"^(a+)+$": {"type": "string"}, "^(a|aa)*b$": {"type": "string"}}});
    check("notebook", schema, None, None);
}
