//! The daemon's wire shapes: one `tools/call` of the batch tool carries
//! `{"ops": [{"verb", "params"}, ...]}` and is answered with a text block
//! holding `{"results": [...]}`, one result per op, in order.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::error::Error;

/// Recall memories.
pub(crate) const RECALL: &str = "memory.recall";
/// Compose recalled memories into one text.
pub(crate) const COMPOSE: &str = "memory.compose";
/// Attribute a recall to a profile (writes the brain's posteriors).
pub(crate) const AUTO_FEEDBACK: &str = "brain.auto_feedback";
/// Store a memory.
pub(crate) const REMEMBER: &str = "memory.remember";

/// One op of a batch.
pub(crate) fn op(verb: &str, params: Map<String, Value>) -> Value {
    json!({"verb": verb, "params": params})
}

/// A recalled memory.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[non_exhaustive]
pub struct Memory {
    /// The daemon's id for it.
    #[serde(default)]
    pub id: Option<String>,
    /// Its text.
    pub content: String,
    /// The recall score, when the daemon gives one.
    #[serde(default)]
    pub score: Option<f64>,
}

/// The longest daemon message kept in an error.
const MAX_DETAIL: usize = 300;

/// `text` cut to at most `max` bytes, at a character boundary.
pub(crate) fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The `results` array of a `tools/call` answer, checked to hold `n` items.
pub(crate) fn results(answer: &mcp_pool::ToolResult, n: usize) -> Result<Vec<Value>, Error> {
    let text = answer
        .result
        .get("content")
        .and_then(Value::as_array)
        .and_then(|blocks| {
            blocks
                .iter()
                .find_map(|b| b.get("text").and_then(Value::as_str))
        })
        .unwrap_or_default();
    if answer.is_error {
        return Err(Error::Refused {
            detail: truncate(text, MAX_DETAIL).to_owned(),
        });
    }
    let parsed: Value = serde_json::from_str(text).map_err(|e| Error::BadAnswer {
        detail: format!("the answer is not JSON: {e}"),
    })?;
    let Some(Value::Array(results)) = parsed.get("results").cloned() else {
        return Err(Error::BadAnswer {
            detail: "no results array".into(),
        });
    };
    if results.len() != n {
        return Err(Error::BadAnswer {
            detail: format!("{} results for {n} ops", results.len()),
        });
    }
    Ok(results)
}

/// The memories of a recall result.
pub(crate) fn memories(result: &Value) -> Result<Vec<Memory>, Error> {
    let items = result.get("items").cloned().unwrap_or(Value::Null);
    serde_json::from_value(items).map_err(|e| Error::BadAnswer {
        detail: format!("recall items: {e}"),
    })
}

/// The text of a compose result.
pub(crate) fn composed(result: &Value) -> Result<String, Error> {
    result
        .get("text")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| Error::BadAnswer {
            detail: "compose result without text".into(),
        })
}
