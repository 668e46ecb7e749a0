//! Integration tests for notify: one binary, one module per concern.

mod common;
mod envelope;
mod exec;
mod oracle;
mod redact;
mod registry;
mod scope;
mod settings;
