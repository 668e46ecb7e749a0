//! Claude Code transcript lines (`~/.claude/projects/<project>/<session>.jsonl`).
//!
//! `user` and `assistant` events carry the conversation: a string or an
//! array of content blocks. Text becomes a `user` or `assistant` message,
//! `tool_use` an `action` request and `tool_result` an `action` response.
//! Every other event type (summary, system, progress, file-history-snapshot,
//! and types this code has never seen) and block type (thinking, image) is
//! counted and skipped; its uuid is still recorded, since a continuation's
//! parentUuid may point at it.

use std::borrow::Cow;

use crate::json::{LineError, Scan, parse_all};
use crate::parse::{
    Batch, FileState, LineStats, Verdict, action_request, action_response, object_str, object1,
};

#[derive(Default)]
struct Event<'a> {
    kind: Option<Cow<'a, str>>,
    uuid: Option<Cow<'a, str>>,
    parent_uuid: Option<Cow<'a, str>>,
    timestamp: Option<Cow<'a, str>>,
    cwd: Option<Cow<'a, str>>,
    message: Option<Message<'a>>,
}

impl<'a> Event<'a> {
    fn read(s: &mut Scan<'a>) -> Result<Self, LineError> {
        let mut ev = Event::default();
        s.record(
            &["type", "uuid", "parentUuid", "timestamp", "cwd", "message"],
            |s, field| {
                match field {
                    0 => ev.kind = s.opt_str()?,
                    1 => ev.uuid = s.opt_str()?,
                    2 => ev.parent_uuid = s.opt_str()?,
                    3 => ev.timestamp = s.opt_str()?,
                    4 => ev.cwd = s.opt_str()?,
                    _ => {
                        ev.message = match s.null()? {
                            true => None,
                            false => Some(Message::read(s)?),
                        }
                    }
                }
                Ok(())
            },
        )?;
        Ok(ev)
    }
}

#[derive(Default)]
struct Message<'a> {
    model: Option<Cow<'a, str>>,
    content: Option<Content<'a>>,
}

impl<'a> Message<'a> {
    fn read(s: &mut Scan<'a>) -> Result<Self, LineError> {
        let mut m = Message::default();
        s.record(&["model", "content"], |s, field| {
            match field {
                0 => m.model = s.opt_str()?,
                _ => m.content = Content::read(s)?,
            }
            Ok(())
        })?;
        Ok(m)
    }
}

/// A message's content, read in the same pass as the line: a string, or
/// an array of blocks whose large fields stay raw (borrowed, unparsed).
enum Content<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
    Other,
}

impl<'a> Content<'a> {
    /// `None` for `null`.
    fn read(s: &mut Scan<'a>) -> Result<Option<Self>, LineError> {
        if s.null()? {
            return Ok(None);
        }
        Ok(Some(match s.peek() {
            Some(b'"') => Content::Text(s.str()?),
            Some(b'[') => {
                let mut blocks = Vec::with_capacity(2);
                s.array(|s| {
                    blocks.push(Block::read(s)?);
                    Ok(())
                })?;
                Content::Blocks(blocks)
            }
            _ => {
                // Rare: an object, a number or a boolean is kept as nothing,
                // but must still be what serde reads as such (a number in
                // range, an object's keys valid strings).
                let raw = s.raw_bytes()?;
                serde_json::from_slice::<OddContent>(raw)?;
                Content::Other
            }
        }))
    }
}

/// A content that is neither text nor blocks, checked by serde_json.
struct OddContent;

impl<'de> serde::Deserialize<'de> for OddContent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = OddContent;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<OddContent, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(OddContent)
            }
            fn visit_bool<E>(self, _: bool) -> Result<OddContent, E> {
                Ok(OddContent)
            }
            fn visit_i64<E>(self, _: i64) -> Result<OddContent, E> {
                Ok(OddContent)
            }
            fn visit_u64<E>(self, _: u64) -> Result<OddContent, E> {
                Ok(OddContent)
            }
            fn visit_f64<E>(self, _: f64) -> Result<OddContent, E> {
                Ok(OddContent)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Default)]
struct Block<'a> {
    kind: Option<Cow<'a, str>>,
    text: Option<&'a str>,
    id: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    input: Option<&'a str>,
    tool_use_id: Option<Cow<'a, str>>,
    content: Option<&'a str>,
    is_error: Option<bool>,
}

