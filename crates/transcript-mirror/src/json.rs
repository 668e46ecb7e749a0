//! A small validating JSON pull scanner over one transcript line: the
//! fields the parsers need, decoded, and the large values kept as the
//! exact spans of the line they occupy (no copy, no re-serialising).
//!
//! It reads what `serde_json::from_slice` into the parsers' former
//! `#[derive(Deserialize)]` structs read, with the same verdicts:
//!
//! - A struct is an object (known keys by name, a known key twice is an
//!   error, other keys skipped) or, as serde reads a struct, an array of
//!   its fields in order (fewer is fine, more is an error). `null` in an
//!   optional field is the field's absence.
//! - Keys and decoded strings are strict: no control characters, valid
//!   escapes, surrogates paired, UTF-8. A skipped value or a kept span is
//!   checked as serde_json ignores a value: strict syntax (no trailing
//!   comma, numbers by the grammar), escapes only checked for form, no
//!   nesting limit; a kept span must be UTF-8.
//! - Only whitespace (space, tab, CR, LF) may follow the value.
//!
//! This replaces serde_json's `raw_value` feature, which must stay off in
//! the build: with it on, every `serde_json::Value` parse in the binary
//! reads an object keyed `$serde_json::private::RawValue` as other JSON.

use std::borrow::Cow;

/// Why a line (or a value inside it) is not what a parser reads.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum LineError {
    /// Not JSON, or not of the expected shape.
    #[error("{what} at byte {at}")]
    Syntax {
        /// What was expected or found.
        what: &'static str,
        /// Byte offset in the scanned text.
        at: usize,
    },
    /// A rare value handed to serde_json whole (an odd message content).
    #[error(transparent)]
    Serde(#[from] serde_json::Error),
}

/// A cursor over JSON bytes.
pub(crate) struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

/// Reads one value with `f` from the whole of `bytes`: leading and
/// trailing whitespace allowed, nothing else.
pub(crate) fn parse_all<'a, T>(
    bytes: &'a [u8],
    f: impl FnOnce(&mut Scan<'a>) -> Result<T, LineError>,
) -> Result<T, LineError> {
    let mut s = Scan { b: bytes, i: 0 };
    let v = f(&mut s)?;
    s.end()?;
    Ok(v)
}

