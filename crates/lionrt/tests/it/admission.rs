//! `lionrt admission check` end to end.

use std::io::Write;
use std::process::{Command, Stdio};

fn check(args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .args(["admission", "check"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write");
    child.wait_with_output().expect("output")
}

const TOOLS: &str = r##"{"tools": [
  {"name": "search_code", "description": "Search", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}}},
  {"name": "notebook", "inputSchema": {"type": "object", "properties": {"cmd": {"$ref": "#/$defs/L"}}, "$defs": {"L": {"type": "string"}}}}
]}"##;

#[test]
fn verdicts_exit_codes_and_formats() {
    let out = check(&["-", "--format", "jsonl"], TOOLS);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("jsonl"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["verdict"], "allow");
    assert_eq!(lines[1]["verdict"], "deny");
    assert_eq!(lines[1]["reason"], "unbounded-command-input");

    let safe = r#"[{"name": "search_code", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}}}]"#;
    let out = check(&[], safe);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("search_code"));

    let out = check(&["-", "--format", "sarif"], safe);
    assert_eq!(out.status.code(), Some(0));
    let sarif: serde_json::Value = serde_json::from_slice(&out.stdout).expect("sarif json");
    assert_eq!(sarif["version"], "2.1.0");
    assert!(
        sarif["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .is_some_and(|r| r.len() >= 5)
    );
}

#[test]
fn unreadable_input_exits_2_naming_the_place() {
    let out = check(&[], "{\"tools\": [\n  {\"name\": \"x\",,}\n]}");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("line 2"), "names the line: {table}");
    let out = check(&["/definitely/not/here.json"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/definitely/not/here.json"));
    let out = check(&["-", "--format", "xml"], "[]");
    assert_eq!(out.status.code(), Some(2));
    // A value enum: the choices are named.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("table") && err.contains("jsonl") && err.contains("sarif"),
        "{err}"
    );
}

#[test]
fn odd_records_get_error_records_and_the_rest_are_judged() {
    let mut deep = String::from(r#"{"type": "integer"}"#);
    for _ in 0..600 {
        deep = format!(r#"{{"type": "object", "properties": {{"a": {deep}}}}}"#);
    }
    let input = format!(
        "{{\"id\": 1, \"name\": \"search\"}}\nnot json\n{{\"id\": 3, \"name\": 7}}\n{{\"id\": 4, \"name\": \"bash\", \"description\": 5, \"inputSchema\": {deep}}}\n{{\"id\": 5, \"name\": \"notes\", \"inputSchema\": {{\"type\": \"object\", \"patternProperties\": {{\"^x-\": {{\"type\": \"string\"}}}}}}}}\n"
    );
    let out = check(&["-", "--format", "jsonl"], &input);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("jsonl"))
        .collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["verdict"], "allow");
    assert!(
        lines[1]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("line 2"))
    );
    assert_eq!(lines[2]["id"], 3);
    assert!(lines[2]["error"].is_string());
    // 600 levels deep: parsed and judged (a strong name, open nesting).
    assert_eq!(lines[3]["verdict"], "deny", "{}", lines[3]);
    // The shipped binary compiles patterns: `^x-` cannot match a command
    // key word, so the tool is admitted (without the `regex` feature every
    // pattern is unresolvable and denies).
    assert_eq!(lines[4]["verdict"], "allow", "{}", lines[4]);

    let out = check(&["-", "--format", "sarif"], &input);
    assert_eq!(out.status.code(), Some(2));
    let sarif: serde_json::Value = serde_json::from_slice(&out.stdout).expect("sarif json");
    let notes = &sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"];
    assert_eq!(notes.as_array().map(Vec::len), Some(2));
}

