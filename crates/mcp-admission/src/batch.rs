//! Batch checking for CI (`lionrt admission check`): split a stream of tool
//! descriptors into records, judge each, render verdicts as they come.
//!
//! I/O-free: the caller feeds bytes to a [`Checker`] in chunks of any size
//! and writes out what it renders, so memory stays flat whatever the input
//! size. Three input shapes are accepted: an MCP `tools/list` result
//! (`{"tools": [...]}`, also inside a JSON-RPC `{"result": {...}}`), a JSON
//! array of tools, or JSON Lines of `{id?, name, description,
//! input_schema | inputSchema}`.
//!
//! A batch is never aborted by one record: a record that cannot be judged
//! (not JSON, not an object, no string `name`) becomes an error record
//! (JSON Lines `{"id", "error"}`, a SARIF tool execution notification, a
//! table row) and the rest are judged. A non-string `description` is
//! ignored as absent, as the original does. Records nested far deeper than
//! serde_json's default limit of 128 are parsed on a growing heap stack and
//! judged (the gate itself never looks deeper than its depth cap).
//!
//! A record is parsed field by field: `id`, `name`, `description` and the
//! schema are kept (the name and description borrowed from the input), every
//! other field is checked exactly as a `serde_json::Value` parse checks it
//! and skipped without being built, so a record is readable or not, and
//! judged, exactly as if parsed whole. The id and the schema are read into a
//! flat arena (the private `arena` module) instead of a `Value`: nodes in one `Vec`,
//! strings borrowed from the input where they have no escapes, an object's
//! members sorted by key with the last of duplicate keys kept, exactly as a
//! `Value`'s `Map` holds them. The gate's engine judges the arena through
//! the same generic code that judges a `Value` (a differential property test
//! checks that every report field agrees). The arena's buffers are reused
//! from record to record, and it is dropped without recursion however deep
//! the record, whether the record is judged or abandoned by an error
//! (trailing bytes, a later field that cannot be read). Keys are always
//! ordinary keys, even in a build where some crate turns on serde_json's
//! `raw_value` feature: with it on, `Value` itself would read an object
//! keyed `$serde_json::private::RawValue` as the JSON text in its string,
//! and the gate would judge a schema no host receives (the `lionrt` build
//! keeps the feature off, and `cargo xtask ci` checks that).
//!
//! One case cannot be resynchronised: an element of a JSON array (or of a
//! `tools` list) whose brackets do not balance ends the batch with one
//! error record, since no later boundary can be trusted. JSON Lines recover
//! at the next line.

use std::fmt;
use std::fmt::Write as _;
use std::str::FromStr;

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::admission::{Policy, judge_node};
use crate::arena::{Arena, ArenaNode, Plain, first_special};
use crate::node::{Node, View};
use crate::reason::{AdmissionDenied, Reason};
use crate::report::Limits;

/// Exit code: every tool admitted.
pub const EXIT_ADMITTED: i32 = 0;
/// Exit code: at least one tool denied, none unreadable.
pub const EXIT_DENIED: i32 = 1;
/// Exit code: the input, or at least one record of it, could not be read.
pub const EXIT_UNREADABLE: i32 = 2;

/// Nesting past which a record is parsed on a growing heap stack.
const DEEP: usize = 100;

/// The bytes a [`Checker`]'s pending batch keeps allocated between chunks.
const PENDING_KEEP: usize = 1 << 22;

/// The verdict for one record.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The record's id, echoed (`null` when it has none).
    pub id: Option<Value>,
    /// The advertised name (empty for an error record without one).
    pub name: String,
    /// The 1-based input line the record starts on.
    pub line: Option<usize>,
    /// The 0-based index of the record in the input.
    pub index: usize,
    /// `None` when admitted (or when the record could not be judged).
    pub reason: Option<Reason>,
    /// The original gate's message when denied.
    pub message: Option<String>,
    /// What a denial rests on (see `AdmissionReport::detail`); empty otherwise.
    pub detail: String,
    /// Why the record could not be judged, lowercase; `None` when judged.
    pub error: Option<String>,
}

impl ToolResult {
    fn error(id: Option<Value>, line: Option<usize>, index: usize, error: String) -> Self {
        Self {
            id,
            name: String::new(),
            line,
            index,
            reason: None,
            message: None,
            detail: String::new(),
            error: Some(error),
        }
    }
}

/// Output formats of a [`Renderer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// A human-readable table.
    Table,
    /// One JSON object per line: `{"id", "name", "verdict", "reason"}`, or
    /// `{"id", "error"}` for a record that could not be judged.
    Jsonl,
    /// SARIF 2.1.0, one rule per reason code; unreadable records are tool
    /// execution notifications.
    Sarif,
}

/// An unknown `--format` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFormat(pub String);

impl fmt::Display for UnknownFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown format {:?} (expected table, jsonl or sarif)",
            self.0
        )
    }
}

impl std::error::Error for UnknownFormat {}

impl FromStr for OutputFormat {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "table" | "human" => Ok(OutputFormat::Table),
            "jsonl" => Ok(OutputFormat::Jsonl),
            "sarif" => Ok(OutputFormat::Sarif),
            other => Err(UnknownFormat(other.to_owned())),
        }
    }
}

/// The UTF-8 byte order mark, skipped at the start of the input.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// Where a [`Splitter`] puts the records it completes.
enum Sink<'a> {
    /// Handed to a callback.
    Each(&'a mut dyn FnMut(&RawRecord)),
    /// Packed into a batch.
    Batch(&'a mut RecordBatch),
}

impl Sink<'_> {
    fn record(&mut self, r: &RawRecord) {
        match self {
            Sink::Each(each) => each(r),
            Sink::Batch(batch) => batch.push(r),
        }
    }
}

/// One record found in the input, not yet parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRecord {
    /// The record's bytes.
    pub bytes: Vec<u8>,
    /// The 1-based line it starts on.
    pub line: usize,
    /// Its 0-based index in the input.
    pub index: usize,
    /// Set when the input ended or broke inside this record.
    pub broken: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Before the first significant byte.
    Detect,
    /// Inside the first top-level object, looking for a `tools` list.
    Probe,
    /// Elements of an array whose elements sit at `depth`.
    Elements { depth: usize },
    /// Skipping the rest of an enclosing object after its `tools` list.
    Rest,
    /// One record per line.
    Lines,
    /// Nothing more is read.
    Done,
}

/// Splits a byte stream into records, whatever the chunk boundaries.
#[derive(Debug)]
pub struct Splitter {
    mode: Mode,
    /// 1-based current line.
    line: usize,
    at_start: bool,
    /// Bytes of a leading UTF-8 byte order mark matched so far (a chunk
    /// may end inside it).
    bom_matched: usize,
    /// Structural scan state.
    stack: Vec<u8>,
    in_string: bool,
    escaped: bool,
    /// The record being collected.
    buf: Vec<u8>,
    in_record: bool,
    record_line: usize,
    next_index: usize,
    /// Probe: the last string seen at the probed object levels, and the key
    /// whose value is being read at depth 1.
    string_start: Option<usize>,
    last_string: Option<Vec<u8>>,
    key_at_depth1: Option<Vec<u8>>,
    pending_key: Option<Vec<u8>>,
    /// Bytes of the probed object so far (it may be a single record).
    probe_buf: Vec<u8>,
    probe_line: usize,
}

