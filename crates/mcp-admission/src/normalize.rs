//! Normalisation of names, keys and descriptions, and the key predicates built on it.

use crate::unicode_tables::{CASEFOLD_SPECIAL, NON_PRINTABLE};
use crate::vocabulary::{
    ARGUMENT_KEYS, AUXILIARY_KEYS, COMMAND_KEYS, EXEC_TAINTED_TOKENS, EXECUTOR_PHRASES,
    IDENTIFIER_SUFFIXES, PAYLOAD_KEYS, PROGRAM_KEYS, SELECTOR_KEYS, STRONG_EXECUTOR_NAMES,
};

/// Appends the full Unicode case folding of `c` (so `ſ` folds to `s`, `ß` to `ss`).
fn push_casefold(out: &mut String, c: char) {
    match CASEFOLD_SPECIAL.binary_search_by(|(k, _)| k.cmp(&c)) {
        Ok(i) => out.push_str(CASEFOLD_SPECIAL[i].1),
        Err(_) => out.extend(c.to_lowercase()),
    }
}

/// Full Unicode case folding of a string.
pub(crate) fn casefold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        push_casefold(&mut out, c);
    }
    out
}

/// Normalises a tool name or property key, as the original does.
///
/// Splits camelCase at ASCII boundaries only (an ASCII lower/digit followed
/// by an ASCII upper; an ASCII upper run followed by upper+lower: the
/// original's `[a-z0-9]`/`[A-Z]` classes are ASCII), then case-folds with
/// full Unicode case folding (`ſ` to `s`, `K` to `k`, `ﬀ` to `ff`), then
/// turns every run of characters outside `[a-z0-9]` into one `_` and strips
/// `_` at the ends. A Unicode letter or digit that does not fold to ASCII
/// is a separator: `écmd`, `cmd１` and `命令cmd` all normalise to `cmd`.
pub fn normalize_key(raw: &str) -> String {
    if raw.is_ascii() {
        return normalize_ascii_key(raw.as_bytes());
    }
    normalize_unicode_key(raw)
}

/// The general path of [`normalize_key`].
fn normalize_unicode_key(raw: &str) -> String {
    let chars: Vec<char> = raw.chars().collect();
    let mut split = String::with_capacity(raw.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            let prev = chars[i - 1];
            let lower_before = prev.is_ascii_lowercase() || prev.is_ascii_digit();
            let upper_run_end =
                prev.is_ascii_uppercase() && chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            if lower_before || upper_run_end {
                split.push('_');
            }
        }
        split.push(c);
    }
    let folded = casefold(&split);
    let mut out = String::with_capacity(folded.len());
    let mut pending_sep = false;
    for c in folded.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if pending_sep && !out.is_empty() {
                out.push('_');
            }
            pending_sep = false;
            out.push(c);
        } else {
            pending_sep = true;
        }
    }
    out
}

/// [`normalize_key`], borrowing the key when it is already normalised
/// (lowercase ASCII letters and digits in `_`-separated runs), as most keys are.
pub(crate) fn normalize_key_cow(raw: &str) -> std::borrow::Cow<'_, str> {
    let bytes = raw.as_bytes();
    let already = !bytes.is_empty()
        && bytes.first() != Some(&b'_')
        && bytes.last() != Some(&b'_')
        && !raw.contains("__")
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_');
    if already {
        std::borrow::Cow::Borrowed(raw)
    } else {
        std::borrow::Cow::Owned(normalize_key(raw))
    }
}

/// The ASCII-only path of [`normalize_key`] (same result, no allocation per char).
fn normalize_ascii_key(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 4);
    let mut pending_sep = false;
    for (i, &b) in bytes.iter().enumerate() {
        if b.is_ascii_alphanumeric() {
            if i > 0 && b.is_ascii_uppercase() {
                let prev = bytes[i - 1];
                let lower_before = prev.is_ascii_lowercase() || prev.is_ascii_digit();
                let upper_run_end = prev.is_ascii_uppercase()
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase);
                if lower_before || upper_run_end {
                    pending_sep = true;
                }
            }
            if pending_sep && !out.is_empty() {
                out.push('_');
            }
            pending_sep = false;
            out.push(char::from(b.to_ascii_lowercase()));
        } else {
            pending_sep = true;
        }
    }
    out
}

