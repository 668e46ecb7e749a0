//! Integration tests of providers-pi.

mod argv;
mod parse;
