//! A fast, one-sided JSON validator for [`LineFormat::Raw`](super::LineFormat).
//!
//! [`surely_valid`] answers `true` only for text that `serde_json` accepts
//! as one value (with `IgnoredAny`), and `false` whenever it is not certain:
//! invalid text, but also anything it does not handle itself (whitespace
//! other than a space, nesting deeper than [`MAX_DEPTH`]). The caller
//! then asks `serde_json`, which decides and words the error, so the events
//! are exactly those of validating with `serde_json` alone; this only skips
//! that work for the common, well-formed line.
//!
//! Control bytes are ruled out for the whole text in one vectorisable pass
//! first; a string's long runs are then skipped with `memchr2` (quote or
//! backslash), which is what makes it faster than `serde_json` on long text
//! fields. UTF-8 is checked by the caller beforehand.

use super::{CONTROL_CHUNK, chunk_has_control};

/// Deeper nesting is left to `serde_json` (whose limit is 128 levels).
pub(super) const MAX_DEPTH: u32 = 100;

/// Whether `s` is certainly a single JSON value, optionally surrounded by
/// JSON whitespace. `false` means "ask `serde_json`", not "invalid".
pub(super) fn surely_valid(s: &[u8]) -> bool {
    no_control_bytes(s) && surely_valid_without_control_bytes(s)
}

/// [`surely_valid`] for text the caller has checked to have no byte below
/// 0x20.
pub(super) fn surely_valid_without_control_bytes(s: &[u8]) -> bool {
    Validator { s, i: 0 }.run()
}

struct Validator<'a> {
    s: &'a [u8],
    i: usize,
}

impl Validator<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        // Only a space: tab and CR (rare) are left to serde_json.
        while self.peek() == Some(b' ') {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// Runs the whole text: one value, then only whitespace.
    fn run(mut self) -> bool {
        // One bit per open container: 1 for an object, 0 for an array.
        let mut stack: u128 = 0;
        let mut depth: u32 = 0;
        'value: loop {
            self.skip_ws();
            match self.peek() {
                Some(b'"') => {
                    if !self.string() {
                        return false;
                    }
                }
                Some(b'{') => {
                    self.i += 1;
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return false;
                    }
                    stack = (stack << 1) | 1;
                    self.skip_ws();
                    if !self.eat(b'}') {
                        if !self.key() {
                            return false;
                        }
                        continue 'value;
                    }
                    depth -= 1;
                    stack >>= 1;
                }
                Some(b'[') => {
                    self.i += 1;
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return false;
                    }
                    stack <<= 1;
                    self.skip_ws();
                    if !self.eat(b']') {
                        continue 'value;
                    }
                    depth -= 1;
                    stack >>= 1;
                }
                Some(b't') => {
                    if !self.literal(b"true") {
                        return false;
                    }
                }
                Some(b'f') => {
                    if !self.literal(b"false") {
                        return false;
                    }
                }
                Some(b'n') => {
                    if !self.literal(b"null") {
                        return false;
                    }
                }
                Some(b'-' | b'0'..=b'9') => {
                    if !self.number() {
                        return false;
                    }
                }
                _ => return false,
            }
            // After a value: close containers or move to the next element.
            loop {
                self.skip_ws();
                if depth == 0 {
                    return self.i == self.s.len();
                }
                let in_object = stack & 1 == 1;
                match self.peek() {
                    Some(b',') => {
                        self.i += 1;
                        if in_object {
                            self.skip_ws();
                            if !self.key() {
                                return false;
                            }
                        }
                        continue 'value;
                    }
                    Some(b'}') if in_object => {}
                    Some(b']') if !in_object => {}
                    _ => return false,
                }
                self.i += 1;
                depth -= 1;
                stack >>= 1;
            }
        }
    }

    /// An object key and its colon.
    fn key(&mut self) -> bool {
        if self.peek() != Some(b'"') || !self.string() {
            return false;
        }
        self.skip_ws();
        self.eat(b':')
    }

    /// A string starting at the opening quote. Control bytes were ruled
    /// out for the whole text up front, so only a quote or a backslash
    /// ends a plain run.
    fn string(&mut self) -> bool {
        self.i += 1;
        loop {
            let Some(rest) = self.s.get(self.i..) else {
                return false;
            };
            let Some(at) = find_quote_or_backslash(rest) else {
                return false;
            };
            self.i += at;
            if rest.get(at) == Some(&b'"') {
                self.i += 1;
                return true;
            }
            // A backslash: one escape. `\u` takes four hex digits; serde_json
            // does not check surrogate pairing when ignoring a value.
            match self.s.get(self.i + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 2,
                Some(b'u') => {
                    let hex = self.s.get(self.i + 2..self.i + 6);
                    if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                        return false;
                    }
                    self.i += 6;
                }
                _ => return false,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        if self.s.get(self.i..self.i + word.len()) == Some(word) {
            self.i += word.len();
            true
        } else {
            false
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - start
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> bool {
        self.eat(b'-');
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return false,
        }
        if self.eat(b'.') && self.digits() == 0 {
            return false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if self.digits() == 0 {
                return false;
            }
        }
        true
    }
}

/// Runs shorter than this (keys, enum-like values) are scanned eight bytes
/// at a time in a `u64`; a longer run goes to `memchr2`, which picks a
/// vector implementation at run time but costs a call to get going.
const SHORT_RUN: usize = 16;

const LOW_BITS: u64 = u64::from_le_bytes([0x01; 8]);
const HIGH_BITS: u64 = u64::from_le_bytes([0x80; 8]);

/// A mask whose lowest set bit marks the first zero byte of `x` (in
/// little-endian order). Bytes above the first zero may be marked falsely,
/// which the lowest bit never is.
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(LOW_BITS) & !x & HIGH_BITS
}

/// The offset of the first quote or backslash in the eight bytes `word`.
#[inline(always)]
fn quote_or_backslash_in(word: [u8; 8]) -> Option<usize> {
    let v = u64::from_le_bytes(word);
    let hits = zero_bytes(v ^ (LOW_BITS * u64::from(b'"')))
        | zero_bytes(v ^ (LOW_BITS * u64::from(b'\\')));
    (hits != 0).then(|| (hits.trailing_zeros() / 8) as usize)
}

/// The offset of the first quote or backslash.
fn find_quote_or_backslash(s: &[u8]) -> Option<usize> {
    let (words, _) = s.as_chunks::<8>();
    for (k, word) in words.iter().take(SHORT_RUN / 8).enumerate() {
        if let Some(at) = quote_or_backslash_in(*word) {
            return Some(k * 8 + at);
        }
    }
    let scanned = words.len().min(SHORT_RUN / 8) * 8;
    let rest = s.get(scanned..)?;
    memchr::memchr2(b'"', b'\\', rest).map(|at| scanned + at)
}

/// Whether `s` has no byte below 0x20. Such a byte is legal JSON only as
/// whitespace between tokens (tab, CR), which this validator leaves to
/// `serde_json` anyway, so one vectorisable pass over the whole text takes
/// the control-byte check out of the string scan.
fn no_control_bytes(s: &[u8]) -> bool {
    let (chunks, tail) = s.as_chunks::<CONTROL_CHUNK>();
    !chunks.iter().any(chunk_has_control) && tail.iter().all(|&b| b >= 0x20)
}

#[cfg(test)]
mod tests;
