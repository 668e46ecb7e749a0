//! Integration tests of the scheduler: real SQLite files, a real PostgreSQL
//! server (`LIONRT_TEST_PG`; those tests skip, saying why, when it is
//! unset), real legs through the runner, an injected clock (no sleeps in
//! the tests themselves).

mod apply;
mod cap;
mod common;
mod daemon;
mod kill;
mod lock;
mod model;
mod pg;
mod recheck;
