//! Command templates: an argv whose placeholder elements are replaced by
//! whole values, never spliced into a string and never given to a shell.

use std::ffi::OsString;

use serde::{Deserialize, Serialize};

use crate::error::OutboxError;

/// The placeholders a template element may be, each replaced by one whole
/// argv element.
pub const PLACEHOLDERS: [&str; 4] = ["{payload}", "{deliver_to}", "{id}", "{attempt}"];

/// A validated command template: a non-empty argv (`argv[0]` is the program,
/// run by direct exec). An element equal to a placeholder becomes exactly one
/// argument holding the value's bytes; an element that merely *contains* a
/// placeholder (`--msg={payload}`) is refused, because splicing values into
/// a larger token is how quoting bugs start (the spec leaves it open; we
/// fail closed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<String>", into = "Vec<String>")]
pub struct Template(Vec<String>);

/// The values a template is filled with.
#[derive(Debug, Clone, Copy)]
pub struct Fill<'a> {
    /// The row id.
    pub id: &'a str,
    /// The payload.
    pub payload: &'a str,
    /// The destination.
    pub deliver_to: Option<&'a str>,
    /// The attempt number being sent (1-based).
    pub attempt: u32,
}

impl Template {
    /// Validates `argv`.
    pub fn new(argv: Vec<String>) -> Result<Self, OutboxError> {
        let Some(program) = argv.first() else {
            return Err(OutboxError::Template("the template is empty".into()));
        };
        if program.is_empty() {
            return Err(OutboxError::Template(
                "the program (argv[0]) is empty".into(),
            ));
        }
        if PLACEHOLDERS.contains(&program.as_str()) {
            return Err(OutboxError::Template(format!(
                "argv[0] may not be a placeholder ({program})"
            )));
        }
        for (i, element) in argv.iter().enumerate() {
            if PLACEHOLDERS.contains(&element.as_str()) {
                continue;
            }
            if let Some(p) = PLACEHOLDERS.iter().find(|p| element.contains(*p)) {
                return Err(OutboxError::Template(format!(
                    "argv[{i}] {element:?} embeds {p}; a placeholder must be a whole element"
                )));
            }
        }
        Ok(Template(argv))
    }

    /// The template's elements.
    pub fn argv(&self) -> &[String] {
        &self.0
    }

    /// The argv with placeholders replaced, one element per value.
    pub fn fill(&self, fill: &Fill<'_>) -> Result<Vec<OsString>, OutboxError> {
        let attempt = fill.attempt.to_string();
        self.0
            .iter()
            .map(|element| {
                Ok(OsString::from(match element.as_str() {
                    "{payload}" => fill.payload,
                    "{id}" => fill.id,
                    "{attempt}" => attempt.as_str(),
                    "{deliver_to}" => fill.deliver_to.ok_or_else(|| {
                        OutboxError::Template(format!(
                            "the template names {{deliver_to}} but dispatch {} has none",
                            fill.id
                        ))
                    })?,
                    other => other,
                }))
            })
            .collect()
    }
}

impl TryFrom<Vec<String>> for Template {
    type Error = OutboxError;

    fn try_from(argv: Vec<String>) -> Result<Self, OutboxError> {
        Template::new(argv)
    }
}

impl From<Template> for Vec<String> {
    fn from(t: Template) -> Self {
        t.0
    }
}
