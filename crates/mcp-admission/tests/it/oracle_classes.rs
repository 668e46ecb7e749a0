//! Issue 23's classes of descriptors the original (lionagi 0.36.0) denies:
//! one regression per class with the original's verdict (each checked
//! against the original), and property tests that generate the class.

use mcp_admission::batch::check_text;
use mcp_admission::{Reason, is_strong_executor_name, normalize_key};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::{check, verdict};

const CMD: Option<&str> = Some("unbounded-command-input");
const DESCRIPTION: Option<&str> = Some("executor-description-with-broad-input");

fn one_key(key: &str, value: Value) -> Value {
    json!({"type": "object", "properties": {key: value}})
}

/// `value` under key `key`, inside `wrap` levels of closed objects.
fn nested_key(wrap: usize, key: &str, value: Value) -> Value {
    let mut s =
        json!({"type": "object", "properties": {key: value}, "additionalProperties": false});
    for _ in 0..wrap {
        s = json!({"type": "object", "properties": {"a": s}, "additionalProperties": false});
    }
    s
}

fn nested_arrays(levels: usize, inner: Value) -> Value {
    (0..levels).fold(inner, |s, _| json!({"type": "array", "items": s}))
}

// Class 1: every character outside [a-z0-9] after case folding separates
// tokens; camelCase splits at ASCII boundaries only.
#[test]
fn non_ascii_characters_beside_key_words_are_separators() {
    for key in [
        "écmd",
        "cmdé",
        "cmd_é",
        "Ωcmd",
        "cmdΩ",
        "cmd１",
        "cmd²",
        "cmd٣",
        "命令cmd",
        "cmdǅ",
        "ǅcmd",
        "éCmd",
        "ÀCmd",
        "ΣCmd",
        "σCmd",
        "٣Cmd",
        "cmdĲ",
        "cmd\u{301}",
    ] {
        check("tool", one_key(key, json!({"type": "string"})), None, CMD);
    }
    // Characters that fold to ASCII letters join the token (the original
    // admits each of these).
    for key in ["ﬀcmd", "ＣＭＤ", "xÉcmd", "İcmd", "cmdK", "KMD", "ſCmd"] {
        check("tool", one_key(key, json!({"type": "string"})), None, None);
    }
    assert_eq!(normalize_key("命令cmd"), "cmd");
    assert_eq!(normalize_key("ﬀcmd"), "ffcmd");
    assert_eq!(normalize_key("İcmd"), "i_cmd");
    // ASCII camelCase boundaries only: `ſ` is not `[a-z]` to the original.
    assert!(is_strong_executor_name("baſH"));
    assert!(is_strong_executor_name("BAſH"));
    assert!(is_strong_executor_name("bashé"));
    assert!(!is_strong_executor_name("éxec"));
    assert!(!is_strong_executor_name("ｂａｓｈ"));
    assert!(!is_strong_executor_name("execKCommand"));
}

