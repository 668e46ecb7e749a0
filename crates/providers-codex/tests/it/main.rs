//! Integration tests of providers-codex: argv, MCP overrides, parsing,
//! runtime-only fields and the first-output gate.

mod argv;
mod config;
mod first_output;
mod parse;
mod plan;
mod runtime;
