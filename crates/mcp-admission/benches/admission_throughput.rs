//! Verdict throughput over the public cases beside serde_json parsing, the
//! batch checker beside in-process verdicts, and the worst cases.
//!
//! `public_cases/verdicts` judges all 62 public cases per iteration;
//! `public_cases/parse` parses the same 62 schema texts with serde_json (the
//! floor a host pays anyway). `batch/checker` runs what `lionrt admission
//! check` runs per record (split the stream, parse the record, judge,
//! render a JSON line) over the public cases as JSON Lines, 20 copies, for
//! comparison with `batch/in_process` (the same verdicts on parsed
//! values). The worst cases are timed after parsing: a 50,000-branch anyOf,
//! nesting 5,000 deep (built programmatically) and a 1 MB enum.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcp_admission::batch::{Checker, OutputFormat};
use mcp_admission::validate_tool_admission;
use serde_json::{Map, Value, json};

const PUBLIC_CASES: &str = include_str!("../../../fixtures/admission/public_cases.jsonl");

struct Case {
    name: String,
    description: Option<String>,
    schema: Value,
    schema_text: String,
}

fn cases() -> Vec<Case> {
    PUBLIC_CASES
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|c| Case {
            name: c["name"].as_str().unwrap_or_default().to_owned(),
            description: c["description"].as_str().map(str::to_owned),
            schema_text: c["input_schema"].to_string(),
            schema: c["input_schema"].clone(),
        })
        .collect()
}

fn batch(c: &mut Criterion) {
    let cases = cases();
    let copies = 20;
    let mut jsonl = String::new();
    for i in 0..copies {
        for case in &cases {
            let record = json!({
                "id": i,
                "name": case.name,
                "description": case.description,
                "inputSchema": case.schema,
            });
            jsonl.push_str(&record.to_string());
            jsonl.push('\n');
        }
    }
    let records = (cases.len() * copies) as u64;
    let mut group = c.benchmark_group("batch");
    group.throughput(Throughput::Elements(records));
    group.bench_function("checker", |b| {
        b.iter(|| {
            let mut checker = Checker::new(OutputFormat::Jsonl, None);
            let mut out = String::with_capacity(1 << 20);
            for chunk in jsonl.as_bytes().chunks(1 << 16) {
                checker.feed(black_box(chunk), &mut out);
            }
            black_box(checker.finish(&mut out));
            black_box(out.len())
        });
    });
    group.bench_function("in_process", |b| {
        b.iter(|| {
            for _ in 0..copies {
                for case in &cases {
                    let _ = black_box(validate_tool_admission(
                        black_box(&case.name),
                        Some(black_box(&case.schema)),
                        case.description.as_deref(),
                    ));
                }
            }
        });
    });
    group.finish();
}

fn public_cases(c: &mut Criterion) {
    let cases = cases();
    let mut group = c.benchmark_group("public_cases");
    group.throughput(Throughput::Elements(cases.len() as u64));
    group.bench_function("verdicts", |b| {
        b.iter(|| {
            for case in &cases {
                let _ = black_box(validate_tool_admission(
                    black_box(&case.name),
                    Some(black_box(&case.schema)),
                    case.description.as_deref(),
                ));
            }
        });
    });
    group.bench_function("parse", |b| {
        b.iter(|| {
            for case in &cases {
                let v: Result<Value, _> = serde_json::from_str(black_box(&case.schema_text));
                let _ = black_box(v);
            }
        });
    });
    group.finish();
}

/// `{"type": "object", "properties": {"a": ...}}` nested `depth` times, built without recursion.
fn deep_schema(depth: usize) -> Value {
    // `json!` interpolation would clone the inner value: move it instead.
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

fn worst_cases(c: &mut Criterion) {
    let mut group = c.benchmark_group("worst_cases");
    group.sample_size(20);

    let any_of = json!({"anyOf": (0..50_000)
        .map(|i| json!({"type": "object", "properties": {format!("k{i}"): {"type": "string"}}}))
        .collect::<Vec<_>>()});
    group.bench_function("any_of_50000_branches", |b| {
        b.iter(|| {
            black_box(validate_tool_admission(
                "exec",
                Some(black_box(&any_of)),
                None,
            ))
        });
    });

    let deep = deep_schema(5_000);
    group.bench_function("nesting_5000_deep", |b| {
        b.iter(|| {
            black_box(validate_tool_admission(
                "exec",
                Some(black_box(&deep)),
                None,
            ))
        });
    });

    // About 1 MB of enum values.
    let values: Vec<Value> = (0..80_000)
        .map(|i| Value::from(format!("value-{i:06}")))
        .collect();
    let big_enum = json!({"type": "object", "additionalProperties": false,
                          "properties": {"mode": {"type": "string", "enum": values}}});
    group.bench_function("enum_1mb", |b| {
        b.iter(|| {
            black_box(validate_tool_admission(
                "exec",
                Some(black_box(&big_enum)),
                None,
            ))
        });
    });
    group.finish();

    // Dropping a 5,000-deep value recurses; give it a roomy stack.
    let dropper = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || drop(deep));
    if let Ok(handle) = dropper {
        let _ = handle.join();
    }
}

criterion_group!(benches, public_cases, batch, worst_cases);
criterion_main!(benches);
