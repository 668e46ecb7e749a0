//! Codex session lines (`~/.codex/sessions/**/rollout-*.jsonl`).
//!
//! Each line is `{timestamp, type, payload}`. `session_meta` names the
//! session and its cwd, `turn_context` the model. `response_item`s carry the
//! conversation: `message` (user and assistant text; the injected
//! environment and instruction preambles are skipped), tool calls
//! (`function_call`, `custom_tool_call`, `local_shell_call`) and their
//! outputs. `event_msg` lines repeat what the response items already hold
//! and are counted and skipped, like reasoning and unknown types.

use std::borrow::Cow;

use crate::json::{LineError, Scan, parse_all, whole_value};
use crate::parse::{
    Batch, FileState, LineStats, Verdict, action_request, action_response, object1,
};

#[derive(Default)]
struct Line<'a> {
    timestamp: Option<Cow<'a, str>>,
    kind: Option<Cow<'a, str>>,
    payload: Option<&'a str>,
}

impl<'a> Line<'a> {
    fn read(s: &mut Scan<'a>) -> Result<Self, LineError> {
        let mut l = Line::default();
        s.record(&["timestamp", "type", "payload"], |s, field| {
            match field {
                0 => l.timestamp = s.opt_str()?,
                1 => l.kind = s.opt_str()?,
                _ => l.payload = s.opt_raw()?,
            }
            Ok(())
        })?;
        Ok(l)
    }
}

#[derive(Default)]
struct Payload<'a> {
    kind: Option<Cow<'a, str>>,
    id: Option<Cow<'a, str>>,
    cwd: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    role: Option<Cow<'a, str>>,
    content: Option<&'a str>,
    name: Option<Cow<'a, str>>,
    arguments: Option<Cow<'a, str>>,
    input: Option<&'a str>,
    action: Option<&'a str>,
    call_id: Option<Cow<'a, str>>,
    output: Option<&'a str>,
}

impl<'a> Payload<'a> {
    fn read(s: &mut Scan<'a>) -> Result<Self, LineError> {
        let mut p = Payload::default();
        s.record(
            &[
                "type",
                "id",
                "cwd",
                "model",
                "role",
                "content",
                "name",
                "arguments",
                "input",
                "action",
                "call_id",
                "output",
            ],
            |s, field| {
                match field {
                    0 => p.kind = s.opt_str()?,
                    1 => p.id = s.opt_str()?,
                    2 => p.cwd = s.opt_str()?,
                    3 => p.model = s.opt_str()?,
                    4 => p.role = s.opt_str()?,
                    5 => p.content = s.opt_raw()?,
                    6 => p.name = s.opt_str()?,
                    7 => p.arguments = s.opt_str()?,
                    8 => p.input = s.opt_raw()?,
                    9 => p.action = s.opt_raw()?,
                    10 => p.call_id = s.opt_str()?,
                    _ => p.output = s.opt_raw()?,
                }
                Ok(())
            },
        )?;
        Ok(p)
    }
}

/// A message's content blocks: only their text is read (kept raw).
fn text_blocks<'a>(s: &mut Scan<'a>) -> Result<Vec<Option<&'a str>>, LineError> {
    let mut blocks = Vec::new();
    s.array(|s| {
        let mut text = None;
        s.record(&["text"], |s, _| {
            text = s.opt_raw()?;
            Ok(())
        })?;
        blocks.push(text);
        Ok(())
    })?;
    Ok(blocks)
}

const PREAMBLES: &[&str] = &[
    "\"<environment_context>",
    "\"<user_instructions>",
    "\"# AGENTS.md instructions",
];