/// Normalises a description: case-fold, keep a-z and 0-9, one space between runs.
pub(crate) fn normalize_description(raw: &str) -> String {
    let folded = if raw.is_ascii() {
        raw.to_ascii_lowercase()
    } else {
        casefold(raw)
    };
    let mut out = String::with_capacity(folded.len());
    let mut pending_space = false;
    for c in folded.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.push(c);
        } else {
            pending_space = true;
        }
    }
    out
}

/// True when a description contains an executor phrase as whole words.
pub fn description_signals_execution(description: &str) -> bool {
    if description.is_ascii() {
        return ascii_description_signals_execution(description.as_bytes());
    }
    normalized_description_signals_execution(&normalize_description(description))
}

/// The general path of [`description_signals_execution`], on a normalised
/// description.
fn normalized_description_signals_execution(normalized: &str) -> bool {
    let words: Vec<&str> = normalized.split(' ').filter(|w| !w.is_empty()).collect();
    (0..words.len()).any(|i| {
        phrase_may_start(words[i].as_bytes())
            && EXECUTOR_PHRASES.iter().any(|phrase| {
                let mut rest = words[i..].iter();
                phrase.split(' ').all(|w| rest.next() == Some(&w))
            })
    })
}

/// Only a few words can start a phrase; the rest are skipped cheaply.
fn phrase_may_start(word: &[u8]) -> bool {
    matches!(
        word,
        b"arbitrary"
            | b"run"
            | b"runs"
            | b"execute"
            | b"executes"
            | b"spawn"
            | b"spawns"
            | b"shell"
            | b"command"
    )
}

/// The words of an ASCII description as [`normalize_description`] reads them:
/// runs of ASCII letters and digits (compared case-insensitively).
fn ascii_words(bytes: &[u8]) -> impl Iterator<Item = &[u8]> + Clone {
    bytes
        .split(|b| !b.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
}

/// The ASCII path of [`description_signals_execution`]: the same words,
/// read in place (no normalised copy, no allocation).
fn ascii_description_signals_execution(bytes: &[u8]) -> bool {
    /// Room for the words a phrase can span (the longest phrase has 28 bytes).
    const WINDOW: usize = 48;
    let mut words = ascii_words(bytes);
    loop {
        let rest = words.clone();
        let Some(word) = words.next() else {
            return false;
        };
        // The longest word that starts a phrase has 9 letters.
        let mut lower = [0u8; 9];
        let Some(lower) = lower.get_mut(..word.len()) else {
            continue;
        };
        lower.copy_from_slice(word);
        lower.make_ascii_lowercase();
        if !phrase_may_start(lower) {
            continue;
        }
        // The next words, lowercased, each followed by a space; a word that
        // does not fit ends the window, so no phrase matches past it.
        let mut window = [0u8; WINDOW];
        let mut len = 0;
        for w in rest.take(6) {
            let Some(room) = window.get_mut(len..len + w.len() + 1) else {
                break;
            };
            room[..w.len()].copy_from_slice(w);
            room[w.len()] = b' ';
            len += w.len() + 1;
        }
        let window = &mut window[..len];
        window.make_ascii_lowercase();
        let window: &[u8] = window;
        let found = EXECUTOR_PHRASES.iter().any(|phrase| {
            let p = phrase.as_bytes();
            window.len() > p.len() && window[p.len()] == b' ' && window.starts_with(p)
        });
        if found {
            return true;
        }
    }
}

/// Words that say a tool runs code (the strict policy's signal).
const CODE_VERBS: &[&str] = &[
    "run",
    "runs",
    "running",
    "runner",
    "execute",
    "executes",
    "executing",
    "executor",
    "exec",
    "eval",
    "evaluate",
    "evaluates",
    "evaluating",
    "evaluator",
    "interpret",
    "interprets",
    "interpreting",
    "interpreter",
];

/// What the code is called: code itself and the languages it is written in.
const CODE_OBJECTS: &[&str] = &[
    "code",
    "codes",
    "script",
    "scripts",
    "snippet",
    "snippets",
    "program",
    "programs",
    "source",
    "python",
    "py",
    "python3",
    "javascript",
    "js",
    "node",
    "nodejs",
    "typescript",
    "ts",
    "ruby",
    "perl",
    "php",
    "lua",
    "julia",
    "deno",
    "bun",
    "notebook",
    "cell",
    "cells",
    "jupyter",
    "repl",
];

/// Name tokens that say it on their own.
const CODE_NAME_WORDS: &[&str] = &["eval", "repl", "interpreter", "interpret", "evaluate"];

/// The keys that carry the code to run, after normalisation.
pub(crate) const CODE_CHANNEL_KEYS: &[&str] = &[
    "code",
    "script",
    "source",
    "source_code",
    "program",
    "input",
    "file",
    "file_path",
];

/// True when a tool's name or description says it runs, executes,
/// evaluates or interprets code (the strict policy's signal).
///
/// The name: a verb token (`run`, `execute`, `eval`, `interpret`, ...) and a
/// code token (`code`, `script`, `python`, `js`, ...) among its
/// `_`-separated normalised tokens, or `eval`, `repl` or `interpreter` on
/// their own (`run_python`, `execute_code`, `js_eval`, `python_repl`). The
/// description: a verb word followed within four words by a code word
/// ("Runs Python code in a sandbox", "Evaluate the given JavaScript").
pub fn signals_code_execution(name: &str, description: Option<&str>) -> bool {
    let normalized = normalize_key(name);
    let tokens: Vec<&str> = normalized.split('_').collect();
    let has = |list: &[&str]| tokens.iter().any(|t| list.contains(t));
    if (has(CODE_VERBS) && has(CODE_OBJECTS)) || has(CODE_NAME_WORDS) {
        return true;
    }
    let Some(description) = description else {
        return false;
    };
    let normalized = normalize_description(description);
    let words: Vec<&str> = normalized.split(' ').filter(|w| !w.is_empty()).collect();
    words.iter().enumerate().any(|(i, w)| {
        CODE_VERBS.contains(w)
            && words
                .iter()
                .skip(i + 1)
                .take(4)
                .any(|o| CODE_OBJECTS.contains(o))
    })
}

/// True when a tool name (normalised) is a strong executor name.
pub fn is_strong_executor_name(name: &str) -> bool {
    STRONG_EXECUTOR_NAMES.contains(&normalize_key(name).as_str())
}

/// True for dynamic-but-benign resource identifiers such as `service_id` or `resource_path`.
///
/// Takes a normalised key: `^(?:[a-z0-9]+_)*(?:id|ids|path|paths|uri|url|uuid|slug)$`.
pub fn is_identifier_like_key(normalized: &str) -> bool {
    let mut tokens = normalized.split('_').peekable();
    let mut last = "";
    while let Some(token) = tokens.next() {
        if token.is_empty()
            || !token
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        {
            return false;
        }
        if tokens.peek().is_none() {
            last = token;
        }
    }
    IDENTIFIER_SUFFIXES.contains(&last)
}

/// True when any `_`-separated token of a normalised key names an executor channel.
pub fn is_exec_tainted_key(normalized: &str) -> bool {
    normalized
        .split('_')
        .any(|token| EXEC_TAINTED_TOKENS.contains(&token))
}

/// Category flags of a normalised key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyCategories {
    /// A command key (command, cmd, command_line, shell_command).
    pub command: bool,
    /// A program key (program, executable, binary).
    pub program: bool,
    /// An argument key (args, argv).
    pub argument: bool,
    /// A payload key (script, code, input, text).
    pub payload: bool,
    /// A selector key (shell, interpreter).
    pub selector: bool,
    /// An auxiliary key (cwd, env, timeout, user, ...).
    pub auxiliary: bool,
}

