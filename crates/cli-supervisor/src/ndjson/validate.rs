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
//! Strings are scanned 32 bytes at a time for the next quote, backslash or
//! control byte (a loop the compiler turns into vector compares), which is
//! what makes it faster than `serde_json` on long text fields. UTF-8 is
//! checked by the caller beforehand.

/// Deeper nesting is left to `serde_json` (whose limit is 128 levels).
pub(super) const MAX_DEPTH: u32 = 100;

/// Whether `s` is certainly a single JSON value, optionally surrounded by
/// JSON whitespace. `false` means "ask `serde_json`", not "invalid".
pub(super) fn surely_valid(s: &[u8]) -> bool {
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

    /// A string starting at the opening quote.
    fn string(&mut self) -> bool {
        self.i += 1;
        loop {
            let Some(rest) = self.s.get(self.i..) else {
                return false;
            };
            let Some(at) = find_special(rest) else {
                return false;
            };
            match rest.get(at) {
                Some(b'"') => {
                    self.i += at + 1;
                    return true;
                }
                Some(b'\\') => self.i += at,
                // A control byte, which serde_json refuses in a string.
                _ => return false,
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

/// A byte that ends a plain run inside a string: quote, backslash, control.
/// Bitwise (not short-circuit) so that a chunk of them vectorises.
#[inline(always)]
fn is_special(b: u8) -> bool {
    (b == b'"') | (b == b'\\') | (b < 0x20)
}

/// The offset of the first [`is_special`] byte.
fn find_special(s: &[u8]) -> Option<usize> {
    const CHUNK: usize = 32;
    let (chunks, tail) = s.as_chunks::<CHUNK>();
    for (k, chunk) in chunks.iter().enumerate() {
        // A branch-free OR over the chunk vectorises; the position is then
        // found byte by byte in the one chunk that has it.
        let hit = chunk
            .iter()
            .fold(0u8, |acc, &b| acc | u8::from(is_special(b)));
        if hit != 0 {
            let at = chunk.iter().position(|&b| is_special(b))?;
            return Some(k * CHUNK + at);
        }
    }
    let at = tail.iter().position(|&b| is_special(b))?;
    Some(chunks.len() * CHUNK + at)
}

#[cfg(test)]
mod tests;