/// The exact text of the one JSON value `text` holds (surrounding
/// whitespace trimmed), or `None` when `text` is not one JSON value.
pub(crate) fn whole_value(text: &str) -> Option<&str> {
    let mut s = Scan {
        b: text.as_bytes(),
        i: 0,
    };
    s.ws();
    let start = s.i;
    s.skip().ok()?;
    let end = s.i;
    s.end().ok()?;
    text.get(start..end)
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// A byte that ends the plain run of a string: a quote, a backslash or a
/// control character.
#[inline]
fn special(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// The index of the first special byte at or after `i`, eight bytes at a
/// time: a lane is flagged when it equals `"` or `\` or is below 0x20
/// (the lowest flagged lane is exact; borrows only run upwards).
#[inline]
fn next_special(b: &[u8], mut i: usize) -> Option<usize> {
    if let Some(rest) = b.get(i..) {
        for chunk in rest.chunks_exact(8) {
            let mut lanes = [0u8; 8];
            lanes.copy_from_slice(chunk);
            let x = u64::from_le_bytes(lanes);
            let q = x ^ (ONES * u64::from(b'"'));
            let s = x ^ (ONES * u64::from(b'\\'));
            let hit = ((q.wrapping_sub(ONES) & !q)
                | (s.wrapping_sub(ONES) & !s)
                | (x.wrapping_sub(ONES * 0x20) & !x))
                & HIGHS;
            if hit != 0 {
                return Some(i + (hit.trailing_zeros() / 8) as usize);
            }
            i += 8;
        }
    }
    while let Some(&c) = b.get(i) {
        if special(c) {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn hex(c: u8) -> Option<u16> {
    match c {
        b'0'..=b'9' => Some(u16::from(c - b'0')),
        b'a'..=b'f' => Some(u16::from(c - b'a' + 10)),
        b'A'..=b'F' => Some(u16::from(c - b'A' + 10)),
        _ => None,
    }
}

/// The open containers of a skip: bit set for an object.
struct Frames {
    depth: usize,
    bits: u128,
    deeper: Vec<bool>,
}

impl Frames {
    fn push(&mut self, object: bool) {
        if self.depth < 128 {
            let bit = 1u128 << self.depth;
            if object {
                self.bits |= bit;
            } else {
                self.bits &= !bit;
            }
        } else {
            self.deeper.push(object);
        }
        self.depth += 1;
    }

    /// Whether the innermost open container is an object; `None` at top.
    fn top(&self) -> Option<bool> {
        match self.depth {
            0 => None,
            d if d <= 128 => Some(self.bits & (1u128 << (d - 1)) != 0),
            _ => self.deeper.last().copied(),
        }
    }

    fn pop(&mut self) {
        if self.depth > 128 {
            self.deeper.pop();
        }
        self.depth = self.depth.saturating_sub(1);
    }
}

impl<'a> Scan<'a> {
    fn err<T>(&self, what: &'static str) -> Result<T, LineError> {
        Err(LineError::Syntax { what, at: self.i })
    }

    /// Skips whitespace; the next byte, not consumed.
    #[inline]
    fn ws(&mut self) -> Option<u8> {
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b' ' | b'\t' | b'\n' | b'\r' => self.i += 1,
                _ => return Some(c),
            }
        }
        None
    }

    /// Consumes `c` when it comes next (after whitespace).
    #[inline]
    fn eat(&mut self, c: u8) -> bool {
        let next = self.ws() == Some(c);
        if next {
            self.i += 1;
        }
        next
    }

    /// After an element of a container closed by `close`: consumes a `,`
    /// (`false`, another element follows) or `close` (`true`, the
    /// container ended); anything else is the error `what`.
    #[inline]
    fn comma_or(&mut self, close: u8, what: &'static str) -> Result<bool, LineError> {
        match self.ws() {
            Some(b',') => {
                self.i += 1;
                Ok(false)
            }
            Some(c) if c == close => {
                self.i += 1;
                Ok(true)
            }
            _ => self.err(what),
        }
    }

    /// Nothing but whitespace is left.
    fn end(&mut self) -> Result<(), LineError> {
        match self.ws() {
            None => Ok(()),
            Some(_) => self.err("trailing characters"),
        }
    }

    fn literal(&mut self, lit: &[u8]) -> Result<(), LineError> {
        match self.b.get(self.i..) {
            Some(rest) if rest.starts_with(lit) => {
                self.i += lit.len();
                Ok(())
            }
            _ => self.err("expected a value"),
        }
    }

    /// Consumes `null` when it comes next.
    pub(crate) fn null(&mut self) -> Result<bool, LineError> {
        if self.ws() == Some(b'n') {
            self.literal(b"null")?;
            return Ok(true);
        }
        Ok(false)
    }

    /// The next byte after whitespace, not consumed (`None` at the end).
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.ws()
    }

    /// An optional string: `null` is `None`, anything but a string an error.
    pub(crate) fn opt_str(&mut self) -> Result<Option<Cow<'a, str>>, LineError> {
        match self.ws() {
            Some(b'"') => {
                self.i += 1;
                self.string_body().map(Some)
            }
            Some(b'n') => self.literal(b"null").map(|()| None),
            _ => self.err("expected a string"),
        }
    }

    /// A string (after whitespace).
    pub(crate) fn str(&mut self) -> Result<Cow<'a, str>, LineError> {
        match self.ws() {
            Some(b'"') => {
                self.i += 1;
                self.string_body()
            }
            _ => self.err("expected a string"),
        }
    }

    /// An optional boolean: `null` is `None`.
    pub(crate) fn opt_bool(&mut self) -> Result<Option<bool>, LineError> {
        match self.ws() {
            Some(b't') => self.literal(b"true").map(|()| Some(true)),
            Some(b'f') => self.literal(b"false").map(|()| Some(false)),
            Some(b'n') => self.literal(b"null").map(|()| None),
            _ => self.err("expected a boolean"),
        }
    }

    /// An optional value kept as its exact text: `null` is `None`.
    pub(crate) fn opt_raw(&mut self) -> Result<Option<&'a str>, LineError> {
        if self.null()? {
            return Ok(None);
        }
        self.raw().map(Some)
    }

    /// Any value, kept as its exact text (which must be UTF-8).
    pub(crate) fn raw(&mut self) -> Result<&'a str, LineError> {
        let span = self.raw_bytes()?;
        std::str::from_utf8(span).map_err(|_| LineError::Syntax {
            what: "a value that is not UTF-8",
            at: self.i,
        })
    }

    /// Any value, kept as its exact bytes.
    pub(crate) fn raw_bytes(&mut self) -> Result<&'a [u8], LineError> {
        self.ws();
        let start = self.i;
        self.skip()?;
        Ok(self.b.get(start..self.i).unwrap_or_default())
    }

    /// An array, each element read by `f`.
    pub(crate) fn array(
        &mut self,
        mut f: impl FnMut(&mut Self) -> Result<(), LineError>,
    ) -> Result<(), LineError> {
        if !self.eat(b'[') {
            return self.err("expected an array");
        }
        if self.eat(b']') {
            return Ok(());
        }
        loop {
            f(self)?;
            if self.comma_or(b']', "expected `,` or `]`")? {
                return Ok(());
            }
        }
    }

    /// A struct of the fields `names` (at most 32), as serde reads one: an
    /// object whose known keys `f` reads by index (others skipped, a known
    /// key twice an error), or an array of the fields in order.
    pub(crate) fn record(
        &mut self,
        names: &[&str],
        mut f: impl FnMut(&mut Self, usize) -> Result<(), LineError>,
    ) -> Result<(), LineError> {
        match self.ws() {
            Some(b'{') => {
                self.i += 1;
                if self.eat(b'}') {
                    return Ok(());
                }
                let mut seen = 0u32;
                loop {
                    if !self.eat(b'"') {
                        return self.err("expected a key");
                    }
                    let key = self.string_body()?;
                    if !self.eat(b':') {
                        return self.err("expected `:`");
                    }
                    match names.iter().position(|n| *n == key) {
                        Some(k) => {
                            let bit = 1u32.checked_shl(k as u32).unwrap_or(0);
                            if seen & bit != 0 {
                                return self.err("duplicate field");
                            }
                            seen |= bit;
                            f(self, k)?;
                        }
                        None => self.skip()?,
                    }
                    if self.comma_or(b'}', "expected `,` or `}`")? {
                        return Ok(());
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                for k in 0..names.len() {
                    let ended = if k == 0 {
                        self.eat(b']')
                    } else {
                        self.comma_or(b']', "expected `,` or `]`")?
                    };
                    if ended {
                        return Ok(());
                    }
                    f(self, k)?;
                }
                if self.eat(b']') {
                    Ok(())
                } else {
                    self.err("more elements than fields")
                }
            }
            _ => self.err("expected an object"),
        }
    }

    /// A string's content after its opening quote, decoded strictly;
    /// borrowed when it has no escape.
    fn string_body(&mut self) -> Result<Cow<'a, str>, LineError> {
        let start = self.i;
        let Some(j) = next_special(self.b, self.i) else {
            self.i = self.b.len();
            return self.err("unterminated string");
        };
        self.i = j;
        let head = self.b.get(start..j).unwrap_or_default();
        match self.b.get(j) {
            Some(b'"') => {
                self.i = j + 1;
                std::str::from_utf8(head)
                    .map(Cow::Borrowed)
                    .map_err(|_| LineError::Syntax {
                        what: "a string that is not UTF-8",
                        at: start,
                    })
            }
            Some(b'\\') => {
                let mut out = head.to_vec();
                self.escaped_tail(&mut out)?;
                String::from_utf8(out)
                    .map(Cow::Owned)
                    .map_err(|_| LineError::Syntax {
                        what: "a string that is not UTF-8",
                        at: start,
                    })
            }
            _ => self.err("control character in a string"),
        }
    }

    /// Decodes from an escape to the closing quote into `out`.
    fn escaped_tail(&mut self, out: &mut Vec<u8>) -> Result<(), LineError> {
        loop {
            match self.b.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.i += 1;
                    self.escape(out)?;
                }
                Some(_) => {
                    let Some(j) = next_special(self.b, self.i) else {
                        self.i = self.b.len();
                        return self.err("unterminated string");
                    };
                    if j == self.i {
                        return self.err("control character in a string");
                    }
                    out.extend_from_slice(self.b.get(self.i..j).unwrap_or_default());
                    self.i = j;
                }
                None => return self.err("unterminated string"),
            }
        }
    }

    /// One escape after its backslash, decoded into `out`.
    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), LineError> {
        let Some(&c) = self.b.get(self.i) else {
            return self.err("unterminated string");
        };
        self.i += 1;
        let byte = match c {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let n = self.hex4()?;
                let code = match n {
                    0xDC00..=0xDFFF => return self.err("lone surrogate in an escape"),
                    0xD800..=0xDBFF => {
                        if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                            return self.err("lone surrogate in an escape");
                        }
                        self.i += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return self.err("lone surrogate in an escape");
                        }
                        0x1_0000 + ((u32::from(n - 0xD800) << 10) | u32::from(low - 0xDC00))
                    }
                    _ => u32::from(n),
                };
                let Some(ch) = char::from_u32(code) else {
                    return self.err("invalid escape");
                };
                out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                return Ok(());
            }
            _ => return self.err("invalid escape"),
        };
        out.push(byte);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u16, LineError> {
        let Some(d) = self.b.get(self.i..self.i + 4) else {
            self.i = self.b.len();
            return self.err("unterminated string");
        };
        let mut n = 0u16;
        for &c in d {
            match hex(c) {
                Some(v) => n = (n << 4) | v,
                None => return self.err("invalid escape"),
            }
        }
        self.i += 4;
        Ok(n)
    }

    /// Skips a string after its opening quote, checking escapes for form
    /// only (as serde_json does for a value it ignores).
    fn skip_str(&mut self) -> Result<(), LineError> {
        loop {
            let Some(j) = next_special(self.b, self.i) else {
                self.i = self.b.len();
                return self.err("unterminated string");
            };
            self.i = j + 1;
            match self.b.get(j) {
                Some(b'"') => return Ok(()),
                Some(b'\\') => match self.b.get(self.i) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
                    Some(b'u') => {
                        self.i += 1;
                        self.hex4()?;
                    }
                    Some(_) => return self.err("invalid escape"),
                    None => return self.err("unterminated string"),
                },
                _ => {
                    self.i = j;
                    return self.err("control character in a string");
                }
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.b.get(self.i) {
            self.i += 1;
        }
        self.i - start
    }

    /// Skips a number by the JSON grammar.
    fn skip_number(&mut self) -> Result<(), LineError> {
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => {
                self.i += 1;
                if let Some(b'0'..=b'9') = self.b.get(self.i) {
                    return self.err("invalid number");
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.err("invalid number"),
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return self.err("invalid number");
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return self.err("invalid number");
            }
        }
        Ok(())
    }

    /// A key of a skipped object, up to and including its colon.
    fn skip_key(&mut self) -> Result<(), LineError> {
        if !self.eat(b'"') {
            return self.err("expected a key");
        }
        self.skip_str()?;
        if !self.eat(b':') {
            return self.err("expected `:`");
        }
        Ok(())
    }

    /// Skips one value (after whitespace), without recursion.
    fn skip(&mut self) -> Result<(), LineError> {
        let mut open = Frames {
            depth: 0,
            bits: 0,
            deeper: Vec::new(),
        };
        loop {
            match self.ws() {
                Some(b'"') => {
                    self.i += 1;
                    self.skip_str()?;
                }
                Some(b'{') => {
                    self.i += 1;
                    if !self.eat(b'}') {
                        open.push(true);
                        self.skip_key()?;
                        continue;
                    }
                }
                Some(b'[') => {
                    self.i += 1;
                    if !self.eat(b']') {
                        open.push(false);
                        continue;
                    }
                }
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                Some(b'-' | b'0'..=b'9') => self.skip_number()?,
                _ => return self.err("expected a value"),
            }
            // A value ended: close what it ends, or go on to the next one.
            loop {
                let Some(object) = open.top() else {
                    return Ok(());
                };
                let ended = if object {
                    self.comma_or(b'}', "expected `,` or `}`")?
                } else {
                    self.comma_or(b']', "expected `,` or `]`")?
                };
                if ended {
                    open.pop();
                } else {
                    if object {
                        self.skip_key()?;
                    }
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A JSON value, rendered as text with chosen whitespace and escapes.
    #[derive(Debug, Clone)]
    enum J {
        Null,
        Bool(bool),
        Num(&'static str),
        Str(String),
        Arr(Vec<J>),
        Obj(Vec<(String, J)>),
    }

    const NUMBERS: &[&str] = &[
        "0",
        "-0",
        "7",
        "-12",
        "3.25",
        "1e5",
        "-2.5E-3",
        "6.02e+23",
        "1E-400",
        "-0.0e0",
        "18446744073709551616",
        "-9223372036854775809",
        "0.000001",
    ];
    const WS: &[&str] = &["", "", "", " ", "\t", "\r\n", "\n  "];

    /// Renders `c`: raw where JSON allows, else escaped; `style` picks.
    fn char_text(c: char, style: u8, out: &mut String) {
        match c {
            '"' => out.push_str(if style.is_multiple_of(2) {
                "\\\""
            } else {
                "\\u0022"
            }),
            '\\' => out.push_str(if style.is_multiple_of(2) {
                "\\\\"
            } else {
                "\\u005C"
            }),
            '\n' if !style.is_multiple_of(3) => out.push_str("\\n"),
            '\t' if !style.is_multiple_of(3) => out.push_str("\\t"),
            '/' if style.is_multiple_of(2) => out.push_str("\\/"),
            c if (c as u32) < 0x20 || style.is_multiple_of(5) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    if style.is_multiple_of(2) {
                        out.push_str(&format!("\\u{u:04x}"));
                    } else {
                        out.push_str(&format!("\\u{u:04X}"));
                    }
                }
            }
            c => out.push(c),
        }
    }

    fn str_text(s: &str, styles: &[u8], out: &mut String) {
        out.push('"');
        for (i, c) in s.chars().enumerate() {
            char_text(
                c,
                styles.get(i % styles.len().max(1)).copied().unwrap_or(1),
                out,
            );
        }
        out.push('"');
    }

    fn render(v: &J, styles: &[u8], n: &mut usize, out: &mut String) {
        let ws = |n: &mut usize, out: &mut String| {
            *n += 1;
            let pick = styles.get(*n % styles.len().max(1)).copied().unwrap_or(0);
            out.push_str(WS[pick as usize % WS.len()]);
        };
        match v {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Num(t) => out.push_str(t),
            J::Str(s) => str_text(s, styles, out),
            J::Arr(items) => {
                out.push('[');
                ws(n, out);
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                        ws(n, out);
                    }
                    render(item, styles, n, out);
                    ws(n, out);
                }
                out.push(']');
            }
            J::Obj(members) => {
                out.push('{');
                ws(n, out);
                for (i, (k, item)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                        ws(n, out);
                    }
                    str_text(k, styles, out);
                    ws(n, out);
                    out.push(':');
                    ws(n, out);
                    render(item, styles, n, out);
                    ws(n, out);
                }
                out.push('}');
            }
        }
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z ]{0,8}",
            "[\"\\\\/\\n\\t\\u{0}-\\u{1f}]{0,6}",
            "[é€😀\\u{7f}\\u{80}-\\u{10ff}\\u{fffd}\\u{10000}-\\u{10ffff}]{0,6}",
            ".{0,8}",
        ]
    }

    fn value() -> impl Strategy<Value = J> {
        let leaf = prop_oneof![
            Just(J::Null),
            any::<bool>().prop_map(J::Bool),
            proptest::sample::select(NUMBERS).prop_map(J::Num),
            text().prop_map(J::Str),
        ];
        leaf.prop_recursive(5, 40, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(J::Arr),
                // serde_json's raw-value token as a key too: with the
                // feature off it is an ordinary key for both parsers.
                proptest::collection::vec(
                    ("k[a-z]{0,3}|\\$serde_json::private::RawValue", inner),
                    0..5,
                )
                .prop_map(J::Obj),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, .. Default::default() })]

        /// The span kept for a field parses (by serde_json) to the value
        /// serde_json finds at that key in the whole document, whatever
        /// the escapes, whitespace, unicode and nesting around it.
        #[test]
        fn a_kept_span_is_the_value_at_its_key(
            before in proptest::collection::vec(("k[a-z]{0,3}", value()), 0..3),
            target in value(),
            after in proptest::collection::vec(("k[a-z]{0,3}", value()), 0..3),
            styles in proptest::collection::vec(any::<u8>(), 1..16),
            as_array in any::<bool>(),
        ) {
            let mut members = before;
            members.push(("target".to_owned(), target));
            members.extend(after);
            let doc = J::Obj(members);
            let mut line = String::new();
            let mut n = 0;
            line.push_str(WS[styles[0] as usize % WS.len()]);
            render(&doc, &styles, &mut n, &mut line);
            line.push_str(WS[styles[styles.len() - 1] as usize % WS.len()]);
            let full: serde_json::Value = serde_json::from_str(&line).expect("the generated text is JSON");
            let span = target_span(&line);
            let span = span.map_err(|e| TestCaseError::fail(format!("{e}: {line}")))?;
            let span = span.ok_or_else(|| TestCaseError::fail(format!("no span: {line}")))?;
            let reread: serde_json::Value = serde_json::from_str(span).expect("a span is JSON");
            prop_assert_eq!(&reread, &full["target"], "span {} of {}", span, line);
            // The span is the value's own text: no surrounding whitespace.
            prop_assert_eq!(span.trim(), span);
            prop_assert_eq!(whole_value(span), Some(span));
            // The same value as the only element of a positional record.
            if as_array {
                let arr = format!("[{span}]");
                prop_assert_eq!(target_span(&arr).ok().flatten(), Some(span));
            }
        }

        /// A string decodes as serde_json decodes it.
        #[test]
        fn a_string_decodes_as_serde_json_decodes_it(s in text(), styles in proptest::collection::vec(any::<u8>(), 1..8)) {
            let mut lit = String::new();
            str_text(&s, &styles, &mut lit);
            let ours = parse_all(lit.as_bytes(), |sc| sc.str()).map_err(|e| TestCaseError::fail(format!("{e}: {lit}")))?;
            let theirs: String = serde_json::from_str(&lit).expect("serde_json reads it");
            prop_assert_eq!(ours.as_ref(), theirs.as_str());
            prop_assert_eq!(ours.as_ref(), s.as_str());
        }

        /// On arbitrary bytes the scanner never panics, and whenever it
        /// takes a whole value serde_json takes it too, with the same span.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..64),
            proptest::collection::vec(proptest::sample::select(b"{}[]\":,0123 -.eE\\ntrufalsu/\t".to_vec()), 0..40),
        ]) {
            let text = String::from_utf8_lossy(&bytes);
            let theirs = serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok();
            prop_assert_eq!(whole_value(&text).is_some(), theirs, "{:?}", text);
            if let Some(span) = whole_value(&text) {
                prop_assert_eq!(span, text.trim_matches([' ', '\t', '\r', '\n']));
            }
            let _ = parse_all(&bytes, |s| s.record(&["a", "b"], |s, _| s.opt_raw().map(|_| ())));
        }
    }

    /// What the parsers' former `#[derive(Deserialize)]` structs were: a
    /// decoded string, a value only kept (`IgnoredAny` checks it as a
    /// `RawValue` did, the text being UTF-8 already) and a boolean, all
    /// optional with defaults.
    #[derive(serde::Deserialize)]
    struct Derived<'a> {
        #[serde(borrow, default)]
        a: Option<Cow<'a, str>>,
        #[serde(default)]
        b: Option<serde::de::IgnoredAny>,
        #[serde(default)]
        c: Option<bool>,
    }

    /// `record` over the same three fields: the decoded string, the kept
    /// span, the boolean.
    type Ours<'a> = (Option<Cow<'a, str>>, Option<&'a str>, Option<bool>);

    fn ours(text: &str) -> Result<Ours<'_>, LineError> {
        parse_all(text.as_bytes(), |s| {
            let mut got: Ours<'_> = (None, None, None);
            s.record(&["a", "b", "c"], |s, k| {
                match k {
                    0 => got.0 = s.opt_str()?,
                    1 => got.1 = s.opt_raw()?,
                    _ => got.2 = s.opt_bool()?,
                }
                Ok(())
            })?;
            Ok(got)
        })
    }

    /// A record-shaped document: an object over the field names and others
    /// (repeats allowed) or an array, with values of any kind; a quarter
    /// of them mutated by one character removed or inserted.
    fn record_text() -> impl Strategy<Value = String> {
        let member = (
            proptest::sample::select(&["a", "b", "c", "k", "ab"][..]),
            value(),
        );
        (
            prop_oneof![
                proptest::collection::vec(member, 0..5).prop_map(|m| {
                    J::Obj(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
                }),
                proptest::collection::vec(value(), 0..5).prop_map(J::Arr),
                value(),
            ],
            proptest::collection::vec(any::<u8>(), 1..8),
            proptest::option::weighted(
                0.25,
                (
                    any::<usize>(),
                    proptest::sample::select(
                        &['\0', '{', '}', '[', ']', '"', ':', ',', '\\', '1', 'n'][..],
                    ),
                ),
            ),
        )
            .prop_map(|(doc, styles, mutation)| {
                let mut out = String::new();
                render(&doc, &styles, &mut 0, &mut out);
                let Some((at, c)) = mutation else {
                    return out;
                };
                let mut chars: Vec<char> = out.chars().collect();
                let at = at % (chars.len() + 1);
                if c == '\0' && at < chars.len() {
                    chars.remove(at);
                } else if c != '\0' {
                    chars.insert(at, c);
                }
                chars.into_iter().collect()
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 1024, .. Default::default() })]

        /// `record` takes exactly the documents serde's derived struct
        /// takes (object or array form, duplicate and unknown keys, `null`s,
        /// wrong kinds, broken syntax), and reads the same fields from them.
        #[test]
        fn a_record_reads_what_a_derived_struct_reads(text in record_text()) {
            let theirs = serde_json::from_str::<Derived<'_>>(&text);
            let ours = ours(&text);
            prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{:?} vs {:?}: {}", ours.as_ref().err(), theirs.as_ref().err(), text);
            if let (Ok(o), Ok(t)) = (ours, theirs) {
                prop_assert_eq!(o.0, t.a, "{}", text);
                prop_assert_eq!(o.1.is_some(), t.b.is_some(), "{}", text);
                prop_assert_eq!(o.2, t.c, "{}", text);
            }
        }
    }

    fn span(text: &str) -> Option<&str> {
        whole_value(text)
    }

    /// The kept span of the field `target` of the record `text`.
    fn target_span(text: &str) -> Result<Option<&str>, LineError> {
        parse_all(text.as_bytes(), |s| {
            let mut got = None;
            s.record(&["target"], |s, _| {
                got = Some(s.raw()?);
                Ok(())
            })?;
            Ok(got)
        })
    }

    #[test]
    fn spans_are_exact_and_trimmed() {
        assert_eq!(
            span(" {\"a\" : [1, 2.5e-3, \"x\\\"y\"]} "),
            Some("{\"a\" : [1, 2.5e-3, \"x\\\"y\"]}")
        );
        assert_eq!(span("null"), Some("null"));
        assert_eq!(span("\"\\ud83d\\ude00\""), Some("\"\\ud83d\\ude00\""));
    }

    #[test]
    fn malformed_values_are_refused() {
        for bad in [
            "",
            "[1,]",
            "{\"a\":1,}",
            "{,}",
            "[1 2]",
            "01",
            "1.",
            "1e",
            "-",
            "tru",
            "nul",
            "\"a",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\u{1}\"",
            "{\"a\" 1}",
            "{1:2}",
            "[}",
            "{]",
            "1 2",
            "[[]",
            "{\"a\":{}",
        ] {
            assert_eq!(span(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn strings_decode_strictly() {
        let s = |t: &'static str| parse_all(t.as_bytes(), |s| s.str());
        assert_eq!(s("\"plain\"").ok().as_deref(), Some("plain"));
        assert_eq!(
            s("\"a\\n\\u00e9\\ud83d\\ude00\\/\"").ok().as_deref(),
            Some("a\n\u{e9}\u{1f600}/")
        );
        assert!(s("\"\\ud83d\"").is_err());
        assert!(s("\"\\ude00\"").is_err());
        assert!(s("\"\\ud83d\\u0041\"").is_err());
        // Lone surrogates only have to be well formed in a skipped value.
        assert_eq!(span("\"\\ud83d\""), Some("\"\\ud83d\""));
    }

    #[test]
    fn deep_nesting_is_skipped_without_recursion() {
        let deep = format!("{}0{}", "[{\"k\":".repeat(5000), "}]".repeat(5000));
        assert_eq!(span(&deep).map(str::len), Some(deep.len()));
        let bad = format!("{}{}", "[".repeat(300), "}".repeat(300));
        assert_eq!(span(&bad), None);
    }

    #[test]
    fn records_read_objects_and_arrays_as_serde_does() {
        let names = ["a", "b"];
        let read = |t: &'static str| {
            parse_all(t.as_bytes(), |s| {
                let mut got = (None, None);
                s.record(&names, |s, k| {
                    match k {
                        0 => got.0 = s.opt_str()?,
                        _ => got.1 = s.opt_raw()?,
                    }
                    Ok(())
                })?;
                Ok(got)
            })
        };
        let ok = read("{\"z\":[1,{}],\"b\":{\"x\":1},\"a\":\"s\"}").expect("object");
        assert_eq!((ok.0.as_deref(), ok.1), (Some("s"), Some("{\"x\":1}")));
        let ok = read("[\"s\"]").expect("short array");
        assert_eq!((ok.0.as_deref(), ok.1), (Some("s"), None));
        assert!(read("[\"s\",1,2]").is_err());
        assert!(read("{\"a\":null,\"a\":\"x\"}").is_err());
        assert!(read("{\"a\":1}").is_err());
        assert!(read("7").is_err());
    }
}
