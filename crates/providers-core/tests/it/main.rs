//! Integration tests of providers-core: one binary, one module per area.

mod body;
mod copy;
mod effort;
mod endpoint;
mod flags;
mod mcp;
mod provider;
mod retry;
mod spawn;
