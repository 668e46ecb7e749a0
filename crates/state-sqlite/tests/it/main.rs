//! Integration tests of state-sqlite against real database files.

mod common;
mod contract;
mod engine;
mod history_ids;
mod hooks;
mod legacy;
mod metadata;
mod overview;
mod owner_host;
mod race;
mod service;
mod tables;
