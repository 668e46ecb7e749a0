#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod error;
mod schemas;

pub use error::{Error, Violation};
pub use schemas::{ConfigKind, schema_text, validate};
