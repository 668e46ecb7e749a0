//! Integration tests of the transcript mirror: real SQLite files, a real
//! PostgreSQL server (when `LIONRT_TEST_PG` names one), real transcript
//! files, real worker processes.

mod bad_input;
mod common;
mod concurrent;
mod lineage;
mod liveness;
mod mirror;
mod postgres;
mod scaffold;
