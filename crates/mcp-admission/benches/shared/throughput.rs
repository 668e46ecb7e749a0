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
//!
//! `cli/*` spawns the release `lionrt` binary (build it first with
//! `cargo build --release -p lionrt`; `LIONRT_BIN` names another one) on a
//! JSON Lines file of the public cases, 1,000 copies (62,000 records):
//! `cli/lionrt_jsonl` runs `lionrt admission check --format jsonl FILE`
//! (one judging thread per core), `cli/lionrt_jsonl_jobs1` the same with
//! `--jobs 1`, and `cli/in_process_verdicts` judges the same records in
//! this process on parsed values. The figure is records/s of the binary
//! over verdicts/s in process. Without the binary the group is skipped, and
//! says so.
//!
//! Both figures are also printed as ratios measured interleaved (one run of
//! each side per iteration, so both see the same machine load):
//! `public_cases/interleaved` (verdicts ÷ parse, time), `cli/interleaved`
//! (binary records/s, one judging thread per core, ÷ in-process verdicts/s)
//! and `cli/interleaved_jobs1` (the same with `--jobs 1`).
//!
//! The groups are shared by two benches: `admission_throughput` (this
//! process on the system allocator) and `admission_throughput_mimalloc`
//! (this process on mimalloc, the `lionrt` binary's allocator, so the
//! in-process side runs on the same allocator as the binary).

use std::hint::black_box;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use mcp_admission::batch::{Checker, OutputFormat};
use mcp_admission::validate_tool_admission;
use serde_json::{Map, Value, json};

const PUBLIC_CASES: &str = include_str!("../../../../fixtures/admission/public_cases.jsonl");

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

/// One in-process verdict per case, through the public gate.
fn judge_all(cases: &[Case]) {
    for case in cases {
        let _ = black_box(validate_tool_admission(
            black_box(&case.name),
            Some(black_box(&case.schema)),
            case.description.as_deref(),
        ));
    }
}

/// The cases as JSON Lines tool records, `copies` times over (ids `0..copies`).
fn corpus(cases: &[Case], copies: usize) -> String {
    let mut jsonl = String::new();
    for i in 0..copies {
        for case in cases {
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
    jsonl
}

pub(crate) fn batch(c: &mut Criterion) {
    let cases = cases();
    let copies = 20;
    let jsonl = corpus(&cases, copies);
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
                judge_all(&cases);
            }
        });
    });
    group.finish();
}

