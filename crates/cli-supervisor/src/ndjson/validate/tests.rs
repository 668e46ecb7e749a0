//! The fast validator never accepts what serde_json refuses, accepts the
//! well-formed lines it is for, and leaves the events of `LineFormat::Raw`
//! exactly as validating with serde_json alone made them.

use proptest::prelude::*;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::{MAX_DEPTH, surely_valid};
use crate::ndjson::tests::decode_as;
use crate::ndjson::{Event, LineFormat};

fn serde_accepts(s: &[u8]) -> bool {
    serde_json::from_slice::<IgnoredAny>(s).is_ok()
}

/// What `LineFormat::Raw` delivered before the fast path: serde_json alone.
fn reference_event(line: u64, bytes: &[u8]) -> Option<Event> {
    let trimmed = bytes.trim_ascii();
    if trimmed.is_empty() {
        return None;
    }
    let Ok(text) = std::str::from_utf8(trimmed) else {
        return Some(Event::InvalidJson {
            line,
            error: "line is not valid utf-8".to_owned(),
        });
    };
    Some(match serde_json::from_str::<IgnoredAny>(text) {
        Ok(_) => Event::RawJson {
            line,
            json: text.into(),
        },
        Err(error) => Event::InvalidJson {
            line,
            error: error.to_string(),
        },
    })
}

/// The events of `LineFormat::Raw` over `input`, validated by serde_json
/// alone, line by line.
fn reference_events(input: &[u8]) -> Vec<Event> {
    let mut events = Vec::new();
    for (k, line) in input.split(|&b| b == b'\n').enumerate() {
        events.extend(reference_event(k as u64 + 1, line));
    }
    events
}

/// `LineFormat::Raw` through the decoder, read in pieces of several sizes
/// (so lines also arrive split across reads), agrees with the reference.
fn assert_raw_events_agree(input: &[u8]) -> Result<(), TestCaseError> {
    let expected = reference_events(input);
    for chunk in [1, 7, 64, 4096] {
        let (events, _) = decode_as(LineFormat::Raw, input, 1 << 20, chunk);
        prop_assert_eq!(
            &events,
            &expected,
            "read in pieces of {}: {:?}",
            chunk,
            String::from_utf8_lossy(input)
        );
    }
    Ok(())
}

#[test]
fn edge_cases_agree_with_serde_json() {
    let deep_ok = format!(
        "{}{}",
        "[".repeat(MAX_DEPTH as usize),
        "]".repeat(MAX_DEPTH as usize)
    );
    let too_deep = format!("[{deep_ok}]");
    let serde_limit = format!("{}{}", "[".repeat(200), "]".repeat(200));
    // Long strings go past the short byte-by-byte run to memchr2 and past
    // one 64-byte chunk of the control-byte pass.
    let long = "y".repeat(100);
    let long_ok = format!(r#"{{"k":"{long}\n{long}\u00e9{long}","z":1}}"#);
    let long_control = format!("{{\"k\":\"{long}\u{1f}{long}\"}}");
    let long_bad_escape = format!(r#"{{"k":"{long}\x{long}"}}"#);
    let long_unterminated = format!(r#"{{"k":"{long}"#);
    // (text, the fast path must take it)
    let cases: &[(&str, bool)] = &[
        (r#"{"type":"delta","i":1,"text":"xx"}"#, true),
        (
            r#" { "a" : [ 1 , -2.5e+3 , 0 , true , false , null ] , "b" : {} } "#,
            true,
        ),
        (r#"[[],{},"",0,-0,0.0,1E5,1e-5]"#, true),
        (r#""esc \" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00""#, true),
        (r#""lone surrogate \ud800""#, true),
        ("\"caf\u{e9} \u{1f600}\"", true),
        ("123", true),
        ("null", true),
        (&deep_ok, true),
        (&long_ok, true),
        (&long_control, false),
        (&long_bad_escape, false),
        (&long_unterminated, false),
        // Left to serde_json, which accepts them.
        ("{\"a\":\t1}", false),
        ("[1,\r2]", false),
        (&too_deep, false),
        // Refused by both.
        (&serde_limit, false),
        ("01", false),
        ("-", false),
        ("-a", false),
        ("1.", false),
        ("1.e5", false),
        ("1e", false),
        ("1e+", false),
        (".5", false),
        ("+1", false),
        ("[1,]", false),
        ("[,1]", false),
        (r#"{"a":1,}"#, false),
        (r#"{"a" 1}"#, false),
        (r#"{"a":}"#, false),
        ("{1:2}", false),
        ("{'a':1}", false),
        (r#"{"a":1]"#, false),
        ("[1}", false),
        ("[1", false),
        (r#"{"a":1"#, false),
        (r#""unterminated"#, false),
        (r#""bad \q escape""#, false),
        (r#""short \u12G4""#, false),
        (r#""short \u12""#, false),
        ("\"control \u{1} byte\"", false),
        ("\"tab \t in string\"", false),
        ("tru", false),
        ("nul", false),
        ("falsey", false),
        ("{} x", false),
        ("{}{}", false),
        ("[] []", false),
        ("NaN", false),
        ("", false),
    ];
    for (text, fast) in cases {
        let bytes = text.as_bytes();
        assert_eq!(surely_valid(bytes), *fast, "fast path on {text:?}");
        if surely_valid(bytes) {
            assert!(
                serde_accepts(bytes),
                "accepted what serde refuses: {text:?}"
            );
        }
        assert_raw_events_agree(bytes).expect("agrees");
        // The same line among others, with CRLF endings and a tab before it.
        let mut stream = b"{}\r\n\t".to_vec();
        stream.extend_from_slice(bytes);
        stream.extend_from_slice(b"\r\n[1]\n");
        assert_raw_events_agree(&stream).expect("agrees in a stream");
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any text at all: the fast path only ever accepts what serde_json
    /// accepts, and the delivered event is serde_json's.
    #[test]
    fn never_accepts_what_serde_refuses(
        text in r#"[ \t\r{}\[\]:,"\\a-fnrtu0-9.eE+\-]{0,48}"#,
        bytes in proptest::collection::vec(any::<u8>(), 0..48),
    ) {
        for input in [text.as_bytes(), bytes.as_slice()] {
            if surely_valid(input) {
                prop_assert!(serde_accepts(input), "{:?}", String::from_utf8_lossy(input));
            }
            assert_raw_events_agree(input)?;
        }
    }

    /// Well-formed JSON as serde_json writes it (compact, or with spaces
    /// around the punctuation) takes the fast path.
    #[test]
    fn well_formed_lines_take_the_fast_path(value in json_value()) {
        let compact = serde_json::to_string(&value).unwrap_or_default();
        let spaced = compact.replace(',', " , ").replace(':', " : ");
        prop_assert!(surely_valid(compact.as_bytes()), "{}", compact);
        // The spacing can land inside a string; it stays valid either way.
        prop_assert!(serde_accepts(spaced.as_bytes()));
        prop_assert!(surely_valid(spaced.as_bytes()), "{}", spaced);
        let (events, _) = decode_as(LineFormat::Raw, compact.as_bytes(), 1 << 20, 4096);
        prop_assert_eq!(
            events,
            vec![Event::RawJson { line: 1, json: compact.as_str().into() }]
        );
    }
}