impl Default for Splitter {
    fn default() -> Self {
        Self::new()
    }
}

impl Splitter {
    /// A splitter at the start of the input.
    pub fn new() -> Self {
        Self {
            mode: Mode::Detect,
            line: 1,
            at_start: true,
            bom_matched: 0,
            stack: Vec::new(),
            in_string: false,
            escaped: false,
            buf: Vec::new(),
            in_record: false,
            record_line: 1,
            next_index: 0,
            string_start: None,
            last_string: None,
            key_at_depth1: None,
            pending_key: None,
            probe_buf: Vec::new(),
            probe_line: 1,
        }
    }

    /// Hands the collected record to `each`, keeping the buffer for the next.
    fn emit(&mut self, broken: Option<String>, each: &mut dyn FnMut(&RawRecord)) {
        let record = RawRecord {
            bytes: std::mem::take(&mut self.buf),
            line: self.record_line,
            index: self.next_index,
            broken,
        };
        self.next_index += 1;
        self.in_record = false;
        each(&record);
        self.buf = record.bytes;
        self.buf.clear();
    }

    /// Feeds the next chunk; calls `each` with every record it completes.
    pub fn feed(&mut self, chunk: &[u8], each: &mut dyn FnMut(&RawRecord)) {
        self.feed_to(chunk, &mut Sink::Each(each));
    }

    /// Feeds the next chunk; appends every record it completes to `batch`
    /// (as [`Self::feed`] with [`RecordBatch`]'s push, but a JSON line that
    /// lies whole in the chunk is copied once, straight from it).
    pub fn feed_into(&mut self, chunk: &[u8], batch: &mut RecordBatch) {
        self.feed_to(chunk, &mut Sink::Batch(batch));
    }

    fn feed_to(&mut self, mut chunk: &[u8], sink: &mut Sink<'_>) {
        if self.at_start {
            // A leading byte order mark is skipped, wherever the chunks cut it.
            while let Some((&b, rest)) = chunk.split_first() {
                if BOM.get(self.bom_matched) != Some(&b) {
                    self.end_bom(sink);
                    break;
                }
                self.bom_matched += 1;
                chunk = rest;
                if self.bom_matched == BOM.len() {
                    self.at_start = false;
                    break;
                }
            }
        }
        self.feed_bytes(chunk, sink);
    }

    /// No byte order mark after all: the bytes taken for one are input.
    fn end_bom(&mut self, sink: &mut Sink<'_>) {
        self.at_start = false;
        let taken = BOM.get(..self.bom_matched).unwrap_or_default();
        self.feed_bytes(taken, sink);
    }

    fn feed_bytes(&mut self, chunk: &[u8], sink: &mut Sink<'_>) {
        let mut i = 0;
        while i < chunk.len() {
            match self.mode {
                Mode::Done => return,
                Mode::Lines => {
                    i += self.feed_lines(&chunk[i..], sink);
                }
                _ => {
                    self.scan_byte(chunk[i], &mut |r| sink.record(r));
                    i += 1;
                }
            }
        }
    }

    /// Line mode: consumes up to the end of the chunk, returns bytes consumed.
    fn feed_lines(&mut self, chunk: &[u8], sink: &mut Sink<'_>) -> usize {
        let mut start = 0;
        while let Some(nl) = memchr::memchr(b'\n', &chunk[start..]) {
            let end = start + nl;
            let line = &chunk[start..end];
            start = end + 1;
            if let Sink::Batch(batch) = sink
                && !self.in_record
                && self.buf.is_empty()
            {
                // A whole line of this chunk: packed straight from it.
                self.line += 1;
                if line.iter().any(|b| !b.is_ascii_whitespace()) {
                    batch.push_parts(line, self.line - 1, self.next_index, None);
                    self.next_index += 1;
                }
                continue;
            }
            if !self.in_record {
                self.record_line = self.line;
            }
            self.buf.extend_from_slice(line);
            self.line += 1;
            if self.buf.iter().any(|b| !b.is_ascii_whitespace()) {
                self.emit(None, &mut |r| sink.record(r));
            } else {
                self.buf.clear();
                self.in_record = false;
            }
        }
        if start < chunk.len() {
            if !self.in_record {
                self.record_line = self.line;
                self.in_record = true;
            }
            self.buf.extend_from_slice(&chunk[start..]);
        }
        chunk.len()
    }

    fn scan_byte(&mut self, b: u8, each: &mut dyn FnMut(&RawRecord)) {
        if b == b'\n' {
            self.line += 1;
        }
        match self.mode {
            Mode::Detect => match b {
                b'[' => {
                    self.stack.push(b'[');
                    self.mode = Mode::Elements { depth: 1 };
                }
                b'{' => {
                    self.stack.push(b'{');
                    self.mode = Mode::Probe;
                    self.probe_buf.push(b);
                    self.probe_line = self.line;
                }
                b if b.is_ascii_whitespace() => {}
                _ => {
                    // Anything else: JSON Lines from here.
                    self.mode = Mode::Lines;
                    self.record_line = self.line;
                    self.in_record = true;
                    self.buf.push(b);
                }
            },
            Mode::Probe => self.probe_byte(b, each),
            Mode::Elements { depth } => self.element_byte(b, depth, each),
            Mode::Rest => {
                if self.structural(b).is_err() || self.stack.is_empty() {
                    self.mode = Mode::Done;
                }
            }
            Mode::Lines | Mode::Done => {}
        }
    }

