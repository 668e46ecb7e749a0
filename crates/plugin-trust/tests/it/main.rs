//! Integration tests of plugin-trust: one binary, one module per concern.

mod activation;
mod fixture;
mod hostile;
mod manifest;
mod props;
mod provider;
mod race;
mod settings;
mod support;
mod trust;
mod version;
