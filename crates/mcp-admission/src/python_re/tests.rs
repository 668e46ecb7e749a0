//! Unit checks of the Python pattern reader; the property test against a
//! real Python is `tests/it/python_re.rs`.

use super::{MAX_SEARCHED_LEN, PythonPattern, Unjudgeable};
use crate::pattern::spellings_of_key_words;

fn search(pattern: &str, haystack: &str) -> Result<bool, Unjudgeable> {
    PythonPattern::compile(pattern).map(|p| p.search(haystack).expect("searchable"))
}

#[test]
fn python_syntax_is_read_as_python_reads_it() {
    assert_eq!(search(r"^cmd\Z", "cmd"), Ok(true));
    assert_eq!(search(r"(?i)^CMD$", "cmd"), Ok(true));
    assert_eq!(search(r"(?i:C)md", "cmd"), Ok(true));
    assert_eq!(search(r"(?P<w>cm)d", "cmd"), Ok(true));
    assert_eq!(search(r"(?x) c m d  # comment", "cmd"), Ok(true));
    assert_eq!(search(r"a{,}", "b"), Ok(true));
    assert_eq!(search(r"a{}", "a"), Ok(false));
    assert_eq!(search(r"x{1,2", "x{1,2"), Ok(true));
    assert_eq!(search(r"\x63md", "cmd"), Ok(true));
    assert_eq!(search(r"\143md", "cmd"), Ok(true));
    assert_eq!(search(r"[\w-]+", "cmd"), Ok(true));
    assert_eq!(search(r"(?i)\u017fcript", "script"), Ok(true));
    assert_eq!(search(r"(?ai)\u017fcript", "script"), Ok(false));
    assert_eq!(search(r"c{1000000}", "cmd"), Ok(false));
    assert_eq!(search(r"(?:c|){1000000}md", "cmd"), Ok(true));
    assert_eq!(search(r"[^\x00-\x7f]", "cmd"), Ok(false));
}

#[test]
fn what_python_rejects_is_rejected() {
    for p in [
        r"\z",
        "a**",
        "(?i)a(?m)b",
        "a(?i)b",
        "[z-a]",
        r"[\d-z]",
        "(a",
        "a)",
        "[a",
        r"\x4",
        "(?L)a",
        "(?au:a)",
        "(?-a:a)",
        "(?i-i:a)",
        "a{2,1}",
        "*",
        "^*",
        r"\8",
        r"\1",
        "(?P<1>a)",
        "(?P<n>a)(?P<n>b)",
        r"[\A]",
        r"\400",
    ] {
        assert!(
            matches!(PythonPattern::compile(p), Err(Unjudgeable::Rejected(_))),
            "{p}: {:?}",
            PythonPattern::compile(p).map(|p| p.translated().to_owned())
        );
    }
}

#[test]
fn what_python_raises_other_errors_on_is_told_apart() {
    // OverflowError and ValueError, which the original does not catch.
    for p in [
        "a{4294967295}",
        "a{1,99999999999999999999}",
        "(?a)(?u)a",
        "(?u)(?a)x",
        "(?x)(?a)(?u)",
    ] {
        assert!(
            matches!(PythonPattern::compile(p), Err(Unjudgeable::Raises(_))),
            "{p}"
        );
    }
    // Raised while parsing, before the unbalanced group is seen.
    assert!(matches!(
        PythonPattern::compile("(a{4294967295}"),
        Err(Unjudgeable::Raises(_))
    ));
}

#[test]
fn what_the_linear_engine_cannot_express_is_unsupported() {
    for p in [
        "(?=c)",
        "(?!x)",
        "(?<=a)b",
        "(?<!a)b",
        "(?>a)",
        "a*+",
        "a++",
        "(a)\\1",
        "(?P<n>a)(?P=n)",
        "(a)(?(1)b|c)",
        r"\N{LATIN SMALL LETTER A}",
        "(?i)[\u{100}-\u{200}]",
    ] {
        assert!(
            matches!(PythonPattern::compile(p), Err(Unjudgeable::Unsupported(_))),
            "{p}"
        );
    }
}

#[test]
fn every_spelling_is_within_the_exact_domain() {
    for s in spellings_of_key_words() {
        assert!(
            s.len() <= MAX_SEARCHED_LEN && s.is_ascii() && !s.contains('\n'),
            "{s}"
        );
    }
}

#[test]
fn a_backslash_and_the_next_character_are_one_token_in_comments() {
    // `(?#\)(x)` is one comment, as Python reads it.
    assert_eq!(search(r"(?#\)(x)cmd", "cmd"), Ok(true));
    assert_eq!(search(r"(?#a\\)cmd", "cmd"), Ok(true));
    // An escaped newline does not end a verbose comment; an escaped
    // backslash before a newline does not escape it.
    assert_eq!(search("(?x)#\\\nx\ncmd", "cmd"), Ok(true));
    assert_eq!(search("(?x)a#\\\\\ncmd", "cmd"), Ok(false));
    assert_eq!(search("(?x)a#\\\\\ncmd", "acmd"), Ok(true));
    // A backslash ending the pattern inside a comment is Python's error.
    for p in ["(?x)#a\\", "(?#a\\"] {
        assert!(
            matches!(PythonPattern::compile(p), Err(Unjudgeable::Rejected(_))),
            "{p:?}"
        );
    }
}
