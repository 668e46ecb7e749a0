//! Parsing `pi --mode json` events.

use providers_core::{ErrorKind, FinalResult, StreamEvent, StreamParser, Usage};
use serde_json::Value;

/// The pi event parser.
///
/// Raw lifecycle events (`agent_start`, `turn_start`, `message_start`, ...)
/// yield nothing: the first event is the first one carrying text, thinking
/// or tool content. `"done"` has two meanings and both are handled: a
/// top-level `done` ends the stream, an assistant-message `done` ends one
/// message; either may carry the final message, whose model and usage are
/// remembered.
#[derive(Debug, Default, Clone)]
pub struct PiParser {
    session_id: Option<String>,
    model: Option<String>,
    usage: Option<Value>,
    last_text: Option<String>,
    stop_error: Option<String>,
    finished: bool,
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn message_text(m: &Value) -> Option<String> {
    let parts: Vec<&str> = m
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| str_at(b, "type") == Some("text"))
        .filter_map(|b| str_at(b, "text"))
        .collect();
    (!parts.is_empty()).then(|| parts.concat())
}

impl PiParser {
    /// Captures model, usage, text and any error of a finished assistant
    /// message.
    fn remember(&mut self, m: &Value) {
        if !m.is_object() || str_at(m, "role").is_some_and(|r| r != "assistant") {
            return;
        }
        if let Some(model) = str_at(m, "model") {
            self.model = Some(model.to_owned());
        }
        if let Some(u) = m.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(u.clone());
        }
        if let Some(t) = message_text(m) {
            self.last_text = Some(t);
        }
        if matches!(str_at(m, "stopReason"), Some("error" | "aborted")) {
            self.stop_error = Some(
                str_at(m, "errorMessage")
                    .unwrap_or("pi run failed")
                    .to_owned(),
            );
        }
    }

    fn usage_event(&self) -> Option<StreamEvent> {
        let u = self.usage.as_ref()?;
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        Some(StreamEvent::Usage(Usage {
            input_tokens: n("input"),
            output_tokens: n("output"),
            cached_input_tokens: n("cacheRead"),
            cache_write_tokens: n("cacheWrite"),
            total_tokens: n("totalTokens"),
            cost_usd: u
                .get("cost")
                .and_then(|c| c.get("total"))
                .and_then(Value::as_f64),
            model: self.model.clone(),
            ..Usage::default()
        }))
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) {
        if self.finished {
            return;
        }
        self.finished = true;
        out.extend(self.usage_event());
        out.push(StreamEvent::Final(FinalResult {
            is_error: self.stop_error.is_some(),
            text: self.last_text.clone(),
            error: self.stop_error.clone(),
            subtype: None,
        }));
    }

    fn message_event(&mut self, e: &Value, out: &mut Vec<StreamEvent>) {
        match str_at(e, "type") {
            Some("text_delta") => {
                if let Some(d) = str_at(e, "delta") {
                    out.push(StreamEvent::Text { text: d.to_owned() });
                }
            }
            Some("thinking_delta") => {
                if let Some(d) = str_at(e, "delta") {
                    out.push(StreamEvent::Thinking { text: d.to_owned() });
                }
            }
            Some("toolcall_end") => {
                if let Some(c) = e.get("toolCall") {
                    out.push(StreamEvent::ToolUse {
                        id: str_at(c, "id").unwrap_or_default().to_owned(),
                        name: str_at(c, "name").unwrap_or_default().to_owned(),
                        input: c.get("arguments").cloned().unwrap_or(Value::Null),
                    });
                }
            }
            // One assistant message finished.
            Some("done") => {
                if let Some(m) = e.get("message") {
                    self.remember(m);
                }
            }
            Some("error") => {
                let m = e.get("error").or_else(|| e.get("message"));
                if let Some(m) = m {
                    self.remember(m);
                }
                let msg = m
                    .and_then(|m| str_at(m, "errorMessage"))
                    .unwrap_or("pi model error")
                    .to_owned();
                self.stop_error = Some(msg.clone());
                out.push(StreamEvent::error(ErrorKind::Failed, msg));
            }
            _ => {}
        }
    }
}

impl StreamParser for PiParser {
    fn parse_value(&mut self, v: &Value) -> Vec<StreamEvent> {
        let Some(kind) = str_at(v, "type") else {
            return vec![StreamEvent::error(ErrorKind::BadShape, "event has no type")];
        };
        let mut out = Vec::new();
        match kind {
            "session" => {
                if let Some(id) = str_at(v, "id") {
                    self.session_id = Some(id.to_owned());
                    out.push(StreamEvent::SessionId { id: id.to_owned() });
                }
            }
            "message_update" => {
                if let Some(e) = v.get("assistantMessageEvent") {
                    self.message_event(e, &mut out);
                }
            }
            "message_end" => {
                if let Some(m) = v.get("message") {
                    self.remember(m);
                }
            }
            "tool_execution_end" => out.push(StreamEvent::ToolResult {
                id: str_at(v, "toolCallId").unwrap_or_default().to_owned(),
                content: v.get("result").cloned().unwrap_or(Value::Null),
                is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
            }),
            // End of stream, in either spelling.
            "done" | "agent_end" => {
                if let Some(m) = v.get("message") {
                    self.remember(m);
                }
                if let Some(ms) = v.get("messages").and_then(Value::as_array)
                    && let Some(last) = ms
                        .iter()
                        .rev()
                        .find(|m| str_at(m, "role") == Some("assistant"))
                {
                    self.remember(last);
                }
                self.end(&mut out);
            }
            _ => {}
        }
        out
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        if self.finished {
            Vec::new()
        } else {
            vec![StreamEvent::error(
                ErrorKind::Incomplete,
                "stream ended without agent_end or done",
            )]
        }
    }

    fn resume_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }
}
