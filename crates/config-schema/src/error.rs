//! The crate's error type: every violation of one file, each by JSON path.

use std::fmt;
use std::path::PathBuf;

/// One place a document breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The JSON pointer of the offending value (`""` is the document).
    pub path: String,
    /// What was expected there, without the value itself.
    pub expected: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        write!(f, "at {path}: {}", self.expected)
    }
}

/// Why a configuration file was refused.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The document breaks its schema.
    #[error("{file}: does not match the {schema} schema: {}", join(.violations))]
    Invalid {
        /// The file, as the caller named it.
        file: PathBuf,
        /// Which schema (`settings`, `plugin`, ...).
        schema: &'static str,
        /// Every violation, in document order.
        violations: Vec<Violation>,
    },
    /// A published schema did not compile (a bug in this crate).
    #[error("the {schema} schema does not compile: {reason}")]
    Schema {
        /// Which schema.
        schema: &'static str,
        /// The compiler's message.
        reason: String,
    },
}

fn join(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl Error {
    /// The violations, empty for [`Error::Schema`].
    pub fn violations(&self) -> &[Violation] {
        match self {
            Error::Invalid { violations, .. } => violations,
            Error::Schema { .. } => &[],
        }
    }
}
