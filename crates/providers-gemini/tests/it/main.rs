//! Integration tests of providers-gemini.

mod argv;
mod effort;
mod first_output;
mod parse;
