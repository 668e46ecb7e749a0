//! The fast path of the arena: a strict reader of *plain* JSON text.
//!
//! Plain means: strings without escapes or control characters, numbers that
//! are non-negative integers of at most 19 digits (no sign, fraction or
//! exponent), nesting at most [`MAX_DEPTH`] deep. That is what nearly every
//! tool record is. On anything else (or anything malformed) the reader
//! answers `None` and gives up, and the caller reads the whole text again
//! with serde_json ([`super::NodeSeed`]). So every error, and every text
//! outside the plain subset, is serde_json's own reading; inside it, the
//! arena holds exactly what serde_json's reading would put there (the same
//! strings, `u64` numbers, sorted members with the last of duplicate keys
//! kept). The differential tests check both halves of that claim.

use serde_json::Number;

use super::{Arena, Slot, Str};

/// Nesting past which the plain reader gives up (serde_json reads deeper).
pub(crate) const MAX_DEPTH: usize = 64;

/// A cursor over plain JSON text.
pub(crate) struct Plain<'de> {
    text: &'de str,
    pos: usize,
}

impl<'de> Plain<'de> {
    /// A cursor at the start of `text`.
    pub(crate) fn new(text: &'de str) -> Self {
        Self { text, pos: 0 }
    }

    fn byte(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    /// Skips JSON whitespace.
    pub(crate) fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.byte() {
            self.pos += 1;
        }
    }

    /// Consumes `b` when it is next.
    pub(crate) fn eat(&mut self, b: u8) -> bool {
        if self.byte() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// True when only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.ws();
        self.pos == self.text.len()
    }

    /// True when a string starts here.
    pub(crate) fn at_string(&self) -> bool {
        self.byte() == Some(b'"')
    }

    /// A string without escapes or control characters, borrowed.
    pub(crate) fn string(&mut self) -> Option<&'de str> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.pos;
        let bytes = self.text.as_bytes();
        // Eight bytes at a time: the first byte that is `"`, `\` or a
        // control character is found by word arithmetic (these tests have
        // no false negatives, and a false positive only gives up).
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        loop {
            let Some(chunk) = bytes.get(self.pos..).and_then(<[u8]>::first_chunk::<8>) else {
                // Fewer than eight bytes left: one at a time.
                while let Some(b) = self.byte() {
                    if b == b'"' || b == b'\\' || b < 0x20 {
                        break;
                    }
                    self.pos += 1;
                }
                break;
            };
            let v = u64::from_le_bytes(*chunk);
            let quote = v ^ (ONES * u64::from(b'"'));
            let backslash = v ^ (ONES * u64::from(b'\\'));
            let special = ((v.wrapping_sub(ONES * 0x20) & !v)
                | (quote.wrapping_sub(ONES) & !quote)
                | (backslash.wrapping_sub(ONES) & !backslash))
                & HIGH;
            if special != 0 {
                self.pos += (special.trailing_zeros() / 8) as usize;
                break;
            }
            self.pos += 8;
        }
        if self.byte() != Some(b'"') {
            return None;
        }
        let s = self.text.get(start..self.pos)?;
        self.pos += 1;
        Some(s)
    }

    /// Reads one plain value into `arena`; `depth` counts the containers
    /// around it.
    pub(crate) fn value(&mut self, arena: &mut Arena<'de>, depth: usize) -> Option<usize> {
        match self.byte()? {
            b'{' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.pos += 1;
                let base = arena.open_members.len();
                self.ws();
                if !self.eat(b'}') {
                    loop {
                        self.ws();
                        let key = self.string()?;
                        self.ws();
                        if !self.eat(b':') {
                            return None;
                        }
                        self.ws();
                        let child = self.value(arena, depth + 1)?;
                        arena.open_members.push((Str::Borrowed(key), child));
                        self.ws();
                        if self.eat(b',') {
                            continue;
                        }
                        if self.eat(b'}') {
                            break;
                        }
                        return None;
                    }
                }
                Some(arena.close_object(base))
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.pos += 1;
                let base = arena.open_items.len();
                self.ws();
                if !self.eat(b']') {
                    loop {
                        self.ws();
                        let item = self.value(arena, depth + 1)?;
                        arena.open_items.push(item);
                        self.ws();
                        if self.eat(b',') {
                            continue;
                        }
                        if self.eat(b']') {
                            break;
                        }
                        return None;
                    }
                }
                Some(arena.close_array(base))
            }
            b'"' => {
                let s = self.string()?;
                Some(arena.push(Slot::String(Str::Borrowed(s))))
            }
            b't' => self.literal("true", Slot::Bool(true), arena),
            b'f' => self.literal("false", Slot::Bool(false), arena),
            b'n' => self.literal("null", Slot::Null, arena),
            b'0'..=b'9' => self.integer(arena),
            _ => None,
        }
    }

    fn literal(&mut self, word: &str, slot: Slot<'de>, arena: &mut Arena<'de>) -> Option<usize> {
        let rest = self.text.as_bytes().get(self.pos..)?;
        if !rest.starts_with(word.as_bytes()) {
            return None;
        }
        self.pos += word.len();
        Some(arena.push(slot))
    }

    /// A non-negative integer of at most 19 digits (no leading zero, no
    /// fraction or exponent after it): read as serde_json reads it, a `u64`.
    fn integer(&mut self, arena: &mut Arena<'de>) -> Option<usize> {
        let start = self.pos;
        let mut n: u64 = 0;
        while let Some(d @ b'0'..=b'9') = self.byte() {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.pos += 1;
        }
        let digits = self.pos - start;
        let leading_zero = digits > 1 && self.text.as_bytes().get(start) == Some(&b'0');
        if digits > 19 || leading_zero || matches!(self.byte(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(arena.push(Slot::Number(Number::from(n))))
    }
}
