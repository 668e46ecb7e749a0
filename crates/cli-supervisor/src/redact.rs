//! Secret values a child was handed, and the redaction of everything the
//! child writes back.
//!
//! A [`Redactor`] holds the values the runtime put into a child's
//! environment (or its files) that must never come back out: looked-up
//! secrets, variables `secrets.lookup` names, variables whose name looks
//! secret ([`looks_secret_name`]) and whatever the caller registers (a
//! forwarded MCP server's env, say). A leg builds its own from its spec
//! and redacts its stderr tail and every stdout event before a caller sees
//! them, so every surface downstream (the state store, printed output,
//! logs) is clean by construction.
//!
//! The rules are the spec's notify redaction rules (NTF-025..027) applied
//! to env values: every occurrence is replaced by [`REDACTED`], values are
//! handled longest first in effect (all occurrences of all values are found
//! in the original text and overlapping ones merged into one replaced
//! span, so a value containing another leaves no fragment behind), and a
//! value shorter than [`MIN_REDACTABLE_LEN`] characters is never redacted.
//! A value is also searched for in its JSON-escaped forms (serde's, and the
//! ASCII-only `\uXXXX` form Python's `json.dumps` writes), since a value
//! with a quote, a backslash or a non-ASCII character appears escaped in
//! JSON text. This is not a secret scanner: a value the child obtained
//! elsewhere is not recognised.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fmt;
use std::sync::Arc;

use memchr::memmem;
use serde_json::Value;

/// Values shorter than this many characters are never redacted: replacing
/// a bare `0` or `on` would corrupt unrelated text (the spec's
/// `MIN_REDACTABLE_ARG_LEN`).
pub const MIN_REDACTABLE_LEN: usize = 4;

/// What a redacted value is replaced with.
pub const REDACTED: &str = "***";

/// Whether an environment variable's name marks its value as a secret:
/// one of its `_`-separated words (upper-cased) is `KEY`, `APIKEY`,
/// `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `PASS`, `PWD` (but not the
/// variables `PWD` and `OLDPWD`), `CRED(S)`, `CREDENTIAL(S)`, `AUTH` or
/// `COOKIE` (plurals of `KEY`, `TOKEN`, `SECRET` too); or the name
/// contains `PASSWORD`, `SECRET`, `TOKEN`, `APIKEY` or `API_KEY` anywhere
/// (`MYSQLPASSWORD`, `GHTOKEN`). A session id is not a secret:
/// `LIONAGI_SESSION_ID` does not match.
///
/// The spec gives no such rule; this one errs towards redacting (a value
/// wrongly treated as secret only loses text from a report).
pub fn looks_secret_name(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "KEY",
        "KEYS",
        "APIKEY",
        "TOKEN",
        "TOKENS",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PWD",
        "CREDENTIAL",
        "CREDENTIALS",
        "CRED",
        "CREDS",
        "AUTH",
        "COOKIE",
    ];
    const ANYWHERE: &[&str] = &["PASSWORD", "SECRET", "TOKEN", "APIKEY", "API_KEY"];
    let upper = name.to_ascii_uppercase();
    if upper == "PWD" || upper == "OLDPWD" {
        return false;
    }
    upper.split(['_', '-', '.']).any(|w| WORDS.contains(&w))
        || ANYWHERE.iter().any(|w| upper.contains(w))
}

/// A set of secret values and the redaction of text against them.
///
/// Cheap to clone (the set is shared). Debug and Display show only how
/// many values it holds; there is no serde form.
#[derive(Clone, Default)]
pub struct Redactor {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The registered values (raw bytes), deduplicated.
    values: Vec<Vec<u8>>,
    /// Every form searched for: each value and its JSON-escaped forms.
    needles: Vec<Vec<u8>>,
    /// The longest needle, in bytes.
    longest: usize,
}

impl Redactor {
    /// An empty redactor (redacts nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// A redactor for `values` (values shorter than
    /// [`MIN_REDACTABLE_LEN`] characters are left out).
    pub fn from_values<I, S>(values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut redactor = Self::new();
        redactor.extend(values);
        redactor
    }

    /// Adds one value.
    pub fn add(&mut self, value: impl AsRef<OsStr>) {
        self.extend([value]);
    }

