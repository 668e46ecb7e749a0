//! What the source parsers share: the per-file state, the batch being
//! built and the per-line verdict.

use std::collections::{BTreeMap, HashMap};

use crate::store::{MirrorMessage, MirrorSession};
use serde::{Deserialize, Serialize};

use crate::ids::{branch_id, derive_id, progression_id};

/// Which program wrote a transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Claude Code (`~/.claude/projects/<project>/<session>.jsonl`).
    Claude,
    /// Codex (`~/.codex/sessions/**/rollout-*.jsonl`).
    Codex,
}

impl Source {
    /// `claude` or `codex`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Claude => "claude",
            Source::Codex => "codex",
        }
    }
}

/// What became of one transcript line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Produced at least one message.
    Mirrored,
    /// Understood, carries no conversation content (its type is counted).
    Skipped,
}

/// Counts of one file (or one pass).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineStats {
    /// Complete lines read.
    pub lines: u64,
    /// Bytes consumed.
    pub bytes: u64,
    /// Messages built (new or already there).
    pub messages: u64,
    /// Lines skipped, by event type, and content blocks skipped, by
    /// `event/block` type (`assistant/thinking`).
    pub skipped: BTreeMap<String, u64>,
    /// Lines that were not JSON objects of a known shape.
    pub unparseable: u64,
    /// Lines with bytes that are not UTF-8 (read with U+FFFD in their place).
    pub non_utf8: u64,
    /// Lines over the length cap (skipped without being buffered).
    pub oversized: u64,
}

impl LineStats {
    pub(crate) fn skip(&mut self, kind: &str) {
        match self.skipped.get_mut(kind) {
            Some(n) => *n += 1,
            None => {
                self.skipped.insert(kind.to_owned(), 1);
            }
        }
    }

    pub(crate) fn add(&mut self, other: &LineStats) {
        self.lines += other.lines;
        self.bytes += other.bytes;
        self.messages += other.messages;
        self.unparseable += other.unparseable;
        self.non_utf8 += other.non_utf8;
        self.oversized += other.oversized;
        for (k, v) in &other.skipped {
            *self.skipped.entry(k.clone()).or_default() += v;
        }
    }
}

/// The state of one transcript file across lines (and, in a long-running
/// mirror, across passes).
#[derive(Debug, Clone)]
pub(crate) struct FileState {
    pub(crate) source: Source,
    pub(crate) path: String,
    pub(crate) session: MirrorSession,
    /// Whether the session id may still change (Codex: until session_meta
    /// or the first message).
    pub(crate) id_open: bool,
    pub(crate) first_event_seen: bool,
    pub(crate) pending_parent: Option<String>,
    /// Tool call id -> tool name, to name tool results.
    pub(crate) tools: HashMap<String, String>,
    pub(crate) last_ts: Option<i64>,
    pub(crate) fallback_ts: i64,
    /// Whether the current line carried its own timestamp.
    pub(crate) stamped: bool,
    pub(crate) offset: u64,
}

impl FileState {
    pub(crate) fn new(source: Source, path: String, session_id: String, fallback_ts: i64) -> Self {
        let mut s = FileState {
            source,
            path,
            session: MirrorSession::default(),
            id_open: true,
            first_event_seen: false,
            pending_parent: None,
            tools: HashMap::new(),
            last_ts: None,
            fallback_ts,
            stamped: false,
            offset: 0,
        };
        s.set_session_id(session_id);
        s.session.agent_name = Some(
            match source {
                Source::Claude => "claude-code",
                Source::Codex => "codex",
            }
            .into(),
        );
        s.session.provider = Some(source.as_str().into());
        s
    }

    pub(crate) fn set_session_id(&mut self, id: String) {
        self.session.branch_id = branch_id(&id);
        self.session.progression_id = progression_id(&id);
        self.session.session_id = id;
        self.session.node_metadata = Some(serde_json::json!({
            "process_identity_mode": "external",
            "mirror": {"source": self.source.as_str(), "path": self.path},
        }));
    }

    /// The event time: the line's timestamp, else the last one seen in the
    /// file, else the file's modification time.
    pub(crate) fn time(&mut self, stamp: Option<&str>) -> i64 {
        self.stamped = false;
        if let Some(t) = stamp.and_then(crate::time::parse_rfc3339) {
            self.stamped = true;
            self.last_ts = Some(t);
            if self.session.started_at.is_none() {
                self.session.started_at = Some(t);
            }
            return t;
        }
        self.last_ts.unwrap_or(self.fallback_ts)
    }

