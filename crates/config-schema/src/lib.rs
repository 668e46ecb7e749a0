//! JSON Schemas of the runtime's configuration files, compiled once, with
//! errors that name the file, the JSON path and what was expected.
//!
//! The schemas are the files under `docs/schemas/` (compiled in with
//! `include_str!`, so the published file and the checked one are the same
//! text); [`validate`] checks a parsed document against one of them.
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod error;
mod schemas;

pub use error::{Error, Violation};
pub use schemas::{ConfigKind, schema_text, validate};
