//! Integration tests of state-postgres against a real PostgreSQL server
//! (`LIONRT_TEST_PG`; every test skips, saying why, when it is unset).
#![allow(clippy::print_stderr, reason = "tests print why they skip")]

mod common;
mod contract;
mod crash;
mod engine;
mod listen;
mod metadata;
mod race;
mod reader;
mod runtime_drop;
mod service;
