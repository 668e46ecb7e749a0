//! Parsing `codex exec --json` events.

use providers_core::{ErrorKind, FinalResult, StreamEvent, StreamParser, Usage};
use serde_json::{Map, Value};

/// The `exec --json` parser.
///
/// Terminal events: `turn.completed` (success), `turn.failed` (failure,
/// text from `error.message`), and the benign end-of-stream sentinel. A
/// top-level `error` event carries its text in `message`; it is reported
/// as a failure event but is not terminal by itself (codex emits
/// `Reconnecting... n/5` this way and often recovers). A stream that ends
/// with no terminal event is a failure, carrying the last error text seen.
#[derive(Debug, Default, Clone)]
pub struct CodexParser {
    thread_id: Option<String>,
    last_message: Option<String>,
    last_error: Option<String>,
    finished: bool,
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn u64_at(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// The error text of an event: top-level `message` for `error` events,
/// `error.message` for `turn.failed` (both shapes are checked for both).
pub fn error_text(event: &Value) -> Option<String> {
    str_at(event, "message")
        .or_else(|| event.get("error").and_then(|e| str_at(e, "message")))
        .or_else(|| str_at(event, "error"))
        .map(str::to_owned)
}

/// Whether an `error` event is the benign end-of-stream sentinel some codex
/// versions emit when a resumed session ends normally. All three must hold:
/// the type is exactly `error` (`turn.failed` never is); the *raw* `error`
/// value is exactly `{}` (an explicit `null` is a malformed envelope, a real
/// failure, even though it would normalise to `{}`); and the outer event has
/// no `code`, `message` or `status`.
pub fn is_benign_eos(event: &Map<String, Value>) -> bool {
    event.get("type").and_then(Value::as_str) == Some("error")
        && matches!(event.get("error"), Some(Value::Object(m)) if m.is_empty())
        && !["code", "message", "status"]
            .iter()
            .any(|k| event.contains_key(*k))
}

impl CodexParser {
    fn fail(&mut self, message: String) -> StreamEvent {
        self.finished = true;
        StreamEvent::Final(FinalResult {
            is_error: true,
            text: self.last_message.clone(),
            error: Some(message),
            subtype: None,
        })
    }

    fn item(&mut self, phase: &str, item: &Value, out: &mut Vec<StreamEvent>) {
        let id = str_at(item, "id").unwrap_or_default().to_owned();
        // Before 0.44 the item kind was `item_type`.
        let kind = str_at(item, "type").or_else(|| str_at(item, "item_type"));
        match (phase, kind) {
            ("item.completed", Some("agent_message" | "assistant_message")) => {
                if let Some(t) = str_at(item, "text") {
                    self.last_message = Some(t.to_owned());
                    out.push(StreamEvent::Text { text: t.to_owned() });
                }
            }
            ("item.completed", Some("reasoning")) => {
                if let Some(t) = str_at(item, "text") {
                    out.push(StreamEvent::Thinking { text: t.to_owned() });
                }
            }
            ("item.completed", Some("error")) => out.push(StreamEvent::error(
                ErrorKind::Warning,
                str_at(item, "message").unwrap_or("codex warning"),
            )),
            (
                "item.started",
                Some(k @ ("command_execution" | "mcp_tool_call" | "file_change" | "web_search")),
            ) => out.push(StreamEvent::ToolUse {
                id,
                name: tool_name(k, item),
                input: item.clone(),
            }),
            (
                "item.completed",
                Some("command_execution" | "mcp_tool_call" | "file_change" | "web_search"),
            ) => {
                let status = str_at(item, "status");
                let errored = item.get("error").is_some_and(|e| !e.is_null());
                out.push(StreamEvent::ToolResult {
                    id,
                    content: item.clone(),
                    is_error: errored || matches!(status, Some("failed" | "declined")),
                });
            }
            _ => {}
        }
    }
}

fn tool_name(kind: &str, item: &Value) -> String {
    match (kind, str_at(item, "server"), str_at(item, "tool")) {
        ("mcp_tool_call", Some(s), Some(t)) => format!("{s}.{t}"),
        _ => kind.to_owned(),
    }
}

impl StreamParser for CodexParser {
    fn parse_value(&mut self, v: &Value) -> Vec<StreamEvent> {
        let Some(obj) = v.as_object() else {
            return vec![StreamEvent::error(
                ErrorKind::BadShape,
                "event is not an object",
            )];
        };
        let Some(kind) = str_at(v, "type") else {
            return vec![StreamEvent::error(ErrorKind::BadShape, "event has no type")];
        };
        let mut out = Vec::new();
        match kind {
            "thread.started" | "session.created" => {
                if let Some(id) = str_at(v, "thread_id").or_else(|| str_at(v, "session_id")) {
                    self.thread_id = Some(id.to_owned());
                    out.push(StreamEvent::SessionId { id: id.to_owned() });
                }
            }
            "item.started" | "item.updated" | "item.completed" => {
                if let Some(item) = v.get("item") {
                    self.item(kind, item, &mut out);
                }
            }
            "turn.completed" => {
                if let Some(u) = v.get("usage") {
                    out.push(StreamEvent::Usage(Usage {
                        input_tokens: u64_at(u, "input_tokens"),
                        output_tokens: u64_at(u, "output_tokens"),
                        cached_input_tokens: u64_at(u, "cached_input_tokens"),
                        cache_write_tokens: u64_at(u, "cache_write_input_tokens"),
                        reasoning_tokens: u64_at(u, "reasoning_output_tokens"),
                        ..Usage::default()
                    }));
                }
                self.finished = true;
                out.push(StreamEvent::Final(FinalResult {
                    is_error: false,
                    text: self.last_message.clone(),
                    error: None,
                    subtype: None,
                }));
            }
            "turn.failed" => {
                let msg = error_text(v).unwrap_or_else(|| "turn failed".into());
                out.push(self.fail(msg));
            }
            // After the terminal event the run's outcome is settled: the
            // sentinel adds nothing, and anything else is reported without
            // a second terminal.
            "error" if self.finished && !is_benign_eos(obj) => {
                let msg = error_text(v).unwrap_or_else(|| "codex error after end of turn".into());
                out.push(StreamEvent::error(ErrorKind::Failed, msg));
            }
            "error" if self.finished => {}
            "error" => {
                if is_benign_eos(obj) {
                    self.finished = true;
                    out.push(StreamEvent::BenignEnd);
                } else {
                    match obj.get("error") {
                        // A malformed envelope is a real failure.
                        Some(Value::Null) => {
                            out.push(self.fail("malformed error envelope (error is null)".into()));
                        }
                        // `{}` beside code/message/status: a real failure.
                        Some(Value::Object(m)) if m.is_empty() => {
                            let msg = error_text(v).unwrap_or_else(|| "codex error".into());
                            out.push(self.fail(msg));
                        }
                        _ => {
                            let msg = error_text(v).unwrap_or_else(|| "codex error".into());
                            self.last_error = Some(msg.clone());
                            out.push(StreamEvent::error(ErrorKind::Failed, msg));
                        }
                    }
                }
            }
            _ => {}
        }
        out
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        vec![StreamEvent::error(
            ErrorKind::Incomplete,
            match &self.last_error {
                Some(e) => format!("stream ended without a terminal event; last error: {e}"),
                None => "stream ended without a terminal event".into(),
            },
        )]
    }

    fn resume_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }
}
