//! Parsing `--output-format stream-json` lines into stream events.

use providers_core::{ErrorKind, FinalResult, StreamEvent, StreamParser, Usage};
use serde_json::Value;

/// The stream-json parser. Success is read from `result.is_error`, never
/// from `subtype` alone (API failures arrive as `subtype:"success"` with
/// `is_error:true`).
#[derive(Debug, Default, Clone)]
pub struct ClaudeParser {
    session_id: Option<String>,
    finished: bool,
    /// The model `system/init` names (may carry a `[1m]` context suffix).
    init_model: Option<String>,
    /// The model of the latest real (not synthetic) assistant message.
    turn_model: Option<String>,
    /// The class and text of a synthetic API-error message, kept for the
    /// result, which carries the HTTP status.
    api_error: Option<(String, Option<String>)>,
}

/// The model id without the context-window suffix Claude Code appends to
/// it in `system/init` and `modelUsage` (`claude-opus-4-8[1m]`).
fn model_id(raw: &str) -> Option<String> {
    let id = raw.split_once('[').map_or(raw, |(id, _)| id).trim();
    (!id.is_empty() && id != "<synthetic>").then(|| id.to_owned())
}

fn u64_at(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

impl ClaudeParser {
    fn note_session(&mut self, v: &Value, out: &mut Vec<StreamEvent>) {
        if let Some(id) = str_at(v, "session_id")
            && self.session_id.as_deref() != Some(id)
        {
            self.session_id = Some(id.to_owned());
            out.push(StreamEvent::SessionId { id: id.to_owned() });
        }
    }

    fn assistant(&mut self, v: &Value, out: &mut Vec<StreamEvent>) {
        let message = v.get("message");
        // A synthetic API-error message names its class at the top level;
        // its text is the CLI's description of the error, not the model's
        // answer, and the `result` that follows carries the status.
        if let Some(code) = str_at(v, "error") {
            let text = message
                .and_then(|m| m.get("content"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|b| str_at(b, "text"))
                .collect::<Vec<_>>()
                .join("\n");
            self.api_error = Some((code.to_owned(), (!text.is_empty()).then_some(text)));
            return;
        }
        if let Some(model) = message.and_then(|m| str_at(m, "model")).and_then(model_id) {
            self.turn_model = Some(model);
        }
        let blocks = message
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array);
        for block in blocks.into_iter().flatten() {
            match str_at(block, "type") {
                Some("text") => {
                    if let Some(t) = str_at(block, "text") {
                        out.push(StreamEvent::Text { text: t.to_owned() });
                    }
                }
                Some("thinking") => {
                    if let Some(t) = str_at(block, "thinking") {
                        out.push(StreamEvent::Thinking { text: t.to_owned() });
                    }
                }
                Some("tool_use" | "server_tool_use") => out.push(StreamEvent::ToolUse {
                    id: str_at(block, "id").unwrap_or_default().to_owned(),
                    name: str_at(block, "name").unwrap_or_default().to_owned(),
                    input: block.get("input").cloned().unwrap_or(Value::Null),
                }),
                _ => {}
            }
        }
    }

    /// The run's model: the latest real assistant turn's, else the one
    /// `modelUsage` spent the most output on, else the one `init` named.
    fn run_model(&self, result: &Value) -> Option<String> {
        let by_usage = || {
            let models = result.get("modelUsage")?.as_object()?;
            models
                .iter()
                .max_by_key(|(_, u)| u64_at(u, "outputTokens").unwrap_or(0))
                .and_then(|(name, _)| model_id(name))
        };
        self.turn_model
            .clone()
            .or_else(by_usage)
            .or_else(|| self.init_model.as_deref().and_then(model_id))
    }

    fn user(v: &Value, out: &mut Vec<StreamEvent>) {
        let blocks = v
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array);
        for block in blocks.into_iter().flatten() {
            if str_at(block, "type") == Some("tool_result") {
                out.push(StreamEvent::ToolResult {
                    id: str_at(block, "tool_use_id").unwrap_or_default().to_owned(),
                    content: block.get("content").cloned().unwrap_or(Value::Null),
                    is_error: block
                        .get("is_error")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                });
            }
        }
    }

    fn result(&mut self, v: &Value, out: &mut Vec<StreamEvent>) {
        self.finished = true;
        if let Some(u) = v.get("usage") {
            out.push(StreamEvent::Usage(Usage {
                input_tokens: u64_at(u, "input_tokens"),
                output_tokens: u64_at(u, "output_tokens"),
                cached_input_tokens: u64_at(u, "cache_read_input_tokens"),
                cache_write_tokens: u64_at(u, "cache_creation_input_tokens"),
                cost_usd: v
                    .get("total_cost_usd")
                    .or_else(|| v.get("cost_usd"))
                    .and_then(Value::as_f64),
                model: self.run_model(v),
                num_turns: u64_at(v, "num_turns"),
                duration_ms: u64_at(v, "duration_ms"),
                ..Usage::default()
            }));
        }
        let is_error = v.get("is_error").and_then(Value::as_bool).unwrap_or(false);
        let text = str_at(v, "result").map(str::to_owned);
        let status = u64_at(v, "api_error_status").and_then(|s| u16::try_from(s).ok());
        let api_class = self.api_error.take();
        if is_error && (status.is_some() || api_class.is_some()) {
            let (class, said) = api_class.map_or((None, None), |(c, t)| (Some(c), t));
            out.push(StreamEvent::ApiError {
                class,
                status,
                message: said
                    .or_else(|| text.clone())
                    .unwrap_or_else(|| "the model API answered with an error".into()),
            });
        }
        let error = is_error.then(|| {
            let errors: Vec<&str> = v
                .get("errors")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if errors.is_empty() {
                text.clone()
                    .unwrap_or_else(|| "claude reported an error".into())
            } else {
                errors.join("; ")
            }
        });
        out.push(StreamEvent::Final(FinalResult {
            is_error,
            text,
            error,
            subtype: str_at(v, "subtype").map(str::to_owned),
        }));
    }
}

impl StreamParser for ClaudeParser {
    fn parse_value(&mut self, v: &Value) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        let Some(kind) = str_at(v, "type") else {
            return vec![StreamEvent::error(ErrorKind::BadShape, "event has no type")];
        };
        match kind {
            "system" if str_at(v, "subtype") == Some("init") => {
                if let Some(m) = str_at(v, "model") {
                    self.init_model = Some(m.to_owned());
                }
                self.note_session(v, &mut out);
            }
            "assistant" => {
                self.note_session(v, &mut out);
                self.assistant(v, &mut out);
            }
            "user" => Self::user(v, &mut out),
            // One run has one verdict: a second result is malformed input.
            "result" if self.finished => out.push(StreamEvent::error(
                ErrorKind::BadShape,
                "second result event ignored",
            )),
            "result" => {
                self.note_session(v, &mut out);
                self.result(v, &mut out);
            }
            // rate_limit_event, stream_event, tool_progress, ...: informational.
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
                "stream ended without a result event",
            )]
        }
    }

    fn resume_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }
}
