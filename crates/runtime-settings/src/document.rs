//! The parsed settings document: a mapping whose sections are read through
//! typed views ([`crate::LookupConfig`] for `secrets.lookup`, the plugin
//! trust sections); keys no view owns are kept as they are on write.

use std::io;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::Error;

/// The settings document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub(crate) root: Map<String, Value>,
}

/// Why a document did not parse, before the path is known.
#[derive(Debug)]
pub(crate) enum ParseError {
    NotUtf8,
    Invalid(String),
}

impl ParseError {
    pub(crate) fn at(self, path: &Path) -> Error {
        match self {
            ParseError::NotUtf8 => Error::NotUtf8 {
                path: path.to_owned(),
            },
            ParseError::Invalid(reason) => Error::Invalid {
                path: path.to_owned(),
                reason,
            },
        }
    }
}

impl Settings {
    /// Parses a document: YAML (so JSON too) whose top level is a mapping,
    /// or empty. Sections are checked by their views, not here, so a
    /// malformed section of one owner does not hide another's.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Settings, ParseError> {
        let text = std::str::from_utf8(bytes).map_err(|_| ParseError::NotUtf8)?;
        let value: Value =
            serde_saphyr::from_str(text).map_err(|e| ParseError::Invalid(e.to_string()))?;
        match value {
            Value::Null => Ok(Settings::default()),
            Value::Object(root) => Ok(Settings { root }),
            _ => Err(ParseError::Invalid(
                "the document is not a mapping".to_owned(),
            )),
        }
    }

    /// Parses a document from text.
    ///
    /// # Errors
    /// [`Error::Invalid`] (with an empty path) when it is not YAML or not a
    /// mapping.
    pub fn from_yaml(text: &str) -> Result<Settings, Error> {
        Settings::parse(text.as_bytes()).map_err(|e| e.at(Path::new("")))
    }

    /// The top-level value under `key` (any owner's section, read-only), if
    /// the document has it.
    pub fn section(&self, key: &str) -> Option<&Value> {
        self.root.get(key)
    }

    pub(crate) fn render(&self) -> io::Result<String> {
        serde_saphyr::to_string(&Value::Object(self.root.clone())).map_err(io::Error::other)
    }
}
