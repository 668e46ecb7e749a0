//! Parsing agy's single JSON result (and the Gemini CLI's document).

use providers_core::{ErrorKind, FinalResult, StreamEvent, StreamParser, Usage};
use serde_json::Value;

/// Parses agy `--output-format json`: exactly one terminal object, consumed
/// as one NDJSON record. agy surfaces no per-tool events on stdout, so no
/// tool events are ever yielded.
#[derive(Debug, Default, Clone)]
pub struct AgyParser {
    conversation_id: Option<String>,
    finished: bool,
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn u64_at(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

impl StreamParser for AgyParser {
    fn parse_value(&mut self, v: &Value) -> Vec<StreamEvent> {
        let known = ["status", "response", "result", "error", "conversation_id"];
        if !v
            .as_object()
            .is_some_and(|o| known.iter().any(|k| o.contains_key(*k)))
        {
            return vec![StreamEvent::error(
                ErrorKind::BadShape,
                "not an agy result object",
            )];
        }
        if self.finished {
            return vec![StreamEvent::error(
                ErrorKind::BadShape,
                "extra object after the result",
            )];
        }
        let mut out = Vec::new();
        if let Some(id) = str_at(v, "conversation_id") {
            self.conversation_id = Some(id.to_owned());
            out.push(StreamEvent::SessionId { id: id.to_owned() });
        }
        // Older builds used `result` for the text.
        let text = str_at(v, "response")
            .or_else(|| str_at(v, "result"))
            .map(str::to_owned);
        if let Some(t) = &text
            && !t.is_empty()
        {
            out.push(StreamEvent::Text { text: t.clone() });
        }
        if let Some(u) = v.get("usage") {
            out.push(StreamEvent::Usage(Usage {
                input_tokens: u64_at(u, "input_tokens"),
                output_tokens: u64_at(u, "output_tokens"),
                cached_input_tokens: u64_at(u, "cache_read_tokens"),
                reasoning_tokens: u64_at(u, "thinking_tokens"),
                total_tokens: u64_at(u, "total_tokens"),
                ..Usage::default()
            }));
        }
        let status = str_at(v, "status");
        let error = str_at(v, "error").filter(|e| !e.is_empty());
        // Anything other than SUCCESS is a failure; a missing status with
        // an error string too.
        let ok = status.is_some_and(|s| s.eq_ignore_ascii_case("success"))
            || (status.is_none() && error.is_none() && text.is_some());
        self.finished = true;
        out.push(StreamEvent::Final(FinalResult {
            is_error: !ok,
            text: match v.get("structured_output") {
                Some(s) if !s.is_null() => Some(s.to_string()),
                _ => text,
            },
            error: (!ok).then(|| error.unwrap_or("agy reported failure").to_owned()),
            subtype: status.map(str::to_owned),
        }));
        out
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        if self.finished {
            Vec::new()
        } else {
            vec![StreamEvent::error(
                ErrorKind::Incomplete,
                "agy printed no result object",
            )]
        }
    }

    fn resume_id(&self) -> Option<&str> {
        self.conversation_id.as_deref()
    }
}

/// Parses a whole agy stdout, calling the tool callbacks where another
/// provider would. They are accepted for interface parity only: agy's
/// JSON output has no per-tool events, so they are never called.
pub fn parse_with_tool_callbacks(
    stdout: &str,
    mut on_tool_use: impl FnMut(&StreamEvent),
    mut on_tool_result: impl FnMut(&StreamEvent),
) -> Vec<StreamEvent> {
    let events = providers_core::parse_stream(&mut AgyParser::default(), stdout);
    for e in &events {
        match e {
            StreamEvent::ToolUse { .. } => on_tool_use(e),
            StreamEvent::ToolResult { .. } => on_tool_result(e),
            _ => {}
        }
    }
    events
}

/// The JSON of an `AGY_ERROR: {...}` stderr line (agy 1.2.6+), opaque.
pub fn parse_agy_error_line(line: &str) -> Option<Value> {
    let rest = line.trim().strip_prefix("AGY_ERROR:")?;
    serde_json::from_str(rest.trim()).ok()
}

/// Parses the Gemini CLI's `-o json` output: one pretty-printed document on
/// stdout, or on failure a `{session_id, error:{type,message,code}}` object
/// on stderr (possibly behind an `[ERROR] ` prefix).
pub fn parse_gemini_cli_output(stdout: &str, stderr: &str) -> Vec<StreamEvent> {
    let doc = serde_json::from_str::<Value>(stdout.trim())
        .ok()
        .or_else(|| first_object(stderr));
    let Some(doc) = doc.filter(Value::is_object) else {
        return vec![StreamEvent::error(
            ErrorKind::Incomplete,
            "gemini printed no json document",
        )];
    };
    let mut out = Vec::new();
    if let Some(id) = str_at(&doc, "session_id") {
        out.push(StreamEvent::SessionId { id: id.to_owned() });
    }
    let text = str_at(&doc, "response").map(str::to_owned);
    if let Some(t) = &text {
        out.push(StreamEvent::Text { text: t.clone() });
    }
    let models = doc
        .get("stats")
        .and_then(|s| s.get("models"))
        .and_then(Value::as_object);
    for (model, m) in models.into_iter().flatten() {
        if let Some(t) = m.get("tokens") {
            out.push(StreamEvent::Usage(Usage {
                input_tokens: u64_at(t, "prompt"),
                output_tokens: u64_at(t, "candidates"),
                cached_input_tokens: u64_at(t, "cached"),
                reasoning_tokens: u64_at(t, "thoughts"),
                total_tokens: u64_at(t, "total"),
                model: Some(model.clone()),
                ..Usage::default()
            }));
        }
    }
    let error = doc.get("error").filter(|e| !e.is_null());
    out.push(StreamEvent::Final(FinalResult {
        is_error: error.is_some(),
        text,
        error: error.map(|e| str_at(e, "message").map_or_else(|| e.to_string(), str::to_owned)),
        subtype: error.and_then(|e| str_at(e, "type")).map(str::to_owned),
    }));
    out
}

fn first_object(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let mut de = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
    de.next()?.ok()
}
