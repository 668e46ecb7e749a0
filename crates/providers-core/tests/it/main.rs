//! Integration tests of providers-core: one binary, one module per area.

mod body;
mod effort;
mod flags;
mod mcp;
mod provider;
mod retry;
