//! Unit tests: the arena reads a document exactly as a `serde_json::Value`
//! parse does, and the gate gives an arena document exactly the report it
//! gives the same document as a `Value` (the batch path's fail-closed guard:
//! any difference could admit what the in-process gate denies).

use proptest::prelude::*;
use serde::de::DeserializeSeed;
use serde_json::Value;

use super::{Arena, ArenaNode, Plain};
use crate::admission::{explain_tool_admission_with, judge_node};
use crate::node::{Arr, Node, Obj, View};
use crate::report::Limits;

/// JSON text, generated with the shapes a `Value` view could get wrong.
#[derive(Debug, Clone)]
enum Text {
    /// A literal as written (`null`, `true`, a number, ...).
    Raw(&'static str),
    /// A string, `true` when written with escapes.
    Str(String, bool),
    Array(Vec<Text>),
    /// Members as written: keys may repeat, and may be escaped.
    Object(Vec<(String, bool, Text)>),
    /// `levels` wrappers of `kind` around a value.
    Deep(usize, u8, Box<Text>),
}

impl Text {
    fn write(&self, out: &mut String) {
        match self {
            Text::Raw(s) => out.push_str(s),
            Text::Str(s, escaped) => write_string(out, s, *escaped),
            Text::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Text::Object(members) => {
                out.push('{');
                for (i, (k, escaped, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(out, k, *escaped);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
            Text::Deep(levels, kind, inner) => {
                let (open, close) = match kind % 4 {
                    0 => (r#"{"properties": {"cmd": "#, "}}"),
                    1 => (r#"{"anyOf": ["#, "]}"),
                    2 => ("[", "]"),
                    _ => (r#"{"items": "#, "}"),
                };
                for _ in 0..*levels {
                    out.push_str(open);
                }
                inner.write(out);
                for _ in 0..*levels {
                    out.push_str(close);
                }
            }
        }
    }
}

/// A JSON string literal; `escaped` writes every other character as a
/// `\u` escape (surrogate pairs past the BMP) and `/` as `\/`.
fn write_string(out: &mut String, s: &str, escaped: bool) {
    out.push('"');
    for (i, c) in s.chars().enumerate() {
        let escape = escaped && i % 2 == 0;
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' if escape => out.push_str("\\/"),
            c if escape || u32::from(c) < 0x20 => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

const KEYS: &[&str] = &[
    "type",
    "properties",
    "items",
    "prefixItems",
    "unevaluatedItems",
    "$ref",
    "anyOf",
    "oneOf",
    "allOf",
    "if",
    "then",
    "else",
    "not",
    "additionalProperties",
    "patternProperties",
    "enum",
    "const",
    "$defs",
    "definitions",
    "required",
    "x-a",
    "$comment",
    "$dynamicRef",
    "$recursiveRef",
    "description",
    "$id",
    "$schema",
    "title",
    "default",
    "maxLength",
    "cmd",
    "command",
    "commandLine",
    "shell_command",
    "args",
    "argv",
    "script",
    "code",
    "program",
    "shell",
    "\u{17f}hell",
    "interpreter",
    "text",
    "input",
    "cwd",
    "service_id",
    "a",
    "a/b",
    "a~b",
    "",
    "\u{e9}",
    "\u{1f600}",
];

const WORDS: &[&str] = &[
    "string",
    "object",
    "array",
    "integer",
    "number",
    "boolean",
    "null",
    "String",
    "#",
    "#/$defs/a",
    "#/$defs/cmd",
    "#/definitions/a",
    "#/properties/cmd",
    "#/properties/a",
    "#/anyOf/0",
    "#/anyOf/01",
    "#/items",
    "#/$defs/a~1b",
    "#/$defs/a~0b",
    "http://x/y",
    "#anchor",
    "^c.*$",
    "^(?:cmd|args)$",
    "(?i)SCRIPT",
    "(?=x)",
    "[",
    "cmd",
    "Run shell commands",
];

const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-0.0",
    "1",
    "1.0",
    "1e2",
    "0.1",
    "-1",
    "9999999999999999999",
    "10000000000000000000",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "123456789012345678901234567890",
    "1e308",
    "1e400",
    "2.5e-400",
];

fn key() -> impl Strategy<Value = (String, bool)> {
    (
        prop_oneof![
            6 => prop::sample::select(KEYS).prop_map(str::to_owned),
            1 => "\\PC{0,4}",
        ],
        prop::bool::weighted(0.2),
    )
}

fn leaf() -> impl Strategy<Value = Text> {
    prop_oneof![
        1 => prop::sample::select(&["null", "true", "false"][..]).prop_map(Text::Raw),
        1 => prop::sample::select(NUMBERS).prop_map(Text::Raw),
        // Not JSON: serde_json refuses them, so must the plain reader
        // (except a raw DEL, which JSON allows in a string: both accept it).
        1 => prop::sample::select(&["01", "00", "1.", "-", "1e", "+1", ".5", "tru", "nul", "1x", "\"a\u{1}b\"", "\"\t\"", "\"\n\"", "\"\u{7f}\""][..]).prop_map(Text::Raw),
        // Control characters at each end of their range, some past the
        // first eight bytes of a string (the word-at-a-time scan).
        1 => prop::sample::select(&["\"\u{10}\"", "\"\u{1f}\"", "\"\u{20}\u{ff}\"", "\"abcdefghijklmno\u{1f}p\"", "\"abcdefghijklmno\u{10}\"", "\"abcdefghijklmno\\\"p\"", "\"abcdefgh\u{e9}ijklmnop\u{1}\""][..]).prop_map(Text::Raw),
        3 => (
            prop_oneof![
                4 => prop::sample::select(WORDS).prop_map(str::to_owned),
                1 => "\\PC{0,6}",
            ],
            prop::bool::weighted(0.2),
        )
            .prop_map(|(s, e)| Text::Str(s, e)),
        2 => Just(Text::Object(Vec::new())),
    ]
}

/// Any JSON text, biased towards schema vocabulary, duplicate keys and
/// references that resolve.
fn document() -> impl Strategy<Value = Text> {
    leaf().prop_recursive(7, 160, 7, |inner| {
        prop_oneof![
            1 => prop::collection::vec(inner.clone(), 0..5).prop_map(Text::Array),
            4 => prop::collection::vec((key(), inner.clone()), 0..7).prop_map(|members| {
                Text::Object(members.into_iter().map(|((k, e), v)| (k, e, v)).collect())
            }),
            // Wide objects: a member is searched rather than scanned.
            1 => prop::collection::vec((key(), leaf()), 10..30).prop_map(|members| {
                Text::Object(members.into_iter().map(|((k, e), v)| (k, e, v)).collect())
            }),
            1 => (0usize..300, any::<u8>(), inner).prop_map(|(n, kind, v)| Text::Deep(n, kind, Box::new(v))),
        ]
    })
}

const NAMES: &[&str] = &[
    "bash",
    "exec",
    "notebook",
    "search",
    "run_command",
    "worker",
];
const DESCRIPTIONS: &[Option<&str>] = &[
    None,
    Some("Execute terminal commands."),
    Some("Search things."),
];

/// The `Value` a text parses to (any depth), or serde_json's error.
fn as_value(text: &str) -> Result<Value, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = serde::Deserialize::deserialize(serde_stacker::Deserializer::new(&mut de))
        .and_then(|v: Value| de.end().map(|()| v));
    value.map_err(|e| e.to_string())
}

/// The arena node a text parses to (any depth), or serde_json's error.
fn into_arena<'de>(text: &'de str, arena: &mut Arena<'de>) -> Result<usize, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let root = arena
        .seed()
        .deserialize(serde_stacker::Deserializer::new(&mut de))
        .and_then(|v| de.end().map(|()| v));
    root.map_err(|e| e.to_string())
}

/// A value dropped without recursion (a generated one may nest 2,000 deep).
struct Flat(Value);

impl Drop for Flat {
    fn drop(&mut self) {
        drop_flat(std::mem::take(&mut self.0));
    }
}

fn drop_flat(value: Value) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(m) => stack.extend(m.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// Every member lookup and index of the arena answers what `Value`'s does
/// (and nothing for a key or index it lacks), all the way down.
fn lookups_agree(node: ArenaNode<'_, '_>, value: &Value) -> Result<(), TestCaseError> {
    let mut stack = vec![(node, value)];
    while let Some((node, value)) = stack.pop() {
        match (node.view(), value) {
            (View::Object(m), Value::Object(map)) => {
                for (k, v) in map {
                    let found = Obj::get(m, k);
                    prop_assert!(found.is_some(), "missing {}", k);
                    if let Some(found) = found {
                        stack.push((found, v));
                    }
                }
                for absent in ["", "zz", "type ", "\u{10ffff}"] {
                    prop_assert_eq!(Obj::get(m, absent).is_some(), map.contains_key(absent));
                }
            }
            (View::Array(items), Value::Array(list)) => {
                for (i, v) in list.iter().enumerate() {
                    let found = Arr::get(items, i);
                    prop_assert!(found.is_some(), "missing [{}]", i);
                    if let Some(found) = found {
                        stack.push((found, v));
                    }
                }
                prop_assert!(Arr::get(items, list.len()).is_none());
            }
            (View::Object(_) | View::Array(_), _) | (_, Value::Object(_) | Value::Array(_)) => {
                prop_assert!(false, "kinds differ: {}", value);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks one text both ways; `limits` as the gate is run.
fn same_both_ways(
    text: &str,
    name: &str,
    description: Option<&str>,
    limits: Limits,
) -> Result<(), TestCaseError> {
    let mut arena = Arena::new();
    let value = as_value(text);
    // The fast reading, where the text is plain, must agree with the rest.
    let mut plain_arena = Arena::new();
    let mut plain = Plain::new(text);
    plain.ws();
    let plain_root = plain.value(&mut plain_arena, 0).filter(|_| plain.at_end());
    if let Some(plain_root) = plain_root {
        let node = plain_arena.node(plain_root);
        prop_assert!(
            value.is_ok(),
            "plain reading of text serde_json refuses: {}",
            text
        );
        if let Ok(value) = &value {
            let rebuilt = Flat(node.to_value());
            prop_assert_eq!(&rebuilt.0, value, "{}", text);
            lookups_agree(node, value)?;
            let by_value = explain_tool_admission_with(limits, name, Some(value), description);
            let by_plain = judge_node(
                limits,
                crate::Policy::Original,
                name,
                Some(node),
                description,
                true,
            );
            prop_assert_eq!(&by_plain, &by_value, "{}", text);
        }
    }
    let root = into_arena(text, &mut arena);
    match (value, root) {
        (Err(v), Err(a)) => prop_assert_eq!(v, a, "{}", text),
        (Ok(value), Ok(root)) => {
            let value = Flat(value);
            let value = &value.0;
            let node = arena.node(root);
            // Not too deep to compare and rebuild recursively.
            if !node.nests_deeper_than(400) {
                let rebuilt = node.to_value();
                let rebuilt = Flat(rebuilt);
                prop_assert_eq!(&rebuilt.0, value, "{}", text);
            }
            lookups_agree(node, value)?;
            let by_value = explain_tool_admission_with(limits, name, Some(value), description);
            let by_arena = judge_node(
                limits,
                crate::Policy::Original,
                name,
                Some(node),
                description,
                true,
            );
            prop_assert_eq!(&by_arena, &by_value, "{}", text);
            let plain = judge_node(
                limits,
                crate::Policy::Original,
                name,
                Some(node),
                description,
                false,
            );
            prop_assert_eq!(plain.reason, by_value.reason, "{}", text);
        }
        (v, a) => prop_assert!(false, "{text}: value {v:?}, arena {a:?}"),
    }
    Ok(())
}

/// Whole schemas, some admitted and some denied, so that a repeated
/// `inputSchema` (or a repeated property inside one) puts a denied and an
/// admitted value under one key.
const SCHEMAS: &[&str] = &[
    r#"{"type": "object", "properties": {"q": {"type": "string", "enum": ["a", "b"]}}, "additionalProperties": false}"#,
    r#"{"type": "object", "properties": {"command": {"type": "string"}}}"#,
    r#"{"type": "object", "properties": {"command": {"type": "string"}, "command": {"enum": ["ls"]}}, "additionalProperties": false}"#,
    r#"{"type": "object", "properties": {"command": {"enum": ["ls"]}, "command": {"type": "string"}}, "additionalProperties": false}"#,
    r#"{"type": "object", "properties": {"comm\u0061nd": {"type": "string"}}, "additionalProperties": false}"#,
    r#"{"type": "object", "additionalProperties": false, "properties": {"a": {"enum": [1]}, "b": {"enum": [1]}, "c": {"enum": [1]}, "d": {"enum": [1]}, "e": {"enum": [1]}, "f": {"enum": [1]}, "g": {"enum": [1]}, "h": {"enum": [1]}, "i": {"enum": [1]}, "j": {"enum": [1]}, "k": {"enum": [1]}, "l": {"enum": [1]}, "m": {"enum": [1]}, "script": {"type": "string"}, "script": {"enum": ["x"]}}}"#,
    r##"{"type": "object", "$defs": {"c": {"type": "string"}, "c": {"enum": ["x"]}}, "properties": {"cmd": {"$ref": "#/$defs/c"}}, "additionalProperties": false}"##,
];

/// Names and ids a JSON Lines verdict must escape (control characters,
/// quotes, backslashes, DEL, the short escapes \b and \f), written plain
/// or with escapes.
const ODD: &[&str] = &[
    "tab\there",
    "quo\"ted",
    "back\\slash",
    "bell\u{7}\u{8}\u{c}",
    "del\u{7f}",
    "nul\u{0}end",
    "line\nfeed\r",
    "plain",
];

fn odd_text() -> impl Strategy<Value = Text> {
    (prop::sample::select(ODD), any::<bool>()).prop_map(|(n, e)| Text::Str(n.to_owned(), e))
}

/// A tool record's text: fields (some repeated, some escaped, some not
/// strings) around generated documents, sometimes broken off.
fn record() -> impl Strategy<Value = String> {
    let field = prop::sample::select(
        &[
            "id",
            "name",
            "description",
            "inputSchema",
            "input_schema",
            "annotations",
            "na\\u006de",
            "inputSchem\\u0061",
        ][..],
    );
    let name = prop_oneof![
        3 => prop::sample::select(NAMES).prop_map(|n| Text::Str(n.to_owned(), false)),
        1 => odd_text(),
    ];
    let described = prop::sample::select(&["Execute terminal commands.", "Search things."][..])
        .prop_map(|d| Text::Str(d.to_owned(), false));
    let schema = prop::sample::select(SCHEMAS).prop_map(Text::Raw);
    let value = prop_oneof![3 => document(), 2 => name, 1 => described, 2 => schema];
    (
        prop::collection::vec((field, value), 0..7),
        prop::sample::select(&["", " ", "\n", " x", ",", "}"][..]),
        // JSON whitespace, and characters that are not (refused alike).
        prop::sample::select(&["", " ", "\t", "\r\n", "\u{c}", "\u{a0}", "\u{feff}"][..]),
    )
        .prop_map(|(fields, tail, gap)| {
            let mut out = String::from("{");
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(gap);
                out.push('"');
                out.push_str(k);
                out.push_str("\":");
                out.push_str(gap);
                v.write(&mut out);
            }
            out.push('}');
            out.push_str(tail);
            out
        })
}

/// Byte sequences that are not UTF-8 (a stray continuation byte, an
/// overlong encoding, an encoded surrogate, a cut-off sequence, a code
/// point past U+10FFFF, a byte that never occurs).
const NOT_UTF8: &[&[u8]] = &[
    b"\x80",
    b"\xc0\x80",
    b"\xed\xa0\x80",
    b"\xe2\x82",
    b"\xf4\x90\x80\x80",
    b"\xff",
];

/// What the batch path must answer for a record's bytes, read the plain
/// way: a whole `serde_json::Value` parse (any depth) and the public gate.
fn judge_by_value(bytes: &[u8]) -> Result<crate::batch::ToolResult, TestCaseError> {
    use crate::batch::ToolResult;
    let error = |why: &str| ToolResult {
        id: None,
        name: String::new(),
        line: Some(1),
        index: 0,
        reason: None,
        message: None,
        detail: String::new(),
        error: Some(why.to_owned()),
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    let parsed = serde::Deserialize::deserialize(serde_stacker::Deserializer::new(&mut de))
        .and_then(|v: Value| de.end().map(|()| v));
    let value = match parsed {
        Ok(value) => Flat(value),
        // A number f64 cannot hold is clamped and the record judged (as
        // Python reads it); `tests/it/oracle_classes.rs` holds the clamp to
        // the original's verdicts.
        Err(e) => match crate::batch::clamp_out_of_range_numbers(bytes, &e) {
            Some(clamped) => return judge_by_value(&clamped),
            None => return Ok(error("not json")),
        },
    };
    let Value::Object(m) = &value.0 else {
        return Ok(error("not an object"));
    };
    let name = match m.get("name") {
        Some(Value::String(name)) => name.as_str(),
        _ => return Ok(error("no string name")),
    };
    let id = m.get("id").map(|id| {
        let mut stack = vec![(id, 0usize)];
        let mut deep = false;
        while let Some((v, depth)) = stack.pop() {
            deep |= depth > 100;
            match v {
                Value::Array(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
                Value::Object(m) => stack.extend(m.values().map(|i| (i, depth + 1))),
                _ => {}
            }
        }
        if deep {
            Value::from("(id nested too deep)")
        } else {
            id.clone()
        }
    });
    let description = m.get("description").and_then(Value::as_str);
    let schema = m.get("inputSchema").or_else(|| m.get("input_schema"));
    let report = explain_tool_admission_with(Limits::default(), name, schema, description);
    Ok(ToolResult {
        id,
        name: name.to_owned(),
        line: Some(1),
        index: 0,
        reason: report.reason,
        message: report
            .reason
            .map(|r| crate::reason::AdmissionDenied::new(name, r).to_string()),
        detail: report.detail().unwrap_or_default(),
        error: None,
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1500,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// End to end, from bytes: a record (valid UTF-8 or not, plain or not,
    /// broken or not) is refused exactly when a `Value` parse refuses it,
    /// and otherwise gets the verdict, message and detail the public gate
    /// gives the `Value`.
    #[test]
    fn a_record_gets_the_verdict_of_its_value(
        text in record(),
        bad in prop::option::weighted(0.3, (prop::sample::select(NOT_UTF8), any::<prop::sample::Index>())),
    ) {
        let mut bytes = text.into_bytes();
        if let Some((bad, at)) = bad {
            let at = at.index(bytes.len() + 1);
            bytes.splice(at..at, bad.iter().copied());
        }
        let record = crate::batch::RawRecord { bytes, line: 1, index: 0, broken: None };
        let got = crate::batch::judge_record(&record);
        let want = judge_by_value(&record.bytes)?;
        let shown = String::from_utf8_lossy(&record.bytes);
        // JSON Lines are written straight from the arena: the same line,
        // and one that reads back (as JSON) as the `Value` path's result.
        let (quick, slow) = crate::batch::jsonl_both_ways(&record.bytes, None);
        prop_assert_eq!(&quick, &slow, "{}", shown);
        let line: Value = serde_json::from_str(quick.0.trim_end())
            .map_err(|e| TestCaseError::fail(format!("{shown}: the verdict line is not json: {e}")))?;
        prop_assert_eq!(quick.0.matches('\n').count(), 1, "{}", shown);
        if want.error.is_none() {
            prop_assert_eq!(line.get("id"), Some(want.id.as_ref().unwrap_or(&Value::Null)), "{}", shown);
            prop_assert_eq!(line.get("name").and_then(Value::as_str), Some(want.name.as_str()), "{}", shown);
            let reason = want.reason.map(|r| r.as_str());
            prop_assert_eq!(line.get("reason").and_then(Value::as_str), reason, "{}", shown);
        } else {
            prop_assert!(line.get("error").and_then(Value::as_str).is_some(), "{}", shown);
        }
        prop_assert_eq!(got.error.is_some(), want.error.is_some(), "{} {:?} {:?}", shown, got.error, want.error);
        if want.error.is_none() {
            prop_assert_eq!(&got.id, &want.id, "{}", shown);
            prop_assert_eq!(&got.name, &want.name, "{}", shown);
            prop_assert_eq!(got.reason, want.reason, "{}", shown);
            prop_assert_eq!(&got.message, &want.message, "{}", shown);
            prop_assert_eq!(&got.detail, &want.detail, "{}", shown);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 3000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The differential guard of the batch path: on any text, the arena
    /// holds what a `Value` holds (or fails with the same error), and every
    /// report field is the same, detailed or plain.
    #[test]
    fn an_arena_document_gets_the_value_report(
        doc in document(),
        name in prop::sample::select(NAMES),
        description in prop::sample::select(DESCRIPTIONS),
        small in any::<bool>(),
    ) {
        let mut text = String::new();
        doc.write(&mut text);
        // Small budgets reach the limits (and their fail-closed paths) often.
        let limits = if small {
            Limits { max_depth: 4, max_nodes: 40 }
        } else {
            Limits::default()
        };
        same_both_ways(&text, name, description, limits)?;
    }

    /// The word-at-a-time scan (and past 32 bytes the vector scan) finds
    /// the first byte a JSON string cannot hold as it is, exactly where a
    /// byte-by-byte scan finds it, whatever the bytes around it (high
    /// bytes, neighbours of `"`, `\` and 0x20, every alignment).
    #[test]
    fn the_word_scan_finds_the_first_special_byte(
        // A plain run first (long ones reach the vector scan), then bytes
        // of every kind.
        plain in prop::collection::vec(prop_oneof![b'a'..=b'z', 0x80u8..=0xff], 0..90),
        tail in prop::collection::vec(
            prop_oneof![
                3 => prop::sample::select(&[b'"', b'\\', 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xa2, 0xdc, 0xff, 0x00, 0x01][..]),
                5 => any::<u8>(),
                4 => b'a'..=b'z',
            ],
            0..60,
        ),
    ) {
        let bytes = [plain, tail].concat();
        let naive = bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
        prop_assert_eq!(super::first_special(&bytes), naive);
    }

    /// A plain record read without serde_json gets exactly the result the
    /// serde_json reading gets (id, name, verdict, message, detail, error).
    #[test]
    fn a_plain_record_is_judged_as_serde_json_reads_it(text in record(), explained in any::<bool>()) {
        let (slow, fast) = crate::batch::judge_both_ways(&text, explained);
        if let Some(fast) = fast {
            prop_assert_eq!(&fast, &slow, "{}", text);
        }
    }

    /// Broken text fails the same way both ways (never a verdict from a
    /// document a `Value` parse refuses).
    #[test]
    fn broken_text_fails_as_a_value_parse_fails(
        doc in document(),
        cut in any::<prop::sample::Index>(),
        insert in prop::sample::select(&["", "]", "}", ",", "\"", "\\", "x", "{", "\u{0}"][..]),
    ) {
        let mut text = String::new();
        doc.write(&mut text);
        let mut at = cut.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let broken = format!("{}{insert}", &text[..at]);
        same_both_ways(&broken, "bash", None, Limits::default())?;
    }
}

/// The members' order and the last of duplicate keys, as a `Value` has them.
#[test]
fn members_are_sorted_and_the_last_duplicate_counts() {
    let text = r#"{"b": 1, "a": 2, "b": {"c": 3}, "\u0061": 4, "": 5}"#;
    let mut arena = Arena::new();
    let root = into_arena(text, &mut arena).expect("valid json");
    let value = as_value(text).expect("valid json");
    assert_eq!(arena.node(root).to_value(), value);
    let members = arena.node(root).as_object().expect("an object");
    let keys: Vec<&str> = crate::node::Obj::iter(members).map(|(k, _)| k).collect();
    assert_eq!(keys, ["", "a", "b"]);
    let b = crate::node::Obj::get(members, "b").map(|n| n.to_value());
    assert_eq!(b, Some(serde_json::json!({"c": 3})));
}

/// Recycling keeps the buffers (a worker allocates them once).
#[test]
fn recycling_keeps_the_buffers() {
    let mut arena = Arena::new();
    let text = String::from(r#"{"a": [1, 2, {"b": "c"}], "d": "e"}"#);
    into_arena(&text, &mut arena).expect("valid json");
    let capacity = arena.nodes.capacity();
    assert!(capacity >= 8);
    let mut recycled: Arena<'static> = arena.recycle();
    assert_eq!(recycled.nodes.capacity(), capacity);
    assert_eq!(recycled.nodes.len(), 1);
    let again = String::from("[true]");
    let mut arena = recycled.recycle();
    assert_eq!(into_arena(&again, &mut arena), Ok(2));
    recycled = arena.recycle();
    assert_eq!(recycled.nodes.capacity(), capacity);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// A judged record's JSON Lines verdict is one line of JSON that reads
    /// back as the record's own id and name (whatever they hold) and the
    /// public gate's verdict.
    #[test]
    fn a_jsonl_verdict_reads_back_as_its_record(
        id in prop_oneof![2 => odd_text(), 1 => document()],
        name in odd_text(),
        schema in prop::sample::select(SCHEMAS),
    ) {
        let mut text = String::from("{\"id\": ");
        id.write(&mut text);
        text.push_str(", \"name\": ");
        name.write(&mut text);
        text.push_str(", \"inputSchema\": ");
        text.push_str(schema);
        text.push('}');
        let want = judge_by_value(text.as_bytes())?;
        let ((line, tally), _) = crate::batch::jsonl_both_ways(text.as_bytes(), None);
        prop_assert_eq!(line.matches('\n').count(), 1, "{}", text);
        let read: Value = serde_json::from_str(line.trim_end())
            .map_err(|e| TestCaseError::fail(format!("{text}: the verdict line is not json: {e}")))?;
        if want.error.is_none() {
            prop_assert_eq!(read.get("id"), Some(want.id.as_ref().unwrap_or(&Value::Null)), "{}", text);
            prop_assert_eq!(read.get("name").and_then(Value::as_str), Some(want.name.as_str()), "{}", text);
            prop_assert_eq!(
                read.get("reason").and_then(Value::as_str),
                want.reason.map(|r| r.as_str()),
                "{}",
                text
            );
            prop_assert_eq!(tally.denied + tally.admitted, 1);
        } else {
            prop_assert!(read.get("error").and_then(Value::as_str).is_some(), "{}", text);
            prop_assert_eq!(tally.errors, 1);
        }
    }
}
