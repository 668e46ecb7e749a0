//! Unit tests: the ASCII fast path agrees with the general normalisation.

use super::{normalize_ascii_key, normalize_unicode_key, python_repr};

#[test]
fn ascii_fast_path_matches_the_general_path() {
    for key in [
        "",
        "_",
        "cmd",
        "CMD",
        "commandLine",
        "CommandLine",
        "HTTPServer",
        "aBC",
        "ABCd",
        "ABcDEf",
        "__Shell--Command__",
        "x1Y",
        "a1b2C3",
        "run_process",
        "Run_Process",
        "  spaced  out ",
        "snake_Case_Key",
        "getURLForID",
        "A",
        "aA",
        "Aa",
        "9Lives",
        "$ref",
        "x-vendor",
        "already_normal",
        "a_b",
        "a__b",
        "_a",
        "a_",
        "abc123",
        "9",
    ] {
        assert_eq!(
            normalize_ascii_key(key.as_bytes()),
            normalize_unicode_key(key),
            "{key:?}"
        );
        assert_eq!(
            super::normalize_key_cow(key),
            super::normalize_key(key),
            "{key:?}"
        );
    }
}

#[test]
fn python_repr_quoting() {
    assert_eq!(python_repr("bash"), "'bash'");
    assert_eq!(python_repr("it's"), "\"it's\"");
    assert_eq!(python_repr("it's \"x\""), "'it\\'s \"x\"'");
    assert_eq!(
        python_repr("a\nb\\c\t\u{7f}\u{200b}é"),
        "'a\\nb\\\\c\\t\\x7f\\u200bé'"
    );
    assert_eq!(python_repr("\u{e0001}"), "'\\U000e0001'");
}

#[test]
fn every_phrase_is_found_by_the_fast_path() {
    for phrase in crate::vocabulary::EXECUTOR_PHRASES {
        assert!(
            super::description_signals_execution(&format!("It will {phrase}.")),
            "{phrase}"
        );
        assert!(
            super::description_signals_execution(&phrase.to_uppercase()),
            "{phrase}"
        );
    }
    assert!(!super::description_signals_execution(
        "Runs the shell-command-free formatter."
    ));
    assert!(!super::description_signals_execution("executecommands"));
}
