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

/// Bytes scanned a word at a time before a string counts as long.
const LONG: usize = 32;

/// [`first_special`] past the first `at` bytes of a long string: the first
/// quote or backslash by a vector scan, then any control byte before it
/// (checked without an early exit, so that it vectorises too; found byte by
/// byte only when there is one).
#[inline(never)]
fn long_special(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = bytes.get(at..).unwrap_or_default();
    let end = memchr::memchr2(b'"', b'\\', rest);
    let span = rest.get(..end.unwrap_or(rest.len())).unwrap_or_default();
    if span.iter().fold(false, |seen, &b| seen | (b < 0x20)) {
        return span.iter().position(|&b| b < 0x20).map(|i| at + i);
    }
    end.map(|i| at + i)
}

/// A cursor over plain JSON text.
pub(crate) struct Plain<'de> {
    text: &'de str,
    bytes: &'de [u8],
    pos: usize,
}

/// `0x01` in every byte of a word.
const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte of a word.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Where the first byte that a JSON string cannot hold as it is (`"`,
/// `\\` or a control character) sits in `bytes`; `None` when there is none.
#[inline(always)]
pub(crate) fn first_special(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    // Eight bytes at a time, by word arithmetic: a byte below 0x20, or equal
    // to `"` or `\\`, sets its high bit (bytes of 0x80 and above are masked
    // out; a borrow can only flag a byte above a real hit, so the lowest
    // flag is the first hit).
    while let Some(chunk) = bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let v = u64::from_le_bytes(*chunk);
        let special = ((v.wrapping_sub(ONES * 0x20))
            | (v ^ (ONES * u64::from(b'"'))).wrapping_sub(ONES)
            | (v ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES))
            & !v
            & HIGH;
        if special != 0 {
            return Some(at + (special.trailing_zeros() / 8) as usize);
        }
        at += 8;
        if at == LONG {
            return long_special(bytes, at);
        }
    }
    // Fewer than eight bytes left: one at a time.
    let tail = bytes.get(at..)?;
    let i = tail
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    Some(at + i)
}

impl<'de> Plain<'de> {
    /// A cursor at the start of `text`.
    pub(crate) fn new(text: &'de str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    #[inline]
    fn byte(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Skips JSON whitespace; answers the byte after it (`None` at the end).
    #[inline(always)]
    fn token(&mut self) -> Option<u8> {
        loop {
            let b = *self.bytes.get(self.pos)?;
            // Compact text: one comparison decides.
            if b > b' ' || !matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                return Some(b);
            }
            self.pos += 1;
        }
    }

    /// Skips JSON whitespace.
    pub(crate) fn ws(&mut self) {
        let _ = self.token();
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
        self.token().is_none()
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
        self.string_rest()
    }

    /// The rest of a string whose opening quote was consumed.
    #[inline(always)]
    fn string_rest(&mut self) -> Option<&'de str> {
        let start = self.pos;
        let end = start + first_special(self.bytes.get(start..)?)?;
        if self.bytes.get(end) != Some(&b'"') {
            return None;
        }
        let s = self.text.get(start..end)?;
        self.pos = end + 1;
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
                let mut next = self.token()?;
                if next == b'}' {
                    self.pos += 1;
                } else {
                    loop {
                        if next != b'"' {
                            return None;
                        }
                        self.pos += 1;
                        let key = self.string_rest()?;
                        if self.token()? != b':' {
                            return None;
                        }
                        self.pos += 1;
                        self.token()?;
                        let child = self.child(arena, depth + 1)?;
                        arena.open_members.push((Str::Borrowed(key), child));
                        match self.token()? {
                            b',' => {
                                self.pos += 1;
                                next = self.token()?;
                            }
                            b'}' => {
                                self.pos += 1;
                                break;
                            }
                            _ => return None,
                        }
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
                if self.token()? == b']' {
                    self.pos += 1;
                } else {
                    loop {
                        let item = self.child(arena, depth + 1)?;
                        arena.open_items.push(item);
                        match self.token()? {
                            b',' => {
                                self.pos += 1;
                                self.token()?;
                            }
                            b']' => {
                                self.pos += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                Some(arena.close_array(base))
            }
            b'"' => {
                self.pos += 1;
                let s = self.string_rest()?;
                Some(arena.push(Slot::String(Str::Borrowed(s))))
            }
            b't' => self.literal("true", Slot::Bool(true), arena),
            b'f' => self.literal("false", Slot::Bool(false), arena),
            b'n' => self.literal("null", Slot::Null, arena),
            b'0'..=b'9' => self.integer(arena),
            _ => None,
        }
    }

    /// [`Self::value`] for a member or an element: a string is read here
    /// (most are), anything else by a call.
    #[inline(always)]
    fn child(&mut self, arena: &mut Arena<'de>, depth: usize) -> Option<usize> {
        if self.byte() == Some(b'"') {
            self.pos += 1;
            let s = self.string_rest()?;
            return Some(arena.push(Slot::String(Str::Borrowed(s))));
        }
        self.value(arena, depth)
    }

    fn literal(&mut self, word: &str, slot: Slot<'de>, arena: &mut Arena<'de>) -> Option<usize> {
        let rest = self.bytes.get(self.pos..)?;
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
        let leading_zero = digits > 1 && self.bytes.get(start) == Some(&b'0');
        if digits > 19 || leading_zero || matches!(self.byte(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(arena.push(Slot::Number(Number::from(n))))
    }
}
