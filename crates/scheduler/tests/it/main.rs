//! Integration tests of the scheduler: real SQLite files, real legs through
//! the runner, an injected clock (no sleeps in the tests themselves).

mod apply;
mod common;
mod daemon;
mod model;
