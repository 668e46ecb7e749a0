//! Redaction of adapter argument values, and the argv that hides them.
//!
//! An adapter's argv routinely carries secrets (webhook URLs, tokens), and
//! its stderr often echoes its own invocation. Every surface this crate
//! writes (warnings, `notify_outcome.json`, log records, error messages)
//! names an adapter only by the basename of its program and passes any
//! snippet through [`redact_argv_values`] first. This is not a secret
//! scanner: a secret the adapter obtained elsewhere is not recognised.

use std::fmt;
use std::path::Path;

/// Argument values shorter than this are never redacted: replacing a bare
/// `-v` or `0` would corrupt unrelated text.
pub const MIN_REDACTABLE_ARG_LEN: usize = 4;

/// What a redacted value is replaced with.
pub const REDACTED: &str = "***";

/// Replaces every argument value of `argv` (every element after the
/// program) that occurs verbatim in `text`. Values are handled longest
/// first in effect: every occurrence of every value is located in the
/// original text and overlapping or nested occurrences are merged into one
/// replaced span, so a value that contains another (or overlaps it) leaves
/// no fragment behind. Values shorter than [`MIN_REDACTABLE_ARG_LEN`]
/// characters stay.
pub fn redact_argv_values<S: AsRef<str>>(text: &str, argv: &[S]) -> String {
    let mut values: Vec<&str> = argv
        .iter()
        .skip(1)
        .map(AsRef::as_ref)
        .filter(|v| v.chars().count() >= MIN_REDACTABLE_ARG_LEN)
        .collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for value in values {
        let mut from = 0;
        while let Some(at) = text[from..].find(value) {
            let start = from + at;
            spans.push((start, start + value.len()));
            // Step one character on, so overlapping occurrences of the same
            // value (`aaaa` in `aaaaa`) are all found.
            from = start + text[start..].chars().next().map_or(1, char::len_utf8);
        }
    }
    if spans.is_empty() {
        return text.to_owned();
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut current: Option<(usize, usize)> = None;
    for (start, end) in spans {
        match current {
            Some((s, e)) if start <= e => current = Some((s, e.max(end))),
            _ => {
                if let Some((s, e)) = current {
                    out.push_str(&text[copied..s]);
                    out.push_str(REDACTED);
                    copied = e;
                }
                current = Some((start, end));
            }
        }
    }
    if let Some((s, e)) = current {
        out.push_str(&text[copied..s]);
        out.push_str(REDACTED);
        copied = e;
    }
    out.push_str(&text[copied..]);
    out
}

/// The label an adapter is known by on every surface: the basename of its
/// program (`argv[0]`), never its directory or arguments.
pub fn adapter_label<S: AsRef<str>>(argv: &[S]) -> String {
    argv.first()
        .map(|p| {
            let p = p.as_ref();
            Path::new(p)
                .file_name()
                .map_or_else(|| p.to_owned(), |n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "<empty>".to_owned())
}

/// An adapter command line (never empty). Debug and Display show only the
/// program's basename and the argument count; there is no serde form.
#[derive(Clone, PartialEq, Eq)]
pub struct Argv(Vec<String>);

impl Argv {
    /// The argv, or `None` when it is empty.
    pub fn new(argv: Vec<String>) -> Option<Self> {
        (!argv.is_empty()).then_some(Self(argv))
    }

    /// The program and its arguments, raw: pass only to the process spawn.
    pub fn as_slice(&self) -> &[String] {
        &self.0
    }

    /// The basename of the program.
    pub fn label(&self) -> String {
        adapter_label(&self.0)
    }

    /// `text` with every argument value of this argv redacted.
    pub fn redact(&self, text: &str) -> String {
        redact_argv_values(text, &self.0)
    }
}

impl fmt::Debug for Argv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Argv({self})")
    }
}

impl fmt::Display for Argv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} <{} argument(s) redacted>",
            self.label(),
            self.0.len().saturating_sub(1)
        )
    }
}
