//! Redaction of argument values: longest first, the length floor, and
//! nothing else touched.

use notify::{MIN_REDACTABLE_ARG_LEN, REDACTED, adapter_label, redact_argv_values};
use proptest::prelude::*;

// contract: NTF-024
#[test]
fn adapters_are_named_by_the_basename_of_their_program() {
    assert_eq!(
        adapter_label(&["/usr/local/bin/notify-send", "secret"]),
        "notify-send"
    );
    assert_eq!(adapter_label(&["hook"]), "hook");
    assert_eq!(adapter_label(&["./bin/hook", "x"]), "hook");
}

// contract: NTF-025
#[test]
fn every_argument_value_in_a_snippet_is_replaced() {
    let argv = [
        "/bin/hook",
        "https://h.example/T",
        "--token",
        "s3cr3t-value",
    ];
    let text = "POST https://h.example/T failed (--token s3cr3t-value); retry https://h.example/T";
    assert_eq!(
        redact_argv_values(text, &argv),
        "POST *** failed (*** ***); retry ***"
    );
}

// contract: NTF-026
#[test]
fn longer_values_are_replaced_whole_before_their_substrings() {
    let argv = ["hook", "abcd", "abcdef"];
    assert_eq!(
        redact_argv_values("x abcdef y abcd z", &argv),
        "x *** y *** z"
    );
    // Order in argv does not matter.
    let argv = ["hook", "abcdef", "abcd"];
    assert_eq!(redact_argv_values("abcdef", &argv), "***");
    // Overlapping values merge into one span: no fragment of either stays.
    let argv = ["hook", "abcdXY", "XYzzz"];
    assert_eq!(redact_argv_values("-abcdXYzzz-", &argv), "-***-");
}

// contract: NTF-027
#[test]
fn values_shorter_than_the_floor_are_never_redacted() {
    assert_eq!(MIN_REDACTABLE_ARG_LEN, 4);
    let argv = ["hook", "-v", "0", "abc", "abcd"];
    assert_eq!(
        redact_argv_values("-v 0 abc abcd 10 -verbose", &argv),
        "-v 0 abc *** 10 -verbose"
    );
    // Counted in characters, not bytes: four characters are redacted.
    assert_eq!(redact_argv_values("é€ab", &["hook", "é€ab"]), REDACTED);
    assert_eq!(redact_argv_values("é€a", &["hook", "é€a"]), "é€a");
}

// contract: NTF-028
#[test]
fn text_without_an_argument_value_passes_unchanged() {
    let argv = ["hook", "https://h.example/T"];
    let text = "token=ghp_0123456789abcdef leaked by the adapter itself";
    assert_eq!(redact_argv_values(text, &argv), text);
}

proptest! {
    // contract: NTF-026, NTF-027, NTF-028
    #[test]
    fn redaction_properties(
        values in prop::collection::vec("[a-c]{1,7}", 1..5),
        filler in prop::collection::vec("[a-dX ]{0,6}", 1..8),
    ) {
        let mut argv = vec!["hook".to_owned()];
        argv.extend(values.iter().cloned());
        let mut text = String::new();
        for (i, f) in filler.iter().enumerate() {
            text.push_str(f);
            text.push_str(&values[i % values.len()]);
        }
        let out = redact_argv_values(&text, &argv);
        for v in &values {
            if v.chars().count() >= MIN_REDACTABLE_ARG_LEN {
                // No redactable value survives, whole or as a leftover of a
                // longer one.
                prop_assert!(!out.contains(v.as_str()), "{v} in {out}");
            }
        }
        let redactable = values.iter().any(|v| v.chars().count() >= MIN_REDACTABLE_ARG_LEN && text.contains(v.as_str()));
        if !redactable {
            prop_assert_eq!(&out, &text);
        }
        // Removing the markers leaves only text that was there.
        for piece in out.split(REDACTED) {
            prop_assert!(text.contains(piece));
        }
    }
}
