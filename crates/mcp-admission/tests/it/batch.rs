//! The I/O-free batch module behind `lionrt admission check`.

use mcp_admission::Reason;
use mcp_admission::batch::{
    Checker, EXIT_ADMITTED, EXIT_DENIED, EXIT_UNREADABLE, OutputFormat, RawRecord, RecordBatch,
    ToolResult, check_text, exit_code, judge_record_as, render,
};
use proptest::prelude::*;
use serde_json::{Value, json};

const TOOLS_LIST: &str = r#"{
  "tools": [
    {"name": "search", "description": "Search code.", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}}},
    {"name": "bash", "description": "Bash.", "inputSchema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}
  ]
}"#;

fn verdicts(results: &[ToolResult]) -> Vec<(String, Option<&'static str>, bool)> {
    results
        .iter()
        .map(|r| {
            (
                r.name.clone(),
                r.reason.map(Reason::as_str),
                r.error.is_some(),
            )
        })
        .collect()
}

#[test]
fn reads_a_tools_list_result() {
    let results = check_text(TOOLS_LIST);
    assert_eq!(
        verdicts(&results),
        [
            ("search".to_owned(), None, false),
            ("bash".to_owned(), Some("unbounded-command-input"), false)
        ]
    );
    assert_eq!(check_text(&format!("\u{feff}{TOOLS_LIST}")).len(), 2);
    // Also inside a JSON-RPC response, whatever comes before the list.
    let rpc = format!(r#"{{"jsonrpc": "2.0", "id": 1, "result": {TOOLS_LIST}}}"#);
    assert_eq!(verdicts(&check_text(&rpc)), verdicts(&results));
    assert_eq!(results[1].line, Some(4));
}

#[test]
fn reads_a_json_array() {
    let text = r#"[{"name": "a", "input_schema": {"type": "object"}}, {"name": "b", "description": null}]"#;
    let results = check_text(text);
    assert_eq!(
        verdicts(&results),
        [("a".to_owned(), None, false), ("b".to_owned(), None, false)]
    );
}

#[test]
fn reads_json_lines_with_ids() {
    let text = "{\"id\": \"t1\", \"name\": \"search\", \"input_schema\": {\"type\": \"object\"}}\n\n{\"id\": 7, \"name\": \"bash\", \"inputSchema\": {\"type\": \"object\", \"properties\": {\"cmd\": {\"type\": \"string\"}}}}\n";
    let results = check_text(text);
    assert_eq!(results[0].id, Some(Value::from("t1")));
    assert_eq!(results[1].id, Some(Value::from(7)));
    assert_eq!(results[1].line, Some(3));
    let out = render(&results, OutputFormat::Jsonl, None);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(
        lines,
        vec![
            json!({"id": "t1", "name": "search", "verdict": "allow", "reason": null}),
            json!({"id": 7, "name": "bash", "verdict": "deny", "reason": "unbounded-command-input"}),
        ]
    );
}

/// JSON Lines with odd records between good ones.
const ODD: &str = concat!(
    "{\"id\": 1, \"name\": \"search\", \"inputSchema\": {\"type\": \"object\"}}\n",
    "this is not json\n",
    "[1, 2]\n",
    "{\"id\": 4, \"name\": 5}\n",
    "{\"id\": 5, \"description\": \"no name\"}\n",
    "{\"id\": 6, \"name\": \"bash\", \"description\": 42, \"inputSchema\": {\"type\": \"object\", \"properties\": {\"cmd\": {\"type\": \"string\"}}}}\n",
    "{\"id\": 7, \"name\": \"b\"\n",
    "{\"id\": 8, \"name\": \"notes\", \"description\": [\"x\"]}\n",
);

#[test]
fn odd_records_never_abort_the_batch() {
    let results = check_text(ODD);
    assert_eq!(results.len(), 8);
    let errors: Vec<usize> = results
        .iter()
        .filter(|r| r.error.is_some())
        .map(|r| r.line.expect("line"))
        .collect();
    assert_eq!(errors, [2, 3, 4, 5, 7]);
    // A non-string description is ignored as absent, as the original does.
    assert_eq!(results[5].reason, Some(Reason::UnboundedCommandInput));
    assert_eq!(results[7].reason, None);
    assert!(results[7].error.is_none());
    assert_eq!(exit_code(&results), EXIT_UNREADABLE);

    let out = render(&results, OutputFormat::Jsonl, None);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(lines.len(), 8);
    assert_eq!(lines[3]["id"], json!(4));
    assert!(
        lines[3]["error"].as_str().expect("error").contains("name"),
        "{}",
        lines[3]
    );
    assert_eq!(lines[3].as_object().map(|m| m.len()), Some(2));
    assert!(
        lines[1]["error"]
            .as_str()
            .expect("error")
            .starts_with("line 2: not json")
    );
    assert_eq!(lines[5]["verdict"], "deny");

    let table = render(&results, OutputFormat::Table, None);
    assert_eq!(table.lines().count(), 10, "{table}");
    assert!(
        table.lines().nth(2).is_some_and(|l| l.contains("error")),
        "{table}"
    );
    assert!(
        table.ends_with("8 tools: 2 admitted, 1 denied, 5 unreadable\n"),
        "{table}"
    );

    let sarif: Value =
        serde_json::from_str(&render(&results, OutputFormat::Sarif, Some("t.jsonl")))
            .expect("sarif");
    let run = &sarif["runs"][0];
    assert_eq!(run["results"].as_array().map(Vec::len), Some(1));
    let notes = run["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .expect("notifications");
    assert_eq!(notes.len(), 5);
    assert_eq!(
        notes[0]["locations"][0]["physicalLocation"]["region"]["startLine"],
        2
    );
    assert_eq!(run["invocations"][0]["executionSuccessful"], false);
}

#[test]
fn odd_records_in_a_list_and_broken_input() {
    let results = check_text(
        r#"[{"name": "a"}, 5, "x", {"name": }, {"name": "bash", "inputSchema": {"properties": {"cmd": {}}}}]"#,
    );
    assert_eq!(
        verdicts(&results),
        [
            ("a".to_owned(), None, false),
            (String::new(), None, true),
            (String::new(), None, true),
            (String::new(), None, true),
            ("bash".to_owned(), Some("unbounded-command-input"), false),
        ]
    );
    // Unbalanced brackets in a list: the records before are judged, then one error.
    let results = check_text(r#"[{"name": "a"}, {"name": "b", "x": [}], {"name": "c"}]"#);
    assert_eq!(results.len(), 2);
    assert!(
        results[1]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("unbalanced"))
    );
    // Truncated input.
    let results = check_text(r#"[{"name": "a"}, {"name": "b""#);
    assert_eq!(results.len(), 2);
    assert!(results[1].error.is_some());
    // Empty input is one error record.
    let results = check_text("  \n");
    assert_eq!(results.len(), 1);
    assert!(
        results[0]
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("empty input"))
    );
    // A first object that never closes is read as JSON Lines.
    let results = check_text("{\"name\": \"a\"\n{\"name\": \"b\"}\n");
    assert_eq!(results.len(), 2);
    assert!(results[0].error.is_some());
    assert_eq!(results[1].name, "b");
}

#[test]
fn deep_records_are_parsed_and_judged() {
    // 600 levels: far past serde_json's default limit of 128.
    for (depth, name, expect) in [
        (600, "notebook", None),
        (
            600,
            "bash",
            Some(Reason::ExecutorIdentityWithInsufficientSchema),
        ),
        (
            20_000,
            "bash",
            Some(Reason::ExecutorIdentityWithInsufficientSchema),
        ),
    ] {
        let mut schema = String::from(r#"{"type": "integer"}"#);
        for _ in 0..depth {
            schema = format!(r#"{{"type": "object", "properties": {{"a": {schema}}}}}"#);
        }
        let text = format!(
            "{{\"name\": \"{name}\", \"inputSchema\": {schema}}}\n{{\"name\": \"after\"}}\n"
        );
        let results = check_text(&text);
        assert_eq!(results.len(), 2);
        assert_eq!(results[0].error, None, "{depth}");
        assert_eq!(results[0].reason, expect, "{depth}");
        assert_eq!(results[1].name, "after");
    }
}

#[test]
fn chunk_boundaries_do_not_matter() {
    let text = TOOLS_LIST.to_owned();
    let whole = check_text(&text);
    for chunk in [1, 2, 3, 7, 64] {
        for input in [text.as_str(), ODD] {
            let mut checker = Checker::new(OutputFormat::Jsonl, None);
            let mut out = String::new();
            for piece in input.as_bytes().chunks(chunk) {
                checker.feed(piece, &mut out);
            }
            let tally = checker.finish(&mut out);
            let expected = render(&check_text(input), OutputFormat::Jsonl, None);
            assert_eq!(out, expected, "chunk {chunk}");
            assert_eq!(tally.exit_code(), exit_code(&check_text(input)));
        }
    }
    assert_eq!(whole.len(), 2);
}

/// Splitting, judging the records elsewhere (here: out of order, as worker
/// threads would) and rendering them back in order gives exactly what
/// feeding the checker gives, in every format.
#[test]
fn split_judge_render_is_feed() {
    let rpc = format!(r#"{{"jsonrpc": "2.0", "id": 1, "result": {TOOLS_LIST}}}"#);
    for input in [
        TOOLS_LIST,
        ODD,
        rpc.as_str(),
        "[1, {\"name\": 2}, {\"name\": \"a\"",
    ] {
        for format in [
            OutputFormat::Jsonl,
            OutputFormat::Table,
            OutputFormat::Sarif,
        ] {
            for chunk in [1, 5, 4096] {
                let mut fed = Checker::new(format, Some("tools.json"));
                let mut expected = String::new();
                for piece in input.as_bytes().chunks(chunk) {
                    fed.feed(piece, &mut expected);
                }
                let expected_tally = fed.finish(&mut expected);

                let mut split = Checker::new(format, Some("tools.json"));
                let mut records = Vec::new();
                for piece in input.as_bytes().chunks(chunk) {
                    split.split(piece, &mut records);
                }
                split.split_finish(&mut records);
                let mut results: Vec<(usize, ToolResult)> = records
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(i, r)| (i, judge_record_as(r, format)))
                    .collect();
                results.sort_by_key(|(i, _)| *i);
                let mut out = String::new();
                for (_, r) in &results {
                    split.render(r, &mut out);
                }
                let tally = split.finish_rendered(&mut out);
                assert_eq!(out, expected, "{format:?}, chunk {chunk}: {input}");
                assert_eq!(tally, expected_tally);

                // Packed batches, one per chunk, judged out of order.
                let mut packed = Checker::new(format, Some("tools.json"));
                let mut batches = Vec::new();
                for piece in input.as_bytes().chunks(chunk) {
                    let mut batch = RecordBatch::new();
                    packed.split_batch(piece, &mut batch);
                    batches.push(batch);
                }
                let mut last = RecordBatch::new();
                packed.split_finish_batch(&mut last);
                batches.push(last);
                assert_eq!(
                    batches.iter().map(RecordBatch::len).sum::<usize>(),
                    records.len()
                );
                let judged: Vec<_> = batches
                    .iter()
                    .rev()
                    .map(|b| {
                        let mut text = String::new();
                        let counts = b.judge_jsonl(&mut text);
                        (b.judge(format), text, counts)
                    })
                    .collect();
                let mut out = String::new();
                for (results, text, counts) in judged.iter().rev() {
                    if format == OutputFormat::Jsonl {
                        packed.add_jsonl(*counts, text, &mut out);
                    } else {
                        results.iter().for_each(|r| packed.render(r, &mut out));
                    }
                }
                let tally = packed.finish_rendered(&mut out);
                assert_eq!(out, expected, "packed {format:?}, chunk {chunk}: {input}");
                assert_eq!(tally, expected_tally);
            }
        }
    }
}

#[test]
fn exit_codes() {
    assert_eq!(
        exit_code(&check_text(r#"[{"name": "search"}]"#)),
        EXIT_ADMITTED
    );
    assert_eq!(exit_code(&check_text(TOOLS_LIST)), EXIT_DENIED);
    assert_eq!(exit_code(&[]), EXIT_ADMITTED);
    assert_eq!(exit_code(&check_text("42")), EXIT_UNREADABLE);
}

#[test]
fn table_lists_every_tool_and_a_summary() {
    let results = check_text(TOOLS_LIST);
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
        let results = check_text(text);
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
        assert_eq!(
            sarif["runs"][0]["invocations"][0]["executionSuccessful"],
            true
        );
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

/// What a record gets when parsed whole into a `Value` and judged: the
/// reading the batch checker's field-by-field parse must keep. `None` for
/// a syntax error ("not json"), else the error message or the verdict.
fn judged_as_a_value(line: &str) -> Option<Result<(String, Option<Reason>), String>> {
    let value: Value = serde_json::from_str(line).ok()?;
    let Value::Object(m) = value else {
        return Some(Err("a tool must be a json object".to_owned()));
    };
    let name = match m.get("name") {
        Some(Value::String(n)) => n.clone(),
        Some(_) => return Some(Err("\"name\" must be a string".to_owned())),
        None => return Some(Err("missing \"name\"".to_owned())),
    };
    let description = m.get("description").and_then(Value::as_str);
    let schema = m.get("inputSchema").or_else(|| m.get("input_schema"));
    let reason = mcp_admission::explain_tool_admission(&name, schema, description).reason;
    Some(Ok((name, reason)))
}

fn record_key() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "\"id\"",
        "\"name\"",
        "\"na\\u006de\"",
        "\"description\"",
        "\"inputSchema\"",
        "\"input_schema\"",
        "\"inputSchem\\u0061\"",
        "\"annotations\"",
        "\"\\ud800\"",
    ])
}

fn record_value() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "\"bash\"",
        "\"search\"",
        "\"b\\u0061sh\"",
        "\"Run a shell command.\"",
        "\"\\ud83d\\ude00\"",
        "\"\\ud800\"",
        "\"\\udc00x\"",
        "1",
        "-2",
        "1.5",
        "1e400",
        "18446744073709551616",
        "null",
        "true",
        "[1, \"x\", {\"a\": null}]",
        "{\"type\": \"object\", \"properties\": {\"cmd\": {\"type\": \"string\"}}}",
        "{\"type\": \"object\", \"additionalProperties\": false}",
        "{\"type\": \"object\", \"properties\": {\"q\": {\"type\": \"string\"}}, \"additionalProperties\": false}",
        "{\"type\": \"object\", \"type\": \"string\"}",
        "{\"properties\": {\"cmd\": {\"type\": \"string\"}}, \"additionalProperties\": false, \"additionalProperties\": true}",
        "{\"x\": [}",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    /// The checker reads only the fields it needs, yet every record gets
    /// what a whole-`Value` parse gives it: the same verdict, the same
    /// error, the same syntax errors (duplicate keys: the last counts;
    /// escaped keys are unescaped; an unread field's lone surrogate still
    /// makes the record unreadable; a number f64 cannot hold is clamped).
    #[test]
    fn a_record_is_read_as_a_value_reads_it(
        entries in prop::collection::vec((record_key(), record_value()), 0..7),
        shape in 0u8..8,
    ) {
        let body = entries
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let line = match shape {
            0 => format!("[{body}]"),
            1 => format!("{{{body}"),
            _ => format!("{{{body}}}"),
        };
        let record = RawRecord { bytes: line.clone().into_bytes(), line: 1, index: 0, broken: None };
        let r = &judge_record_as(&record, OutputFormat::Table);
        // JSON Lines takes the plain verdict: the same reason.
        prop_assert_eq!(&judge_record_as(&record, OutputFormat::Jsonl).reason, &r.reason);
        // A number f64 cannot hold is read as the nearest it can (Python
        // reads it, and the original judges the record).
        match judged_as_a_value(&line.replace("1e400", "1.7976931348623157e308")) {
            None => prop_assert!(
                r.error.as_deref().is_some_and(|e| e.contains("not json")),
                "{line}: {r:?}"
            ),
            Some(Err(e)) => prop_assert_eq!(r.error.as_deref(), Some(e.as_str()), "{}", line),
            Some(Ok((name, reason))) => {
                prop_assert_eq!(&r.error, &None, "{}", line);
                prop_assert_eq!(&r.name, &name);
                prop_assert_eq!(r.reason, reason, "{}", line);
            }
        }
    }
}

#[test]
fn a_raw_value_key_is_an_ordinary_key() {
    // With serde_json's `raw_value` feature on, a `Value` would read this
    // object as the JSON text in its string: the gate would see a closed
    // object where a host sees an open schema. The build keeps the feature
    // off (`cargo xtask ci` checks it), and the batch reader reads keys as
    // written whatever the feature.
    let schema = r#"{"$serde_json::private::RawValue": "{\"type\": \"object\", \"additionalProperties\": false}"}"#;
    let as_value: Value = serde_json::from_str(schema).expect("json");
    assert_eq!(
        as_value,
        json!({"$serde_json::private::RawValue": "{\"type\": \"object\", \"additionalProperties\": false}"}),
        "serde_json's raw_value feature is on in this build"
    );
    let text = format!(
        "{{\"name\": \"exec\", \"inputSchema\": {schema}}}\n\
         {{\"name\": \"exec\", \"inputSchema\": {{\"x\": {{\"$serde_json::private::RawValue\": \"not json\"}}}}}}\n\
         {{\"name\": \"exec\", \"id\": {{\"$serde_json::private::RawValue\": \"1\"}}, \"inputSchema\": {{\"type\": \"object\", \"additionalProperties\": false}}}}\n"
    );
    let results = check_text(&text);
    assert_eq!(results.len(), 3);
    // Judged as written: an open schema under an executor name.
    assert_eq!(
        results[0].reason,
        Some(Reason::ExecutorIdentityWithInsufficientSchema),
        "{:?}",
        results[0]
    );
    assert_eq!(results[1].error, None);
    assert!(results[1].reason.is_some());
    assert_eq!(
        results[2].id,
        Some(json!({"$serde_json::private::RawValue": "1"}))
    );
    assert_eq!(results[2].reason, None);
}

#[test]
fn json_lines_escape_names_as_json() {
    for name in [
        "plain",
        "q\"uote",
        "back\\slash",
        "new\nline\r\t",
        "ctl\u{1}\u{1f}",
        "ünï \u{1F600}",
        "\"",
        "",
    ] {
        let text = format!("{}\n", json!({"id": name, "name": name}));
        let out = render(&check_text(&text), OutputFormat::Jsonl, None);
        let line: Value = serde_json::from_str(out.trim_end()).expect("json");
        assert_eq!(line["name"], name, "{out}");
        assert_eq!(line["id"], name, "{out}");
    }
    // An error message is escaped too.
    let out = render(
        &check_text("{\"name\": \"a\u{1}\" x\n"),
        OutputFormat::Jsonl,
        None,
    );
    let line: Value = serde_json::from_str(out.trim_end()).expect("json");
    assert!(
        line["error"]
            .as_str()
            .is_some_and(|e| e.contains("not json")),
        "{out}"
    );
}

#[test]
fn deep_values_in_any_field_are_read_without_overflow() {
    // 20,000 levels in a name, a description, an unread field and an id:
    // each is read on the growing stack and judged as a whole parse would.
    let deep = format!("{}1{}", "[".repeat(20_000), "]".repeat(20_000));
    let schema = r#"{"type": "object", "properties": {"cmd": {"type": "string"}}}"#;
    let text = format!(
        "{{\"name\": {deep}}}\n\
         {{\"name\": \"bash\", \"description\": {deep}, \"inputSchema\": {schema}}}\n\
         {{\"name\": \"search\", \"annotations\": {deep}}}\n\
         {{\"id\": {deep}, \"name\": \"search\"}}\n"
    );
    let results = check_text(&text);
    assert_eq!(results.len(), 4);
    assert_eq!(
        results[0].error.as_deref(),
        Some("\"name\" must be a string")
    );
    assert_eq!(results[1].reason, Some(Reason::UnboundedCommandInput));
    assert_eq!(results[2].error, None);
    assert_eq!(results[2].reason, None);
    assert_eq!(results[3].id, Some(json!("(id nested too deep)")));
    assert_eq!(results[3].reason, None);
}

/// A value nested `levels` deep: arrays, or objects.
fn nested(levels: usize, objects: bool) -> String {
    if objects {
        format!("{}1{}", "{\"a\":".repeat(levels), "}".repeat(levels))
    } else {
        format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
    }
}

/// An expected `bash` record denied for its command string.
pub(crate) const DENIED: i64 = -1;
/// An expected record judged, whatever the verdict.
pub(crate) const JUDGED: i64 = -2;

/// Records holding a value `levels` deep in `field`, each ending another
/// way (trailing bytes, a later field that cannot be read, a name that is no
/// string, a duplicate key replacing it), each followed by a good record;
/// with what each one must come to: `Err(fragment of the error)` or
/// `Ok(id of a judged record)` ([`DENIED`]: a judged `bash` denied for its
/// schema, [`JUDGED`]: judged, whatever the verdict).
pub(crate) fn deep_then_failing(levels: usize) -> (String, Vec<Result<i64, &'static str>>) {
    let bash = r#"{"type": "object", "properties": {"cmd": {"type": "string"}}}"#;
    // A first object alone is read as one record and the rest as JSON
    // Lines: the deep records come after a first good one.
    let mut text = String::from("{\"id\": 0, \"name\": \"search\"}\n");
    let mut expect = vec![Ok(0)];
    let mut good = 0;
    for objects in [false, true] {
        let deep = nested(levels, objects);
        for field in ["inputSchema", "input_schema", "id", "annotations"] {
            let replacement = if field == "id" { "7" } else { bash };
            let records = [
                (
                    format!(r#"{{"name": "a", "{field}": {deep}}} x"#),
                    Err("trailing characters"),
                ),
                (
                    format!(r#"{{"name": "a", "{field}": {deep}, "description": "\q"}}"#),
                    Err("invalid escape"),
                ),
                (
                    format!(r#"{{"{field}": {deep}, "name": "a", "x": [1, }}"#),
                    Err("not json"),
                ),
                (
                    format!(r#"{{"{field}": {deep}, "name": 5}}"#),
                    Err("\"name\" must be a string"),
                ),
                (
                    format!(r#"{{"{field}": {deep}, "{field}": {replacement}, "name": "bash"}}"#),
                    Ok(match field {
                        "id" => 7,
                        "annotations" => JUDGED,
                        _ => DENIED,
                    }),
                ),
            ];
            for (record, outcome) in records {
                text.push_str(&record);
                text.push('\n');
                expect.push(outcome);
                good += 1;
                text.push_str(&format!(
                    r#"{{"id": {good}, "name": "search", "inputSchema": {{"type": "object", "properties": {{"q": {{"type": "string"}}}}}}}}"#
                ));
                text.push('\n');
                expect.push(Ok(good));
            }
        }
    }
    (text, expect)
}

#[test]
fn deep_values_abandoned_by_an_error_are_dropped_without_overflow() {
    // 100,000 levels (enough to overflow a test thread's stack in a
    // recursive drop; `lionrt admission check` is tested with a million) in
    // a kept field (the schema, the id) or an unread one, then trailing bytes, a later field that fails, a name that is no
    // string, or a duplicate key replacing it: the record is an error record
    // (or judged, for the duplicate key), the next one is judged, and
    // nothing overflows the stack dropping what was built.
    let (text, expect) = deep_then_failing(100_000);
    let results = check_text(&text);
    assert_eq!(results.len(), expect.len());
    for (i, (r, want)) in results.iter().zip(&expect).enumerate() {
        match want {
            Err(fragment) => {
                let error = r
                    .error
                    .as_deref()
                    .unwrap_or_else(|| panic!("record {i}: judged"));
                assert!(error.contains(fragment), "record {i}: {error}");
            }
            Ok(id) => {
                assert_eq!(r.error, None, "record {i}");
                match *id {
                    DENIED => assert_eq!(r.reason, Some(Reason::UnboundedCommandInput)),
                    JUDGED => assert_eq!(r.name, "bash", "record {i}"),
                    id => {
                        assert_eq!(r.id, Some(json!(id)), "record {i}");
                        if id != 7 {
                            assert_eq!(r.reason, None, "record {i}");
                        }
                    }
                }
            }
        }
    }
    assert_eq!(exit_code(&results), EXIT_UNREADABLE);
}

/// Every id is echoed as written: integers of any size (the fast decimal
/// writer), negative, fractional, strings and nested values.
#[test]
fn ids_are_echoed_as_json() {
    let ids = [
        "0",
        "9",
        "10",
        "1234567890",
        "18446744073709551615",
        "18446744073709551616",
        "-1",
        "-9223372036854775808",
        "1.5",
        "1e3",
        "\"x\\\"y\"",
        "null",
        "true",
        "[1, {\"a\": 2}]",
    ];
    let text: String = ids
        .iter()
        .map(|id| format!("{{\"id\": {id}, \"name\": \"search\"}}\n"))
        .collect();
    let mut checker = Checker::new(OutputFormat::Jsonl, None);
    let mut out = String::new();
    checker.feed(text.as_bytes(), &mut out);
    checker.finish(&mut out);
    let echoed: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("jsonl")["id"].clone())
        .collect();
    let written: Vec<Value> = ids
        .iter()
        .map(|id| serde_json::from_str(id).expect("json"))
        .collect();
    assert_eq!(echoed, written);
    // Written exactly as serde_json writes them.
    for (line, id) in out.lines().zip(&written) {
        assert!(line.starts_with(&format!("{{\"id\":{id},")), "{line}");
    }
}

/// Lines of a JSON Lines input, odd ones included (blank, whitespace,
/// CR, not JSON, a tools list, a record cut short).
const PIECES: &[&str] = &[
    "{\"id\": 1, \"name\": \"search\", \"inputSchema\": {\"type\": \"object\"}}",
    "{\"id\": \"two\", \"name\": \"bash\", \"inputSchema\": {\"type\": \"object\", \"properties\": {\"cmd\": {\"type\": \"string\"}}}}",
    "",
    "   ",
    "\t\r",
    "{\"name\": \"crlf\"}\r",
    "not json",
    "[1, 2]",
    "{\"tools\": [{\"name\": \"x\"}]}",
    "{\"id\": 9, \"name\": \"cut",
];

/// How an input may start: nothing, a byte order mark, or bytes that
/// begin one and are not one.
const STARTS: &[&[u8]] = &[
    b"",
    b"\xef\xbb\xbf",
    b"\xef",
    b"\xef\xbb",
    b"\xefA",
    b"\xef\xbb\xef",
    b"\xef\xbb\xbf\xef\xbb\xbf",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Splitting into a packed batch (lines whole in a chunk are packed
    /// straight from it) finds exactly the records (bytes, lines, indexes,
    /// breaks) the callback splitter finds, and both find what one whole
    /// chunk gives, whatever the chunk boundaries and however the input
    /// starts; the checker's JSON Lines (which split that way) agree too.
    #[test]
    fn a_packed_split_finds_what_the_callback_split_finds(
        start in prop::sample::select(STARTS),
        lines in prop::collection::vec(prop::sample::select(PIECES), 0..12),
        last_newline in any::<bool>(),
        cuts in prop::collection::vec(1usize..40, 1..8),
    ) {
        let mut input = start.to_vec();
        input.extend_from_slice(lines.join("\n").as_bytes());
        if last_newline {
            input.push(b'\n');
        }
        let pieces = || {
            let mut out = Vec::new();
            let mut at = 0;
            for cut in cuts.iter().cycle() {
                if at >= input.len() {
                    break;
                }
                let end = (at + cut).min(input.len());
                out.push(&input[at..end]);
                at = end;
            }
            out
        };
        let by_callback = |chunks: &[&[u8]]| {
            let mut checker = Checker::new(OutputFormat::Table, None);
            let mut records = Vec::new();
            for piece in chunks {
                checker.split(piece, &mut records);
            }
            checker.split_finish(&mut records);
            records
        };
        let whole = by_callback(&[input.as_slice()]);
        // A byte order mark is skipped; bytes that only begin one are data.
        let data = start.strip_prefix(b"\xef\xbb\xbf".as_slice()).unwrap_or(start);
        if !data.is_empty() {
            prop_assert!(
                whole.first().is_some_and(|r| r.bytes.starts_with(data)),
                "{:?}: {:?}",
                input,
                whole
            );
        }
        prop_assert_eq!(&by_callback(&pieces()), &whole, "{:?}", input);
        let mut packed = Checker::new(OutputFormat::Table, None);
        let mut batch = RecordBatch::new();
        for piece in pieces() {
            packed.split_batch(piece, &mut batch);
        }
        packed.split_finish_batch(&mut batch);
        prop_assert_eq!(&batch.records(), &whole, "{:?}", input);

        let fed = |chunks: &[&[u8]]| {
            let mut checker = Checker::new(OutputFormat::Jsonl, None);
            let mut out = String::new();
            for piece in chunks {
                checker.feed(piece, &mut out);
            }
            let tally = checker.finish(&mut out);
            (out, tally)
        };
        let (out, tally) = fed(&pieces());
        let want: Vec<ToolResult> = whole
            .iter()
            .map(|r| judge_record_as(r, OutputFormat::Jsonl))
            .collect();
        prop_assert_eq!(&out, &render(&want, OutputFormat::Jsonl, None), "{:?}", input);
        prop_assert_eq!((out, tally), fed(&[input.as_slice()]), "{:?}", input);
    }
}
