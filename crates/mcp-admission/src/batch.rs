//! Batch checking for CI (`lionrt admission check`): parse tool lists, judge, render.
//!
//! I/O-free: the caller reads the input text and prints what [`render`]
//! returns. Three input shapes are accepted: an MCP `tools/list` result
//! (`{"tools": [...]}`, also inside a JSON-RPC `{"result": {...}}`), a JSON
//! array of tools, or JSON Lines of `{id?, name, description,
//! input_schema | inputSchema}`.

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value, json};

use crate::admission::explain_tool_admission;
use crate::reason::{AdmissionDenied, Reason};

/// Exit code: every tool admitted.
pub const EXIT_ADMITTED: i32 = 0;
/// Exit code: at least one tool denied.
pub const EXIT_DENIED: i32 = 1;
/// Exit code: the input could not be read or parsed.
pub const EXIT_UNREADABLE: i32 = 2;

/// One tool descriptor to judge.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    /// The caller's id, echoed in the output (JSON Lines `id`), if any.
    pub id: Option<Value>,
    /// The advertised tool name.
    pub name: String,
    /// The tool description, if any.
    pub description: Option<String>,
    /// The input schema (`inputSchema` or `input_schema`), if any.
    pub input_schema: Option<Value>,
    /// 1-based input line the entry starts on, when known.
    pub line: Option<usize>,
}

/// The input could not be understood; names the line (and column for JSON
/// syntax errors), or the tool's index for a bad entry in a JSON list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line, when known (always for JSON Lines and JSON syntax errors).
    pub line: Option<usize>,
    /// 1-based column, for JSON syntax errors.
    pub column: Option<usize>,
    /// 0-based index of the offending tool in a JSON list.
    pub tool_index: Option<usize>,
    /// What is wrong, lowercase.
    pub message: String,
}

impl ParseError {
    fn at_line(line: usize, message: impl Into<String>) -> Self {
        Self {
            line: Some(line),
            column: None,
            tool_index: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, "line {line}, column {column}: ")?,
            (Some(line), None) => write!(f, "line {line}: ")?,
            _ => {}
        }
        if let Some(index) = self.tool_index {
            write!(f, "tool {index}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseError {}

/// The verdict for one entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The entry's id, echoed.
    pub id: Option<Value>,
    /// The advertised name.
    pub name: String,
    /// The input line of the entry, when known.
    pub line: Option<usize>,
    /// `None` when admitted.
    pub reason: Option<Reason>,
    /// The original gate's message when denied.
    pub message: Option<String>,
    /// What a denial rests on (see `AdmissionReport::detail`); empty when admitted.
    pub detail: String,
}

/// Output formats of [`render`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// A human-readable table.
    Table,
    /// One JSON object per line: `{"id", "name", "verdict", "reason"}`.
    Jsonl,
    /// SARIF 2.1.0, one rule per reason code.
    Sarif,
}

/// An unknown `--format` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFormat(pub String);

impl fmt::Display for UnknownFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown format {:?} (expected table, jsonl or sarif)",
            self.0
        )
    }
}

impl std::error::Error for UnknownFormat {}

impl FromStr for OutputFormat {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "table" | "human" => Ok(OutputFormat::Table),
            "jsonl" => Ok(OutputFormat::Jsonl),
            "sarif" => Ok(OutputFormat::Sarif),
            other => Err(UnknownFormat(other.to_owned())),
        }
    }
}

