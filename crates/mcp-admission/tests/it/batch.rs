//! The I/O-free batch module behind `lionrt admission check`.

use mcp_admission::Reason;
use mcp_admission::batch::{
    EXIT_ADMITTED, EXIT_DENIED, EXIT_UNREADABLE, OutputFormat, check_tools, exit_code, parse_tools,
    render,
};
use serde_json::Value;

const TOOLS_LIST: &str = r#"{
  "tools": [
    {"name": "search", "description": "Search code.", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}}},
    {"name": "bash", "description": "Bash.", "inputSchema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}
  ]
}"#;

#[test]
fn parses_a_tools_list_result() {
    let entries = parse_tools(TOOLS_LIST).expect("parses");
    assert_eq!(entries.len(), 2);
    assert_eq!(
        parse_tools(&format!("\u{feff}{TOOLS_LIST}"))
            .expect("bom")
            .len(),
        2
    );
    assert_eq!(entries[1].name, "bash");
    assert!(entries[1].input_schema.is_some());
    // Also inside a JSON-RPC response.
    let rpc = format!(r#"{{"jsonrpc": "2.0", "id": 1, "result": {TOOLS_LIST}}}"#);
    assert_eq!(parse_tools(&rpc).expect("parses").len(), 2);
}

#[test]
fn parses_a_json_array() {
    let text = r#"[{"name": "a", "input_schema": {"type": "object"}}, {"name": "b", "description": null}]"#;
    let entries = parse_tools(text).expect("parses");
    assert_eq!(entries.len(), 2);
    assert_eq!(
        entries[0].input_schema,
        Some(serde_json::json!({"type": "object"}))
    );
    assert_eq!(entries[1].description, None);
}

#[test]
fn parses_json_lines_with_ids() {
    let text = "{\"id\": \"t1\", \"name\": \"search\", \"input_schema\": {\"type\": \"object\"}}\n\n{\"id\": 7, \"name\": \"bash\", \"inputSchema\": {\"type\": \"object\", \"properties\": {\"cmd\": {\"type\": \"string\"}}}}\n";
    let entries = parse_tools(text).expect("parses");
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].id, Some(Value::from("t1")));
    assert_eq!(entries[1].id, Some(Value::from(7)));
    assert_eq!(entries[1].line, Some(3));
    let out = render(&check_tools(&entries), OutputFormat::Jsonl, None);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(
        lines,
        vec![
            serde_json::json!({"id": "t1", "name": "search", "verdict": "allow", "reason": null}),
            serde_json::json!({"id": 7, "name": "bash", "verdict": "deny", "reason": "unbounded-command-input"}),
        ]
    );
}

#[test]
fn parse_errors_name_the_position() {
    let err = parse_tools("{\"name\": \"a\"}\n{\"name\": \"b\"\n{\"name\": \"c\"}\n")
        .expect_err("bad line");
    assert_eq!((err.line, err.column), (Some(2), None));
    assert!(err.to_string().starts_with("line 2: "), "{err}");

    let err = parse_tools("[\n  {\"name\": \"a\"},\n  {\"name\": }\n]").expect_err("bad json");
    assert_eq!(err.line, Some(3));
    assert!(err.column.is_some());
    assert!(err.to_string().starts_with("line 3, column "), "{err}");

    let err = parse_tools("{\"name\": 5}\n").expect_err("name must be a string");
    assert!(err.message.contains("name"), "{err}");
    let err =
        parse_tools("[{\"name\": \"a\"}, {\"description\": \"x\"}]").expect_err("missing name");
    assert_eq!((err.line, err.tool_index), (None, Some(1)));
    assert_eq!(err.to_string(), "tool 1: missing \"name\"");
    assert!(parse_tools("").is_err());
    assert!(parse_tools("42").is_err());
    assert!(parse_tools("{\"servers\": []}").is_err());
    assert_eq!(EXIT_UNREADABLE, 2);
}

#[test]
fn exit_codes() {
    let all_ok = check_tools(&parse_tools(r#"[{"name": "search"}]"#).expect("parses"));
    assert_eq!(exit_code(&all_ok), EXIT_ADMITTED);
    let mixed = check_tools(&parse_tools(TOOLS_LIST).expect("parses"));
    assert_eq!(exit_code(&mixed), EXIT_DENIED);
    assert_eq!(exit_code(&[]), EXIT_ADMITTED);
}

#[test]
fn table_lists_every_tool_and_a_summary() {
    let results = check_tools(&parse_tools(TOOLS_LIST).expect("parses"));
    let table = render(&results, OutputFormat::Table, None);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("ID"));
    assert!(lines[1].contains("search") && lines[1].contains("allow"));
    assert!(
        lines[2].contains("bash")
            && lines[2].contains("deny")
            && lines[2].contains("unbounded-command-input")
    );
    assert!(lines[2].contains("/properties/cmd"), "{table}");
    assert_eq!(lines[3], "2 tools: 1 admitted, 1 denied");
}

#[test]
fn sarif_lists_every_rule_even_when_nothing_is_denied() {
    for text in [r#"[{"name": "search"}]"#, TOOLS_LIST] {
        let results = check_tools(&parse_tools(text).expect("parses"));
        let sarif: Value =
            serde_json::from_str(&render(&results, OutputFormat::Sarif, Some("tools.json")))
                .expect("sarif is json");
        assert_eq!(sarif["version"], "2.1.0");
        let rules = sarif["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .expect("rules");
        let ids: Vec<&str> = rules.iter().filter_map(|r| r["id"].as_str()).collect();
        assert_eq!(ids, Reason::ALL.map(Reason::as_str));
        let denied = results.iter().filter(|r| r.reason.is_some()).count();
        let sarif_results = sarif["runs"][0]["results"].as_array().expect("results");
        assert_eq!(sarif_results.len(), denied);
        for r in sarif_results {
            let index = r["ruleIndex"].as_u64().expect("index") as usize;
            assert_eq!(rules[index]["id"], r["ruleId"]);
            assert!(
                r["message"]["text"]
                    .as_str()
                    .expect("text")
                    .starts_with("MCP tool 'bash'")
            );
            assert_eq!(
                r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                "tools.json"
            );
        }
    }
}

#[test]
fn format_names() {
    assert_eq!("table".parse::<OutputFormat>(), Ok(OutputFormat::Table));
    assert_eq!("jsonl".parse::<OutputFormat>(), Ok(OutputFormat::Jsonl));
    assert_eq!("sarif".parse::<OutputFormat>(), Ok(OutputFormat::Sarif));
    assert!("xml".parse::<OutputFormat>().is_err());
}
