//! Integration tests of providers-gemini.

mod argv;
mod parse;