/// Parses tool descriptors from any of the three accepted shapes.
///
/// # Errors
///
/// [`ParseError`] naming the line (JSON Lines) or line and column (JSON) of
/// the first problem: invalid JSON, a missing `tools` list, an entry that is
/// not an object, a missing or non-string `name`, a non-string description.
pub fn parse_tools(text: &str) -> Result<Vec<ToolEntry>, ParseError> {
    // Editors on some platforms prefix a byte-order mark.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err(ParseError::at_line(
            1,
            "empty input: expected a tools/list result, a json array or json lines",
        ));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => entries_from_list(items),
        Ok(Value::Object(m)) => {
            if let Some(tools) = tools_list(&m) {
                entries_from_list(tools.clone())
            } else if m.contains_key("name") {
                // A single JSON Lines record.
                let line = text[..text.len() - trimmed.len()].matches('\n').count() + 1;
                Ok(vec![entry_from_value(Value::Object(m), Some(line), None)?])
            } else {
                Err(ParseError::at_line(
                    1,
                    "expected an object with a \"tools\" list",
                ))
            }
        }
        Ok(_) => Err(ParseError::at_line(
            1,
            "expected a tools/list result, a json array or json lines",
        )),
        Err(whole) => {
            // Not one document: JSON Lines if the first record parses alone.
            let first = text.lines().enumerate().find(|(_, l)| !l.trim().is_empty());
            let looks_like_lines = first.is_some_and(|(_, l)| {
                serde_json::from_str::<Value>(l).is_ok_and(|v| v.is_object())
            });
            if looks_like_lines {
                parse_json_lines(text)
            } else {
                Err(ParseError {
                    line: Some(whole.line()),
                    column: Some(whole.column()),
                    tool_index: None,
                    message: lowercase_first(&whole.to_string()),
                })
            }
        }
    }
}

fn tools_list(m: &Map<String, Value>) -> Option<&Vec<Value>> {
    if let Some(Value::Array(tools)) = m.get("tools") {
        return Some(tools);
    }
    match m.get("result") {
        Some(Value::Object(result)) => match result.get("tools") {
            Some(Value::Array(tools)) => Some(tools),
            _ => None,
        },
        _ => None,
    }
}

fn parse_json_lines(text: &str) -> Result<Vec<ToolEntry>, ParseError> {
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value = serde_json::from_str::<Value>(line)
            .map_err(|e| ParseError::at_line(i + 1, lowercase_first(&e.to_string())))?;
        entries.push(entry_from_value(value, Some(i + 1), None)?);
    }
    Ok(entries)
}

fn entries_from_list(items: Vec<Value>) -> Result<Vec<ToolEntry>, ParseError> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| entry_from_value(item, None, Some(i)))
        .collect()
}

fn entry_from_value(
    value: Value,
    line: Option<usize>,
    index: Option<usize>,
) -> Result<ToolEntry, ParseError> {
    let at = |what: &str| ParseError {
        line,
        column: None,
        tool_index: index,
        message: what.to_owned(),
    };
    let Value::Object(mut m) = value else {
        return Err(at("a tool must be a json object"));
    };
    let name = match m.remove("name") {
        Some(Value::String(name)) => name,
        Some(_) => return Err(at("\"name\" must be a string")),
        None => return Err(at("missing \"name\"")),
    };
    let description = match m.remove("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) => Some(d),
        Some(_) => return Err(at("\"description\" must be a string or null")),
    };
    let input_schema = m.remove("inputSchema").or_else(|| m.remove("input_schema"));
    Ok(ToolEntry {
        id: m.remove("id"),
        name,
        description,
        input_schema,
        line,
    })
}

