//! Verdict throughput, the batch checker and the `lionrt` binary against
//! in-process verdicts, with this process on the system allocator (see
//! `shared/throughput.rs` for what each group measures).

#![allow(clippy::print_stderr, reason = "the bench prints its ratios")]

#[path = "shared/throughput.rs"]
mod throughput;

use criterion::{criterion_group, criterion_main};
use throughput::{batch, cli, public_cases, worst_cases};

criterion_group!(benches, public_cases, batch, cli, worst_cases);
criterion_main!(benches);
