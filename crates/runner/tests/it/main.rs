//! Integration tests of the runner: real legs, both recorders.

mod owner;
mod run;