/// serde_json's message, lowercase, without its trailing position (the
/// error carries the position itself).
fn lowercase_first(s: &str) -> String {
    let s = s.rfind(" at line ").map_or(s, |i| &s[..i]);
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Judges every entry.
pub fn check_tools(entries: &[ToolEntry]) -> Vec<ToolResult> {
    entries
        .iter()
        .map(|entry| {
            let report = explain_tool_admission(
                &entry.name,
                entry.input_schema.as_ref(),
                entry.description.as_deref(),
            );
            ToolResult {
                id: entry.id.clone(),
                name: entry.name.clone(),
                line: entry.line,
                reason: report.reason,
                message: report
                    .reason
                    .map(|r| AdmissionDenied::new(&entry.name, r).to_string()),
                detail: report.detail().unwrap_or_default(),
            }
        })
        .collect()
}

/// The process exit code for a set of results: 0 when all are admitted, 1 when any is denied.
pub fn exit_code(results: &[ToolResult]) -> i32 {
    if results.iter().any(|r| r.reason.is_some()) {
        EXIT_DENIED
    } else {
        EXIT_ADMITTED
    }
}

/// Renders results; `artifact_uri` names the input file in SARIF locations.
pub fn render(results: &[ToolResult], format: OutputFormat, artifact_uri: Option<&str>) -> String {
    match format {
        OutputFormat::Table => render_table(results),
        OutputFormat::Jsonl => render_jsonl(results),
        OutputFormat::Sarif => render_sarif(results, artifact_uri),
    }
}

fn id_text(id: Option<&Value>) -> String {
    match id {
        None | Some(Value::Null) => "-".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn render_table(results: &[ToolResult]) -> String {
    let rows: Vec<[String; 4]> = results
        .iter()
        .map(|r| {
            [
                id_text(r.id.as_ref()),
                r.name.escape_debug().to_string(),
                if r.reason.is_some() { "deny" } else { "allow" }.to_owned(),
                r.reason.map_or("-", Reason::as_str).to_owned(),
            ]
        })
        .collect();
    let header = ["ID", "NAME", "VERDICT", "REASON"];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: [&str; 4], detail: &str| {
        let mut l = String::new();
        for (i, cell) in cells.iter().enumerate() {
            l.push_str(cell);
            let pad = widths[i].saturating_sub(cell.chars().count());
            l.push_str(&" ".repeat(pad + 2));
        }
        l.push_str(detail);
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(header, "DETAIL");
    for (row, result) in rows.iter().zip(results) {
        let detail = if result.reason.is_some() {
            result.detail.as_str()
        } else {
            ""
        };
        line([&row[0], &row[1], &row[2], &row[3]], detail);
    }
    let denied = results.iter().filter(|r| r.reason.is_some()).count();
    out.push_str(&format!(
        "{} tools: {} admitted, {} denied\n",
        results.len(),
        results.len() - denied,
        denied
    ));
    out
}

fn render_jsonl(results: &[ToolResult]) -> String {
    let mut out = String::new();
    for r in results {
        let line = json!({
            "id": r.id.clone().unwrap_or(Value::Null),
            "name": r.name,
            "verdict": if r.reason.is_some() { "deny" } else { "allow" },
            "reason": r.reason.map(Reason::as_str),
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

fn rule_name(reason: Reason) -> String {
    reason
        .as_str()
        .split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn render_sarif(results: &[ToolResult], artifact_uri: Option<&str>) -> String {
    let rules: Vec<Value> = Reason::ALL
        .iter()
        .map(|r| {
            json!({
                "id": r.as_str(),
                "name": rule_name(*r),
                "shortDescription": {"text": format!("MCP tool refused: {}", r.as_str())},
                "fullDescription": {"text": r.explanation()},
                "defaultConfiguration": {"level": "error"},
                "help": {"text": "Expose a structured, bounded operation instead: enum/const-restricted fields and additionalProperties: false."},
            })
        })
        .collect();
    let sarif_results: Vec<Value> = results
        .iter()
        .filter_map(|r| {
            let reason = r.reason?;
            let index = Reason::ALL.iter().position(|x| *x == reason).unwrap_or(0);
            let mut result = json!({
                "ruleId": reason.as_str(),
                "ruleIndex": index,
                "level": "error",
                "message": {"text": r.message.clone().unwrap_or_default()},
                "locations": [{
                    "logicalLocations": [{"name": r.name, "kind": "function"}]
                }],
                "properties": {"detail": r.detail, "id": r.id.clone().unwrap_or(Value::Null)},
            });
            if let Some(uri) = artifact_uri {
                let mut physical = json!({"artifactLocation": {"uri": uri}});
                if let Some(line) = r.line {
                    physical["region"] = json!({"startLine": line});
                }
                result["locations"][0]["physicalLocation"] = physical;
            }
            Some(result)
        })
        .collect();
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "mcp-admission",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": sarif_results,
        }],
    });
    let mut out = serde_json::to_string_pretty(&doc).unwrap_or_default();
    out.push('\n');
    out
}
