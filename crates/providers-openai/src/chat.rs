//! Chat requests: the developer-role gate and request shaping.

use providers_core::strip_provider;
use serde::Serialize;
use serde_json::Value;

use crate::error::Error;

/// A message role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions; sent as `developer` to models that use that role.
    System,
    /// Instructions already in the newer role.
    Developer,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatMessage {
    /// The role.
    pub role: Role,
    /// The content.
    pub content: String,
}

/// A chat completion request before shaping.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    /// The model (may carry a `provider/` prefix).
    pub model: Option<String>,
    /// The messages.
    pub messages: Vec<ChatMessage>,
    /// Extra body fields, verbatim (`temperature`, `tools`, ...).
    pub extra: serde_json::Map<String, Value>,
}

/// Model families that take instructions in the `developer` role.
const DEVELOPER_FAMILIES: &[&str] = &["o1", "o3", "o4", "gpt-5"];

/// Whether `model` takes instructions as `developer` messages.
///
/// Prefix-based and conservative: after stripping a provider prefix, only
/// the o1, o3, o4 and gpt-5 families (dated variants included) qualify. A
/// family prefix must end the name or be followed by `-` or `.` (so
/// `o10-x` is not `o1`). Unknown or missing models keep `system`.
pub fn uses_developer_messages(model: Option<&str>) -> bool {
    let Some(model) = model else { return false };
    let m = strip_provider(model.trim()).to_ascii_lowercase();
    DEVELOPER_FAMILIES.iter().any(|f| match m.strip_prefix(f) {
        Some(rest) => rest.is_empty() || rest.starts_with('-') || rest.starts_with('.'),
        None => false,
    })
}

/// The JSON body for `req`: `system` messages become `developer` for gated
/// models; everything else is passed through. The model name is sent
/// without its provider prefix.
pub fn shape_chat_request(req: &ChatRequest) -> Result<Value, Error> {
    if req.messages.is_empty() {
        return Err(Error::NoMessages);
    }
    let developer = uses_developer_messages(req.model.as_deref());
    let messages: Vec<ChatMessage> = req
        .messages
        .iter()
        .map(|m| ChatMessage {
            role: if developer && m.role == Role::System {
                Role::Developer
            } else {
                m.role
            },
            content: m.content.clone(),
        })
        .collect();
    let mut body = req.extra.clone();
    if let Some(model) = &req.model {
        body.insert(
            "model".into(),
            Value::String(strip_provider(model).to_owned()),
        );
    }
    body.insert(
        "messages".into(),
        serde_json::to_value(messages).map_err(|_| Error::BadResponse("serialisable messages"))?,
    );
    Ok(Value::Object(body))
}
