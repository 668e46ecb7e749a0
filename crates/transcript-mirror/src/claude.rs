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

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::parse::{
    Batch, FileState, LineStats, Verdict, action_request, action_response, object_str, object1,
};

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    #[serde(rename = "parentUuid", borrow, default)]
    parent_uuid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
}

/// A message's content, read in the same pass as the line: a string, or
/// an array of blocks whose large fields stay raw (borrowed, unparsed).
enum Content<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Content<'a>, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Content<'a>, E> {
                Ok(Content::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Content<'a>, E> {
                Ok(Content::Text(Cow::Owned(v)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Content<'a>, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(2));
                while let Some(b) = seq.next_element::<Block<'a>>()? {
                    blocks.push(b);
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Content<'a>, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Content::Other)
            }
            fn visit_unit<E>(self) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(default)]
    is_error: Option<bool>,
}

/// Handles one line; `Err` when it is not an event object.
pub(crate) fn line(
    st: &mut FileState,
    batch: &mut Batch,
    stats: &mut LineStats,
    bytes: &[u8],
    offset: u64,
) -> Result<Verdict, serde_json::Error> {
    let ev: Event<'_> = serde_json::from_slice(bytes)?;
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
                        batch.push(
                            id,
                            "action",
                            action_request(name, b.input.map(RawValue::get)),
                            at,
                        );
                    }
                    Some("tool_result") => {
                        let call = b.tool_use_id.as_deref().unwrap_or("");
                        let content = action_response(
                            st.tools.get(call).map(String::as_str),
                            b.content.map(RawValue::get),
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
