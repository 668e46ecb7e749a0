//! `patternProperties` keys: which categorised key words a pattern may match.
//!
//! With the `regex` feature a pattern is read as Python's `re` reads it
//! ([`crate::python_re`]), translated for a linear-time engine (a Pike VM,
//! no backtracking) and searched in every spelling of every categorised key
//! word; compilation and every search are charged to the work meter.
//! Without the feature nothing is compiled: every pattern is unresolvable.

use crate::engine::Engine;

/// The categorised key words a pattern may match, or `None` when the pattern
/// cannot be judged exactly (or the `regex` feature is off, or the budget ran out).
#[cfg(not(feature = "regex"))]
pub(crate) fn matching_key_words(
    engine: &mut Engine<'_>,
    _pattern: &str,
) -> Option<Vec<&'static str>> {
    engine.charge_work();
    None
}

/// The categorised key words a pattern may match, or `None` when the pattern
/// cannot be judged exactly (or the `regex` feature is off, or the budget ran out).
#[cfg(feature = "regex")]
pub(crate) fn matching_key_words(
    engine: &mut Engine<'_>,
    pattern: &str,
) -> Option<Vec<&'static str>> {
    use crate::python_re::PythonPattern;

    // Compilation is linear in the pattern (bounded further by the engine's
    // size limit); charge it by length.
    if !engine.charge_work_n(8 + pattern.len() / 4) {
        return None;
    }
    let compiled = PythonPattern::compile(pattern).ok()?;
    let spellings = key_word_spellings();
    let mut hits = Vec::with_capacity(spellings.len());
    let mut out_of_budget = false;
    compiled.search_all(spellings.iter().map(|(_, s)| s.as_str()), |_, hit| {
        if !engine.charge_work() {
            out_of_budget = true;
            return false;
        }
        hits.push(hit);
        true
    });
    if out_of_budget {
        return None;
    }
    let mut words: Vec<&'static str> = Vec::new();
    for ((word, _), hit) in spellings.iter().zip(hits) {
        if hit && !words.contains(word) {
            words.push(word);
        }
    }
    Some(words)
}

/// Every (key word, spelling) pair searched.
#[cfg(feature = "regex")]
fn key_word_spellings() -> Vec<(&'static str, String)> {
    use crate::vocabulary::{
        ARGUMENT_KEYS, COMMAND_KEYS, PAYLOAD_KEYS, PROGRAM_KEYS, SELECTOR_KEYS,
    };
    let groups = [
        COMMAND_KEYS,
        PROGRAM_KEYS,
        ARGUMENT_KEYS,
        PAYLOAD_KEYS,
        SELECTOR_KEYS,
    ];
    groups
        .iter()
        .flat_map(|g| g.iter())
        .flat_map(|word| spellings(word).into_iter().map(move |s| (*word, s)))
        .collect()
}

/// Every spelling of every categorised key word the gate searches (the
/// original searches the key words themselves; these are a superset).
#[cfg(feature = "regex")]
pub fn spellings_of_key_words() -> Vec<String> {
    key_word_spellings().into_iter().map(|(_, s)| s).collect()
}

/// Spellings of a snake_case key word that normalise back to it.
#[cfg(feature = "regex")]
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
