//! The redaction rules, by example and by property.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{MIN_REDACTABLE_LEN, REDACTED, Redactor, looks_secret_name};

fn r(values: &[&str]) -> Redactor {
    Redactor::from_values(values)
}

#[test]
fn every_occurrence_is_replaced_and_other_text_kept() {
    let red = r(&["s3cr3t-value"]);
    assert_eq!(
        red.redact_str("a s3cr3t-value b s3cr3t-value"),
        format!("a {REDACTED} b {REDACTED}")
    );
    assert_eq!(red.redact_str("nothing here"), "nothing here");
}

// contract: NTF-026
#[test]
fn a_value_containing_another_is_replaced_whole() {
    let red = r(&["abcd", "abcdef"]);
    assert_eq!(red.redact_str("xabcdefx"), format!("x{REDACTED}x"));
    // Overlapping occurrences merge into one span: no fragment is left.
    assert_eq!(r(&["aaaa"]).redact_str("aaaaa"), REDACTED);
}

// contract: NTF-027
#[test]
fn values_shorter_than_the_minimum_are_never_redacted() {
    assert_eq!(MIN_REDACTABLE_LEN, 4);
    let red = r(&["abc", "0", "-v"]);
    assert!(red.is_empty());
    assert_eq!(red.redact_str("abc 0 -v"), "abc 0 -v");
    assert_eq!(r(&["abcd"]).redact_str("abcd"), REDACTED);
}

#[test]
fn a_value_is_found_in_its_json_escaped_forms() {
    let secret = "pa\"ss\\wörd/x";
    let red = r(&[secret]);
    let serde = serde_json::to_string(&json!({ "e": secret })).unwrap();
    assert!(!red.redact_str(&serde).contains("ss"), "{serde}");
    let python = r#"{"e": "pa\"ss\\w\u00f6rd\/x"}"#;
    assert!(!red.redact_str(python).contains("ss"), "{python}");
    assert_eq!(
        red.redact_json_text(&serde).as_deref(),
        Some(format!("{{\"e\":\"{REDACTED}\"}}").as_str())
    );
}

