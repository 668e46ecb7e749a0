//! Event parsing throughput on the recorded pi stream.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use providers_core::{StreamParser, parse_stream};
use providers_pi::PiParser;

const STREAMS: &[(&str, &str)] = &[(
    "events",
    include_str!("../../../fixtures/providers/pi_cli_events.jsonl"),
)];

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("pi_parse");
    for (name, text) in STREAMS {
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count() as u64;
        g.throughput(Throughput::Elements(lines));
        g.bench_function(*name, |b| {
            b.iter(|| {
                let mut p = PiParser::default();
                let events = parse_stream(&mut p, std::hint::black_box(text));
                std::hint::black_box((events, p.resume_id().map(str::len)))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
