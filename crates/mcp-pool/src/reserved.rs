//! The reserved-key scan: finds an object key equal to one of serde_json's
//! private tokens in raw JSON text, before anything parses it into a
//! `serde_json::Value`.
//!
//! With serde_json's `raw_value` feature on (cargo unifies features; it is
//! off in this workspace's build, guarded by lionrt's `raw_value` test, and
//! this scan is defence in depth), deserializing a `Value` reads an object
//! whose first key is `$serde_json::private::RawValue` as the JSON text in
//! that key's string: `{"$serde_json::private::RawValue":"{\"enum\":[\"ls\"]}"}`
//! becomes `{"enum":["ls"]}`. A server could then show the admission gate a
//! closed schema while an agent CLI reading the same bytes sees an open one.
//! `arbitrary_precision` does the same with `$serde_json::private::Number`.
//! Any message holding such a key, anywhere, is refused instead.
//!
//! The walk uses serde's visitor API over `serde_json::Deserializer`
//! directly, so keys arrive as written (unescaped, never classified), and
//! builds nothing: skipped values are not kept, and a string is read into
//! the parser's reused scratch buffer at most. Depth is bounded by
//! serde_json's own recursion limit (128, the limit rmcp's parse has too):
//! deeper text is an error, so it fails closed.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// serde_json's private tokens: object keys it gives a meaning of its own
/// when the `raw_value` or `arbitrary_precision` feature is on.
pub const RESERVED_SERDE_JSON_KEYS: [&str; 2] = [
    "$serde_json::private::RawValue",
    "$serde_json::private::Number",
];

/// What [`scan`] found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finding {
    /// An object key equal to this reserved token.
    Reserved(&'static str),
    /// The text could not be walked (not JSON, or nested beyond the
    /// parser's limit).
    Invalid(String),
}

/// Walks `text` once; `Ok` when it is one JSON value holding no reserved
/// key anywhere.
pub(crate) fn scan(text: &str) -> Result<(), Finding> {
    let found = Cell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let walked = Walk { found: &found }
        .deserialize(&mut de)
        .and_then(|()| de.end());
    if let Some(key) = found.get() {
        return Err(Finding::Reserved(key));
    }
    walked.map_err(|e| Finding::Invalid(e.to_string()))
}

/// A JSON value, visited and dropped.
#[derive(Clone, Copy)]
struct Walk<'a> {
    found: &'a Cell<Option<&'static str>>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(Key { found: self.found })?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

/// An object key, read as the literal (unescaped) string.
struct Key<'a> {
    found: &'a Cell<Option<&'static str>>,
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<(), E> {
        match RESERVED_SERDE_JSON_KEYS.iter().find(|token| **token == key) {
            Some(token) => {
                self.found.set(Some(token));
                Err(E::custom("reserved serde_json key"))
            }
            None => Ok(()),
        }
    }
}

/// The message for a refused key.
pub(crate) fn describe(key: &str) -> String {
    format!(
        "a reserved serde_json key was sent ('{key}', which serde_json would read as something \
         other than what was written); the message is refused"
    )
}
