//! Integration tests of providers-codex: argv, MCP overrides, parsing.

mod argv;
mod parse;
