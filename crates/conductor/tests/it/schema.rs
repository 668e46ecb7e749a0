//! The published JSON Schema (docs/schemas/plan.schema.json) and the
//! parser agree: on every example, the schema accepts exactly the plans
//! the parser reads and whose ops are well-formed (what a schema cannot
//! check, the graph, is validate's alone).

use conductor::{Plan, PlanError, validate};
use serde_json::{Value, json};

fn schema() -> jsonschema::Validator {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/schemas/plan.schema.json"
    );
    let text = std::fs::read_to_string(path).expect("schema file");
    let schema: Value = serde_json::from_str(&text).expect("schema JSON");
    jsonschema::validator_for(&schema).expect("a valid schema")
}

/// Whether the parser takes the plan as well-formed: parsed, and any
/// refusal of validate is about the graph.
fn parser_accepts(v: &Value) -> bool {
    let Ok(plan) = Plan::from_json(&v.to_string()) else {
        return false;
    };
    match validate(plan, usize::MAX) {
        Ok(_) => true,
        Err(e) => e.reason_code().is_some(),
    }
}

fn examples() -> Vec<Value> {
    let op = |id: &str| json!({"id": id, "agent": {"prompt": "p"}});
    let mut out = vec![
        json!({"ops": [op("a")]}),
        json!({"name": "d", "ops": [op("a"), {"id": "b", "agent": {"prompt": "p"}, "depends_on": ["a"]}]}),
        json!({"ops": [{"id": "a", "agent": {"prompt_file": "a.md", "provider": "claude", "model": "opus",
                        "effort": "high", "mcp_config": ".mcp.json"}, "artifacts": ["out.md"]}]}),
        json!({"ops": [{"id": "s", "agent": {"prompt": "p", "script": "s.json"}, "synthesis": true}]}),
        // Graph errors pass the schema (validate refuses them).
        json!({"ops": [{"id": "a", "agent": {"prompt": "p"}, "depends_on": ["a"]}]}),
        json!({"ops": [op("a"), op("a")]}),
        json!({"ops": [{"id": "a", "agent": {"prompt": "p"}, "depends_on": ["zz"]}]}),
        // Refused by both.
        json!({"ops": []}),
        json!({}),
        json!({"ops": [op("a")], "extra": 1}),
        json!({"ops": [{"id": "a"}]}),
        json!({"ops": [{"id": "a", "agent": {}}]}),
        json!({"ops": [{"id": "a", "agent": {"prompt": "p", "prompt_file": "f"}}]}),
        json!({"ops": [{"id": "a", "agent": {"prompt": "  "}}]}),
        json!({"ops": [{"id": "a/b", "agent": {"prompt": "p"}}]}),
        json!({"ops": [{"id": ".a", "agent": {"prompt": "p"}}]}),
        json!({"ops": [{"id": "a", "agent": {"prompt": "p", "provider": "gpt"}}]}),
        json!({"ops": [{"id": "a", "agent": {"prompt": "p", "temperature": 1}}]}),
        json!({"ops": [{"id": "a", "agent": {"prompt": "p"}, "depends_on": "b"}]}),
        json!({"ops": [{"id": "a", "agent": {"prompt": "p"}, "synthesis": "yes"}]}),
        json!({"ops": [{"id": 7, "agent": {"prompt": "p"}}]}),
        json!({"ops": [{"id": "x".repeat(65), "agent": {"prompt": "p"}}]}),
    ];
    // The fixtures the lionrt tests run, read through YAML.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/conductor");
    for entry in std::fs::read_dir(dir).expect("fixtures/conductor") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.ends_with(".plan.yaml") || name.ends_with(".plan.json") {
            let text = std::fs::read_to_string(&path).expect("fixture");
            let v: Value = serde_saphyr::from_str(&text).expect("yaml");
            out.push(v);
        }
    }
    out
}

#[test]
fn the_schema_and_the_parser_agree_on_every_example() {
    let schema = schema();
    let mut both = (0, 0);
    for example in examples() {
        let by_schema = schema.is_valid(&example);
        assert_eq!(
            by_schema,
            parser_accepts(&example),
            "schema and parser disagree on {example}"
        );
        if by_schema {
            both.0 += 1;
        } else {
            both.1 += 1;
        }
    }
    assert!(both.0 >= 8 && both.1 >= 10, "accepted/refused: {both:?}");
}

#[test]
fn a_cycle_is_schema_valid_and_refused_by_validate() {
    let v = json!({"ops": [
        {"id": "a", "agent": {"prompt": "p"}, "depends_on": ["b"]},
        {"id": "b", "agent": {"prompt": "p"}, "depends_on": ["a"]}]});
    assert!(schema().is_valid(&v));
    let e = validate(Plan::from_json(&v.to_string()).expect("parse"), 9).expect_err("cycle");
    assert!(matches!(e, PlanError::Cycle(_)), "{e:?}");
}
