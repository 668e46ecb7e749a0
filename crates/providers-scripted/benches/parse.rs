//! Event parsing throughput on a scripted leg's NDJSON.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use providers_core::{StreamParser, parse_stream};
use providers_scripted::{Response, ScriptedParser, response_to_ndjson};

fn bench(c: &mut Criterion) {
    let text = response_to_ndjson(
        "s-1",
        &Response::Stream {
            chunks: (0..32)
                .map(|i| format!("chunk {i} of the scripted answer"))
                .collect(),
        },
    );
    let lines = text.lines().count() as u64;
    let mut g = c.benchmark_group("scripted_parse");
    g.throughput(Throughput::Elements(lines));
    g.bench_function("stream_32", |b| {
        b.iter(|| {
            let mut p = ScriptedParser::default();
            let events = parse_stream(&mut p, std::hint::black_box(&text));
            std::hint::black_box((events, p.resume_id().map(str::len)))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