/// Handles one line; `Err` when it is not a rollout object.
pub(crate) fn line(
    st: &mut FileState,
    batch: &mut Batch,
    stats: &mut LineStats,
    bytes: &[u8],
    offset: u64,
) -> Result<Verdict, LineError> {
    let l = parse_all(bytes, Line::read)?;
    let kind = l.kind.as_deref().unwrap_or("");
    let p: Option<Payload<'_>> = match (kind, l.payload) {
        ("session_meta" | "turn_context" | "response_item", Some(raw)) => {
            Some(parse_all(raw.as_bytes(), Payload::read)?)
        }
        _ => None,
    };
    let Some(p) = p else {
        stats.skip(if kind.is_empty() { "(untyped)" } else { kind });
        return Ok(Verdict::Skipped);
    };
    let at = st.time(l.timestamp.as_deref());
    if let Some(cwd) = p.cwd.as_deref() {
        st.set_cwd(cwd);
    }
    match kind {
        "session_meta" => {
            if let Some(id) = p.id.as_deref().filter(|i| !i.is_empty())
                && st.id_open
            {
                st.set_session_id(id.to_owned());
                st.id_open = false;
            }
            stats.skip(kind);
            return Ok(Verdict::Skipped);
        }
        "turn_context" => {
            if let Some(m) = p.model.as_deref() {
                st.set_model(m);
            }
            stats.skip(kind);
            return Ok(Verdict::Skipped);
        }
        _ => {}
    }
    st.id_open = false;
    let item = p.kind.as_deref().unwrap_or("");
    let key = format!("@{offset}");
    let before = batch.messages.len();
    let mut skipped_blocks = 0;
    match item {
        "message" => {
            let (role, text_key) = match p.role.as_deref() {
                Some("user") => ("user", "instruction"),
                Some("assistant") => ("assistant", "assistant_response"),
                _ => {
                    stats.skip("response_item/message (other role)");
                    return Ok(Verdict::Skipped);
                }
            };
            if let Some(raw) = p.content {
                let blocks = parse_all(raw.as_bytes(), text_blocks)?;
                for (i, t) in blocks.iter().enumerate() {
                    let Some(t) = *t else { continue };
                    if role == "user" && PREAMBLES.iter().any(|pre| t.starts_with(pre)) {
                        stats.skip("response_item/message (preamble)");
                        skipped_blocks += 1;
                        continue;
                    }
                    let id = st.timed_id(at, &[&key, crate::parse::decimal(i, &mut [0; 20])]);
                    batch.push(id, role, object1(text_key, t), at + i as i64);
                }
            }
        }
        "function_call" | "custom_tool_call" | "local_shell_call" => {
            let call = p.call_id.as_deref().or(p.id.as_deref()).unwrap_or("");
            let name = match item {
                "local_shell_call" => "local_shell",
                _ => p.name.as_deref().unwrap_or(""),
            };
            if !call.is_empty() {
                st.tools.insert(call.to_owned(), name.to_owned());
            }
            // function_call arguments are a JSON text inside a string: kept
            // as JSON when they parse, else as the string.
            let decoded;
            let arguments = match (&p.arguments, p.input, p.action) {
                (Some(a), _, _) => {
                    decoded = match whole_value(a) {
                        Some(v) => v.to_owned(),
                        None => serde_json::Value::from(a.as_ref()).to_string(),
                    };
                    Some(decoded.as_str())
                }
                (None, Some(i), _) => Some(i),
                (None, None, Some(a)) => Some(a),
                _ => None,
            };
            let id = if call.is_empty() {
                st.timed_id(at, &[&key, "0"])
            } else {
                st.id(&["call", call])
            };
            batch.push(id, "action", action_request(name, arguments), at);
        }
        "function_call_output" | "custom_tool_call_output" => {
            let call = p.call_id.as_deref().unwrap_or("");
            let content = action_response(
                st.tools.get(call).map(String::as_str),
                p.output,
                &st.id(&["call", call]),
                false,
            );
            batch.push(st.timed_id(at, &[&key, "0"]), "action", content, at);
        }
        _ => {}
    }
    if batch.messages.len() == before {
        if skipped_blocks > 0 {
            return Ok(Verdict::Skipped);
        }
        stats.skip(&format!(
            "{kind}/{}",
            if item.is_empty() { "(untyped)" } else { item }
        ));
        return Ok(Verdict::Skipped);
    }
    Ok(Verdict::Mirrored)
}
