//! A leg that echoes its environment hands back no secret it was given:
//! its stdout events (parsed or raw) and its stderr tail are redacted at
//! the leg, whichever way the value reached the child.

use cli_supervisor::{
    ChildEnv, EnvPolicy, Event, Leg, LegSpec, LineFormat, REDACTED, Redactor, SettingsFile,
};
use proptest::prelude::*;

use crate::support::{capture_logs, fixture, runtime, script};

/// Everything a leg handed back: its events rendered as text, and its tail.
struct Echo {
    events: Vec<String>,
    tail: String,
    live_tail: String,
}

fn run_leak(spec: LegSpec) -> Echo {
    runtime().block_on(async {
        let mut leg = Leg::spawn(spec).await.expect("spawn");
        let mut events = Vec::new();
        while let Some(event) = leg.next_event().await.expect("event") {
            events.push(match event {
                Event::Json { value, .. } => value.to_string(),
                Event::RawJson { json, .. } => json.to_string(),
                other => format!("{other:?}"),
            });
        }
        // The tail as a caller may read it while the leg still runs.
        let live_tail = String::from_utf8_lossy(&leg.stderr_tail()).into_owned();
        let exit = leg.wait().await.expect("wait");
        assert_eq!(exit.status.code(), Some(3), "the fixture fails");
        Echo {
            events,
            tail: String::from_utf8_lossy(&exit.stderr_tail).into_owned(),
            live_tail,
        }
    })
}

fn json_forms(value: &str) -> [String; 2] {
    let escaped = serde_json::to_string(value).expect("json");
    [value.to_owned(), escaped.trim_matches('"').to_owned()]
}

fn assert_clean(echo: &Echo, secrets: &[&str]) {
    for secret in secrets {
        for form in json_forms(secret) {
            for text in echo.events.iter().chain([&echo.tail, &echo.live_tail]) {
                assert!(!text.contains(&form), "{form:?} leaked in {text:?}");
            }
        }
    }
}

#[test]
fn a_looked_up_secret_echoed_back_is_redacted_everywhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = format!(
        "secrets:\n  lookup:\n    argv: [/bin/sh, {:?}, \"{{name}}\", {:?}]\n    names: [LEAKY_LOOKUP, PRESET_LOOKUP]\n",
        script("secret-store.sh"),
        dir.path().join("calls.log").to_string_lossy(),
    );
    let path = dir.path().join("settings.yaml");
    std::fs::write(&path, yaml).expect("settings");
    let config = SettingsFile::at(path).secret_lookup();
    for format in [LineFormat::Value, LineFormat::Raw] {
        let mut spec = LegSpec::new([fixture(), "leak", "LEAKY_LOOKUP", "PRESET_LOOKUP"]);
        spec.secret_lookup = config.clone();
        spec.line_format = format;
        // Already set: never looked up, but still named as a secret.
        spec.env = EnvPolicy::Explicit(
            ChildEnv::try_from_pairs([("PRESET_LOOKUP", "preset-value-77")]).expect("env"),
        );
        let (echo, logs) = capture_logs(|| run_leak(spec));
        assert_clean(&echo, &["value-of-LEAKY_LOOKUP", "preset-value-77"]);
        assert!(
            !logs.contains("value-of-") && !logs.contains("preset-value"),
            "{logs}"
        );
        // The redaction shows, and the rest of the text survives.
        assert!(
            echo.tail.contains(&format!("LEAKY_LOOKUP={REDACTED}")),
            "{}",
            echo.tail
        );
        assert!(
            echo.events.iter().any(|e| e.contains(REDACTED)),
            "{:?}",
            echo.events
        );
    }
}

#[test]
fn a_registered_value_under_an_innocent_name_is_redacted() {
    let mut spec = LegSpec::new([fixture(), "leak", "PLAIN_SETTING"]);
    spec.env = EnvPolicy::Explicit(
        ChildEnv::try_from_pairs([("PLAIN_SETTING", "forwarded-mcp-value")]).expect("env"),
    );
    spec.redact = Redactor::from_values(["forwarded-mcp-value"]);
    let echo = run_leak(spec);
    assert_clean(&echo, &["forwarded-mcp-value"]);
}

#[test]
fn a_short_or_unnamed_value_is_left_alone() {
    // contract: NTF-028
    let mut spec = LegSpec::new([fixture(), "leak", "COLOR", "API_KEY"]);
    spec.env = EnvPolicy::Explicit(
        ChildEnv::try_from_pairs([("COLOR", "turquoise"), ("API_KEY", "abc")]).expect("env"),
    );
    let echo = run_leak(spec);
    assert!(echo.tail.contains("COLOR=turquoise"), "{}", echo.tail);
    assert!(echo.tail.contains("API_KEY=abc"), "{}", echo.tail);
}

fn secret_value() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            8 => proptest::char::range('!', '~'),
            1 => Just('"'),
            1 => Just('\\'),
            1 => Just('ü'),
            1 => Just(' '),
        ],
        4..40,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

fn secret_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("OPENAI_API_KEY".to_owned()),
        Just("GITHUB_TOKEN".to_owned()),
        Just("DB_PASSWORD".to_owned()),
        Just("AWS_SECRET_ACCESS_KEY".to_owned()),
        "[A-Z]{2,6}_(KEY|TOKEN|SECRET)".prop_map(|s| s),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Any secret-named variable of any value, echoed on stdout (raw, as a
    /// JSON string, inside escaped JSON) and stderr, comes back redacted.
    #[test]
    fn no_secret_named_value_comes_back(
        pairs in proptest::collection::btree_map(secret_name(), secret_value(), 1..4),
        raw in any::<bool>(),
    ) {
        let names: Vec<&str> = pairs.keys().map(String::as_str).collect();
        let mut argv = vec![fixture(), "leak"];
        argv.extend(names.iter().copied());
        let mut spec = LegSpec::new(argv);
        spec.line_format = if raw { LineFormat::Raw } else { LineFormat::Value };
        spec.env = EnvPolicy::Explicit(
            ChildEnv::try_from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .expect("env"),
        );
        let echo = run_leak(spec);
        let secrets: Vec<&str> = pairs.values().map(String::as_str).collect();
        assert_clean(&echo, &secrets);
        prop_assert!(!echo.events.is_empty());
    }
}