    pub(crate) fn set_cwd(&mut self, cwd: &str) {
        if self.session.cwd.is_none() && !cwd.is_empty() {
            self.session.cwd = Some(cwd.to_owned());
            let project = cwd.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            if !project.is_empty() {
                self.session.project = Some(project.to_owned());
            }
        }
    }

    pub(crate) fn set_model(&mut self, model: &str) {
        if self.session.model.is_none() && !model.is_empty() && !model.starts_with('<') {
            self.session.model = Some(model.to_owned());
        }
    }

    /// The id of a tool call (referenced later by its result, so it cannot
    /// depend on the time).
    pub(crate) fn id(&self, parts: &[&str]) -> String {
        self.with_prefix(parts, derive_id)
    }

    /// The id of an event's message: time-ordered (see
    /// [`crate::ids::derive_timed_id`]) when the line carries its own
    /// timestamp, which is as deterministic as the rest; a line without one
    /// gets the plain id (a borrowed time could differ between processes).
    pub(crate) fn timed_id(&self, at: i64, parts: &[&str]) -> String {
        if self.stamped {
            self.with_prefix(parts, |all| crate::ids::derive_timed_id(at, all))
        } else {
            self.with_prefix(parts, derive_id)
        }
    }

    /// `f` of (source, session id, parts...), without a heap allocation
    /// for the list (ids take at most a few parts).
    fn with_prefix(&self, parts: &[&str], f: impl FnOnce(&[&str]) -> String) -> String {
        let mut all = [""; 8];
        let n = parts.len() + 2;
        if n > all.len() {
            let mut all = vec![self.source.as_str(), self.session.session_id.as_str()];
            all.extend_from_slice(parts);
            return f(&all);
        }
        all[0] = self.source.as_str();
        all[1] = self.session.session_id.as_str();
        all[2..n].copy_from_slice(parts);
        f(&all[..n])
    }
}

/// `n` in decimal, in `buf` (a block index, without a heap allocation).
pub(crate) fn decimal(n: usize, buf: &mut [u8; 20]) -> &str {
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[i..]).unwrap_or("0")
}

/// Messages and event uuids gathered since the last write.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub(crate) messages: Vec<MirrorMessage>,
    pub(crate) event_uuids: Vec<String>,
    pub(crate) bytes: usize,
    pub(crate) lines: usize,
}

impl Batch {
    pub(crate) fn push(&mut self, id: String, role: &str, content: String, created_at: i64) {
        self.bytes += content.len();
        self.messages.push(MirrorMessage {
            id,
            role: role.to_owned(),
            content,
            created_at,
        });
    }

    pub(crate) fn clear(&mut self) {
        self.messages.clear();
        self.event_uuids.clear();
        self.bytes = 0;
        self.lines = 0;
    }
}

/// `{"key": <raw>}` without re-serialising the raw JSON.
pub(crate) fn object1(key: &str, raw: &str) -> String {
    let mut s = String::with_capacity(raw.len() + key.len() + 6);
    s.push_str("{\"");
    s.push_str(key);
    s.push_str("\":");
    s.push_str(raw);
    s.push('}');
    s
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a str always serialises")
}

/// `{"key": "text"}`, escaping the text.
pub(crate) fn object_str(key: &str, text: &str) -> String {
    let mut s = String::with_capacity(text.len() + key.len() + 8);
    s.push_str("{\"");
    s.push_str(key);
    s.push_str("\":");
    s.push_str(&json_str(text));
    s.push('}');
    s
}

/// An action request: `{"function": name, "arguments": <raw>}`.
pub(crate) fn action_request(name: &str, arguments: Option<&str>) -> String {
    let arguments = arguments.unwrap_or("{}");
    let mut s = String::with_capacity(arguments.len() + name.len() + 32);
    s.push_str("{\"function\":");
    s.push_str(&json_str(name));
    s.push_str(",\"arguments\":");
    s.push_str(arguments);
    s.push('}');
    s
}

/// An action response: `{"function", "arguments": {}, "output", "action_request_id", "is_error"}`.
pub(crate) fn action_response(
    name: Option<&str>,
    output: Option<&str>,
    request_id: &str,
    is_error: bool,
) -> String {
    let output = output.unwrap_or("null");
    let mut s = String::with_capacity(output.len() + 128);
    s.push_str("{\"function\":");
    match name {
        Some(n) => s.push_str(&json_str(n)),
        None => s.push_str("null"),
    }
    s.push_str(",\"arguments\":{},\"output\":");
    s.push_str(output);
    s.push_str(",\"action_request_id\":\"");
    s.push_str(request_id);
    s.push_str("\",\"is_error\":");
    s.push_str(if is_error { "true" } else { "false" });
    s.push('}');
    s
}
