//! A format-preserving write of the settings document: only the top-level
//! keys whose values changed are re-rendered, each in place of its own
//! block of lines; every other byte of the file (comments, blank lines, key
//! order, quoting, indentation) is kept as it was.
//!
//! A top-level block is the key's line (a line at column 0 that is neither
//! blank, a comment, a sequence item nor a document marker) and everything
//! after it up to the next such line, less the blank and comment lines that
//! lead into the next key (those belong to what follows). A removed key's
//! block is dropped; a new key is appended at the end.
//!
//! The result is parsed back and must equal the document asked for; when it
//! does not (a flow-style `{...}` top level, anchors shared across keys, a
//! key spelled in a way this reader does not recognise) the caller falls
//! back to a full render, which is correct but loses the formatting.

use serde_json::{Map, Value};

use crate::document::Settings;

/// The new text for `after`, spliced into `text` (which parses to
/// `before`), or `None` when a splice cannot reproduce `after` exactly.
pub(crate) fn splice(text: &str, before: &Settings, after: &Settings) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let blocks = top_level_blocks(&lines);
    // Every key of the document must be found exactly once, or the text is
    // in a shape this reader does not follow.
    let mut found: Vec<&str> = blocks.iter().map(|b| b.key.as_str()).collect();
    found.sort_unstable();
    let mut expected: Vec<&str> = before.root.keys().map(String::as_str).collect();
    expected.sort_unstable();
    if found != expected {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut next = 0;
    for block in &blocks {
        let old = before.root.get(&block.key);
        let new = after.root.get(&block.key);
        if old == new {
            continue;
        }
        out.extend(lines[next..block.start].iter().copied());
        if let Some(value) = new {
            out.push_str(&render_entry(&block.key, value)?);
        }
        next = block.end;
    }
    out.extend(lines[next..].iter().copied());
    for (key, value) in &after.root {
        if before.root.contains_key(key) {
            continue;
        }
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&render_entry(key, value)?);
    }
    // The splice must say exactly what was asked for.
    match Settings::parse(out.as_bytes()) {
        Ok(back) if back == *after => Some(out),
        _ => None,
    }
}

/// One top-level key's lines: `start..end` in the file's lines.
struct Block {
    key: String,
    start: usize,
    end: usize,
}

fn top_level_blocks(lines: &[&str]) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    // The last line that belongs to the current block's content.
    let mut last_content = 0;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        let is_trivia = trimmed.trim().is_empty() || trimmed.trim_start().starts_with('#');
        if let Some(key) = top_level_key(trimmed) {
            if let Some(prev) = blocks.last_mut() {
                prev.end = last_content + 1;
            }
            blocks.push(Block {
                key,
                start: i,
                end: lines.len(),
            });
            last_content = i;
        } else if !is_trivia {
            last_content = i;
        }
    }
    if let Some(prev) = blocks.last_mut() {
        prev.end = last_content + 1;
    }
    blocks
}

/// The key a column-0 `key: ...` line opens, unquoted.
fn top_level_key(line: &str) -> Option<String> {
    let first = line.chars().next()?;
    if first.is_whitespace()
        || matches!(
            first,
            '#' | '-' | '{' | '[' | '?' | '&' | '*' | '!' | '|' | '>' | '%' | '@' | '`'
        )
        || line.starts_with("...")
    {
        return None;
    }
    match first {
        '"' | '\'' => {
            let rest = &line[1..];
            let close = rest.find(first)?;
            let after = rest[close + 1..].trim_start();
            if !after.starts_with(':') {
                return None;
            }
            let raw = &rest[..close];
            // Escapes inside quotes are not interpreted here: such a key is
            // left to the full render.
            if raw.contains('\\') || (first == '\'' && raw.contains('\'')) {
                return None;
            }
            Some(raw.to_owned())
        }
        _ => {
            let colon = line
                .char_indices()
                .find(|&(i, c)| {
                    c == ':' && line[i + 1..].chars().next().is_none_or(char::is_whitespace)
                })
                .map(|(i, _)| i)?;
            let key = line[..colon].trim_end();
            (!key.is_empty() && !key.contains(" #")).then(|| key.to_owned())
        }
    }
}

/// `key: value` as block YAML, ending in a newline.
fn render_entry(key: &str, value: &Value) -> Option<String> {
    let mut one = Map::new();
    one.insert(key.to_owned(), value.clone());
    let mut text = serde_saphyr::to_string(&Value::Object(one)).ok()?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Some(text)
}
