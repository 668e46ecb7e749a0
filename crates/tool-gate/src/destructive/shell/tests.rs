//! The shell reader against the real `sh`: generated command lines with
//! every quoting form split the same way `sh` splits them.

use std::process::Command as Process;

use proptest::prelude::*;

use super::{Part, parse, static_text};

/// Characters that mean something to the shell, for use inside quotes.
const SPECIAL: &str = " \t;|&<>()$`\\\"*?[]#~{}!=%";

fn bare() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_./=+:,@%-]{1,6}"
}

fn single_quoted() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[a-z0-9 ]".prop_map(|s| s),
            prop::sample::select(SPECIAL.chars().collect::<Vec<_>>()).prop_map(String::from),
        ],
        0..6,
    )
    .prop_map(|parts| format!("'{}'", parts.concat()))
}

fn double_quoted() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[a-z0-9 ;|&<>()*?#~{}']".prop_map(|s| s),
            prop::sample::select(vec!["\\\"", "\\\\", "\\$", "\\`", "\\a", "\\ "])
                .prop_map(String::from),
        ],
        0..6,
    )
    .prop_map(|parts| format!("\"{}\"", parts.concat()))
}

fn escaped() -> impl Strategy<Value = String> {
    prop::sample::select(SPECIAL.chars().chain("'a".chars()).collect::<Vec<_>>())
        .prop_map(|c| format!("\\{c}"))
}

fn word() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![bare(), single_quoted(), double_quoted(), escaped()],
        1..4,
    )
    .prop_map(|segments| {
        // A word may not start with `#` (a comment) or `~` (tilde
        // expansion); `\#` and `\~` are escaped and fine.
        segments.join("\\\n")
    })
}

fn line() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(word(), 1..6),
        prop::collection::vec(prop::sample::select(vec![" ", "  ", "\t", " \t "]), 6),
    )
        .prop_map(|(words, seps)| {
            let mut out = String::new();
            for (i, w) in words.iter().enumerate() {
                if i > 0 {
                    out.push_str(seps[i]);
                }
                out.push_str(w);
            }
            out
        })
}

/// The words `sh` passes to a command for `line`.
fn sh_words(line: &str) -> Vec<String> {
    let script = format!("printf '%s\\0' {line}");
    let out = Process::new("sh")
        .arg("-c")
        .arg(&script)
        .output()
        .expect("run sh");
    assert!(out.status.success(), "sh failed on {script:?}: {out:?}");
    let text = String::from_utf8(out.stdout).expect("utf8");
    let mut words: Vec<String> = text.split('\0').map(str::to_owned).collect();
    words.pop();
    words
}

fn our_words(line: &str) -> Vec<String> {
    let script = parse(line).unwrap_or_else(|e| panic!("{line:?} did not parse: {e:?}"));
    assert_eq!(script.commands.len(), 1, "{line:?}");
    let cmd = &script.commands[0];
    assert!(cmd.redirects.is_empty(), "{line:?}");
    cmd.words
        .iter()
        .map(|w| {
            assert!(
                w.parts.iter().all(|p| matches!(p, Part::Lit(..))),
                "{line:?}"
            );
            static_text(w)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn words_split_as_sh_splits_them(line in line()) {
        prop_assert_eq!(our_words(&line), sh_words(&line), "{:?}", line);
    }
}

#[test]
fn operators_redirections_and_substitutions_are_structure() {
    let script = parse("a 2>/dev/null b | c && d; (e); >x <y $(f g) `h`").expect("parse");
    let names: Vec<String> = script
        .commands
        .iter()
        .map(|c| c.words.first().map(static_text).unwrap_or_default())
        .collect();
    assert_eq!(names, ["a", "c", "d", "e", ""]);
    assert!(script.commands[1].piped);
    assert_eq!(script.commands[0].words.len(), 2);
    assert_eq!(script.commands[0].redirects.len(), 1);
    assert!(script.commands[0].redirects[0].writes);
    assert_eq!(
        static_text(&script.commands[0].redirects[0].target),
        "/dev/null"
    );
    let last = &script.commands[4];
    assert_eq!(last.redirects.iter().filter(|r| r.writes).count(), 1);
    assert!(
        last.words
            .iter()
            .all(|w| matches!(w.parts.as_slice(), [Part::Subst(_)]))
    );
}

#[test]
fn unbalanced_text_is_an_error() {
    for text in [
        "echo 'a", "echo \"a", "echo $(a", "echo `a", "a )", "(a", "echo ${a",
    ] {
        assert!(parse(text).is_err(), "{text:?}");
    }
}

#[test]
fn brace_expansion_matches_bash() {
    let line = "x{a,b}y {rm,-rf,/} '{q,r}' {c,{d,e}}";
    let out = Process::new("bash")
        .arg("-c")
        .arg(format!("printf '%s\\0' {line}"))
        .output()
        .expect("run bash");
    let text = String::from_utf8(out.stdout).expect("utf8");
    let mut want: Vec<String> = text.split('\0').map(str::to_owned).collect();
    want.pop();
    assert_eq!(our_words(line), want);
}