/// Records are judged on worker threads; the output is the single-threaded
/// one, in input order, in every format, whatever the number of threads
/// and however the records are spread over batches (many small records,
/// a few large ones, odd ones between).
#[test]
fn judging_threads_keep_the_output_in_input_order() {
    let big_props: String = (0..3_000)
        .map(|i| format!(r#""k{i}": {{"type": "integer"}}"#))
        .collect::<Vec<_>>()
        .join(",");
    let mut input = String::new();
    for i in 0..3_000 {
        let line = match i % 7 {
            0 => format!(
                r#"{{"id": {i}, "name": "bash", "inputSchema": {{"type": "object", "properties": {{"cmd": {{"type": "string"}}}}}}}}"#
            ),
            1 => format!(r#"{{"id": {i}, "name": 5}}"#),
            2 => "not json".to_owned(),
            3 if i % 500 == 3 => format!(
                r#"{{"id": {i}, "name": "wide", "inputSchema": {{"type": "object", "properties": {{{big_props}}}}}}}"#
            ),
            _ => format!(
                r#"{{"id": {i}, "name": "search", "inputSchema": {{"type": "object", "properties": {{"q": {{"type": "string"}}}}}}}}"#
            ),
        };
        input.push_str(&line);
        input.push('\n');
    }
    for format in ["jsonl", "table", "sarif"] {
        let serial = check(&["-", "--format", format, "--jobs", "1"], &input);
        assert_eq!(serial.status.code(), Some(2), "{format}");
        for jobs in ["2", "3", "0"] {
            let parallel = check(&["-", "--format", format, "--jobs", jobs], &input);
            assert_eq!(parallel.status.code(), Some(2), "{format} --jobs {jobs}");
            assert!(
                parallel.stdout == serial.stdout,
                "{format} --jobs {jobs}: output differs from --jobs 1"
            );
        }
    }
    let out = check(&["-", "--format", "jsonl", "--jobs", "3"], &input);
    let ids: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("jsonl")["id"].clone())
        .collect();
    assert_eq!(ids.len(), 3_000);
    // "not json" has no id; every other record echoes its own, in order.
    for (i, id) in ids.iter().enumerate() {
        if i % 7 != 2 {
            assert_eq!(id, &serde_json::json!(i), "record {i}");
        }
    }
}

/// With several judging threads: a record larger than one read, a record
/// nested 600 deep, odd records between, and a `tools/list` result all get
/// the single-threaded output, and the exit status counts every batch.
#[test]
fn judging_threads_take_large_deep_and_listed_records() {
    let huge_enum: String = (0..40_000)
        .map(|i| format!(r#""value-{i:06}""#))
        .collect::<Vec<_>>()
        .join(",");
    let mut deep = String::from(r#"{"type": "string"}"#);
    for _ in 0..600 {
        deep = format!(r#"{{"type": "object", "properties": {{"a": {deep}}}}}"#);
    }
    let mut lines = Vec::new();
    for i in 0..400 {
        lines.push(match i % 100 {
            10 => format!(
                r#"{{"id": {i}, "name": "exec", "inputSchema": {{"type": "object", "additionalProperties": false, "properties": {{"mode": {{"type": "string", "enum": [{huge_enum}]}}}}}}}}"#
            ),
            20 => format!(r#"{{"id": {i}, "name": "bash", "inputSchema": {deep}}}"#),
            30 => format!(r#"{{"id": {i}, "name": "notebook", "inputSchema": {deep}}}"#),
            40 => "[1, 2]".to_owned(),
            _ => format!(
                r#"{{"id": {i}, "name": "search", "inputSchema": {{"type": "object", "properties": {{"q": {{"type": "string"}}}}}}}}"#
            ),
        });
    }
    let jsonl = lines.join("\n") + "\n";
    let listed = format!(
        r#"{{"jsonrpc": "2.0", "id": 1, "result": {{"tools": [{}]}}}}"#,
        lines.join(",\n")
    );
    for input in [&jsonl, &listed] {
        for format in ["jsonl", "table", "sarif"] {
            let serial = check(&["-", "--format", format, "--jobs", "1"], input);
            assert_eq!(serial.status.code(), Some(2), "{format}");
            let parallel = check(&["-", "--format", format, "--jobs", "2"], input);
            assert_eq!(parallel.status.code(), Some(2), "{format}");
            assert!(
                parallel.stdout == serial.stdout,
                "{format}: output differs from --jobs 1"
            );
        }
    }
    let out = check(&["-", "--format", "jsonl", "--jobs", "2"], &jsonl);
    let verdicts: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("jsonl"))
        .collect();
    assert_eq!(verdicts.len(), 400);
    for (i, v) in verdicts.iter().enumerate() {
        let expect = match i % 100 {
            // The 600-deep schemas are judged, not refused.
            20 => Some("deny"),
            40 => None,
            _ => Some("allow"),
        };
        match expect {
            Some(verdict) => assert_eq!(v["verdict"], verdict, "record {i}: {v}"),
            None => assert!(v["error"].is_string(), "record {i}: {v}"),
        }
    }
}

/// A value nested `levels` deep: arrays, or objects.
fn nested(levels: usize, objects: bool) -> String {
    if objects {
        format!("{}1{}", "{\"a\":".repeat(levels), "}".repeat(levels))
    } else {
        format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
    }
}

/// Records a million levels deep in the schema, the id or an unread field,
/// each abandoned by trailing bytes or a later field that cannot be read
/// (or replaced by a duplicate key, or judged with a name that is no
/// string), each followed by a good record; with each record's expected
/// JSON Lines output: `Err(fragment of the error)` or `Ok(verdict)`.
fn deep_abandoned_records() -> (String, Vec<Result<&'static str, &'static str>>) {
    let arrays = nested(1_000_000, false);
    let objects = nested(1_000_000, true);
    let bash = r#"{"type": "object", "properties": {"cmd": {"type": "string"}}}"#;
    let bad: Vec<(String, Result<&str, &str>)> = vec![
        (
            format!(r#"{{"name": "a", "inputSchema": {arrays}}} x"#),
            Err("trailing characters"),
        ),
        (
            format!(r#"{{"name": "a", "inputSchema": {objects}, "description": "\q"}}"#),
            Err("invalid escape"),
        ),
        (
            format!(r#"{{"id": {arrays}, "name": "a", "x": [1, }}"#),
            Err("not json"),
        ),
        (
            format!(r#"{{"name": "a", "id": {objects}}} x"#),
            Err("trailing characters"),
        ),
        (
            format!(r#"{{"id": {arrays}, "name": 5}}"#),
            Err("\"name\" must be a string"),
        ),
        (
            format!(r#"{{"name": "a", "annotations": {objects}, "description": "\q"}}"#),
            Err("invalid escape"),
        ),
        (
            format!(r#"{{"name": "a", "annotations": {arrays}}} x"#),
            Err("trailing characters"),
        ),
        (
            format!(r#"{{"input_schema": {objects}, "input_schema": {bash}, "name": "bash"}}"#),
            Ok("deny"),
        ),
    ];
    // A first object alone is read as one record and the rest as JSON
    // Lines: the deep records come after a first good one.
    let good = r#"{"name": "search", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}"#;
    let mut text = format!("{good}\n");
    let mut expect = vec![Ok("allow")];
    for (record, outcome) in bad {
        text.push_str(&record);
        text.push('\n');
        expect.push(outcome);
        text.push_str(good);
        text.push('\n');
        expect.push(Ok("allow"));
    }
    (text, expect)
}

/// Checks the deep abandoned records with `--jobs {jobs}`: an error record
/// for each bad one, a verdict for each after it, exit 2, no crash.
fn deep_abandoned_records_with(jobs: &str) {
    let (input, expect) = deep_abandoned_records();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .args([
            "admission",
            "check",
            "-",
            "--format",
            "jsonl",
            "--jobs",
            jobs,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // A crashed checker stops reading: its status, not the broken pipe, is
    // what fails the test.
    let mut stdin = child.stdin.take().expect("stdin");
    let _ = stdin.write_all(input.as_bytes());
    drop(stdin);
    let out = child.wait_with_output().expect("output");
    assert_eq!(
        out.status.code(),
        Some(2),
        "--jobs {jobs}: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("jsonl"))
        .collect();
    assert_eq!(lines.len(), expect.len(), "--jobs {jobs}");
    for (i, (line, want)) in lines.iter().zip(&expect).enumerate() {
        match want {
            Err(fragment) => {
                let error = line["error"].as_str().unwrap_or_default();
                assert!(error.contains(fragment), "--jobs {jobs} record {i}: {line}");
            }
            Ok(verdict) => assert_eq!(
                line["verdict"], *verdict,
                "--jobs {jobs} record {i}: {line}"
            ),
        }
    }
}

#[test]
fn deep_records_abandoned_by_an_error_never_crash_one_thread() {
    deep_abandoned_records_with("1");
}

#[test]
fn deep_records_abandoned_by_an_error_never_crash_two_threads() {
    deep_abandoned_records_with("2");
}