impl<'a> Block<'a> {
    fn read(s: &mut Scan<'a>) -> Result<Self, LineError> {
        let mut b = Block::default();
        s.record(
            &[
                "type",
                "text",
                "id",
                "name",
                "input",
                "tool_use_id",
                "content",
                "is_error",
            ],
            |s, field| {
                match field {
                    0 => b.kind = s.opt_str()?,
                    1 => b.text = s.opt_raw()?,
                    2 => b.id = s.opt_str()?,
                    3 => b.name = s.opt_str()?,
                    4 => b.input = s.opt_raw()?,
                    5 => b.tool_use_id = s.opt_str()?,
                    6 => b.content = s.opt_raw()?,
                    _ => b.is_error = s.opt_bool()?,
                }
                Ok(())
            },
        )?;
        Ok(b)
    }
}

/// Handles one line; `Err` when it is not an event object.
pub(crate) fn line(
    st: &mut FileState,
    batch: &mut Batch,
    stats: &mut LineStats,
    bytes: &[u8],
    offset: u64,
) -> Result<Verdict, LineError> {
    let ev = parse_all(bytes, Event::read)?;
    let kind = ev.kind.as_deref().unwrap_or("");
    if let Some(cwd) = ev.cwd.as_deref() {
        st.set_cwd(cwd);
    }
    if let Some(uuid) = ev.uuid.as_deref() {
        batch.event_uuids.push(uuid.to_owned());
    }
    let (role, message) = match (kind, &ev.message) {
        ("user", Some(m)) => ("user", m),
        ("assistant", Some(m)) => ("assistant", m),
        _ => {
            stats.skip(if kind.is_empty() { "(untyped)" } else { kind });
            return Ok(Verdict::Skipped);
        }
    };
    if !st.first_event_seen {
        st.first_event_seen = true;
        st.pending_parent = ev.parent_uuid.as_deref().map(str::to_owned);
    }
    if let Some(model) = message.model.as_deref() {
        st.set_model(model);
    }
    let at = st.time(ev.timestamp.as_deref());
    let key: Cow<'_, str> = match ev.uuid.as_deref() {
        Some(u) => Cow::Borrowed(u),
        None => Cow::Owned(format!("@{offset}")),
    };
    let before = batch.messages.len();
    let mut skipped_blocks = 0;
    let text_key = if role == "user" {
        "instruction"
    } else {
        "assistant_response"
    };
    match &message.content {
        Some(Content::Text(text)) => {
            batch.push(
                st.timed_id(at, &[&key, "0"]),
                role,
                object_str(text_key, text),
                at,
            );
        }
        Some(Content::Blocks(blocks)) => {
            for (i, b) in blocks.iter().enumerate() {
                let at = at + i as i64;
                match b.kind.as_deref() {
                    Some("text") => match b.text {
                        Some(t) => {
                            batch.push(
                                st.timed_id(at, &[&key, crate::parse::decimal(i, &mut [0; 20])]),
                                role,
                                object1(text_key, t),
                                at,
                            );
                        }
                        None => {
                            skipped_blocks += 1;
                            stats.skip(&format!("{kind}/text (empty)"));
                        }
                    },
                    Some("tool_use") => {
                        let call = b.id.as_deref().unwrap_or("");
                        let name = b.name.as_deref().unwrap_or("");
                        if !call.is_empty() {
                            st.tools.insert(call.to_owned(), name.to_owned());
                        }
                        let id = if call.is_empty() {
                            st.timed_id(at, &[&key, crate::parse::decimal(i, &mut [0; 20])])
                        } else {
                            st.id(&["call", call])
                        };
                        batch.push(id, "action", action_request(name, b.input), at);
                    }
                    Some("tool_result") => {
                        let call = b.tool_use_id.as_deref().unwrap_or("");
                        let content = action_response(
                            st.tools.get(call).map(String::as_str),
                            b.content,
                            &st.id(&["call", call]),
                            b.is_error.unwrap_or(false),
                        );
                        batch.push(
                            st.timed_id(at, &[&key, crate::parse::decimal(i, &mut [0; 20])]),
                            "action",
                            content,
                            at,
                        );
                    }
                    other => {
                        skipped_blocks += 1;
                        stats.skip(&format!("{kind}/{}", other.unwrap_or("(untyped)")));
                    }
                }
            }
        }
        Some(Content::Other) | None => {}
    }
    if batch.messages.len() == before {
        if skipped_blocks == 0 {
            stats.skip(kind);
        }
        return Ok(Verdict::Skipped);
    }
    Ok(Verdict::Mirrored)
}