    /// Tracks strings and brackets; `Err` on a bracket that closes nothing.
    fn structural(&mut self, b: u8) -> Result<(), ()> {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
            }
            return Ok(());
        }
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.stack.push(b),
            b'}' | b']' => {
                let open = if b == b'}' { b'{' } else { b'[' };
                if self.stack.pop() != Some(open) {
                    return Err(());
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn probe_byte(&mut self, b: u8, each: &mut dyn FnMut(&RawRecord)) {
        self.probe_buf.push(b);
        let was_in_string = self.in_string;
        let depth_before = self.stack.len();
        if self.structural(b).is_err() {
            self.probe_to_lines(each);
            return;
        }
        let depth = self.stack.len();
        // Strings at depth 1 and 2 are candidate keys.
        if !was_in_string && self.in_string && depth <= 2 {
            self.string_start = Some(self.probe_buf.len());
        } else if was_in_string && !self.in_string {
            if let Some(start) = self.string_start.take() {
                let end = self.probe_buf.len() - 1;
                self.last_string = (end - start <= 16).then(|| self.probe_buf[start..end].to_vec());
            }
        } else if !self.in_string && !was_in_string {
            match b {
                b':' => self.pending_key = self.last_string.take(),
                b',' => {
                    self.pending_key = None;
                    self.last_string = None;
                    if depth == 1 {
                        self.key_at_depth1 = None;
                    }
                }
                b'{' | b'[' => {
                    let key = self.pending_key.take();
                    if depth_before == 1 {
                        self.key_at_depth1.clone_from(&key);
                    }
                    let is_tools = key.as_deref() == Some(b"tools".as_slice()) && b == b'[';
                    let at_root = depth_before == 1;
                    let in_result =
                        depth_before == 2 && self.key_at_depth1.as_deref() == Some(b"result");
                    if is_tools && (at_root || in_result) {
                        self.probe_buf = Vec::new();
                        self.mode = Mode::Elements { depth };
                    }
                }
                b'}' if depth == 0 => {
                    // A whole object without a tools list: a single record;
                    // the rest is JSON Lines.
                    self.buf = std::mem::take(&mut self.probe_buf);
                    self.record_line = self.probe_line;
                    self.emit(None, each);
                    self.mode = Mode::Lines;
                }
                b'}' | b']' => {}
                _ if !b.is_ascii_whitespace() => self.pending_key = None,
                _ => {}
            }
        }
    }

    /// The first object does not close (or closes wrongly): it was no
    /// tools list, so what was seen is read again as JSON Lines.
    fn probe_to_lines(&mut self, each: &mut dyn FnMut(&RawRecord)) {
        let seen = std::mem::take(&mut self.probe_buf);
        self.mode = Mode::Lines;
        self.stack.clear();
        self.in_string = false;
        self.escaped = false;
        self.line = self.probe_line;
        self.in_record = false;
        self.buf.clear();
        self.feed_lines(&seen, &mut Sink::Each(each));
    }

    fn element_byte(&mut self, b: u8, depth: usize, each: &mut dyn FnMut(&RawRecord)) {
        if !self.in_record {
            if b.is_ascii_whitespace() || b == b',' {
                return;
            }
            if b == b']' {
                self.stack.pop();
                self.mode = if depth == 1 { Mode::Lines } else { Mode::Rest };
                return;
            }
            self.in_record = true;
            self.record_line = self.line;
        }
        let scalar_end = !self.in_string
            && self.stack.len() == depth
            && (b == b',' || b == b']' || b.is_ascii_whitespace());
        if scalar_end {
            // A scalar element ends at a delimiter.
            self.emit(None, each);
            if b == b']' {
                self.stack.pop();
                self.mode = if depth == 1 { Mode::Lines } else { Mode::Rest };
            }
            return;
        }
        self.buf.push(b);
        if self.structural(b).is_err() || self.stack.len() < depth {
            self.emit(
                Some("unbalanced brackets: the rest of the list cannot be split".to_owned()),
                each,
            );
            self.mode = Mode::Done;
            return;
        }
        if !self.in_string && self.stack.len() == depth && matches!(b, b'}' | b']') {
            self.emit(None, each);
        }
    }

    /// Ends the input: flushes a last record, or reports where it broke off.
    pub fn finish(&mut self, each: &mut dyn FnMut(&RawRecord)) {
        if self.at_start && self.bom_matched < BOM.len() {
            self.end_bom(&mut Sink::Each(each));
        }
        match self.mode {
            Mode::Detect => {
                let record = RawRecord {
                    bytes: Vec::new(),
                    line: self.line,
                    index: self.next_index,
                    broken: Some(
                        "empty input: expected a tools/list result, a json array or json lines"
                            .to_owned(),
                    ),
                };
                self.next_index += 1;
                each(&record);
            }
            Mode::Probe => {
                // Never closed: read what was seen as JSON Lines.
                self.probe_to_lines(each);
                if self.in_record && self.buf.iter().any(|b| !b.is_ascii_whitespace()) {
                    self.emit(None, each);
                }
            }
            Mode::Elements { .. } => {
                let why = "unexpected end of input inside the list".to_owned();
                if !self.in_record {
                    self.record_line = self.line;
                }
                self.emit(Some(why), each);
            }
            Mode::Lines => {
                if self.in_record && self.buf.iter().any(|b| !b.is_ascii_whitespace()) {
                    self.emit(None, each);
                }
            }
            Mode::Rest | Mode::Done => {}
        }
        self.mode = Mode::Done;
    }
}

/// Parses one record's JSON into `arena`, at any nesting depth. What is
/// kept of it (the id and the schemas) lives in the arena, which never
/// drops recursively, whether the record is judged or abandoned by an error
/// (trailing bytes, a later field that cannot be read).
fn parse_record<'de>(
    bytes: &'de [u8],
    arena: &mut Arena<'de>,
) -> Result<Record<'de>, serde_json::Error> {
    // Valid UTF-8 (checked once, quickly) is parsed as text, so no string
    // inside is checked again; anything else as bytes, for the same errors.
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            if let Some(record) = parse_plain(text, arena) {
                return Ok(record);
            }
            arena.reset();
            parse_from(|| serde_json::Deserializer::from_str(text), arena)
        }
        Err(_) => parse_from(|| serde_json::Deserializer::from_slice(bytes), arena),
    }
}

/// The fast path of [`parse_record`]: a plain tool record (see
/// [`Plain`]), read without serde_json, exactly as serde_json reads it.
/// `None` on anything else, which serde_json then reads (and reports).
fn parse_plain<'de>(text: &'de str, arena: &mut Arena<'de>) -> Option<Record<'de>> {
    let mut p = Plain::new(text);
    p.ws();
    if !p.eat(b'{') {
        return None;
    }
    let mut e = Envelope::default();
    p.ws();
    if !p.eat(b'}') {
        loop {
            let key = p.string()?;
            p.ws();
            if !p.eat(b':') {
                return None;
            }
            p.ws();
            match key {
                "id" => e.id = Some(p.value(arena, 1)?),
                "name" => e.name = Some(plain_text(&mut p, arena)?),
                "description" => e.description = Some(plain_text(&mut p, arena)?),
                "inputSchema" => e.input_schema_camel = Some(p.value(arena, 1)?),
                "input_schema" => e.input_schema_snake = Some(p.value(arena, 1)?),
                _ => {
                    // Read (so checked) and forgotten.
                    let mark = arena.mark();
                    p.value(arena, 1)?;
                    arena.rewind(mark);
                }
            }
            p.ws();
            if p.eat(b',') {
                p.ws();
                continue;
            }
            if p.eat(b'}') {
                break;
            }
            return None;
        }
    }
    p.at_end().then_some(Record::Tool(e))
}

/// A plain `name` or `description`: a string, or any other value (read, so
/// checked, and forgotten).
fn plain_text<'de>(p: &mut Plain<'de>, arena: &mut Arena<'de>) -> Option<Text<'de>> {
    if p.at_string() {
        return p.string().map(|s| Text::Str(Cow::Borrowed(s)));
    }
    let mark = arena.mark();
    p.value(arena, 1)?;
    arena.rewind(mark);
    Some(Text::NotString)
}