impl KeyCategories {
    /// Categories of a normalised key.
    pub fn of(normalized: &str) -> Self {
        let k = &normalized;
        Self {
            command: COMMAND_KEYS.contains(k),
            program: PROGRAM_KEYS.contains(k),
            argument: ARGUMENT_KEYS.contains(k),
            payload: PAYLOAD_KEYS.contains(k),
            selector: SELECTOR_KEYS.contains(k),
            auxiliary: AUXILIARY_KEYS.contains(k),
        }
    }

    /// True when the key is in any category.
    pub fn any(&self) -> bool {
        self.command
            || self.program
            || self.argument
            || self.payload
            || self.selector
            || self.auxiliary
    }
}

/// Renders a string as a Python `repr()` would.
pub(crate) fn python_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !is_printable(c) => {
                let cp = u32::from(c);
                if cp < 0x100 {
                    out.push_str(&format!("\\x{cp:02x}"));
                } else if cp < 0x10000 {
                    out.push_str(&format!("\\u{cp:04x}"));
                } else {
                    out.push_str(&format!("\\U{cp:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable` for one character (space is printable).
fn is_printable(c: char) -> bool {
    let cp = u32::from(c);
    let idx = NON_PRINTABLE.partition_point(|&(start, _)| start <= cp);
    if idx == 0 {
        return true;
    }
    let (_, end) = NON_PRINTABLE[idx - 1];
    cp > end
}

#[cfg(test)]
mod tests;
