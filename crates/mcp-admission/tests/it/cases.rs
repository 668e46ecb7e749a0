//! Every public case, with the original's verdict (or this crate's documented difference).

use mcp_admission::validate_mcp_tool_admission;
use serde_json::Value;

const PUBLIC_CASES: &str = include_str!("../../../../fixtures/admission/public_cases.jsonl");

fn cases() -> Vec<Value> {
    PUBLIC_CASES
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("fixture line is json"))
        .collect()
}

#[test]
fn every_public_case_passes() {
    let cases = cases();
    assert!(cases.len() >= 62, "fixture has {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let id = case["id"].as_str().expect("id");
        let name = case["name"].as_str().expect("name");
        let description = case["description"].as_str();
        let schema = case.get("input_schema");
        let prebuilt = case.get("prebuilt_mcp_tool_name").and_then(Value::as_str);
        let got = validate_mcp_tool_admission(name, prebuilt, schema, description);
        let expect_allow = case["expect"] == "allow";
        let ok = match (&got, expect_allow) {
            (Ok(()), true) => true,
            (Err(e), false) => Some(e.reason().as_str()) == case["reason"].as_str(),
            _ => false,
        };
        if !ok {
            failures.push(format!(
                "{id}: expected {} {:?}, got {got:?}",
                case["expect"], case["reason"]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "failing cases:\n{}",
        failures.join("\n")
    );
}

#[test]
fn denial_message_is_the_originals() {
    for case in cases().iter().filter(|c| c["expect"] == "deny") {
        let name = case["name"].as_str().expect("name");
        let err = validate_mcp_tool_admission(
            name,
            None,
            case.get("input_schema"),
            case["description"].as_str(),
        )
        .expect_err("denied");
        assert_eq!(
            err.to_string(),
            format!(
                "MCP tool '{name}' was not registered: generic executor surface detected [{}]. Expose a structured, bounded operation instead; this admission rule has no configuration opt-out.",
                case["reason"].as_str().expect("reason")
            )
        );
    }
}
