//! Integration tests of the transcript mirror: real SQLite files, real
//! transcript files, real worker processes.

mod bad_input;
mod common;
mod concurrent;
mod lineage;
mod liveness;
mod mirror;
mod scaffold;