/// [`parse_record`] with a deserializer made by `make` (made again for the
/// deep path).
fn parse_from<'de, R: serde_json::de::Read<'de>>(
    make: impl Fn() -> serde_json::Deserializer<R>,
    arena: &mut Arena<'de>,
) -> Result<Record<'de>, serde_json::Error> {
    let mut de = make();
    let first = RecordSeed { arena: &mut *arena }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
    match first {
        Err(e) if e.to_string().contains("recursion limit") => {
            arena.reset();
            let mut de = make();
            de.disable_recursion_limit();
            let record =
                RecordSeed { arena }.deserialize(serde_stacker::Deserializer::new(&mut de))?;
            de.end()?;
            Ok(record)
        }
        other => other,
    }
}

/// A record as the gate reads it: the fields it uses are kept (the name
/// and description borrowed from the input where they have no escapes, the
/// id and the schemas read into the arena), every other field is checked
/// exactly as a `serde_json::Value` parse checks it and then skipped without
/// being built. Duplicate keys: the last one counts, as in a `Value` (and in
/// Python's `json`).
enum Record<'de> {
    /// A JSON object.
    Tool(Envelope<'de>),
    /// Any other JSON value.
    NotObject,
}

/// The fields of a tool record the gate reads; `id` and the schemas are
/// nodes of the record's arena.
#[derive(Default)]
struct Envelope<'de> {
    id: Option<usize>,
    name: Option<Text<'de>>,
    description: Option<Text<'de>>,
    input_schema_camel: Option<usize>,
    input_schema_snake: Option<usize>,
}

impl Envelope<'_> {
    /// The schema: `inputSchema` when present (even `null`), else `input_schema`.
    fn schema(&self) -> Option<usize> {
        self.input_schema_camel.or(self.input_schema_snake)
    }
}

/// A string field (`name`, `description`), or the fact that it held
/// another kind of value.
enum Text<'de> {
    Str(Cow<'de, str>),
    NotString,
}

impl Text<'_> {
    fn as_str(&self) -> Option<&str> {
        match self {
            Text::Str(s) => Some(s),
            Text::NotString => None,
        }
    }
}

/// The `Visitor` methods for JSON scalars other than strings (booleans,
/// numbers, `null`), each answering `$value`.
macro_rules! scalars_as {
    ($value:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }

        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }

        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }

        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($value)
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}

/// Reads a record, its id and schemas into an arena.
struct RecordSeed<'s, 'de> {
    arena: &'s mut Arena<'de>,
}

impl<'de> DeserializeSeed<'de> for RecordSeed<'_, 'de> {
    type Value = Record<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RecordSeed<'_, 'de> {
    type Value = Record<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a json value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut e = Envelope::default();
        while let Some(key) = map.next_key::<Field>()? {
            match key {
                Field::Id => e.id = Some(map.next_value_seed(self.arena.seed())?),
                Field::Name => e.name = Some(map.next_value()?),
                Field::Description => e.description = Some(map.next_value()?),
                Field::InputSchemaCamel => {
                    e.input_schema_camel = Some(map.next_value_seed(self.arena.seed())?);
                }
                Field::InputSchemaSnake => {
                    e.input_schema_snake = Some(map.next_value_seed(self.arena.seed())?);
                }
                Field::Other => {
                    map.next_value::<Checked>()?;
                }
            }
        }
        Ok(Record::Tool(e))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Checked::visit_seq(Checked, seq)?;
        Ok(Record::NotObject)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Record::NotObject)
    }

    scalars_as!(Record::NotObject);
}

/// The keys of a tool record, matched after unescaping (as a `Value` would).
enum Field {
    Id,
    Name,
    Description,
    InputSchemaCamel,
    InputSchemaSnake,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(FieldVisitor)
    }
}

struct FieldVisitor;

impl Visitor<'_> for FieldVisitor {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Field, E> {
        Ok(match key {
            "id" => Field::Id,
            "name" => Field::Name,
            "description" => Field::Description,
            "inputSchema" => Field::InputSchemaCamel,
            "input_schema" => Field::InputSchemaSnake,
            _ => Field::Other,
        })
    }
}

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a json value")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Text::Str(Cow::Borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Text::Str(Cow::Owned(s.to_owned())))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Text::Str(Cow::Owned(s)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Checked::visit_map(Checked, map)?;
        Ok(Text::NotString)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Checked::visit_seq(Checked, seq)?;
        Ok(Text::NotString)
    }

    scalars_as!(Text::NotString);
}

/// A JSON value checked as a `Value` parse checks it (strings unescaped,
/// surrogates paired, numbers in range) and not built.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Checked)
    }
}

impl<'de> Visitor<'de> for Checked {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a json value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<Checked, Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Checked)
    }

    scalars_as!(Checked);
}

fn lowercase_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    let s = s.rfind(" at line ").map_or(s.as_str(), |i| &s[..i]);
    let mut chars = s.chars();
    let first: String = chars
        .next()
        .map(|c| c.to_lowercase().collect())
        .unwrap_or_default();
    let column = e.column();
    format!("{first}{} (column {column})", chars.as_str())
}

/// Judges one record (with the message and detail of a denial).
pub fn judge_record(record: &RawRecord) -> ToolResult {
    judge_record_with(record, true, &mut None, Policy::Original)
}

/// Judges one record as a [`Checker`] writing `format` does (JSON Lines
/// needs neither the message nor the detail of a denial, so it skips them).
pub fn judge_record_as(record: &RawRecord, format: OutputFormat) -> ToolResult {
    judge_record_with(
        record,
        format != OutputFormat::Jsonl,
        &mut None,
        Policy::Original,
    )
}

/// The arena buffers one judge keeps from record to record (emptied; see
/// [`Arena::recycle`]).
type Scratch = Option<Arena<'static>>;

/// Judges one record; `explained` adds the message and detail of a denial
/// (JSON Lines output needs neither).
fn judge_record_with(
    record: &RawRecord,
    explained: bool,
    scratch: &mut Scratch,
    policy: Policy,
) -> ToolResult {
    judge_bytes(
        &record.bytes,
        record.line,
        record.index,
        record.broken.as_deref(),
        explained,
        scratch,
        policy,
    )
}

/// [`judge_record_with`] on a record's parts.
fn judge_bytes(
    bytes: &[u8],
    record_line: usize,
    index: usize,
    broken: Option<&str>,
    explained: bool,
    scratch: &mut Scratch,
    policy: Policy,
) -> ToolResult {
    if let Some(why) = broken {
        return ToolResult::error(None, Some(record_line), index, why.to_owned());
    }
    let mut arena: Arena<'_> = scratch.take().map_or_else(Arena::new, Arena::recycle);
    let parsed = parse_record(bytes, &mut arena);
    if let Err(e) = &parsed
        && let Some(clamped) = clamp_out_of_range_numbers(bytes, e)
    {
        *scratch = Some(arena.recycle());
        return judge_bytes(
            &clamped,
            record_line,
            index,
            None,
            explained,
            &mut None,
            policy,
        );
    }
    let result = judge_parsed(parsed, &arena, record_line, index, explained, policy);
    *scratch = Some(arena.recycle());
    result
}

