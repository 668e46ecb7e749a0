//! Integration tests of providers-core: one binary, one module per area.

mod body;
mod effort;
mod endpoint;
mod flags;
mod mcp;
mod model;
mod provider;
mod registry;
mod retry;
