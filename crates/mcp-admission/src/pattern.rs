//! `patternProperties` keys: which categorised key words a pattern may match.
//!
//! With the `regex` feature a pattern is read as Python's `re` reads it
//! (the `python_re` module), translated for a linear-time engine (a Pike VM,
//! no backtracking) and searched in every spelling of every categorised key
//! word; compilation and every search are charged to the work meter.
//! Without the feature nothing is compiled: every pattern is unresolvable.

use crate::engine::Engine;
use crate::node::Node;

/// The categorised key words a pattern may match, or `None` when the pattern
/// cannot be judged exactly (or the `regex` feature is off, or the budget ran out).
#[cfg(not(feature = "regex"))]
pub(crate) fn matching_key_words<'a, N: Node<'a>>(
    engine: &mut Engine<'a, N>,
    _pattern: &str,
) -> Result<Vec<&'static str>, Unmatched> {
    engine.charge_work();
    Err(Unmatched::Unresolvable)
}

/// Why a pattern's key words are not known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unmatched {
    /// It cannot be judged exactly (or the feature is off, or the budget ran out).
    Unresolvable,
    /// Python's `re` raises on it something the original does not catch
    /// (`python_re::Unjudgeable::Raises`): the original refuses
    /// the descriptor.
    Raises,
}

/// The categorised key words a pattern may match, or `None` when the pattern
/// cannot be judged exactly (or the `regex` feature is off, or the budget ran out).
///
/// The work charged is the same however the answer is found: compilation by
/// the pattern's length, then one unit per spelling searched.
#[cfg(feature = "regex")]
pub(crate) fn matching_key_words<'a, N: Node<'a>>(
    engine: &mut Engine<'a, N>,
    pattern: &str,
) -> Result<Vec<&'static str>, Unmatched> {
    // Compilation is linear in the pattern (bounded further by the engine's
    // size limit); charge it by length.
    if !engine.charge_work_n(8 + pattern.len() / 4) {
        return Err(Unmatched::Unresolvable);
    }
    let hits = spelling_hits(pattern)?;
    // One unit per spelling searched (all of them, or until the meter runs
    // out, which is the same state as charging them at once).
    if !engine.charge_work_n(KEY_WORD_SPELLINGS.len()) {
        return Err(Unmatched::Unresolvable);
    }
    let mut words: Vec<&'static str> = Vec::new();
    for (i, (word, _)) in KEY_WORD_SPELLINGS.iter().enumerate() {
        if hits & (1u128 << i) != 0 && !words.contains(word) {
            words.push(word);
        }
    }
    Ok(words)
}

/// Bit `i` set when the pattern matches spelling `i` of [`KEY_WORD_SPELLINGS`];
/// `None` when the pattern cannot be judged exactly. A plain literal is
/// judged without compiling (no state is kept between verdicts, so nothing
/// is cached).
#[cfg(feature = "regex")]
fn spelling_hits(pattern: &str) -> Result<u128, Unmatched> {
    const _: () = assert!(KEY_WORD_SPELLINGS.len() <= 128);
    match literal_hits(pattern) {
        Some(hits) => Ok(hits),
        None => compiled_hits(pattern),
    }
}

/// [`spelling_hits`] by compiling the pattern and searching every spelling.
#[cfg(feature = "regex")]
pub(crate) fn compiled_hits(pattern: &str) -> Result<u128, Unmatched> {
    use crate::python_re::{PythonPattern, Unjudgeable};

    let compiled = PythonPattern::compile(pattern).map_err(|e| match e {
        Unjudgeable::Raises(_) => Unmatched::Raises,
        _ => Unmatched::Unresolvable,
    })?;
    let mut hits = 0u128;
    let mut i = 0;
    compiled.search_all(KEY_WORD_SPELLINGS.iter().map(|(_, s)| *s), |_, hit| {
        hits |= u128::from(hit) << i;
        i += 1;
        true
    });
    Ok(hits)
}

