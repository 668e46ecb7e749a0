//! Integration tests of providers-gemini.

mod argv;
mod first_output;
mod parse;
