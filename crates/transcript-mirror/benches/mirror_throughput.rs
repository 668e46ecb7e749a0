//! Mirror throughput against a bare serde_json parse (placeholder).
fn main() {}
