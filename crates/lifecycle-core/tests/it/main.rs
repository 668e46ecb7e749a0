//! Integration tests of lifecycle-core: one binary, one module per area.

mod artifacts;
mod decide;
mod health;
mod matrix;
mod policy;
mod reasons;
mod run_end;