pub(crate) fn public_cases(c: &mut Criterion) {
    let cases = cases();
    let mut group = c.benchmark_group("public_cases");
    group.throughput(Throughput::Elements(cases.len() as u64));
    group.bench_function("verdicts", |b| {
        b.iter(|| {
            judge_all(&cases);
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
    let totals = Totals::default();
    group.bench_function("interleaved", |b| {
        b.iter_custom(|iters| {
            let pair = interleaved(
                iters,
                || {
                    judge_all(&cases);
                },
                || {
                    for case in &cases {
                        let v: Result<Value, _> =
                            serde_json::from_str(black_box(&case.schema_text));
                        let _ = black_box(v);
                    }
                },
            );
            totals.add(iters, pair);
            pair.a + pair.b
        });
    });
    group.finish();
    totals.report("public_cases verdicts/parse (time)");
}

/// Times of `a` and `b` run alternately: totals, and each side's fastest
/// single run (the one least disturbed by other load on the machine).
#[derive(Clone, Copy)]
struct Pair {
    a: Duration,
    b: Duration,
    best_a: Duration,
    best_b: Duration,
}

impl Pair {
    fn swapped(self) -> Self {
        Self {
            a: self.b,
            b: self.a,
            best_a: self.best_b,
            best_b: self.best_a,
        }
    }
}

/// Runs `a` and `b` alternately `iters` times.
fn interleaved(iters: u64, mut a: impl FnMut(), mut b: impl FnMut()) -> Pair {
    let mut pair = Pair {
        a: Duration::ZERO,
        b: Duration::ZERO,
        best_a: Duration::MAX,
        best_b: Duration::MAX,
    };
    for _ in 0..iters {
        let start = Instant::now();
        a();
        let ta = start.elapsed();
        let start = Instant::now();
        b();
        let tb = start.elapsed();
        pair.a += ta;
        pair.b += tb;
        pair.best_a = pair.best_a.min(ta);
        pair.best_b = pair.best_b.min(tb);
    }
    pair
}

/// Interleaved totals over every sample of a bench (warm-up included).
#[derive(Default)]
struct Totals(std::cell::Cell<Option<(Pair, u64)>>);

impl Totals {
    fn add(&self, iters: u64, p: Pair) {
        let sum = match self.0.get() {
            None => (p, iters),
            Some((t, n)) => (
                Pair {
                    a: t.a + p.a,
                    b: t.b + p.b,
                    best_a: t.best_a.min(p.best_a),
                    best_b: t.best_b.min(p.best_b),
                },
                n + iters,
            ),
        };
        self.0.set(Some(sum));
    }

    /// Prints `a / b` over all samples, and over each side's fastest run.
    fn report(&self, what: &str) {
        let Some((t, n)) = self.0.get() else { return };
        let per = |d: Duration| d / u32::try_from(n).unwrap_or(u32::MAX);
        let ratio =
            |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(f64::MIN_POSITIVE);
        eprintln!(
            "{what}: {:.3} ({:?} / {:?} per iteration, {n} iterations interleaved); \
             fastest runs: {:.3} ({:?} / {:?})",
            ratio(t.a, t.b),
            per(t.a),
            per(t.b),
            ratio(t.best_a, t.best_b),
            t.best_a,
            t.best_b,
        );
    }
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

pub(crate) fn worst_cases(c: &mut Criterion) {
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

/// The `lionrt` binary to spawn: `LIONRT_BIN`, else the workspace's release build.
fn lionrt_binary() -> Option<PathBuf> {
    let path = match std::env::var_os("LIONRT_BIN") {
        Some(p) => PathBuf::from(p),
        None => {
            let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
                || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
                PathBuf::from,
            );
            target.join("release/lionrt")
        }
    };
    path.is_file().then_some(path)
}

pub(crate) fn cli(c: &mut Criterion) {
    let Some(bin) = lionrt_binary() else {
        eprintln!(
            "skipping cli/*: no lionrt binary (cargo build --release -p lionrt, or set LIONRT_BIN)"
        );
        return;
    };
    eprintln!("cli/*: spawning {}", bin.display());
    let cases = cases();
    let copies = 1_000;
    let jsonl = corpus(&cases, copies);
    let records = cases.len() * copies;
    let corpus =
        std::env::temp_dir().join(format!("mcp-admission-bench-{}.jsonl", std::process::id()));
    if let Err(e) = std::fs::write(&corpus, &jsonl) {
        eprintln!("skipping cli/*: writing {}: {e}", corpus.display());
        return;
    }
    drop(jsonl);
    let run = |jobs: &str, stdout: Stdio| {
        Command::new(&bin)
            .args(["admission", "check", "--format", "jsonl", "--jobs", jobs])
            .arg(&corpus)
            .stdout(stdout)
            .stderr(Stdio::null())
            .output()
            .expect("spawn lionrt")
    };
    // Once, checked: one verdict line per record, some denied (exit 1).
    let out = run("0", Stdio::piped());
    let lines = out.stdout.iter().filter(|b| **b == b'\n').count();
    if lines != records || out.status.code() != Some(1) {
        eprintln!(
            "skipping cli/*: {} gave {lines} lines for {records} records, exit {:?} \
             (a stale build? cargo build --release -p lionrt)",
            bin.display(),
            out.status.code()
        );
        let _ = std::fs::remove_file(&corpus);
        return;
    }

    let mut group = c.benchmark_group("cli");
    group.sample_size(10);
    group.throughput(Throughput::Elements(records as u64));
    for (label, jobs) in [("lionrt_jsonl", "0"), ("lionrt_jsonl_jobs1", "1")] {
        group.bench_function(label, |b| {
            b.iter(|| black_box(run(jobs, Stdio::null()).status));
        });
    }
    let in_process = || {
        for _ in 0..copies {
            judge_all(&cases);
        }
    };
    group.bench_function("in_process_verdicts", |b| b.iter(in_process));
    let mut reports = Vec::new();
    for (label, jobs) in [("interleaved", "0"), ("interleaved_jobs1", "1")] {
        let totals = Totals::default();
        group.bench_function(label, |b| {
            b.iter_custom(|iters| {
                let pair = interleaved(
                    iters,
                    || {
                        black_box(run(jobs, Stdio::null()).status);
                    },
                    in_process,
                );
                // Records/s of the binary over verdicts/s here: time here over time there.
                totals.add(iters, pair.swapped());
                pair.a + pair.b
            });
        });
        reports.push((jobs, totals));
    }
    group.finish();
    for (jobs, totals) in reports {
        totals.report(&format!(
            "cli records/s (--jobs {jobs}, {} cores) ÷ in-process verdicts/s",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        ));
    }
    let _ = std::fs::remove_file(&corpus);
}
