//! Bounded NDJSON line decoding: one event per line, memory bounded by the
//! maximum line length whatever the child writes.

use std::collections::VecDeque;

use serde::Serialize;

/// How each stdout line is delivered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LineFormat {
    /// Parsed into a `serde_json::Value` ([`Event::Json`]).
    #[default]
    Value,
    /// Validated as JSON and kept as text ([`Event::RawJson`]); about twice
    /// as fast, for consumers that parse into their own types.
    Raw,
}

/// One item read from the leg's stdout.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub enum Event {
    /// A line that parsed as JSON.
    Json {
        /// 1-based line number on stdout.
        line: u64,
        /// The parsed value.
        value: serde_json::Value,
    },
    /// A line longer than the configured maximum; its bytes were discarded.
    LineTooLong {
        /// 1-based line number on stdout.
        line: u64,
        /// How many bytes the line had (without the newline).
        len: u64,
    },
    /// A valid JSON line kept as text ([`LineFormat::Raw`]): parse it into
    /// your own types with `serde_json::from_str(&json)`.
    RawJson {
        /// 1-based line number on stdout.
        line: u64,
        /// The line, trimmed of surrounding whitespace.
        json: Box<str>,
    },
    /// A line that is not valid JSON.
    InvalidJson {
        /// 1-based line number on stdout.
        line: u64,
        /// The parser's message (it never quotes the line).
        error: String,
    },
}

/// Splits a byte stream into lines and parses each, discarding any line
/// longer than `max_line_len` without buffering it.
#[derive(Debug)]
pub(crate) struct LineDecoder {
    format: LineFormat,
    partial: Vec<u8>,
    max_line_len: usize,
    /// Bytes of an over-long line seen so far, while discarding it.
    discarding: Option<u64>,
    line: u64,
}

impl LineDecoder {
    pub(crate) fn new(max_line_len: usize, format: LineFormat) -> Self {
        Self {
            format,
            partial: Vec::new(),
            max_line_len,
            discarding: None,
            line: 0,
        }
    }

    /// Feeds one chunk, appending complete events to `out`.
    pub(crate) fn push(&mut self, mut chunk: &[u8], out: &mut VecDeque<Event>) {
        while !chunk.is_empty() {
            let newline = memchr::memchr(b'\n', chunk);
            let (segment, rest, ends_line) = match newline {
                Some(i) => (&chunk[..i], &chunk[i + 1..], true),
                None => (chunk, &[][..], false),
            };
            chunk = rest;
            if let Some(seen) = self.discarding.as_mut() {
                *seen += segment.len() as u64;
                if ends_line {
                    let len = *seen;
                    self.discarding = None;
                    self.line += 1;
                    out.push_back(Event::LineTooLong {
                        line: self.line,
                        len,
                    });
                }
                continue;
            }
            if self.partial.len() + segment.len() > self.max_line_len {
                let seen = (self.partial.len() + segment.len()) as u64;
                self.partial = Vec::new();
                if ends_line {
                    self.line += 1;
                    out.push_back(Event::LineTooLong {
                        line: self.line,
                        len: seen,
                    });
                } else {
                    self.discarding = Some(seen);
                }
                continue;
            }
            if !ends_line {
                self.partial.extend_from_slice(segment);
                continue;
            }
            self.line += 1;
            if self.partial.is_empty() {
                // Fast path: the whole line is inside this chunk.
                parse_line(self.format, self.line, segment, out);
            } else {
                self.partial.extend_from_slice(segment);
                let line = std::mem::take(&mut self.partial);
                parse_line(self.format, self.line, &line, out);
            }
        }
    }

    /// End of stream: a final line without a newline still counts.
    pub(crate) fn finish(&mut self, out: &mut VecDeque<Event>) {
        if let Some(len) = self.discarding.take() {
            self.line += 1;
            out.push_back(Event::LineTooLong {
                line: self.line,
                len,
            });
        } else if !self.partial.is_empty() {
            self.line += 1;
            let line = std::mem::take(&mut self.partial);
            parse_line(self.format, self.line, &line, out);
        }
    }
}

fn parse_line(format: LineFormat, line: u64, bytes: &[u8], out: &mut VecDeque<Event>) {
    let trimmed = bytes.trim_ascii();
    if trimmed.is_empty() {
        return;
    }
    if format == LineFormat::Raw {
        // Validate without building a value; the consumer parses the text
        // into its own types.
        let Ok(text) = std::str::from_utf8(trimmed) else {
            out.push_back(Event::InvalidJson {
                line,
                error: "line is not valid utf-8".to_owned(),
            });
            return;
        };
        match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => out.push_back(Event::RawJson {
                line,
                json: text.into(),
            }),
            Err(error) => out.push_back(Event::InvalidJson {
                line,
                error: error.to_string(),
            }),
        }
        return;
    }
    match serde_json::from_slice::<serde_json::Value>(trimmed) {
        Ok(value) => out.push_back(Event::Json { line, value }),
        Err(error) => out.push_back(Event::InvalidJson {
            line,
            error: error.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests;
