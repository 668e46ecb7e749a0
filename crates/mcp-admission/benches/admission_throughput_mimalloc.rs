//! The `batch` and `cli` groups with this process on mimalloc, the `lionrt`
//! binary's allocator: the in-process verdicts (the denominator of the CLI
//! ratio) run on the same allocator as the binary (see
//! `shared/throughput.rs` for what each group measures).

#![allow(clippy::print_stderr, reason = "the bench prints its ratios")]

#[path = "shared/throughput.rs"]
#[allow(dead_code, reason = "only the batch and cli groups run on mimalloc")]
mod throughput;

use criterion::{criterion_group, criterion_main};
use throughput::{batch, cli};

/// The allocator of the `lionrt` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

criterion_group!(benches, batch, cli);
criterion_main!(benches);