/// A copy of a record whose numbers f64 cannot hold (`1e400`, a 400-digit
/// integer) are clamped to the nearest number it can (`±f64::MAX` for a
/// number with a fraction or exponent, `u64::MAX` or `i64::MIN` for an
/// integer), when `error` is serde_json's "number out of range" and some
/// number was clamped; `None` otherwise.
///
/// Python's `json` reads such a number (as `inf` or a big `int`) and the
/// original judges the record; no verdict of the gate reads a number's
/// value (only its JSON type), so the clamped record gets the verdict the
/// original gives. An echoed id holding such a number echoes the clamped
/// number.
pub(crate) fn clamp_out_of_range_numbers(
    bytes: &[u8],
    error: &serde_json::Error,
) -> Option<Vec<u8>> {
    if !error.to_string().starts_with("number out of range") {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut clamped = false;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'"' {
            // A string, escapes and all, copied as it is.
            let start = i;
            i += 1;
            while let Some(&c) = bytes.get(i) {
                i += 1;
                if c == b'\\' {
                    i += 1;
                } else if c == b'"' {
                    break;
                }
            }
            out.extend_from_slice(&bytes[start..i.min(bytes.len())]);
        } else if b == b'-' || b.is_ascii_digit() {
            let start = i;
            while bytes
                .get(i)
                .is_some_and(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            {
                i += 1;
            }
            let token = &bytes[start..i];
            let value = std::str::from_utf8(token)
                .ok()
                .and_then(|t| t.parse::<f64>().ok());
            match value {
                Some(v) if v.is_infinite() => {
                    clamped = true;
                    let integer = !token.iter().any(|c| matches!(c, b'.' | b'e' | b'E'));
                    let replacement: &[u8] = match (integer, v < 0.0) {
                        (true, false) => b"18446744073709551615",
                        (true, true) => b"-9223372036854775808",
                        (false, false) => b"1.7976931348623157e308",
                        (false, true) => b"-1.7976931348623157e308",
                    };
                    out.extend_from_slice(replacement);
                }
                _ => out.extend_from_slice(token),
            }
        } else {
            out.push(b);
            i += 1;
        }
    }
    clamped.then_some(out)
}

/// The verdict on a record [`parse_record`] read (or could not read).
fn judge_parsed(
    parsed: Result<Record<'_>, serde_json::Error>,
    arena: &Arena<'_>,
    record_line: usize,
    index: usize,
    explained: bool,
    policy: Policy,
) -> ToolResult {
    let line = Some(record_line);
    match parsed {
        Ok(Record::Tool(envelope)) => {
            judge_envelope(&envelope, arena, line, index, explained, policy)
        }
        Ok(Record::NotObject) => {
            ToolResult::error(None, line, index, "a tool must be a json object".to_owned())
        }
        Err(e) => {
            let at_line = record_line + e.line().saturating_sub(1);
            ToolResult::error(
                None,
                Some(at_line),
                index,
                format!("not json: {}", lowercase_message(&e)),
            )
        }
    }
}

/// Judges one record and appends its JSON Lines verdict to `out`, counted
/// in `tally`: exactly what [`render_jsonl`] writes for [`judge_bytes`]'s
/// result, without building that result for a record that is judged (the
/// name and id are written from the arena). `arena` is emptied first.
fn judge_jsonl_into<'de>(
    bytes: &'de [u8],
    span: &Span,
    arena: &mut Arena<'de>,
    out: &mut String,
    tally: &mut Tally,
    policy: Policy,
) {
    let result = if let Some(why) = &span.broken {
        ToolResult::error(None, Some(span.line), span.index, why.clone())
    } else {
        arena.reset();
        let parsed = parse_record(bytes, arena);
        match &parsed {
            Ok(Record::Tool(e)) if matches!(e.name, Some(Text::Str(_))) => {
                let name = e.name.as_ref().and_then(Text::as_str).unwrap_or_default();
                let description = e.description.as_ref().and_then(Text::as_str);
                let schema = e.schema().map(|i| arena.node(i));
                let reason =
                    judge_node(Limits::default(), policy, name, schema, description, false).reason;
                tally.count(None, reason);
                out.push_str("{\"id\":");
                match e.id.map(|i| arena.node(i)) {
                    None => out.push_str("null"),
                    Some(id) => match id.view() {
                        View::Number(n) if n.is_u64() => {
                            push_u64(out, n.as_u64().unwrap_or_default());
                        }
                        _ => push_id(out, Some(&echoed_id(id))),
                    },
                }
                push_name_and_verdict(out, name, reason);
                return;
            }
            Err(e) => match clamp_out_of_range_numbers(bytes, e) {
                Some(clamped) => judge_bytes(
                    &clamped, span.line, span.index, None, false, &mut None, policy,
                ),
                None => judge_parsed(parsed, arena, span.line, span.index, false, policy),
            },
            _ => judge_parsed(parsed, arena, span.line, span.index, false, policy),
        }
    };
    tally.add(&result);
    render_jsonl(&result, out);
}

/// A record's id as echoed: one nested absurdly deep is replaced, not recursed.
fn echoed_id(id: ArenaNode<'_, '_>) -> Value {
    let nested = matches!(id.view(), View::Array(_) | View::Object(_));
    if nested && id.nests_deeper_than(DEEP) {
        Value::from("(id nested too deep)")
    } else {
        id.to_value()
    }
}

fn judge_envelope(
    e: &Envelope<'_>,
    arena: &Arena<'_>,
    line: Option<usize>,
    index: usize,
    explained: bool,
    policy: Policy,
) -> ToolResult {
    let id = e.id.map(|id| echoed_id(arena.node(id)));
    let name = match &e.name {
        Some(Text::Str(name)) => name.as_ref(),
        Some(Text::NotString) => {
            return ToolResult::error(id, line, index, "\"name\" must be a string".into());
        }
        None => return ToolResult::error(id, line, index, "missing \"name\"".into()),
    };
    // The original ignores a description that is not a string.
    let description = e.description.as_ref().and_then(Text::as_str);
    let schema = e.schema().map(|i| arena.node(i));
    // JSON Lines needs the reason alone: no report is built for it.
    let (reason, message, detail) = if explained {
        let report = judge_node(Limits::default(), policy, name, schema, description, true);
        let message = report
            .reason
            .map(|r| AdmissionDenied::new(name, r).to_string());
        (report.reason, message, report.detail().unwrap_or_default())
    } else {
        let reason = judge_node(Limits::default(), policy, name, schema, description, false).reason;
        (reason, None, String::new())
    };
    ToolResult {
        id,
        name: name.to_owned(),
        line,
        index,
        reason,
        message,
        detail,
        error: None,
    }
}

