//! Runtime-only values never render: env as `<env: N variable(s)>`, on_spawn opaque.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cli_supervisor::{BadEnvEntry, ChildEnv, EnvPolicy, Error, Leg, LegSpec, OnSpawn};
use proptest::prelude::*;

#[test]
fn env_renders_as_a_count_in_every_channel() {
    // contract: SUP-040
    let env =
        ChildEnv::try_from_pairs([("API_KEY", "sk-live-123"), ("OTHER", "v")]).expect("valid");
    assert_eq!(format!("{env}"), "<env: 2 variable(s)>");
    assert_eq!(format!("{env:?}"), "<env: 2 variable(s)>");
    assert_eq!(
        serde_json::to_string(&env).expect("json"),
        "\"<env: 2 variable(s)>\""
    );
    let policy = EnvPolicy::Explicit(env);
    let json = serde_json::to_string(&policy).expect("json");
    assert!(
        !json.contains("sk-live") && !json.contains("API_KEY"),
        "{json}"
    );
    assert!(!format!("{policy:?}").contains("sk-live"));
}

/// A supervisor-like receiver whose Debug would print its state.
#[derive(Debug)]
struct Supervisor {
    token: String,
    called: AtomicBool,
}

#[tokio::test]
async fn on_spawn_renders_opaquely_and_a_bound_callback_is_invoked() {
    // contract: SUP-041
    // contract: SUP-042
    let supervisor = Arc::new(Supervisor {
        token: "supervisor-secret-state".to_owned(),
        called: AtomicBool::new(false),
    });
    let mut spec = LegSpec::new([crate::support::fixture(), "lines", "1", "0", "0"]);
    spec.on_spawn = Some(OnSpawn::sync({
        let supervisor = Arc::clone(&supervisor);
        move |_| {
            assert!(!supervisor.token.is_empty());
            supervisor.called.store(true, Ordering::SeqCst);
            Ok(())
        }
    }));
    let rendered = format!("{spec:?}");
    assert!(rendered.contains("<on_spawn>"), "{rendered}");
    assert!(!rendered.contains("supervisor-secret-state"), "{rendered}");
    let leg = Leg::spawn(spec).await.expect("spawn");
    assert!(supervisor.called.load(Ordering::SeqCst));
    leg.end().await.expect("end");
}

#[test]
fn a_non_mapping_env_is_rejected_without_quoting_it() {
    // contract: SUP-043
    for input in [
        r#""sk-secret-string""#,
        "[\"sk-secret-item\"]",
        "12345678",
        "true",
    ] {
        let error = serde_json::from_str::<ChildEnv>(input).expect_err("not a mapping");
        let text = error.to_string();
        assert!(text.contains("must be a mapping"), "{text}");
        assert!(
            !text.contains("sk-secret") && !text.contains("12345678"),
            "{text}"
        );
    }
}

/// A request type defined downstream, with a check the env knows nothing about.
#[derive(Debug, serde::Deserialize)]
struct LaterRequest {
    prompt: String,
    env: ChildEnv,
}

/// A validator added later that quotes the whole request in its error.
fn later_validator(request: &LaterRequest) -> Result<(), String> {
    if request.prompt.is_empty() {
        return Err(format!("empty prompt in {request:?}"));
    }
    Ok(())
}

