//! Activation of a trusted plugin with 20 declared files of 1 MB, beside a
//! bare sha256 of the same 20 MB with the same hashing crate.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use plugin_trust::{Config, Registry, Target};
use sha2::{Digest, Sha256};

const FILES: usize = 20;
const SIZE: usize = 1024 * 1024;

fn content(i: usize) -> Vec<u8> {
    (0..SIZE).map(|j| (j.wrapping_mul(31) ^ i) as u8).collect()
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bundle = tmp.path().join("plugins").join("big");
    std::fs::create_dir_all(bundle.join("packs")).expect("mkdir");
    let mut packs = Vec::new();
    let mut contents = Vec::new();
    for i in 0..FILES {
        let rel = format!("packs/p{i:02}.bin");
        let bytes = content(i);
        std::fs::write(bundle.join(&rel), &bytes).expect("write");
        packs.push(format!("'{rel}'"));
        contents.push(bytes);
    }
    std::fs::write(
        bundle.join("plugin.yaml"),
        format!(
            "name: big\nversion: '1'\nlionagi: '>=0.9'\ncapabilities:\n  packs: [{}]\n",
            packs.join(", ")
        ),
    )
    .expect("manifest");
    let registry = Registry::new(Config {
        plugin_roots: vec![tmp.path().join("plugins")],
        settings_path: tmp.path().join("settings.yaml"),
        ..Config::default()
    });
    registry.trust("big").expect("trust");
    let target = Target::Pack("packs/p00.bin".to_owned());
    registry.activate("big", &target).expect("warm");

    let mut group = c.benchmark_group("20x1MB");
    group.throughput(Throughput::Bytes((FILES * SIZE) as u64));
    group.bench_function("bare_sha256", |b| {
        b.iter(|| {
            for bytes in &contents {
                black_box(Sha256::digest(black_box(bytes)));
            }
        })
    });
    group.bench_function("activate", |b| {
        b.iter(|| black_box(registry.activate("big", &target).expect("activate")))
    });
    group.finish();
    interleaved_ratio(&registry, &target, &contents);
}

/// Criterion measures the two one after the other, so a load change on a
/// shared machine between them skews their ratio. This alternates them
/// round by round and reports the median of the per-round ratios.
#[allow(clippy::print_stdout, reason = "a bench reports on stdout")]
fn interleaved_ratio(registry: &Registry, target: &Target, contents: &[Vec<u8>]) {
    let mut ratios = Vec::new();
    for _ in 0..31 {
        let start = Instant::now();
        for bytes in contents {
            black_box(Sha256::digest(black_box(bytes)));
        }
        let bare = start.elapsed();
        let start = Instant::now();
        black_box(registry.activate("big", target).expect("activate"));
        let activation = start.elapsed();
        ratios.push(activation.as_secs_f64() / bare.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "activation / bare sha256, interleaved median of {}: {:.3}x",
        ratios.len(),
        ratios[ratios.len() / 2]
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