/// A record judged after a serde_json reading, and (when it is plain)
/// after the fast reading: the differential check of [`parse_plain`].
#[cfg(test)]
pub(crate) fn judge_both_ways(text: &str, explained: bool) -> (ToolResult, Option<ToolResult>) {
    let judge = |parsed: Result<Record<'_>, serde_json::Error>, arena: &Arena<'_>| match parsed {
        Ok(Record::Tool(e)) => judge_envelope(&e, arena, Some(1), 0, explained, Policy::Original),
        Ok(Record::NotObject) => ToolResult::error(None, Some(1), 0, "not an object".to_owned()),
        Err(e) => ToolResult::error(None, Some(1), 0, format!("not json: {e}")),
    };
    let mut arena = Arena::new();
    let parsed = parse_from(|| serde_json::Deserializer::from_str(text), &mut arena);
    let slow = judge(parsed, &arena);
    let mut arena = Arena::new();
    let fast = parse_plain(text, &mut arena).map(|record| judge(Ok(record), &arena));
    (slow, fast)
}

/// A record's JSON Lines verdict written the quick way
/// ([`judge_jsonl_into`]) and by rendering [`judge_bytes`]'s result, with
/// the counts of each: the differential check of the quick way.
#[cfg(test)]
pub(crate) fn jsonl_both_ways(
    bytes: &[u8],
    broken: Option<&str>,
) -> ((String, Tally), (String, Tally)) {
    let span = Span {
        end: bytes.len(),
        line: 3,
        index: 7,
        broken: broken.map(str::to_owned),
    };
    let mut quick = (String::new(), Tally::default());
    // An arena that already held a record, as in a batch.
    let mut arena = Arena::new();
    let warm = br#"{"id": {"k": [1, 2]}, "name": "warm", "inputSchema": {"a": [1]}}"#;
    judge_jsonl_into(
        warm,
        &span,
        &mut arena,
        &mut String::new(),
        &mut Tally::default(),
        Policy::Original,
    );
    let original = Policy::Original;
    judge_jsonl_into(
        bytes,
        &span,
        &mut arena,
        &mut quick.0,
        &mut quick.1,
        original,
    );
    let result = judge_bytes(
        bytes, span.line, span.index, broken, false, &mut None, original,
    );
    let mut slow = (String::new(), Tally::default());
    slow.1.add(&result);
    render_jsonl(&result, &mut slow.0);
    (quick, slow)
}

/// Records split from the input and packed into one buffer, to be judged
/// elsewhere (on a worker thread, say): one allocation per batch rather
/// than per record. Fill it with [`Checker::split_batch`], judge it with
/// [`RecordBatch::judge`] or [`RecordBatch::judge_jsonl`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordBatch {
    bytes: Vec<u8>,
    records: Vec<Span>,
    /// The policy judging it: the checker's that filled it.
    policy: Policy,
}

/// Where one record of a [`RecordBatch`] is, and what is known of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Span {
    end: usize,
    line: usize,
    index: usize,
    broken: Option<String>,
}

impl RecordBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when it holds no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The bytes of all its records.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// The bytes its buffer holds without growing.
    pub fn byte_capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// Empties it, keeping its buffers.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.records.clear();
    }

    fn push(&mut self, r: &RawRecord) {
        self.push_parts(&r.bytes, r.line, r.index, r.broken.clone());
    }

    fn push_parts(&mut self, bytes: &[u8], line: usize, index: usize, broken: Option<String>) {
        self.bytes.extend_from_slice(bytes);
        self.records.push(Span {
            end: self.bytes.len(),
            line,
            index,
            broken,
        });
    }

    /// Its records, copied, as [`Splitter::feed`] hands them to a callback
    /// (for checks and diagnostics; judging needs no copy).
    pub fn records(&self) -> Vec<RawRecord> {
        self.each()
            .map(|(bytes, span)| RawRecord {
                bytes: bytes.to_vec(),
                line: span.line,
                index: span.index,
                broken: span.broken.clone(),
            })
            .collect()
    }

    /// Each record's bytes with its span.
    fn each(&self) -> impl Iterator<Item = (&[u8], &Span)> {
        let mut start = 0;
        self.records.iter().map(move |span| {
            let bytes = self.bytes.get(start..span.end).unwrap_or_default();
            start = span.end;
            (bytes, span)
        })
    }

    /// Judges every record as a [`Checker`] writing `format` does, in order
    /// (hand the results to [`Checker::render`]).
    pub fn judge(&self, format: OutputFormat) -> Vec<ToolResult> {
        let explained = format != OutputFormat::Jsonl;
        let mut scratch = None;
        self.each()
            .map(|(bytes, s)| {
                let broken = s.broken.as_deref();
                judge_bytes(
                    bytes,
                    s.line,
                    s.index,
                    broken,
                    explained,
                    &mut scratch,
                    self.policy,
                )
            })
            .collect()
    }

    /// Judges every record and renders it as JSON Lines into `out`, in
    /// order; returns the counts (hand both to [`Checker::add_jsonl`]).
    pub fn judge_jsonl(&self, out: &mut String) -> Tally {
        let mut tally = Tally::default();
        // Every record borrows from this batch: one arena serves them all.
        let mut arena = Arena::new();
        for (bytes, span) in self.each() {
            judge_jsonl_into(bytes, span, &mut arena, out, &mut tally, self.policy);
        }
        tally
    }
}

/// Splits, judges and renders a stream; the I/O-free heart of the CLI.
#[derive(Debug)]
pub struct Checker {
    explained: bool,
    splitter: Splitter,
    renderer: Renderer,
    tally: Tally,
    /// The arena buffers reused from record to record.
    scratch: Scratch,
    /// JSON Lines: the records of the chunk being fed, judged together.
    pending: RecordBatch,
    /// The rules judging every record.
    policy: Policy,
}

/// Counts of a batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Records judged and admitted.
    pub admitted: usize,
    /// Records judged and denied.
    pub denied: usize,
    /// Records that could not be judged.
    pub errors: usize,
}

impl Tally {
    fn add(&mut self, r: &ToolResult) {
        self.count(r.error.as_deref(), r.reason);
    }

    /// Counts one record: an error, else a verdict.
    fn count(&mut self, error: Option<&str>, reason: Option<Reason>) {
        if error.is_some() {
            self.errors += 1;
        } else if reason.is_some() {
            self.denied += 1;
        } else {
            self.admitted += 1;
        }
    }

    /// 2 when any record could not be judged, else 1 when any was denied, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.errors > 0 {
            EXIT_UNREADABLE
        } else if self.denied > 0 {
            EXIT_DENIED
        } else {
            EXIT_ADMITTED
        }
    }
}

impl Checker {
    /// A checker writing `format`; `artifact_uri` names the input in SARIF.
    pub fn new(format: OutputFormat, artifact_uri: Option<&str>) -> Self {
        Self {
            explained: format != OutputFormat::Jsonl,
            splitter: Splitter::new(),
            renderer: Renderer::new(format, artifact_uri),
            tally: Tally::default(),
            scratch: None,
            pending: RecordBatch::new(),
            policy: Policy::Original,
        }
    }

