//! The outbox's integration tests: one binary (house style).

mod common;
mod contract;
mod model;
mod process;
mod purge;
mod scan;
mod schema;
mod transport;
