//! The strict policy: the original's verdicts, plus a code-execution tool
//! whose code is left free is denied with a reason code of its own.

use mcp_admission::batch::{Checker, OutputFormat};
use mcp_admission::{
    Policy, Reason, signals_code_execution, validate_tool_admission, validate_tool_admission_under,
};
use proptest::prelude::*;
use serde_json::{Value, json};

const CODE: Option<&str> = Some("code-execution-with-free-input");

fn strict(name: &str, schema: &Value, description: Option<&str>) -> Option<&'static str> {
    validate_tool_admission_under(Policy::Strict, name, Some(schema), description)
        .err()
        .map(|e| e.reason().as_str())
}

fn original(name: &str, schema: &Value, description: Option<&str>) -> Option<&'static str> {
    validate_tool_admission(name, Some(schema), description)
        .err()
        .map(|e| e.reason().as_str())
}

fn one_key(key: &str, value: Value) -> Value {
    json!({"type": "object", "properties": {key: value}, "additionalProperties": false})
}

#[test]
fn a_code_runner_with_free_code_is_denied_only_under_strict() {
    let string = json!({"type": "string"});
    for (name, key, description) in [
        ("run_python", "code", None),
        ("execute_code", "source", None),
        ("js_eval", "file_path", None),
        ("python_repl", "input", None),
        ("runScript", "script", None),
        ("interpreter", "program", None),
        ("sandbox", "input", Some("Runs Python code in a sandbox.")),
        (
            "notebook",
            "source_code",
            Some("Evaluate the given JavaScript snippet"),
        ),
        ("tool", "file", Some("Executes a script file")),
    ] {
        let schema = one_key(key, string.clone());
        assert_eq!(original(name, &schema, description), None, "{name} {key}");
        assert_eq!(strict(name, &schema, description), CODE, "{name} {key}");
        // An untyped value leaves the code free as well.
        let untyped = one_key(key, json!({"description": "what to run"}));
        assert_eq!(strict(name, &untyped, description), CODE, "{name} {key}");
    }
}

#[test]
fn bounded_code_or_no_code_runner_is_admitted_under_strict() {
    for (name, schema, description) in [
        (
            "run_python",
            one_key("code", json!({"enum": ["print(1)"]})),
            None,
        ),
        (
            "run_python",
            one_key("timeout", json!({"type": "integer"})),
            None,
        ),
        ("search", one_key("code", json!({"type": "string"})), None),
        (
            "run_tests",
            one_key("file_path", json!({"type": "string"})),
            None,
        ),
        (
            "read_file",
            one_key("file_path", json!({"type": "string"})),
            Some("Reads a file."),
        ),
        (
            "format",
            one_key("source", json!({"type": "string"})),
            Some("Formats Python code."),
        ),
    ] {
        assert_eq!(strict(name, &schema, description), None, "{name} {schema}");
    }
    assert!(signals_code_execution("exec_js", None));
    assert!(!signals_code_execution(
        "python_docs",
        Some("Search the Python docs.")
    ));
}

#[test]
fn the_batch_checker_takes_the_policy() {
    let text = "{\"name\": \"run_python\", \"inputSchema\": {\"type\": \"object\", \"properties\": {\"code\": {\"type\": \"string\"}}}}\n";
    for (policy, expect) in [
        (Policy::Original, "\"verdict\":\"allow\""),
        (Policy::Strict, "code-execution-with-free-input"),
    ] {
        let mut checker = Checker::new(OutputFormat::Jsonl, None).with_policy(policy);
        let mut out = String::new();
        checker.feed(text.as_bytes(), &mut out);
        checker.finish(&mut out);
        assert!(out.contains(expect), "{policy:?}: {out}");
    }
    assert_eq!(Policy::from_name("compat"), Some(Policy::Original));
    assert_eq!(Policy::from_name("strict"), Some(Policy::Strict));
    assert_eq!(
        Reason::from_code("code-execution-with-free-input"),
        Some(Reason::CodeExecutionWithFreeInput)
    );
}

fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop::sample::select(vec![
        json!({"type": "string"}),
        json!({"enum": ["a"]}),
        json!({"type": "integer"}),
        json!({"description": "x"}),
        json!({"type": "array", "items": {"type": "string"}}),
        json!(true),
    ]);
    let key = prop::sample::select(vec![
        "code",
        "script",
        "source",
        "file_path",
        "input",
        "program",
        "cmd",
        "args",
        "query",
        "shell",
    ]);
    (prop::collection::btree_map(key, leaf, 0..4), any::<bool>()).prop_map(|(props, closed)| {
        let mut s = json!({"type": "object", "properties": props});
        if closed {
            s["additionalProperties"] = json!(false);
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Strict keeps every verdict of the original and only adds its own
    /// denial where the original admits.
    #[test]
    fn strict_only_adds_its_own_denial(
        schema in schema(),
        name in prop::sample::select(vec!["run_python", "bash", "search", "exec_code", "notebook", "js_eval"]),
        description in prop::sample::select(vec![None, Some("Runs Python code."), Some("Runs shell commands"), Some("Search.")]),
    ) {
        let o = original(name, &schema, description);
        let s = strict(name, &schema, description);
        match o {
            Some(_) => prop_assert_eq!(s, o),
            None => prop_assert!(s.is_none() || s == CODE),
        }
    }
}
