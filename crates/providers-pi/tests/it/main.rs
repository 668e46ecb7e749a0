//! Integration tests of providers-pi.

mod argv;
mod first_output;
mod parse;
