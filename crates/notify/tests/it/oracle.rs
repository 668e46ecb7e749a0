//! Differential check of `notify.on_terminal` resolution against the
//! original (lionagi 0.36.0, used as a black box; the fixture holds its
//! answers), with this crate's documented departures listed.

use notify::{Adapter, Level, resolve_on_terminal, resolve_value};
use serde_json::{Value, json};

/// Where this crate answers differently on purpose, and what it answers.
fn departure(value: &Value) -> Option<(Option<Vec<&'static str>>, Option<&'static str>)> {
    let shell = Some("on_terminal_command_requires_shell_features");
    Some(match value {
        // A shell would expand `$HOME` inside double quotes: refused.
        Value::String(s) if s == "echo \"$HOME\"" => (None, shell),
        // Backslash-escaped metacharacters are literal in a shell too.
        Value::String(s) if s == "echo \\$HOME" => (Some(vec!["echo", "$HOME"]), None),
        Value::String(s) if s == "echo a\\|b" => (Some(vec!["echo", "a|b"]), None),
        // A word starting with `#` begins a comment (POSIX words).
        Value::String(s) if s == "# comment" => (None, Some("on_terminal_command_is_empty")),
        // A non-boolean `enabled` is refused, not read as truthy.
        v if v.get("enabled") == Some(&json!("yes")) => {
            (None, Some("on_terminal_enabled_not_a_boolean"))
        }
        // In-process Python code cannot be loaded here.
        v if v.pointer("/adapter/kind") == Some(&json!("python")) => {
            (None, Some("python_adapter_unsupported"))
        }
        _ => return None,
    })
}

// contract: NTF-012, NTF-014, NTF-016, NTF-017, NTF-018
#[test]
fn resolution_matches_the_original_except_for_documented_departures() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/notify/resolve_oracle.json"
    );
    let fixture: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json");
    let cases = fixture["cases"].as_array().expect("cases");
    assert!(cases.len() > 40);
    let mut departures = 0;
    for case in cases {
        let value = &case["on_terminal"];
        let resolution = if value.is_null() {
            resolve_on_terminal(Some(value), None, None)
        } else {
            resolve_value(value, Level::Global)
        };
        let argv: Option<Vec<String>> = resolution.handler.as_ref().map(|h| match &h.adapter {
            Adapter::Exec(argv) => argv.as_slice().to_vec(),
            _ => unreachable!("only exec adapters exist"),
        });
        let reason = resolution.refusal.map(|r| r.as_str());
        let (want_argv, want_reason): (Option<Vec<String>>, Option<String>) = match departure(value)
        {
            Some((a, r)) => {
                departures += 1;
                (
                    a.map(|a| a.into_iter().map(str::to_owned).collect()),
                    r.map(str::to_owned),
                )
            }
            None => (
                serde_json::from_value(case["argv"].clone()).expect("argv"),
                serde_json::from_value(case["reason"].clone()).expect("reason"),
            ),
        };
        assert_eq!(argv, want_argv, "argv for {value}");
        assert_eq!(reason.map(str::to_owned), want_reason, "reason for {value}");
        if want_argv.is_some() {
            let filter = &resolution.handler.as_ref().expect("handler").filter;
            let kinds: Option<Vec<String>> =
                serde_json::from_value(case["filter_kinds"].clone()).expect("kinds");
            let ids: Option<Vec<String>> =
                serde_json::from_value(case["filter_ids"].clone()).expect("ids");
            assert_eq!(filter.kinds, kinds, "filter kinds for {value}");
            assert_eq!(filter.ids, ids, "filter ids for {value}");
        }
    }
    assert_eq!(departures, 6, "every listed departure is exercised");
}

// contract: NTF-025, NTF-026, NTF-027, NTF-028
#[test]
fn redaction_matches_the_original_except_where_it_left_fragments() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/notify/redact_oracle.json"
    );
    let fixture: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json");
    // Overlapping occurrences: the original replaced one value at a time and
    // left a piece of the other (`zzz` of `XYzzz`); here they merge.
    let departures = [
        ("-abcdXYzzz-", "-***-"),
        ("aaaaa", "***"),
        ("abcabcabc", "***c"),
    ];
    let mut seen = 0;
    for case in fixture["cases"].as_array().expect("cases") {
        let text = case["text"].as_str().expect("text");
        let argv: Vec<String> = serde_json::from_value(case["argv"].clone()).expect("argv");
        let ours = notify::redact_argv_values(text, &argv);
        match departures.iter().find(|(t, _)| *t == text) {
            Some((_, want)) => {
                seen += 1;
                assert_eq!(ours, *want, "{text}");
                assert_ne!(ours, case["redacted"].as_str().expect("redacted"));
            }
            None => assert_eq!(ours, case["redacted"].as_str().expect("redacted"), "{text}"),
        }
    }
    assert_eq!(seen, departures.len());
}
