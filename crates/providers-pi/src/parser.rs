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
///
/// pi reports usage per assistant message, so the run's usage is the sum
/// over its messages: each `message_end` adds its message's usage once and
/// reports the running total with that turn's model. The copies of a
/// message that `done`, `turn_end` and `agent_end` repeat are not counted
/// again; only a stream with no `message_end` at all takes its usage from
/// the end event's messages.
#[derive(Debug, Default, Clone)]
pub struct PiParser {
    session_id: Option<String>,
    model: Option<String>,
    /// The latest finished message's usage, until the end sums it up when no
    /// `message_end` came.
    usage: Option<Value>,
    /// The sum over `message_end` messages, and how many were added.
    total: UsageSum,
    counted: u64,
    last_text: Option<String>,
    stop_error: Option<String>,
    finished: bool,
}

/// Usage summed over messages; a count no message reported stays unknown.
#[derive(Debug, Default, Clone)]
struct UsageSum {
    input: Option<u64>,
    output: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
    total: Option<u64>,
    cost: Option<f64>,
}

impl UsageSum {
    fn add(&mut self, u: &Value) {
        let add = |slot: &mut Option<u64>, key: &str| {
            if let Some(n) = u.get(key).and_then(Value::as_u64) {
                *slot = Some(slot.unwrap_or(0).saturating_add(n));
            }
        };
        add(&mut self.input, "input");
        add(&mut self.output, "output");
        add(&mut self.cache_read, "cacheRead");
        add(&mut self.cache_write, "cacheWrite");
        add(&mut self.total, "totalTokens");
        if let Some(c) = u
            .get("cost")
            .and_then(|c| c.get("total"))
            .and_then(Value::as_f64)
            .filter(|c| c.is_finite())
        {
            self.cost = Some(self.cost.unwrap_or(0.0) + c);
        }
    }

    fn event(&self, model: Option<String>) -> StreamEvent {
        StreamEvent::Usage(Usage {
            input_tokens: self.input,
            output_tokens: self.output,
            cached_input_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
            total_tokens: self.total,
            cost_usd: self.cost,
            model,
            ..Usage::default()
        })
    }
}

fn is_assistant(m: &Value) -> bool {
    m.is_object() && str_at(m, "role").is_none_or(|r| r == "assistant")
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

    /// One assistant message ended: its usage joins the run's total.
    fn count(&mut self, m: &Value, out: &mut Vec<StreamEvent>) {
        if !is_assistant(m) {
            return;
        }
        self.remember(m);
        if let Some(u) = m.get("usage").filter(|u| u.is_object()) {
            self.total.add(u);
            self.counted += 1;
            out.push(self.total.event(self.model.clone()));
        }
    }

    /// The usage of a stream that had no `message_end`: the sum over the
    /// end event's assistant messages, else the last finished message's.
    fn fallback_usage(&self, end: &Value) -> Option<StreamEvent> {
        let mut sum = UsageSum::default();
        let mut any = false;
        for m in end
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|m| is_assistant(m))
        {
            if let Some(u) = m.get("usage").filter(|u| u.is_object()) {
                sum.add(u);
                any = true;
            }
        }
        if !any {
            sum.add(self.usage.as_ref()?);
        }
        Some(sum.event(self.model.clone()))
    }

    fn end(&mut self, end: &Value, out: &mut Vec<StreamEvent>) {
        if self.finished {
            return;
        }
        self.finished = true;
        if self.counted == 0 {
            out.extend(self.fallback_usage(end));
        }
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
                    self.count(m, &mut out);
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
                self.end(v, &mut out);
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