#[test]
fn a_value_spanning_json_structure_withholds_the_line() {
    let red = r(&["1,\"b\""]);
    assert_eq!(red.redact_json_text(r#"{"a":1,"b":2}"#), None);
    // Where the replacement happens to leave JSON, the line is kept.
    let red = r(&["x\",\"y"]);
    assert_eq!(
        red.redact_json_text(r#"{"ax","yb":1}"#).as_deref(),
        Some(r#"{"a***b":1}"#)
    );
}

#[test]
fn parsed_values_are_redacted_in_keys_and_strings() {
    let red = r(&["tok-123456"]);
    let mut v = json!({"tok-123456": ["a tok-123456", 1, {"k": "tok-123456"}], "ok": "tok-12345"});
    assert!(red.redact_value(&mut v));
    let text = v.to_string();
    assert!(!text.contains("tok-123456"), "{text}");
    assert!(text.contains("tok-12345"), "{text}");
}

#[test]
fn a_tail_holds_no_fragment_at_either_end() {
    let secret = "ABCDEFGHIJ";
    let red = r(&[secret]);
    // The buffer keeps longest - 1 bytes more than the tail: a value cut by
    // the tail's start is still replaced.
    let buffer = format!("xx{secret}yyyy");
    let tail = red.redact_tail(buffer.as_bytes(), 8);
    assert_eq!(String::from_utf8(tail).unwrap(), format!("{REDACTED}yyyy"));
    // A value half written at the end is replaced too.
    let tail = red.redact_tail(b"log: ABCDEF", 64);
    assert_eq!(String::from_utf8(tail).unwrap(), format!("log: {REDACTED}"));
}

#[test]
fn names_that_look_secret() {
    for name in [
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "MYSQLPASSWORD",
        "npm_config__auth",
        "SESSION_COOKIE",
        "AWS_SESSION_TOKEN",
        "GH_PAT_TOKEN",
    ] {
        assert!(looks_secret_name(name), "{name}");
    }
    for name in [
        "PATH",
        "HOME",
        "PWD",
        "OLDPWD",
        "LANG",
        "KEYBOARD",
        "TERM",
        "LIONAGI_SESSION_ID",
    ] {
        assert!(!looks_secret_name(name), "{name}");
    }
}

#[test]
fn renders_only_a_count() {
    let red = r(&["hunter22", "tok-abcdef"]);
    assert_eq!(format!("{red}"), "<redactor: 2 value(s)>");
    assert_eq!(format!("{red:?}"), "<redactor: 2 value(s)>");
}

fn secret() -> impl Strategy<Value = String> {
    // Printable ASCII, quotes and backslashes, a few non-ASCII characters.
    proptest::collection::vec(
        prop_oneof![
            8 => proptest::char::range('!', '~'),
            1 => Just('"'),
            1 => Just('\\'),
            1 => Just('é'),
            1 => Just('€'),
        ],
        MIN_REDACTABLE_LEN..24,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// No registered value survives in any text, raw or as JSON, whatever
    /// surrounds it.
    #[test]
    fn no_registered_value_survives(
        secrets in proptest::collection::vec(secret(), 1..4),
        around in proptest::collection::vec("[ -~]{0,12}", 2..6),
    ) {
        let red = Redactor::from_values(&secrets);
        let mut text = String::new();
        for (i, piece) in around.iter().enumerate() {
            text.push_str(piece);
            text.push_str(&secrets[i % secrets.len()]);
        }
        let clean = red.redact_str(&text);
        for s in &secrets {
            prop_assert!(!clean.contains(s.as_str()), "{s:?} in {clean:?}");
        }
        let as_json = serde_json::to_string(&json!({ "text": text })).unwrap();
        let escaped = |s: &String| serde_json::to_string(s).unwrap().trim_matches('"').to_owned();
        // `None` (a value spanned the JSON structure) withholds the text.
        if let Some(clean) = red.redact_json_text(&as_json) {
            for s in &secrets {
                prop_assert!(!clean.contains(&escaped(s)), "{s:?} in {clean:?}");
                let back: Value = serde_json::from_str(&clean).unwrap();
                prop_assert!(!back["text"].as_str().unwrap().contains(s.as_str()));
            }
        }
        let mut value = json!({ "text": text, "list": [text] });
        red.redact_value(&mut value);
        for s in &secrets {
            prop_assert!(!value.to_string().contains(&escaped(s)));
        }
    }

    /// A tail of any length, cut anywhere, holds no value and no fragment
    /// of one of MIN_REDACTABLE_LEN bytes or more.
    #[test]
    fn no_tail_holds_a_fragment(
        secret in "[A-Za-z0-9]{8,20}",
        before in "[ -~]{0,40}",
        after in "[ -~]{0,40}",
        keep in 1usize..80,
    ) {
        let red = Redactor::from_values([&secret]);
        let full = format!("{before}{secret}{after}");
        let cap = keep + red.longest() - 1;
        let buffer = &full.as_bytes()[full.len().saturating_sub(cap)..];
        let tail = String::from_utf8(red.redact_tail(buffer, keep)).unwrap();
        let visible = &full[full.len().saturating_sub(keep)..];
        // Whatever of the secret reached the visible part is gone.
        let start = before.len();
        let end = start + secret.len();
        let shown_from = full.len().saturating_sub(keep);
        if end > shown_from {
            let fragment = &full[start.max(shown_from)..end];
            if fragment.len() >= MIN_REDACTABLE_LEN {
                prop_assert!(!tail.contains(fragment), "{fragment:?} in {tail:?} (visible {visible:?})");
            }
        }
        prop_assert!(!tail.contains(secret.as_str()));
    }
}
