//! Outbox benches.
fn main() {}
