//! Unit tests: the ASCII fast path agrees with the general normalisation.

use super::{
    ascii_description_signals_execution, normalize_ascii_key, normalize_description,
    normalize_unicode_key, normalized_description_signals_execution, python_repr,
};
use crate::vocabulary::EXECUTOR_PHRASES;

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

#[test]
fn ascii_description_path_matches_the_general_path() {
    let mut descriptions: Vec<String> = [
        "",
        "Runs shell commands.",
        "RUN--SHELL",
        "runs  shell\tcommand",
        "Execute a command",
        "execute-an OS command!",
        "Search the code base.",
        "rerun shell",
        "run shellcommands",
        "spawnprocess",
        "Spawns processes on demand",
        "a shell command runner, arbitrary",
        "command line executor",
        "commands line executor",
        "runs a1 command",
        "executes scripts and more",
        "arbitrary",
        "run",
        "Execute_Command",
        "execute_terminal_commands",
        "9run shell",
        "run shell9",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    for phrase in EXECUTOR_PHRASES {
        descriptions.push((*phrase).to_owned());
        descriptions.push(phrase.to_ascii_uppercase().replace(' ', "-"));
        descriptions.push(format!("x {phrase} y"));
        descriptions.push(format!("x{phrase}"));
        descriptions.push(phrase.replacen(' ', "", 1));
        let cut = phrase.len() - 1;
        descriptions.push(phrase[..cut].to_owned());
    }
    let mut signalled = 0;
    for d in &descriptions {
        let general = normalized_description_signals_execution(&normalize_description(d));
        assert_eq!(
            ascii_description_signals_execution(d.as_bytes()),
            general,
            "{d:?}"
        );
        signalled += usize::from(general);
    }
    // Both answers occur, so the comparison can fail either way.
    assert!(signalled > EXECUTOR_PHRASES.len() && signalled < descriptions.len());
}

proptest::proptest! {
    /// Descriptions made of phrase words, other words and separators (ASCII
    /// and not): the in-place ASCII reading agrees with the general one.
    #[test]
    fn ascii_description_path_agrees_on_generated_text(
        parts in proptest::collection::vec(
            (
                proptest::sample::select(&[
                    "run", "RUNS", "execute", "Executes", "a", "an", "os", "system", "shell",
                    "terminal", "command", "Commands", "arbitrary", "spawn", "spawns",
                    "process", "processes", "script", "scripts", "line", "executor",
                    "runner", "x", "9", "run9", "commandx",
                ][..]),
                proptest::sample::select(&[" ", "", "-", "_", ". ", "\t", "é", "1"][..]),
            ),
            0..8,
        )
    ) {
        let text: String = parts.iter().map(|(w, sep)| format!("{w}{sep}")).collect();
        let general = normalized_description_signals_execution(&normalize_description(&text));
        if text.is_ascii() {
            proptest::prop_assert_eq!(ascii_description_signals_execution(text.as_bytes()), general);
        }
        proptest::prop_assert_eq!(super::description_signals_execution(&text), general);
    }
}
