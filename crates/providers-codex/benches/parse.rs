//! Event parsing throughput on the recorded Codex streams.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use providers_codex::CodexParser;
use providers_core::{StreamParser, parse_stream};

const STREAMS: &[(&str, &str)] = &[
    (
        "success",
        include_str!("../../../fixtures/providers/codex_exec_json_success.jsonl"),
    ),
    (
        "failed",
        include_str!("../../../fixtures/providers/codex_exec_json_failed.jsonl"),
    ),
    (
        "benign_eos",
        include_str!("../../../fixtures/providers/codex_exec_json_benign_eos.jsonl"),
    ),
];

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("codex_parse");
    for (name, text) in STREAMS {
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count() as u64;
        g.throughput(Throughput::Elements(lines));
        g.bench_function(*name, |b| {
            b.iter(|| {
                let mut p = CodexParser::default();
                let events = parse_stream(&mut p, std::hint::black_box(text));
                std::hint::black_box((events, p.resume_id().map(str::len)))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