/// Letters, digits and marks that case-fold to nothing in `[a-z0-9]`.
fn separator_char() -> impl Strategy<Value = char> {
    prop::sample::select(vec![
        'é', 'É', 'Ω', 'ω', 'Σ', 'σ', 'ς', 'Ж', 'ж', 'ą', 'ǅ', 'Ĳ', '命', '令', 'ア', '１', 'Ａ',
        'ｍ', '²', '³', '¹', '٣', '७', '๓', '\u{301}', '\u{200b}', 'ı', 'À', 'ø', 'Ł', 'ŀ', 'ª',
        'º', 'ⅰ', 'Ⅻ', '①', '𝐜', '𝟙',
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A command key word with non-ASCII separators before, after or
    /// around it is still a command key, in any ASCII case and camelCase.
    #[test]
    fn command_key_words_beside_non_ascii_characters(
        word in prop::sample::select(vec!["cmd", "command", "commandLine", "shell_command", "CommandLine", "CMD"]),
        before in proptest::option::of(separator_char()),
        after in proptest::option::of(separator_char()),
    ) {
        let mut key = String::new();
        key.extend(before);
        key.push_str(word);
        key.extend(after);
        prop_assert_eq!(
            verdict("tool", &one_key(&key, json!({"type": "string"})), None).map(Reason::as_str),
            CMD,
            "key {:?}", key
        );
    }

    /// The same for strong executor names and executor descriptions.
    #[test]
    fn executor_names_and_phrases_beside_non_ascii_characters(
        name in prop::sample::select(vec!["bash", "exec", "run_command", "runCommand", "shellExec", "spawn_process"]),
        c in separator_char(),
        front in any::<bool>(),
    ) {
        let spelled = if front { format!("{c}{name}") } else { format!("{name}{c}") };
        prop_assert!(is_strong_executor_name(&spelled), "{spelled:?}");
        let description = if front { format!("{c}runs shell commands") } else { format!("runs shell commands{c}") };
        prop_assert_eq!(
            verdict("tool", &one_key("q", json!({"type": "string"})), Some(&description)).map(Reason::as_str),
            DESCRIPTION
        );
    }
}

// Class 2: in a comment, a backslash and the next character are one token.
#[test]
fn escapes_inside_pattern_comments_do_not_end_the_comment() {
    for pattern in [
        // `(?#\)(x)` is one comment: the pattern is `cmd`.
        r"(?#\)(x)cmd",
        // An escaped newline does not end a verbose comment: `cmd`.
        "(?x)#\\\nx\ncmd",
        "(?x)#a\\\nb)(\ncmd",
    ] {
        check(
            "tool",
            json!({"type": "object", "patternProperties": {pattern: {"type": "string"}}}),
            None,
            CMD,
        );
    }
}

// Class 6: numbers f64 cannot hold are read, not refused.
#[test]
fn numbers_f64_cannot_hold_are_judged() {
    let big = "9".repeat(400);
    for number in [
        "1e400",
        "-1e400",
        big.as_str(),
        &format!("-{big}"),
        "1.5e99999",
    ] {
        let text = format!(
            "{{\"id\": 1, \"name\": \"tool\", \"inputSchema\": {{\"type\": \"object\", \"maxProperties\": {number}, \"properties\": {{\"cmd\": {{\"type\": \"string\", \"default\": {number}}}}}}}}}\n{{\"id\": 2, \"name\": \"tool\", \"inputSchema\": {{\"type\": \"object\", \"enum\": [{number}]}}}}\n"
        );
        let results = check_text(&text);
        assert_eq!(results.len(), 2, "{number}");
        assert_eq!(results[0].error, None, "{number}");
        assert_eq!(results[0].reason.map(Reason::as_str), CMD, "{number}");
        assert_eq!(results[1].error, None, "{number}");
        assert_eq!(results[1].reason, None, "{number}");
    }
    // Anything else wrong with the record is still reported.
    let results = check_text("{\"name\": \"tool\", \"inputSchema\": {\"x\": 1e400,}}\n");
    assert!(results[0].error.is_some());
}

// Class 7: the depth at which a key's array items are judged, as the
// original counts it.
#[test]
fn array_items_under_a_key_at_the_depth_cap() {
    // Bounded items under a key whose node sits at the cap (the original
    // admits both).
    check(
        "tool",
        nested_key(
            11,
            "cmd",
            json!({"type": "array", "items": {"enum": ["a"]}}),
        ),
        None,
        None,
    );
    check(
        "tool",
        nested_key(11, "cmd", nested_arrays(1, json!({"type": "integer"}))),
        None,
        None,
    );
    check(
        "tool",
        nested_key(
            12,
            "cmd",
            json!({"type": "array", "items": {"enum": ["a"]}}),
        ),
        None,
        None,
    );
    check(
        "tool",
        nested_key(10, "cmd", nested_arrays(2, json!({"enum": ["a"]}))),
        None,
        None,
    );
    // Each nested array counts two levels: the original stops here.
    check(
        "tool",
        nested_key(12, "cmd", nested_arrays(1, json!({"type": "integer"}))),
        None,
        CMD,
    );
    check(
        "tool",
        nested_key(10, "cmd", nested_arrays(2, json!({"type": "integer"}))),
        None,
        CMD,
    );
    check(
        "tool",
        nested_key(0, "cmd", nested_arrays(7, json!({"type": "integer"}))),
        None,
        CMD,
    );
    check(
        "tool",
        nested_key(0, "cmd", nested_arrays(6, json!({"type": "integer"}))),
        None,
        None,
    );
    check(
        "tool",
        nested_key(5, "cmd", nested_arrays(5, json!({"type": "integer"}))),
        None,
        CMD,
    );
    check(
        "tool",
        nested_key(5, "cmd", nested_arrays(4, json!({"type": "integer"}))),
        None,
        None,
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Around the cap: `levels` nested integer arrays under `cmd` at
    /// `wrap` levels are free-form exactly when the innermost items sit past
    /// the cap as the original counts them (the key's items at the key's
    /// depth, two more per nested array), or when the key is not reached.
    #[test]
    fn nested_integer_arrays_around_the_cap(wrap in 0usize..14, levels in 1usize..9) {
        let schema = nested_key(wrap, "cmd", nested_arrays(levels, json!({"type": "integer"})));
        // The key's value depth is wrap + 1; the innermost items at
        // wrap + 1 + 2 * (levels - 1).
        let innermost = wrap + 1 + 2 * (levels - 1);
        let expect = if wrap > 12 { None } else if innermost > 12 { CMD } else { None };
        prop_assert_eq!(verdict("tool", &schema, None).map(Reason::as_str), expect);
    }
}

fn cmd_object() -> Value {
    json!({"type": "object", "properties": {"cmd": {"type": "string"}}})
}

fn closed(props: Value) -> Value {
    json!({"type": "object", "properties": props, "additionalProperties": false})
}

// Class 3: the original skips empty pointer segments and follows no list
// index; RFC 6901 follows both. The gate follows every target either
// reading reaches.
#[test]
fn every_pointer_reading_is_followed() {
    check(
        "tool",
        json!({"$ref": "#/$defs//A", "$defs": {"A": cmd_object()}}),
        None,
        CMD,
    );
    check(
        "tool",
        json!({"$ref": "#//$defs///A/", "$defs": {"A": cmd_object()}}),
        None,
        CMD,
    );
    check(
        "tool",
        json!({"$ref": "#/$defs/", "$defs": {"": cmd_object()}}),
        None,
        CMD,
    );
    // The original does not follow the index (and denies under an executor
    // description); RFC 6901 does, and the gate with it.
    check(
        "tool",
        json!({"$ref": "#/$defs/L/0", "$defs": {"L": [cmd_object()]}}),
        Some("runs shell commands"),
        CMD,
    );
    check(
        "tool",
        json!({"$ref": "#/$defs/L/0", "$defs": {"L": [cmd_object()]}}),
        None,
        CMD,
    );
    // Escapes are read the same way by both.
    check(
        "tool",
        json!({"$ref": "#/$defs/a~01b", "$defs": {"a~1b": cmd_object(), "a/b": closed(json!({}))}}),
        None,
        CMD,
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Empty segments anywhere in a pointer: the target holding a command
    /// key is reached by one reading or the other, so the tool is denied.
    #[test]
    fn empty_pointer_segments_never_hide_a_target(
        empties in prop::collection::vec(0usize..3, 3),
        trailing in 0usize..3,
        where_ref in 0u8..3,
    ) {
        let mut pointer = String::from("#");
        for (segment, n) in ["$defs", "A"].iter().zip(&empties) {
            pointer.push_str(&"/".repeat(n + 1));
            pointer.push_str(segment);
        }
        pointer.push_str(&"/".repeat(trailing));
        let defs = json!({"A": cmd_object(), "": {"A": cmd_object()}});
        let schema = match where_ref {
            0 => json!({"$ref": pointer, "$defs": defs}),
            1 => json!({"type": "object", "properties": {"o": {"$ref": pointer}}, "$defs": defs}),
            _ => json!({"type": "object", "properties": {"cmd": {"$ref": pointer}}, "$defs": defs}),
        };
        prop_assert_eq!(verdict("tool", &schema, None).map(Reason::as_str), CMD, "{}", schema);
    }
}

// Class 4: one target reached at two depths is judged at each.
#[test]
fn a_target_reached_deep_then_shallow_is_walked_shallow() {
    // `p0` (walked first) reaches the target past the cap; `p1` reaches it
    // near the root, where the original sees its command key.
    let schema = json!({
        "type": "object",
        "properties": {"p0": nested_key(11, "a", json!({"$ref": "#/$defs/T"})), "p1": {"$ref": "#/$defs/T"}},
        "$defs": {"T": cmd_object()},
    });
    check("tool", schema, None, CMD);
    // A target bounded near the root is not bounded where the cap cuts it.
    for wrap in [11, 12] {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/T"}, "z": nested_key(wrap, "a", json!({"$ref": "#/$defs/T"}))},
            "additionalProperties": false,
            "$defs": {"T": nested_key(1, "x", json!({"enum": ["a"]}))},
        });
        check(
            "bash",
            schema,
            None,
            Some("executor-identity-with-insufficient-schema"),
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Reaching a target a second time, deeper or shallower, in either
    /// order, gives the verdict of reaching it once at the shallower depth.
    #[test]
    fn a_second_reference_at_another_depth_changes_nothing(
        d1 in 0usize..13,
        d2 in 0usize..13,
        target in prop::sample::select(vec![0u8, 1, 2]),
    ) {
        let target = match target {
            0 => cmd_object(),
            1 => nested_key(2, "cmd", json!({"type": "string"})),
            _ => json!({"type": "object", "properties": {"args": {"type": "array", "items": {"type": "string"}}, "program": {"type": "string"}}}),
        };
        let at = |d: usize| nested_key(d, "r", json!({"$ref": "#/$defs/T"}));
        let both = json!({"type": "object", "properties": {"p0": at(d1), "p1": at(d2)}, "$defs": {"T": target.clone()}});
        let once = json!({"type": "object", "properties": {"p0": at(d1.min(d2))}, "$defs": {"T": target}});
        prop_assert_eq!(verdict("tool", &both, None), verdict("tool", &once, None));
    }
}

// Class 5: branches and re-walked references cost what they cost the
// original, so the budget runs out where the original's does.
#[test]
fn branches_and_repeated_references_are_charged_as_the_original_charges_them() {
    let description = Some("runs shell commands");
    let closed_empty = closed(json!({}));
    check(
        "tool",
        json!({"anyOf": vec![closed_empty.clone(); 2500]}),
        description,
        DESCRIPTION,
    );
    check(
        "tool",
        json!({"anyOf": vec![closed_empty.clone(); 2499]}),
        description,
        None,
    );
    let props = |n: usize, value: &Value| {
        let mut m = serde_json::Map::new();
        for i in 0..n {
            m.insert(format!("q{i}"), value.clone());
        }
        Value::Object(m)
    };
    check(
        "tool",
        closed(props(2500, &closed_empty)),
        description,
        DESCRIPTION,
    );
    check(
        "tool",
        closed(props(2499, &closed_empty)),
        description,
        None,
    );
    let ten = closed(props(10, &json!({"type": "integer"})));
    let refs = |n: usize| {
        let mut s = closed(props(n, &json!({"$ref": "#/$defs/T"})));
        s["$defs"] = json!({"T": ten.clone()});
        s
    };
    check("tool", refs(358), description, DESCRIPTION);
    check("tool", refs(357), description, None);
    check(
        "tool",
        json!({"allOf": vec![json!({"$ref": "#/$defs/T"}); 385], "$defs": {"T": ten.clone()}}),
        description,
        DESCRIPTION,
    );
}

// Found by the differential beside the classes: a branch with no type and
// no pin admits any string to the original, whatever it composes.
#[test]
fn an_untyped_branch_of_a_branch_is_free_form_under_a_key_word() {
    check(
        "tool",
        one_key("cmd", json!({"anyOf": [{"anyOf": [{"enum": ["a"]}]}]})),
        None,
        CMD,
    );
    check(
        "tool",
        one_key("cmd", json!({"anyOf": [{"allOf": [{"type": "integer"}]}]})),
        None,
        CMD,
    );
    let mut schema = one_key("cmd", json!({"$ref": "#/$defs/R"}));
    schema["$defs"] = json!({"R": {"$ref": "#/$defs/E"}, "E": {"enum": ["a"]}});
    check("tool", schema, None, CMD);
    // The key's own value composing a pinned branch stays bounded.
    check(
        "tool",
        one_key("cmd", json!({"anyOf": [{"enum": ["a"]}]})),
        None,
        None,
    );
}

// Found by the differential: a pattern Python's `re` raises on with
// something other than `re.error` makes the original raise (a refusal).
#[cfg(feature = "regex")]
#[test]
fn a_pattern_python_raises_on_is_refused() {
    for pattern in ["a{4294967295}", "(?a)(?u)x"] {
        check(
            "tool",
            json!({"type": "object", "patternProperties": {pattern: {"enum": ["a"]}}, "additionalProperties": false}),
            None,
            Some("malformed-schema"),
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Numbers f64 cannot hold, anywhere in a record's schema: the record
    /// is judged, and gets the verdict of the same record with an ordinary
    /// number of the same kind there (no verdict reads a number's value).
    #[test]
    fn a_number_f64_cannot_hold_is_judged_as_any_number(
        big in prop::sample::select(vec!["1e400", "-1e400", "1E+999", "-2.5e1000"]),
        at in prop::sample::select(vec![
            r#"{"type": "object", "properties": {"cmd": {"type": "string", "default": N}}}"#,
            r#"{"type": "object", "properties": {"q": {"enum": [N, "a"]}}, "additionalProperties": false}"#,
            r#"{"type": "object", "maxProperties": N, "properties": {"args": {"type": "array", "items": {"type": "integer", "maximum": N}}}}"#,
            r#"{"type": "object", "properties": {"x": N}}"#,
            r#"{"type": ["object", N], "properties": {}, "additionalProperties": false}"#,
            r#"{"type": "object", "x-meta": [N, {"n": N}], "properties": {"code": {"type": "string"}}}"#,
        ]),
        name in prop::sample::select(vec!["tool", "bash", "worker"]),
    ) {
        let record = |n: &str| format!(r#"{{"name": "{name}", "inputSchema": {}}}"#, at.replace('N', n)) + "\n";
        let got = check_text(&record(big));
        let want = check_text(&record("1.5"));
        prop_assert_eq!(got.len(), 1);
        prop_assert_eq!(&got[0].error, &None);
        prop_assert_eq!(got[0].reason, want[0].reason);
    }
}
