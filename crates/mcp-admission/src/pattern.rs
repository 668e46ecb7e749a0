//! `patternProperties` keys: which categorised key words a pattern may match.
//!
//! With the `regex` feature a pattern is compiled by a linear-time engine
//! (a Pike VM, no backtracking) under NFA size and nesting limits, and every
//! compilation and search is charged to the verdict's node budget. Without
//! the feature nothing is compiled: every pattern is unresolvable.

use crate::engine::Engine;

/// The categorised key words a pattern may match, or `None` when the pattern
/// cannot be compiled (or the `regex` feature is off, or the budget ran out).
#[cfg(not(feature = "regex"))]
pub(crate) fn matching_key_words(
    engine: &mut Engine<'_>,
    _pattern: &str,
) -> Option<Vec<&'static str>> {
    engine.charge_work();
    None
}

/// The categorised key words a pattern may match, or `None` when the pattern
/// cannot be compiled (or the `regex` feature is off, or the budget ran out).
#[cfg(feature = "regex")]
pub(crate) fn matching_key_words(
    engine: &mut Engine<'_>,
    pattern: &str,
) -> Option<Vec<&'static str>> {
    use regex_automata::Input;
    use regex_automata::nfa::thompson::{self, pikevm::PikeVM};
    use regex_automata::util::syntax;

    use crate::vocabulary::{
        ARGUMENT_KEYS, COMMAND_KEYS, PAYLOAD_KEYS, PROGRAM_KEYS, SELECTOR_KEYS,
    };

    // Compilation is linear in the pattern (bounded further by the limits
    // below); charge it by length.
    if !engine.charge_work_n(1 + pattern.len() / 16) {
        return None;
    }
    let vm = PikeVM::builder()
        .syntax(syntax::Config::new().nest_limit(32))
        .thompson(thompson::Config::new().nfa_size_limit(Some(1 << 16)))
        .build(pattern)
        .ok()?;
    let mut cache = vm.create_cache();
    let mut words = Vec::new();
    let groups = [
        COMMAND_KEYS,
        PROGRAM_KEYS,
        ARGUMENT_KEYS,
        PAYLOAD_KEYS,
        SELECTOR_KEYS,
    ];
    for word in groups.iter().flat_map(|g| g.iter()) {
        for spelling in spellings(word) {
            if !engine.charge_work() {
                return None;
            }
            if vm.is_match(&mut cache, Input::new(&spelling)) {
                words.push(*word);
                break;
            }
        }
    }
    Some(words)
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
