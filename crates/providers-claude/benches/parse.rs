//! Event parsing throughput on the recorded Claude streams.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use providers_claude::ClaudeParser;
use providers_core::{StreamParser, parse_stream};

const STREAMS: &[(&str, &str)] = &[
    (
        "success",
        include_str!("../../../fixtures/providers/claude_stream_json_success.jsonl"),
    ),
    (
        "error",
        include_str!("../../../fixtures/providers/claude_stream_json_error.jsonl"),
    ),
    (
        "api_error",
        include_str!("../../../fixtures/providers/claude_stream_json_api_error.jsonl"),
    ),
];

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("claude_parse");
    for (name, text) in STREAMS {
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count() as u64;
        g.throughput(Throughput::Elements(lines));
        g.bench_function(*name, |b| {
            b.iter(|| {
                let mut p = ClaudeParser::default();
                let events = parse_stream(&mut p, std::hint::black_box(text));
                std::hint::black_box((events, p.resume_id().map(str::len)))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
