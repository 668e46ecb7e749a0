//! The `lionrt` command line.

fn main() {}