/// [`spelling_hits`] without compiling, for a pattern that is a plain
/// literal (ASCII letters, digits, `_` and `-`), optionally anchored by a
/// leading `^` and a trailing `$`: Python searches it as a substring, a
/// prefix, a suffix or the whole string (no searched spelling holds a line
/// break, so `$` is the end). `None` for any other pattern.
#[cfg(feature = "regex")]
pub(crate) fn literal_hits(pattern: &str) -> Option<u128> {
    let (start, rest) = match pattern.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, pattern),
    };
    let (end, literal) = match rest.strip_suffix('$') {
        Some(literal) => (true, literal),
        None => (false, rest),
    };
    if !literal
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return None;
    }
    let mut hits = 0u128;
    for (i, (_, spelling)) in KEY_WORD_SPELLINGS.iter().enumerate() {
        let hit = match (start, end) {
            (true, true) => *spelling == literal,
            (true, false) => spelling.starts_with(literal),
            (false, true) => spelling.ends_with(literal),
            (false, false) => spelling.contains(literal),
        };
        hits |= u128::from(hit) << i;
    }
    Some(hits)
}

/// Every (key word, spelling) pair searched: each spelling normalises back
/// to its key word (checked by a unit test against [`spellings`]).
#[cfg(feature = "regex")]
const KEY_WORD_SPELLINGS: &[(&str, &str)] = &[
    ("command", "command"),
    ("command", "COMMAND"),
    ("command", "Command"),
    ("command", "_command"),
    ("command", "command_"),
    ("cmd", "cmd"),
    ("cmd", "CMD"),
    ("cmd", "Cmd"),
    ("cmd", "_cmd"),
    ("cmd", "cmd_"),
    ("command_line", "command_line"),
    ("command_line", "COMMAND_LINE"),
    ("command_line", "CommandLine"),
    ("command_line", "_command_line"),
    ("command_line", "command_line_"),
    ("command_line", "commandLine"),
    ("command_line", "command-line"),
    ("command_line", "COMMAND-LINE"),
    ("command_line", "command line"),
    ("command_line", "COMMAND LINE"),
    ("command_line", "command.line"),
    ("command_line", "COMMAND.LINE"),
    ("shell_command", "shell_command"),
    ("shell_command", "SHELL_COMMAND"),
    ("shell_command", "ShellCommand"),
    ("shell_command", "_shell_command"),
    ("shell_command", "shell_command_"),
    ("shell_command", "shellCommand"),
    ("shell_command", "shell-command"),
    ("shell_command", "SHELL-COMMAND"),
    ("shell_command", "shell command"),
    ("shell_command", "SHELL COMMAND"),
    ("shell_command", "shell.command"),
    ("shell_command", "SHELL.COMMAND"),
    ("program", "program"),
    ("program", "PROGRAM"),
    ("program", "Program"),
    ("program", "_program"),
    ("program", "program_"),
    ("executable", "executable"),
    ("executable", "EXECUTABLE"),
    ("executable", "Executable"),
    ("executable", "_executable"),
    ("executable", "executable_"),
    ("binary", "binary"),
    ("binary", "BINARY"),
    ("binary", "Binary"),
    ("binary", "_binary"),
    ("binary", "binary_"),
    ("args", "args"),
    ("args", "ARGS"),
    ("args", "Args"),
    ("args", "_args"),
    ("args", "args_"),
    ("argv", "argv"),
    ("argv", "ARGV"),
    ("argv", "Argv"),
    ("argv", "_argv"),
    ("argv", "argv_"),
    ("script", "script"),
    ("script", "SCRIPT"),
    ("script", "Script"),
    ("script", "_script"),
    ("script", "script_"),
    ("code", "code"),
    ("code", "CODE"),
    ("code", "Code"),
    ("code", "_code"),
    ("code", "code_"),
    ("input", "input"),
    ("input", "INPUT"),
    ("input", "Input"),
    ("input", "_input"),
    ("input", "input_"),
    ("text", "text"),
    ("text", "TEXT"),
    ("text", "Text"),
    ("text", "_text"),
    ("text", "text_"),
    ("shell", "shell"),
    ("shell", "SHELL"),
    ("shell", "Shell"),
    ("shell", "_shell"),
    ("shell", "shell_"),
    ("interpreter", "interpreter"),
    ("interpreter", "INTERPRETER"),
    ("interpreter", "Interpreter"),
    ("interpreter", "_interpreter"),
    ("interpreter", "interpreter_"),
];