    /// Adds every value of `values`.
    pub fn extend<I, S>(&mut self, values: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut all = self.inner.values.clone();
        for value in values {
            let bytes = value.as_ref().as_encoded_bytes();
            if String::from_utf8_lossy(bytes).chars().count() < MIN_REDACTABLE_LEN {
                continue;
            }
            if !all.iter().any(|v| v.as_slice() == bytes) {
                all.push(bytes.to_vec());
            }
        }
        if all.len() == self.inner.values.len() {
            return;
        }
        self.inner = Arc::new(Inner::build(all));
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Redactor) {
        self.extend(other.inner.values.iter().map(|v| os_str(v.as_slice())));
    }

    /// How many values are registered.
    pub fn len(&self) -> usize {
        self.inner.values.len()
    }

    /// Whether no value is registered.
    pub fn is_empty(&self) -> bool {
        self.inner.values.is_empty()
    }

    /// The longest form searched for, in bytes (0 when empty).
    pub fn longest(&self) -> usize {
        self.inner.longest
    }

    /// `text` with every occurrence of every value replaced.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let spans = self.spans(text.as_bytes(), false);
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        // Valid UTF-8 needles match at character boundaries; a non-UTF-8
        // value cannot be valid text, but a span could cut one: rebuild
        // losslessly through bytes and fall back to the lossy form.
        let out = splice(text.as_bytes(), &spans);
        Cow::Owned(match String::from_utf8(out) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// `bytes` with every occurrence of every value replaced.
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let spans = self.spans(bytes, false);
        if spans.is_empty() {
            Cow::Borrowed(bytes)
        } else {
            Cow::Owned(splice(bytes, &spans))
        }
    }

    /// The tail of a byte stream: `buffer` holds the last bytes written,
    /// and only its final `keep` bytes are returned, redacted. When the
    /// stream was cut (`cut`: bytes before `buffer` were dropped), a value
    /// whose start fell before the buffer could leave a fragment at its
    /// front; keeping [`Redactor::longest`]` - 1` bytes more than `keep`
    /// in `buffer` rules that out, since every occurrence that reaches the
    /// returned part then lies wholly inside `buffer`. A proper prefix of a
    /// value at the very end (the rest not written yet) of at least
    /// [`MIN_REDACTABLE_LEN`] bytes is replaced too.
    pub fn redact_tail(&self, buffer: &[u8], keep: usize) -> Vec<u8> {
        let start = buffer.len().saturating_sub(keep);
        if self.is_empty() {
            return buffer[start..].to_vec();
        }
        let spans: Vec<(usize, usize)> = self
            .spans(buffer, true)
            .into_iter()
            .filter(|&(_, e)| e > start)
            .map(|(s, e)| (s.max(start) - start, e - start))
            .collect();
        splice(&buffer[start..], &spans)
    }

    /// Redacts every string of `value` (object keys too) in place; whether
    /// anything changed.
    pub fn redact_value(&self, value: &mut Value) -> bool {
        if self.is_empty() {
            return false;
        }
        match value {
            Value::String(s) => match self.redact_str(s) {
                Cow::Borrowed(_) => false,
                Cow::Owned(clean) => {
                    *s = clean;
                    true
                }
            },
            Value::Array(items) => {
                let mut changed = false;
                for item in items {
                    changed |= self.redact_value(item);
                }
                changed
            }
            Value::Object(map) => {
                let mut changed = false;
                let dirty_keys = map
                    .keys()
                    .any(|k| matches!(self.redact_str(k), Cow::Owned(_)));
                if dirty_keys {
                    let old = std::mem::take(map);
                    for (k, mut v) in old {
                        self.redact_value(&mut v);
                        let k = self.redact_str(&k).into_owned();
                        // Two keys redacting to the same text keep both
                        // values under distinct keys.
                        let mut key = k.clone();
                        let mut n = 1;
                        while map.contains_key(&key) {
                            n += 1;
                            key = format!("{k}#{n}");
                        }
                        map.insert(key, v);
                    }
                    return true;
                }
                for v in map.values_mut() {
                    changed |= self.redact_value(v);
                }
                changed
            }
            _ => false,
        }
    }