    /// The same checker judging under `policy` ([`Policy::Original`] unless
    /// set; `lionrt admission check` sets [`Policy::Strict`] by default). A
    /// batch it fills ([`Checker::split_batch`]) is judged under it too.
    #[must_use]
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self.pending.policy = policy;
        self
    }

    /// Feeds a chunk of input; appends rendered output to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut String) {
        if self.renderer.format == OutputFormat::Jsonl {
            // The chunk's records share one arena (see `RecordBatch::judge_jsonl`).
            let Self {
                splitter, pending, ..
            } = self;
            splitter.feed_into(chunk, pending);
            self.judge_pending(out);
            return;
        }
        let Self {
            explained,
            splitter,
            renderer,
            tally,
            scratch,
            policy,
            ..
        } = self;
        let explained = *explained;
        let policy = *policy;
        splitter.feed(chunk, &mut |record| {
            let result = judge_record_with(record, explained, scratch, policy);
            tally.add(&result);
            renderer.record(&result, out);
        });
    }

    /// Splits a chunk into records without judging them, for a caller that
    /// judges them elsewhere (on worker threads, say) with [`judge_record_as`]
    /// and hands the results back, in input order, to [`Self::render`].
    pub fn split(&mut self, chunk: &[u8], records: &mut Vec<RawRecord>) {
        self.splitter
            .feed(chunk, &mut |record| records.push(record.clone()));
    }

    /// Splits a chunk into records packed into `batch` (appended), for a
    /// caller that judges them elsewhere with [`RecordBatch::judge`] (then
    /// [`Self::render`] in input order) or [`RecordBatch::judge_jsonl`]
    /// (then [`Self::add_jsonl`] in input order).
    pub fn split_batch(&mut self, chunk: &[u8], batch: &mut RecordBatch) {
        batch.policy = self.policy;
        self.splitter.feed_into(chunk, batch);
    }

    /// Ends the input of [`Self::split_batch`]: the last records, if any.
    pub fn split_finish_batch(&mut self, batch: &mut RecordBatch) {
        batch.policy = self.policy;
        self.splitter.finish(&mut |record| batch.push(record));
    }

    /// Counts and writes a batch judged and rendered by
    /// [`RecordBatch::judge_jsonl`] (batches must come in input order).
    /// Only for a checker writing JSON Lines: any other format renders
    /// [`RecordBatch::judge`]'s results with [`Self::render`]; here the
    /// batch is then counted and its lines left out.
    pub fn add_jsonl(&mut self, counts: Tally, rendered: &str, out: &mut String) {
        self.add_counts(counts);
        if self.renderer.format == OutputFormat::Jsonl {
            out.push_str(rendered);
        }
    }

    /// Ends the input of [`Self::split`]: the last records, if any.
    pub fn split_finish(&mut self, records: &mut Vec<RawRecord>) {
        self.splitter
            .finish(&mut |record| records.push(record.clone()));
    }

    /// Counts and renders one result judged elsewhere (results must come in
    /// input order).
    pub fn render(&mut self, result: &ToolResult, out: &mut String) {
        self.tally.add(result);
        self.renderer.record(result, out);
    }

    /// Ends the output of [`Self::render`] or [`Self::add_jsonl`] and
    /// returns the tally (the input must have been ended with
    /// [`Self::split_finish`] or [`Self::split_finish_batch`]).
    pub fn finish_rendered(mut self, out: &mut String) -> Tally {
        self.renderer.finish(&self.tally, out);
        self.tally
    }

    /// Judges and renders the records [`Self::feed`] collected (JSON Lines).
    fn judge_pending(&mut self, out: &mut String) {
        let counts = self.pending.judge_jsonl(out);
        self.add_counts(counts);
        self.pending.clear();
        // A huge record does not keep its memory for the rest of the input.
        if self.pending.byte_capacity() > PENDING_KEEP {
            self.pending = RecordBatch::new();
        }
    }

    fn add_counts(&mut self, counts: Tally) {
        self.tally.admitted += counts.admitted;
        self.tally.denied += counts.denied;
        self.tally.errors += counts.errors;
    }

    /// Ends the input; appends the rest of the output and returns the tally.
    pub fn finish(mut self, out: &mut String) -> Tally {
        if self.renderer.format == OutputFormat::Jsonl {
            let Self {
                splitter, pending, ..
            } = &mut self;
            splitter.finish(&mut |record| pending.push(record));
            self.judge_pending(out);
            let Self {
                renderer, tally, ..
            } = &mut self;
            renderer.finish(tally, out);
            return self.tally;
        }
        let Self {
            explained,
            splitter,
            renderer,
            tally,
            scratch,
            policy,
            ..
        } = &mut self;
        let explained = *explained;
        let policy = *policy;
        splitter.finish(&mut |record| {
            let result = judge_record_with(record, explained, scratch, policy);
            tally.add(&result);
            renderer.record(&result, out);
        });
        renderer.finish(tally, out);
        self.tally
    }
}

/// Judges every record of a whole text (see [`Checker`] for streams).
pub fn check_text(text: &str) -> Vec<ToolResult> {
    let mut results = Vec::new();
    let mut splitter = Splitter::new();
    let mut each = |record: &RawRecord| results.push(judge_record(record));
    splitter.feed(text.as_bytes(), &mut each);
    splitter.finish(&mut each);
    results
}

/// The process exit code for a set of results: 2 when any record could not
/// be judged, else 1 when any is denied, else 0.
pub fn exit_code(results: &[ToolResult]) -> i32 {
    let mut tally = Tally::default();
    results.iter().for_each(|r| tally.add(r));
    tally.exit_code()
}

/// Renders whole results; `artifact_uri` names the input file in SARIF locations.
pub fn render(results: &[ToolResult], format: OutputFormat, artifact_uri: Option<&str>) -> String {
    let mut out = String::new();
    let mut renderer = Renderer::new(format, artifact_uri);
    let mut tally = Tally::default();
    for r in results {
        tally.add(r);
        renderer.record(r, &mut out);
    }
    renderer.finish(&tally, &mut out);
    out
}

/// Renders results one at a time.
#[derive(Debug)]
pub struct Renderer {
    format: OutputFormat,
    artifact_uri: Option<String>,
    started: bool,
    sarif_results: usize,
    /// SARIF tool execution notifications, written at the end.
    notifications: Vec<String>,
}

/// Table column widths (a longer cell widens its row only).
const WIDTHS: [usize; 4] = [6, 24, 7, 42];

impl Renderer {
    /// A renderer for `format`.
    pub fn new(format: OutputFormat, artifact_uri: Option<&str>) -> Self {
        Self {
            format,
            artifact_uri: artifact_uri.map(str::to_owned),
            started: false,
            sarif_results: 0,
            notifications: Vec::new(),
        }
    }

    fn start(&mut self, out: &mut String) {
        if self.started {
            return;
        }
        self.started = true;
        match self.format {
            OutputFormat::Table => table_row(out, ["ID", "NAME", "VERDICT", "REASON"], "DETAIL"),
            OutputFormat::Jsonl => {}
            OutputFormat::Sarif => {
                let rules: Vec<Value> = Reason::ALL.iter().map(|r| sarif_rule(*r)).collect();
                let driver = serde_json::json!({
                    "name": "mcp-admission",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                });
                out.push_str(
                    "{\"$schema\":\"https://json.schemastore.org/sarif-2.1.0.json\",\"version\":\"2.1.0\",\"runs\":[{\"tool\":{\"driver\":",
                );
                out.push_str(&driver.to_string());
                out.push_str("},\"results\":[");
            }
        }
    }