/// Every spelling of every categorised key word the gate searches (the
/// original searches the key words themselves; these are a superset).
#[cfg(feature = "regex")]
pub fn spellings_of_key_words() -> Vec<String> {
    KEY_WORD_SPELLINGS
        .iter()
        .map(|(_, s)| (*s).to_owned())
        .collect()
}

/// Spellings of a snake_case key word that normalise back to it (the rule
/// [`KEY_WORD_SPELLINGS`] is written out from).
#[cfg(all(test, feature = "regex"))]
fn spellings(word: &str) -> Vec<String> {
    let tokens: Vec<&str> = word.split('_').collect();
    let title = |t: &str| {
        let mut chars = t.chars();
        chars
            .next()
            .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
            .unwrap_or_default()
    };
    let mut out = vec![
        word.to_owned(),
        word.to_ascii_uppercase(),
        tokens.iter().map(|t| title(t)).collect::<String>(),
        // Separators at the ends are stripped by normalisation.
        format!("_{word}"),
        format!("{word}_"),
    ];
    if tokens.len() > 1 {
        let mut camel = tokens[0].to_owned();
        camel.extend(tokens[1..].iter().map(|t| title(t)));
        out.push(camel);
        for sep in ["-", " ", "."] {
            out.push(tokens.join(sep));
            out.push(tokens.join(sep).to_ascii_uppercase());
        }
    }
    out
}

#[cfg(all(test, feature = "regex"))]
mod tests {
    use super::{KEY_WORD_SPELLINGS, compiled_hits, literal_hits, spellings};
    use crate::normalize::normalize_key;
    use crate::vocabulary::{
        ARGUMENT_KEYS, COMMAND_KEYS, PAYLOAD_KEYS, PROGRAM_KEYS, SELECTOR_KEYS,
    };

    #[test]
    fn the_spelling_table_is_the_rule_written_out() {
        let expected: Vec<(&str, String)> = [
            COMMAND_KEYS,
            PROGRAM_KEYS,
            ARGUMENT_KEYS,
            PAYLOAD_KEYS,
            SELECTOR_KEYS,
        ]
        .iter()
        .flat_map(|g| g.iter())
        .flat_map(|w| spellings(w).into_iter().map(move |s| (*w, s)))
        .collect();
        let table: Vec<(&str, String)> = KEY_WORD_SPELLINGS
            .iter()
            .map(|(w, s)| (*w, (*s).to_owned()))
            .collect();
        assert_eq!(table, expected);
        for (word, spelling) in KEY_WORD_SPELLINGS {
            assert_eq!(normalize_key(spelling), *word, "{spelling}");
        }
    }

    #[test]
    fn literal_patterns_are_judged_as_compiled() {
        let mut patterns: Vec<String> = Vec::new();
        for (_, spelling) in KEY_WORD_SPELLINGS {
            let plain = spelling.replace([' ', '.'], "_");
            for p in [
                plain.clone(),
                plain[1..].to_owned(),
                plain[..plain.len() - 1].to_owned(),
            ] {
                patterns.push(p.clone());
                patterns.push(format!("^{p}"));
                patterns.push(format!("{p}$"));
                patterns.push(format!("^{p}$"));
            }
        }
        patterns.extend(
            [
                "", "^", "$", "^$", "x-", "^x-", "-", "_", "^_", "Cmd", "LINE$", "^a-b$", "9",
            ]
            .map(str::to_owned),
        );
        let mut some_hit = false;
        let mut some_miss = false;
        for p in &patterns {
            let literal = literal_hits(p).expect("a literal pattern");
            assert_eq!(Ok(literal), compiled_hits(p), "{p:?}");
            some_hit |= literal != 0;
            some_miss |= literal != (1u128 << KEY_WORD_SPELLINGS.len()) - 1;
        }
        assert!(some_hit && some_miss);
        for p in [
            "a.b", "^a|b$", "(a)", "[a]", "a*", "a$b", "^^a", "a\\d", "ab$$",
        ] {
            assert_eq!(literal_hits(p), None, "{p:?}");
        }
    }
}
