//! The worst cases of the issue, judged promptly with the right verdicts.

use std::time::{Duration, Instant};

use mcp_admission::{Reason, UnresolvedCause, explain_tool_admission};
use serde_json::{Map, Value, json};

/// Runs `f` on a thread with a large stack: building and dropping a
/// 5,000-deep `Value` recurses in serde_json's `Drop`.
fn with_big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic");
}

/// `{"type": "object", "properties": {"a": ...}}` nested `depth` times.
/// Built by moving values into maps: `json!` interpolation would clone.
pub(crate) fn deep_schema(depth: usize) -> Value {
    let mut v = json!({"type": "string"});
    for _ in 0..depth {
        let mut props = Map::new();
        props.insert("a".to_owned(), v);
        let mut node = Map::new();
        node.insert("type".to_owned(), Value::from("object"));
        node.insert("properties".to_owned(), Value::Object(props));
        v = Value::Object(node);
    }
    v
}

#[test]
fn nesting_5000_deep_fails_closed_promptly() {
    with_big_stack(|| {
        let deep = deep_schema(5_000);
        let started = Instant::now();
        let r = explain_tool_admission("exec", Some(&deep), None);
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(
            r.reason,
            Some(Reason::ExecutorIdentityWithInsufficientSchema)
        );
        assert!(
            r.unresolved
                .iter()
                .any(|u| u.cause == UnresolvedCause::DepthLimit)
        );
        assert_eq!(
            explain_tool_admission("notebook", Some(&deep), None).reason,
            None
        );

        let mut list = json!(1);
        for _ in 0..5_000 {
            list = Value::Array(vec![list]);
        }
        let schema = json!({"type": "object", "properties": {}, "additionalProperties": false, "x-data": list});
        let r = explain_tool_admission("exec", Some(&schema), None);
        assert_eq!(
            r.reason,
            Some(Reason::ExecutorIdentityWithInsufficientSchema)
        );
    });
}

#[test]
fn one_megabyte_enum_is_cheap() {
    let values: Vec<Value> = (0..80_000)
        .map(|i| Value::from(format!("value-{i:06}")))
        .collect();
    let schema = json!({"type": "object", "additionalProperties": false,
                        "properties": {"mode": {"type": "string", "enum": values}}});
    assert!(schema.to_string().len() > 1_000_000);
    let started = Instant::now();
    let r = explain_tool_admission("exec", Some(&schema), None);
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(r.reason, None);
    assert!(r.nodes_visited < 20);
}

#[test]
fn thousands_of_refs_to_one_large_tuple_are_checked_once() {
    let tuple = json!({"type": "array", "items": false,
                       "prefixItems": (0..2_000).map(|i| json!({"const": i})).collect::<Vec<_>>()});
    let props: serde_json::Map<String, Value> = (0..3_000)
        .map(|i| (format!("p{i}"), json!({"$ref": "#/$defs/T"})))
        .collect();
    let schema = json!({"type": "object", "additionalProperties": false, "properties": props, "$defs": {"T": tuple}});
    let started = Instant::now();
    let r = explain_tool_admission("exec", Some(&schema), None);
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(r.nodes_visited <= 5_000);
    assert!(r.reason.is_some());
}

#[test]
fn wide_scalar_nodes_stay_in_budget() {
    let mut node: Map<String, Value> = (0..200_000)
        .map(|i| (format!("k{i}"), Value::from(i)))
        .collect();
    node.insert("type".to_owned(), Value::from("object"));
    node.insert(
        "required".to_owned(),
        Value::Array((0..200_000).map(Value::from).collect()),
    );
    let schema = Value::Object(node);
    for name in ["exec", "notebook"] {
        let started = Instant::now();
        let r = explain_tool_admission(name, Some(&schema), Some("Execute terminal commands"));
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(r.nodes_visited <= 5_000);
        assert!(r.reason.is_some());
    }
}