    /// A JSON text with every value redacted where it appears (raw or
    /// escaped). Inside a JSON string the replacement keeps the text valid;
    /// `None` when a value spanned the text's structure (the result would
    /// not be JSON), and the caller must withhold the line.
    pub fn redact_json_text<'a>(&self, json: &'a str) -> Option<Cow<'a, str>> {
        match self.redact_str(json) {
            Cow::Borrowed(text) => Some(Cow::Borrowed(text)),
            Cow::Owned(text) => serde_json::from_str::<serde::de::IgnoredAny>(&text)
                .is_ok()
                .then_some(Cow::Owned(text)),
        }
    }

    /// Sorted, merged spans of every needle occurrence in `hay`; with
    /// `trailing`, also a proper prefix of a needle (of at least
    /// [`MIN_REDACTABLE_LEN`] bytes) that ends `hay`.
    fn spans(&self, hay: &[u8], trailing: bool) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        for needle in &self.inner.needles {
            let finder = memmem::Finder::new(needle);
            let mut from = 0;
            while let Some(at) = finder.find(&hay[from..]) {
                let start = from + at;
                spans.push((start, start + needle.len()));
                // One byte on: overlapping occurrences (`aaaa` in `aaaaa`)
                // are all found.
                from = start + 1;
            }
            if trailing {
                let longest_prefix = (needle.len() - 1).min(hay.len());
                for len in (MIN_REDACTABLE_LEN..=longest_prefix).rev() {
                    if hay.ends_with(&needle[..len]) {
                        spans.push((hay.len() - len, hay.len()));
                        break;
                    }
                }
            }
        }
        merge(spans)
    }
}

impl Inner {
    fn build(values: Vec<Vec<u8>>) -> Self {
        let mut needles: Vec<Vec<u8>> = Vec::new();
        for value in &values {
            let mut push = |n: Vec<u8>| {
                if !needles.contains(&n) {
                    needles.push(n);
                }
            };
            push(value.clone());
            let text = String::from_utf8_lossy(value);
            if matches!(text, Cow::Owned(_)) {
                // The form a lossy conversion of the raw bytes shows.
                push(text.as_bytes().to_vec());
            }
            let escaped = serde_json::to_string(text.as_ref()).unwrap_or_default();
            let escaped = escaped
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .unwrap_or_default();
            push(escaped.as_bytes().to_vec());
            let ascii = ascii_escaped(escaped);
            // `/` written as `\/` (allowed in JSON, and some encoders do).
            if escaped.contains('/') {
                push(escaped.replace('/', "\\/").into_bytes());
                push(ascii.replace('/', "\\/").into_bytes());
            }
            push(ascii.into_bytes());
        }
        needles.retain(|n| !n.is_empty());
        needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        let longest = needles.first().map_or(0, Vec::len);
        Self {
            values,
            needles,
            longest,
        }
    }
}

/// `escaped` (serde's JSON escaping) with every non-ASCII character as
/// `\uXXXX` (UTF-16, lowercase hex), as Python's `json.dumps` writes it.
fn ascii_escaped(escaped: &str) -> String {
    let mut out = String::with_capacity(escaped.len());
    for c in escaped.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

fn merge(mut spans: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        match merged.last_mut() {
            Some((_, e)) if start <= *e => *e = (*e).max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// `bytes` with each (sorted, disjoint) span replaced by [`REDACTED`].
fn splice(bytes: &[u8], spans: &[(usize, usize)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut copied = 0;
    for &(start, end) in spans {
        out.extend_from_slice(&bytes[copied..start]);
        out.extend_from_slice(REDACTED.as_bytes());
        copied = end;
    }
    out.extend_from_slice(&bytes[copied..]);
    out
}

/// The registered bytes back as an `OsStr` (they came from one).
fn os_str(bytes: &[u8]) -> &OsStr {
    use std::os::unix::ffi::OsStrExt;
    OsStr::from_bytes(bytes)
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<redactor: {} value(s)>", self.inner.values.len())
    }
}

impl PartialEq for Redactor {
    fn eq(&self, other: &Self) -> bool {
        self.inner.values == other.inner.values
    }
}

impl Eq for Redactor {}

#[cfg(test)]
mod tests;
