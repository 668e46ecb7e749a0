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

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::parse::{
    Batch, FileState, LineStats, Verdict, action_request, action_response, object1,
};

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    payload: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    action: Option<&'a RawValue>,
    #[serde(borrow, default)]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct TextBlock<'a> {
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
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
) -> Result<Verdict, serde_json::Error> {
    let l: Line<'_> = serde_json::from_slice(bytes)?;
    let kind = l.kind.as_deref().unwrap_or("");
    let p: Option<Payload<'_>> = match (kind, l.payload) {
        ("session_meta" | "turn_context" | "response_item", Some(raw)) => {
            Some(serde_json::from_str(raw.get())?)
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
                let blocks: Vec<TextBlock<'_>> = serde_json::from_str(raw.get())?;
                for (i, b) in blocks.iter().enumerate() {
                    let Some(t) = b.text else { continue };
                    if role == "user" && PREAMBLES.iter().any(|pre| t.get().starts_with(pre)) {
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
                    decoded = match serde_json::from_str::<&RawValue>(a) {
                        Ok(v) => v.get().to_owned(),
                        Err(_) => serde_json::Value::from(a.as_ref()).to_string(),
                    };
                    Some(decoded.as_str())
                }
                (None, Some(i), _) => Some(i.get()),
                (None, None, Some(a)) => Some(a.get()),
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
                p.output.map(RawValue::get),
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
