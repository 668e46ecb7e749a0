//! Line-by-line reading with byte offsets, a line-length cap and an
//! unterminated tail left for the next pass.

use std::io::{self, BufRead};

/// One step of a [`LineReader`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line {
    /// A newline-terminated line is in the buffer (without `\n` or `\r\n`);
    /// `end` is the offset just past its newline.
    Complete { start: u64, end: u64 },
    /// A newline-terminated line longer than the cap: skipped without being
    /// held in memory.
    Oversized { start: u64, end: u64 },
    /// Bytes after the last newline (a line still being written). The
    /// buffer holds them when they fit under the cap.
    Tail { start: u64, end: u64, fits: bool },
    /// Nothing more.
    Eof,
}

/// Reads lines from `inner`, which starts at byte `offset` of its file.
pub(crate) struct LineReader<R> {
    inner: R,
    pos: u64,
    max: usize,
    /// Bytes of the line last handed out straight from `inner`'s buffer,
    /// consumed at the next call.
    pending: usize,
}

impl<R: BufRead> LineReader<R> {
    pub(crate) fn new(inner: R, offset: u64, max_line_bytes: usize) -> Self {
        LineReader {
            inner,
            pos: offset,
            max: max_line_bytes,
            pending: 0,
        }
    }

    /// The next line and its bytes (without `\n` or `\r\n`): a line that
    /// lies whole in the reader's buffer is lent from there, uncopied;
    /// one that straddles a refill is gathered in `buf` (cleared first), as
    /// is a tail. Memory stays bounded by the cap whatever the input: an
    /// oversized line is counted, never buffered (its bytes are empty).
    pub(crate) fn next_line<'a>(
        &'a mut self,
        buf: &'a mut Vec<u8>,
    ) -> io::Result<(Line, &'a [u8])> {
        self.inner.consume(std::mem::take(&mut self.pending));
        buf.clear();
        let start = self.pos;
        // The common case: the whole line is already buffered.
        let max = self.max;
        let whole = loop {
            match self.inner.fill_buf() {
                Ok(a) => {
                    break memchr::memchr(b'\n', a)
                        .filter(|&i| i <= max)
                        .map(|i| (i, i > 0 && a[i - 1] == b'\r'));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        if let Some((i, cr)) = whole {
            self.pending = i + 1;
            self.pos += (i + 1) as u64;
            let line = Line::Complete {
                start,
                end: self.pos,
            };
            // Still buffered: this returns the same bytes without a read.
            let available = self.inner.fill_buf()?;
            return Ok((line, &available[..i - usize::from(cr)]));
        }
        let line = self.gather(buf, start)?;
        Ok((line, buf.as_slice()))
    }

    /// A line that is not whole in the buffer: copied into `buf` chunk by
    /// chunk (or skipped past the cap).
    fn gather(&mut self, buf: &mut Vec<u8>, start: u64) -> io::Result<Line> {
        let mut oversized = false;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if self.pos == start {
                    return Ok(Line::Eof);
                }
                return Ok(Line::Tail {
                    start,
                    end: self.pos,
                    fits: !oversized,
                });
            }
            let (chunk, done) = match memchr::memchr(b'\n', available) {
                Some(i) => (i, true),
                None => (available.len(), false),
            };
            if !oversized {
                if buf.len() + chunk <= self.max {
                    buf.extend_from_slice(&available[..chunk]);
                } else {
                    oversized = true;
                    buf.clear();
                }
            }
            let used = chunk + usize::from(done);
            self.inner.consume(used);
            self.pos += used as u64;
            if done {
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                return Ok(if oversized {
                    Line::Oversized {
                        start,
                        end: self.pos,
                    }
                } else {
                    Line::Complete {
                        start,
                        end: self.pos,
                    }
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Line, LineReader};

    fn all(input: &[u8], max: usize, cap: usize) -> Vec<(Line, Vec<u8>)> {
        let reader = std::io::BufReader::with_capacity(cap, input);
        let mut r = LineReader::new(reader, 10, max);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let (l, bytes) = r.next_line(&mut buf).expect("in-memory read");
            let bytes = bytes.to_vec();
            out.push((l, bytes));
            if l == Line::Eof || matches!(l, Line::Tail { .. }) {
                return out;
            }
        }
    }

    #[test]
    fn offsets_cap_and_tail() {
        for cap in [1, 3, 64] {
            let got = all(b"ab\r\n\nlongline\ntail", 5, cap);
            assert_eq!(
                got,
                vec![
                    (Line::Complete { start: 10, end: 14 }, b"ab".to_vec()),
                    (Line::Complete { start: 14, end: 15 }, b"".to_vec()),
                    (Line::Oversized { start: 15, end: 24 }, b"".to_vec()),
                    (
                        Line::Tail {
                            start: 24,
                            end: 28,
                            fits: true
                        },
                        b"tail".to_vec()
                    ),
                ],
                "buffer capacity {cap}"
            );
        }
        assert_eq!(all(b"", 5, 8), vec![(Line::Eof, vec![])]);
        assert_eq!(all(b"x\n", 5, 8)[1].0, Line::Eof);
    }
}