#[test]
fn env_is_redacted_from_deserialization_on_so_later_validators_cannot_leak_it() {
    // contract: SUP-038
    let request: LaterRequest =
        serde_json::from_str(r#"{"prompt":"","env":{"API_KEY":"sk-entry-secret-9"}}"#)
            .expect("deserializes");
    let error = later_validator(&request).expect_err("empty prompt");
    assert!(error.contains("<env: 1 variable(s)>"), "{error}");
    assert!(
        !error.contains("sk-entry-secret") && !error.contains("API_KEY"),
        "{error}"
    );
    // The value still reaches whoever reads it on purpose.
    assert_eq!(
        request.env.get("API_KEY").and_then(|v| v.to_str()),
        Some("sk-entry-secret-9")
    );
}

#[test]
fn bad_entries_name_string_keys_only_and_never_values() {
    // contract: SUP-044
    // contract: SUP-045
    let input = r#"{"GOOD":"good-value-1","BAD=KEY":"secret-value-2","NUM":12345,"NULLV":null}"#;
    let text = serde_json::from_str::<ChildEnv>(input)
        .expect_err("bad entries")
        .to_string();
    assert!(
        text.contains("\"BAD\"") && text.contains("NUM") && text.contains("NULLV"),
        "{text}"
    );
    for value in ["good-value-1", "secret-value-2", "12345", "KEY"] {
        assert!(!text.contains(value), "{text}");
    }

    let non_utf8 = OsString::from_vec(vec![0xff, 0xfe, b'K']);
    let error = ChildEnv::try_from_pairs([
        (OsString::from("FINE"), OsString::from("v")),
        (non_utf8, OsString::from("secret-value-3")),
        (
            OsString::from("NUL_IN_VALUE"),
            OsString::from("secret\0value-4"),
        ),
    ])
    .expect_err("bad entries");
    let Error::BadEnvEntries { entries } = &error else {
        panic!("unexpected {error:?}")
    };
    assert_eq!(
        entries,
        &vec![
            BadEnvEntry::NonStringKey {
                position: 1,
                kind: "non-utf-8 bytes"
            },
            BadEnvEntry::InvalidValue {
                name: "NUL_IN_VALUE".to_owned()
            },
        ]
    );
    let text = format!("{error} {error:?}");
    assert!(
        text.contains("position 1") && text.contains("NUL_IN_VALUE"),
        "{text}"
    );
    assert!(!text.contains("secret"), "{text}");
}

// contract: SUP-045
#[test]
fn a_name_value_string_given_as_a_name_is_reported_without_its_value() {
    // A whole `NAME=VALUE` string where a name is expected: the error says
    // the name is invalid and never shows the text after `=`, in Display and
    // Debug, whichever way the entry came in.
    let from_pairs = ChildEnv::try_from_pairs([(
        OsString::from("OPENAI_API_KEY=sk-live-abc123"),
        OsString::from("v"),
    )])
    .expect_err("invalid name");
    let from_json = serde_json::from_str::<ChildEnv>(r#"{"TOKEN=sk-json-456\u0000x":"v"}"#)
        .expect_err("invalid name");
    let with_nul =
        ChildEnv::try_from_pairs([(OsString::from("NAME\0sk-nul-789"), OsString::from("v"))])
            .expect_err("invalid name");
    let Error::BadEnvEntries { entries } = &from_pairs else {
        panic!("unexpected {from_pairs:?}")
    };
    assert_eq!(
        entries,
        &vec![BadEnvEntry::InvalidName {
            name: "OPENAI_API_KEY".to_owned(),
            reason: "holds '='",
        }]
    );
    for (error, name, secret) in [
        (from_pairs.to_string(), "OPENAI_API_KEY", "sk-live-abc123"),
        (
            format!("{from_pairs:?}"),
            "OPENAI_API_KEY",
            "sk-live-abc123",
        ),
        (from_json.to_string(), "TOKEN", "sk-json-456"),
        (format!("{with_nul}"), "NAME", "sk-nul-789"),
        (format!("{with_nul:?}"), "NAME", "sk-nul-789"),
    ] {
        assert!(
            error.contains("invalid variable name") || error.contains("InvalidName"),
            "{error}"
        );
        assert!(error.contains(name), "{error}");
        assert!(!error.contains(secret), "{error}");
        assert!(!error.contains("sk-"), "{error}");
    }
}

fn renderings(spec: &LegSpec, env: &ChildEnv, errors: &[Error]) -> Vec<String> {
    let mut out = vec![
        format!("{spec:?}"),
        format!("{env}"),
        format!("{env:?}"),
        serde_json::to_string(env).unwrap_or_default(),
        serde_json::to_string(&spec.env).unwrap_or_default(),
    ];
    for error in errors {
        out.push(error.to_string());
        out.push(format!("{error:?}"));
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            out.push(cause.to_string());
            source = cause.source();
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_secret_values_never_render(secret in "[A-Za-z0-9+/_.:-]{12,48}") {
        // contract: SUP-035
        // contract: SUP-037
        // contract: SUP-040
        let env = ChildEnv::try_from_pairs([("API_KEY", secret.as_str()), ("PATH", "/bin")]).expect("valid");
        let mut spec = LegSpec::new(["/nonexistent/agent-cli", "--flag"]);
        spec.env = EnvPolicy::Explicit(env.clone());
        // Requests that fail for reasons unrelated to env.
        let spawn_error = runtime_spawn_error(spec_clone(&spec, &env));
        let empty_argv = {
            let mut empty = spec_clone(&spec, &env);
            empty.argv.clear();
            runtime_spawn_error(empty)
        };
        // A bad entry next to the secret.
        let bad = ChildEnv::try_from_pairs([("API_KEY", secret.as_str()), ("", "x")]).expect_err("bad");
        let nul = ChildEnv::try_from_pairs([("API_KEY", format!("{secret}\0"))]).expect_err("bad");
        let json_bad = serde_json::from_str::<ChildEnv>(&format!("{{\"API_KEY\": {secret:?}, \"N\": 1}}"))
            .expect_err("bad");
        let json_not_map = serde_json::from_str::<ChildEnv>(&format!("{secret:?}")).expect_err("bad").to_string();
        // Rejections unrelated to env name no variable either, only the placeholder.
        let unrelated = renderings(&spec, &env, &[spawn_error, empty_argv]);
        for rendered in &unrelated {
            prop_assert!(!rendered.contains("API_KEY"), "variable name leaked in {rendered}");
        }
        let mut all = unrelated;
        all.extend(renderings(&spec, &env, &[bad, nul]));
        all.push(json_bad.to_string());
        all.push(json_not_map);
        for rendered in all {
            prop_assert!(!rendered.contains(&secret), "leaked in {rendered}");
        }
    }
}

fn spec_clone(spec: &LegSpec, env: &ChildEnv) -> LegSpec {
    LegSpec {
        argv: spec.argv.clone(),
        env: EnvPolicy::Explicit(env.clone()),
        ..LegSpec::default()
    }
}

fn runtime_spawn_error(spec: LegSpec) -> Error {
    crate::support::runtime()
        .block_on(Leg::spawn(spec))
        .expect_err("spawn fails")
}