    /// Renders one result.
    pub fn record(&mut self, r: &ToolResult, out: &mut String) {
        self.start(out);
        match self.format {
            OutputFormat::Table => {
                let id = id_text(r.id.as_ref());
                if let Some(error) = &r.error {
                    let at = r.line.map(|l| format!("line {l}: ")).unwrap_or_default();
                    table_row(out, [&id, "-", "error", "-"], &format!("{at}{error}"));
                } else {
                    let name = r.name.escape_debug().to_string();
                    let (verdict, reason) = match r.reason {
                        Some(reason) => ("deny", reason.as_str()),
                        None => ("allow", "-"),
                    };
                    table_row(out, [&id, &name, verdict, reason], &r.detail);
                }
            }
            OutputFormat::Jsonl => render_jsonl(r, out),
            OutputFormat::Sarif => self.sarif_record(r, out),
        }
    }

    fn sarif_record(&mut self, r: &ToolResult, out: &mut String) {
        let location = |line: Option<usize>| {
            self.artifact_uri.as_ref().map(|uri| {
                let mut physical = serde_json::json!({"artifactLocation": {"uri": uri}});
                if let Some(line) = line {
                    physical["region"] = serde_json::json!({"startLine": line});
                }
                physical
            })
        };
        if let Some(error) = &r.error {
            let mut n = serde_json::json!({
                "level": "error",
                "message": {"text": format!("record {} could not be judged: {error}", r.index)},
                "properties": {"id": r.id.clone().unwrap_or(Value::Null)},
            });
            if let Some(physical) = location(r.line) {
                n["locations"] = serde_json::json!([{"physicalLocation": physical}]);
            }
            self.notifications.push(n.to_string());
            return;
        }
        let Some(reason) = r.reason else { return };
        let index = Reason::ALL.iter().position(|x| *x == reason).unwrap_or(0);
        let mut result = serde_json::json!({
            "ruleId": reason.as_str(),
            "ruleIndex": index,
            "level": "error",
            "message": {"text": r.message.clone().unwrap_or_default()},
            "locations": [{
                "logicalLocations": [{"name": r.name, "kind": "function"}]
            }],
            "properties": {"detail": r.detail, "id": r.id.clone().unwrap_or(Value::Null)},
        });
        if let Some(physical) = location(r.line) {
            result["locations"][0]["physicalLocation"] = physical;
        }
        if self.sarif_results > 0 {
            out.push(',');
        }
        self.sarif_results += 1;
        out.push_str(&result.to_string());
    }

    /// Ends the output.
    pub fn finish(&mut self, tally: &Tally, out: &mut String) {
        self.start(out);
        match self.format {
            OutputFormat::Table => {
                let total = tally.admitted + tally.denied + tally.errors;
                let _ = write!(
                    out,
                    "{total} tools: {} admitted, {} denied",
                    tally.admitted, tally.denied
                );
                if tally.errors > 0 {
                    let _ = write!(out, ", {} unreadable", tally.errors);
                }
                out.push('\n');
            }
            OutputFormat::Jsonl => {}
            OutputFormat::Sarif => {
                out.push_str("],\"invocations\":[{\"executionSuccessful\":");
                out.push_str(if tally.errors == 0 { "true" } else { "false" });
                out.push_str(",\"toolExecutionNotifications\":[");
                out.push_str(&self.notifications.join(","));
                out.push_str("]}]}]}\n");
            }
        }
    }
}

/// One JSON Lines verdict (or error record).
fn render_jsonl(r: &ToolResult, out: &mut String) {
    out.push_str("{\"id\":");
    push_id(out, r.id.as_ref());
    if let Some(error) = &r.error {
        out.push_str(",\"error\":");
        let at = r.line.map(|l| format!("line {l}: ")).unwrap_or_default();
        push_json_string(out, &format!("{at}{error}"));
        out.push_str("}\n");
    } else {
        push_name_and_verdict(out, &r.name, r.reason);
    }
}

/// The rest of a JSON Lines verdict after its id.
fn push_name_and_verdict(out: &mut String, name: &str, reason: Option<Reason>) {
    out.push_str(",\"name\":");
    push_json_string(out, name);
    match reason {
        Some(reason) => {
            out.push_str(",\"verdict\":\"deny\",\"reason\":\"");
            out.push_str(reason.as_str());
            out.push_str("\"}\n");
        }
        None => out.push_str(",\"verdict\":\"allow\",\"reason\":null}\n"),
    }
}

fn sarif_rule(r: Reason) -> Value {
    serde_json::json!({
        "id": r.as_str(),
        "name": rule_name(r),
        "shortDescription": {"text": format!("MCP tool refused: {}", r.as_str())},
        "fullDescription": {"text": r.explanation()},
        "defaultConfiguration": {"level": "error"},
        "help": {"text": "Expose a structured, bounded operation instead: enum/const-restricted fields and additionalProperties: false."},
    })
}

fn table_row(out: &mut String, cells: [&str; 4], detail: &str) {
    let start = out.len();
    for (cell, width) in cells.iter().zip(WIDTHS) {
        out.push_str(cell);
        let pad = width.saturating_sub(cell.chars().count());
        out.extend(std::iter::repeat_n(' ', pad + 2));
    }
    out.push_str(detail);
    let trimmed = out[start..].trim_end().len();
    out.truncate(start + trimmed);
    out.push('\n');
}

fn id_text(id: Option<&Value>) -> String {
    match id {
        None | Some(Value::Null) => "-".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn push_id(out: &mut String, id: Option<&Value>) {
    match id {
        None => out.push_str("null"),
        // The common id, written without the formatter (the same digits).
        Some(Value::Number(n)) if n.is_u64() => push_u64(out, n.as_u64().unwrap_or_default()),
        Some(v) => {
            let _ = write!(out, "{v}");
        }
    }
}

/// Appends `n` in decimal.
fn push_u64(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

/// Appends `s` as a JSON string literal.
fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    let mut rest = s;
    // Runs without anything to escape are copied whole.
    while let Some(i) = first_special(rest.as_bytes()) {
        let (plain, tail) = rest.split_at(i);
        out.push_str(plain);
        let mut tail = tail.chars();
        match tail.next() {
            Some('"') => out.push_str("\\\""),
            Some('\\') => out.push_str("\\\\"),
            Some('\n') => out.push_str("\\n"),
            Some('\r') => out.push_str("\\r"),
            Some('\t') => out.push_str("\\t"),
            Some(c) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            None => {}
        }
        rest = tail.as_str();
    }
    out.push_str(rest);
    out.push('"');
}

fn rule_name(reason: Reason) -> String {
    reason
        .as_str()
        .split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}
