//! `notify.on_terminal` resolution: forms, precedence, shell refusal,
//! filters.

use std::sync::Arc;
use std::time::Duration;

use notify::{
    Adapter, Level, Refusal, Registry, Resolution, on_terminal_in,
    register_settings_terminal_callback, resolve_on_terminal, resolve_value,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::common::{envelope, multi_thread};

fn argv_of(resolution: &Resolution) -> Option<Vec<String>> {
    resolution.handler.as_ref().map(|h| match &h.adapter {
        Adapter::Exec(argv) => argv.as_slice().to_vec(),
        _ => unreachable!("only exec adapters exist"),
    })
}

fn global(value: Value) -> Resolution {
    resolve_value(&value, Level::Global)
}

fn check(value: Value, expect: Result<&[&str], Refusal>) {
    let resolution = global(value.clone());
    match expect {
        Ok(words) => {
            assert_eq!(
                argv_of(&resolution).as_deref(),
                Some(&words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>()[..]),
                "{value}"
            );
            assert!(resolution.refusal.is_none() && resolution.warning.is_none());
        }
        Err(refusal) => {
            assert!(resolution.is_disabled(), "{value} must be disabled");
            assert_eq!(resolution.refusal, Some(refusal), "{value}");
            let warning = resolution.warning.as_deref().expect("a migration warning");
            assert!(warning.contains("resolving to disabled"), "{warning}");
        }
    }
}

// contract: NTF-012
#[test]
fn string_and_mapping_forms_resolve_to_a_handler_or_disabled() {
    check(
        json!("notify-send 'run done'"),
        Ok(&["notify-send", "run done"]),
    );
    check(
        json!({"enabled": true, "adapter": {"kind": "exec", "argv": ["/usr/bin/curl", "-d", "@-", "https://h/x"]}}),
        Ok(&["/usr/bin/curl", "-d", "@-", "https://h/x"]),
    );
    let with_filter = global(json!({
        "adapter": {"kind": "exec", "argv": ["hook"]},
        "filter": {"kinds": ["session"], "ids": ["s1", "s2"]}
    }));
    let handler = with_filter.handler.expect("handler");
    assert_eq!(
        handler.filter.kinds.as_deref(),
        Some(&["session".to_owned()][..])
    );
    assert_eq!(handler.filter.ids.as_ref().map(Vec::len), Some(2));
    check(json!(42), Err(Refusal::NotStringOrMapping));
    check(json!(["a", "b"]), Err(Refusal::NotStringOrMapping));
    check(
        json!({"adapter": {"kind": "webhook"}}),
        Err(Refusal::AdapterKindUnsupported),
    );
    check(
        json!({"adapter": {"kind": "python", "ref": "m:f"}}),
        Err(Refusal::PythonAdapterUnsupported),
    );
    check(
        json!({"enabled": true}),
        Err(Refusal::EnabledWithoutAdapter),
    );
    check(
        json!({"adapter": "exec"}),
        Err(Refusal::AdapterKindUnsupported),
    );
    check(
        json!({"adapter": {"kind": "exec", "argv": "x y"}}),
        Err(Refusal::ArgvNotListOfStrings),
    );
    check(
        json!({"adapter": {"kind": "exec", "argv": ["x", 1]}}),
        Err(Refusal::ArgvNotListOfStrings),
    );
    check(
        json!({"enabled": "yes", "adapter": {"kind": "exec", "argv": ["x"]}}),
        Err(Refusal::EnabledNotBoolean),
    );
    check(
        json!({"adapter": {"kind": "exec", "argv": ["x"]}, "filter": {"kinds": "session"}}),
        Err(Refusal::FilterKindsInvalid),
    );
    check(
        json!({"adapter": {"kind": "exec", "argv": ["x"]}, "filter": {"ids": []}}),
        Err(Refusal::FilterIdsInvalid),
    );
}

// contract: NTF-013
#[test]
fn the_highest_level_that_configures_on_terminal_decides() {
    let run = json!("run-hook");
    let project = json!({"notify": {"on_terminal": "project-hook"}});
    let user = json!({"notify": {"on_terminal": "global-hook"}});
    let empty = json!({"notify": {}});
    let words = |r: Resolution| argv_of(&r).map(|a| a[0].clone());
    let p = on_terminal_in(&project);
    let g = on_terminal_in(&user);
    assert_eq!(
        words(resolve_on_terminal(Some(&run), p, g)).as_deref(),
        Some("run-hook")
    );
    assert_eq!(
        words(resolve_on_terminal(None, p, g)).as_deref(),
        Some("project-hook")
    );
    assert_eq!(
        words(resolve_on_terminal(None, on_terminal_in(&empty), g)).as_deref(),
        Some("global-hook")
    );
    assert_eq!(
        words(resolve_on_terminal(None, None, g)).as_deref(),
        Some("global-hook")
    );
    assert_eq!(resolve_on_terminal(None, None, None), Resolution::default());
    assert_eq!(
        resolve_on_terminal(Some(&run), p, g).level,
        Some(Level::PerRun)
    );
    assert_eq!(resolve_on_terminal(None, p, g).level, Some(Level::Project));
    // A refused higher level decides too: it does not fall through.
    let bad = json!("a | b");
    let r = resolve_on_terminal(Some(&bad), p, g);
    assert!(r.is_disabled());
    assert_eq!(r.refusal, Some(Refusal::RequiresShellFeatures));
    // A null counts as not set and falls through.
    assert_eq!(
        words(resolve_on_terminal(Some(&Value::Null), p, g)).as_deref(),
        Some("project-hook")
    );
}

// contract: NTF-014
#[test]
fn a_missing_key_and_enabled_false_are_both_disabled() {
    let missing = resolve_on_terminal(
        None,
        on_terminal_in(&json!({"notify": {}})),
        on_terminal_in(&json!({})),
    );
    assert!(missing.is_disabled());
    assert_eq!(missing.refusal, None);
    assert_eq!(missing.warning, None);
    let off = json!({"enabled": false, "adapter": {"kind": "exec", "argv": ["hook"]}});
    let global = json!({"notify": {"on_terminal": "global-hook"}});
    let r = resolve_on_terminal(Some(&off), None, on_terminal_in(&global));
    assert!(
        r.is_disabled(),
        "an explicit enabled: false masks lower levels"
    );
    assert_eq!(r.refusal, None);
    assert_eq!(r.warning, None);
    assert_eq!(r.level, Some(Level::PerRun));
}

// contract: NTF-015
#[test]
fn a_command_string_is_split_into_words_and_run_without_a_shell() {
    check(
        json!(r#"hook "a b" 'c d' e\ f"#),
        Ok(&["hook", "a b", "c d", "e f"]),
    );
    check(
        json!(r#"hook 'a|b' "c;d" 'x>y' '$HOME'"#),
        Ok(&["hook", "a|b", "c;d", "x>y", "$HOME"]),
    );
    // Executed directly: the metacharacters reach the program verbatim and
    // no redirection happens.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("argv.txt");
    let command = format!(
        r#"/bin/sh -c 'printf "%s\n" "$@" > "$0"' {} 'a|b' "c;d" 'x>y' '$HOME'"#,
        out.display()
    );
    let resolution = global(json!(command));
    let registry = Arc::new(Registry::new(Duration::from_secs(10)));
    assert!(register_settings_terminal_callback(&registry, &resolution));
    let runtime = multi_thread();
    let report = runtime.block_on(registry.emit(&envelope("session", "s1")));
    assert_eq!(report.succeeded.len(), 1, "{report:?}");
    let written = std::fs::read_to_string(&out).expect("the adapter wrote its argv");
    assert_eq!(written, "a|b\nc;d\nx>y\n$HOME\n");
    assert!(!dir.path().join("y").exists() && !std::path::Path::new("y").exists());

    // The mapping form's argv, unquoted metacharacters included, reaches
    // the program element by element: a shell given these words would run
    // the `touch` in each of them.
    let marker = dir.path().join("M");
    let m = marker.display().to_string();
    let out = dir.path().join("argv2.txt");
    let words = [
        format!("a;touch {m}"),
        format!("$(touch {m})"),
        format!("`touch {m}`"),
        format!("x && touch {m}"),
    ];
    let mut argv = vec![
        json!("/bin/sh"),
        json!("-c"),
        json!(r#"printf "%s\n" "$@" > "$0""#),
        json!(out.display().to_string()),
    ];
    argv.extend(words.iter().map(|w| json!(w)));
    let resolution = global(json!({"adapter": {"kind": "exec", "argv": argv}}));
    let registry = Arc::new(Registry::new(Duration::from_secs(10)));
    assert!(register_settings_terminal_callback(&registry, &resolution));
    let report = runtime.block_on(registry.emit(&envelope("session", "s2")));
    assert_eq!(report.succeeded.len(), 1, "{report:?}");
    let written = std::fs::read_to_string(&out).expect("the adapter wrote its argv");
    assert_eq!(written, words.map(|w| w + "\n").concat());
    assert!(!marker.exists(), "a word reached a shell");
}

// contract: NTF-016
#[test]
fn strings_needing_shell_features_are_refused_and_never_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("ran");
    let m = marker.display();
    for command in [
        format!("touch {m} | cat"),
        format!("touch {m} > /dev/null"),
        format!("touch {m} < /dev/null"),
        format!("touch {m} && true"),
        format!("false || touch {m}"),
        format!("touch {m}; true"),
        format!("touch $HOME{m}"),
        format!("touch \"${{X}}{m}\""),
        format!("touch `echo {m}`"),
        format!("touch {m} &"),
    ] {
        let resolution = global(json!(command));
        assert!(resolution.is_disabled(), "{command}");
        assert_eq!(
            resolution.refusal,
            Some(Refusal::RequiresShellFeatures),
            "{command}"
        );
        assert!(
            resolution
                .warning
                .as_deref()
                .is_some_and(|w| w.contains("shell"))
        );
        let registry = Registry::default();
        assert!(!register_settings_terminal_callback(&registry, &resolution));
        let report = multi_thread().block_on(registry.emit(&envelope("session", "s1")));
        assert!(report.fired.is_empty());
    }
    assert!(!marker.exists(), "no refused command ran");
    // Escaped or single-quoted metacharacters are literal, not features.
    assert!(!notify::needs_shell(r"hook a\|b 'c&&d' \$HOME"));
    assert!(notify::needs_shell("hook \"$HOME\""));
}

// contract: NTF-017
#[test]
fn an_unsplittable_string_is_disabled_with_a_warning() {
    check(json!(r#"hook "unbalanced"#), Err(Refusal::NotParseable));
    check(json!("hook 'open"), Err(Refusal::NotParseable));
    check(json!("hook trailing\\"), Err(Refusal::NotParseable));
}

// contract: NTF-018
#[test]
fn an_empty_argv_is_disabled() {
    check(json!(""), Err(Refusal::EmptyCommand));
    check(json!("   \t "), Err(Refusal::EmptyCommand));
    check(json!("# only a comment"), Err(Refusal::EmptyCommand));
    check(
        json!({"adapter": {"kind": "exec", "argv": []}}),
        Err(Refusal::EmptyCommand),
    );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[ -~]{0,12}".prop_map(Value::String),
        prop_oneof![Just("exec"), Just("python"), Just("enabled"), Just("argv")]
            .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("enabled".to_owned()),
                    Just("adapter".to_owned()),
                    Just("kind".to_owned()),
                    Just("argv".to_owned()),
                    Just("filter".to_owned()),
                    Just("kinds".to_owned()),
                    Just("ids".to_owned()),
                    "[a-z]{1,5}"
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    // contract: NTF-019
    #[test]
    fn resolution_never_fails_whatever_the_settings(a in arb_json(), b in arb_json(), c in arb_json()) {
        // Total: every value resolves to a handler, a benign disabled or a
        // refusal (with its warning); never a panic or an error the run
        // would have to handle.
        let r = resolve_on_terminal(Some(&a), Some(&b), Some(&c));
        prop_assert_eq!(r.refusal.is_some(), r.warning.is_some());
        prop_assert!(!(r.handler.is_some() && r.refusal.is_some()));
        if let Some(h) = &r.handler {
            let Adapter::Exec(argv) = &h.adapter else { unreachable!() };
            prop_assert!(!argv.as_slice().is_empty());
        }
    }
}

// contract: NTF-020
#[test]
fn the_filter_limits_which_envelopes_invoke_the_adapter() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("fired.log");
    let resolution = global(json!({
        "adapter": {"kind": "exec", "argv": ["/bin/sh", "-c", "grep -o '\"id\":\"[^\"]*\"' >> \"$0\"", log]},
        "filter": {"kinds": ["session", "play"], "ids": ["s1", "p1"]}
    }));
    let registry = Registry::new(Duration::from_secs(10));
    assert!(register_settings_terminal_callback(&registry, &resolution));
    let runtime = multi_thread();
    for (kind, id) in [
        ("session", "s1"),
        ("session", "s2"),
        ("invocation", "s1"),
        ("play", "p1"),
    ] {
        runtime.block_on(registry.emit(&envelope(kind, id)));
    }
    let fired = std::fs::read_to_string(&log).expect("fired at least once");
    assert_eq!(fired, "\"id\":\"s1\"\n\"id\":\"p1\"\n");
}

proptest! {
    // contract: NTF-015, NTF-016
    #[test]
    fn quoted_words_round_trip_and_unquoted_operators_are_refused(
        words in prop::collection::vec("[ -~]{1,8}", 1..5),
        operator in prop_oneof![Just("|"), Just("&&"), Just(";"), Just(">"), Just("<"), Just("$X"), Just("`id`")],
    ) {
        // Any printable words, shell-quoted: never a shell feature, and the
        // split gives exactly the words back (metacharacters included).
        let quoted: Vec<String> = words
            .iter()
            .map(|w| shlex::try_quote(w).expect("no NUL").into_owned())
            .collect();
        let command = quoted.join(" ");
        prop_assert!(!notify::needs_shell(&command), "{command}");
        prop_assert_eq!(argv_of(&global(json!(command))), Some(words.clone()));
        // The same words with an unquoted operator between them: refused.
        let with_operator = format!("{} {operator} {}", quoted[0], quoted[1..].join(" "));
        let resolution = global(json!(with_operator));
        prop_assert_eq!(resolution.refusal, Some(Refusal::RequiresShellFeatures));
    }
}
