//! argv, names, model resolution, cwd and stdin.

use std::path::PathBuf;

use providers_core::{AgentRequest, Effort, Provider, Stdin};
use providers_gemini::{
    Error, GeminiProvider, ModelSource, resolve_agy_model, resolve_provider_name,
};
use serde_json::json;

fn agent() -> AgentRequest {
    let mut a = AgentRequest::new("explain the loader");
    a.workspace = Some("/repo".into());
    a
}

#[test]
fn golden_typical_request_uses_json_print_mode() {
    // contract: PRV-062
    let mut a = agent();
    a.model = Some("gemini-3-flash".into());
    a.effort = Some(Effort::Medium);
    a.kwargs = json!({"add_dir": ["../shared", "docs"]})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let inv = GeminiProvider::default().invocation(&a).unwrap();
    assert_eq!(
        inv.argv,
        [
            "agy",
            "--output-format",
            "json",
            "--model",
            "Gemini 3 Flash (Medium)",
            "--add-dir",
            "../shared",
            "--add-dir",
            "docs",
            "-p",
            "explain the loader",
        ]
    );
}

#[test]
fn resume_passes_the_conversation_id() {
    // contract: PRV-063
    let mut a = agent();
    a.resume = Some("7c1e9a4b-2f58".into());
    let argv = GeminiProvider::default().invocation(&a).unwrap().argv;
    assert!(
        argv.windows(2)
            .any(|w| w == ["--conversation", "7c1e9a4b-2f58"])
    );
}

#[test]
fn legacy_names_resolve_here() {
    // contract: PRV-064
    for n in [
        "gemini-code",
        "gemini-cli",
        "gemini_cli",
        "Gemini-CLI",
        "agy",
    ] {
        assert_eq!(resolve_provider_name(n).unwrap(), "gemini-code", "{n}");
    }
    assert!(matches!(
        resolve_provider_name("gemini-pro"),
        Err(Error::UnknownName(_))
    ));
    assert_eq!(GeminiProvider::default().name(), "gemini-code");
}

#[test]
fn qualified_model_wins_over_effort() {
    // contract: PRV-065
    for src in [ModelSource::Explicit, ModelSource::Persisted] {
        assert_eq!(
            resolve_agy_model(
                Some(("Gemini 3.1 Pro (Low)", src)),
                Some(Effort::Ultra),
                false
            )
            .as_deref(),
            Some("Gemini 3.1 Pro (Low)")
        );
    }
}

#[test]
fn reapply_effort_replaces_a_persisted_suffix_but_not_a_typed_model() {
    // contract: PRV-066
    assert_eq!(
        resolve_agy_model(
            Some(("Gemini 3.1 Pro (Low)", ModelSource::Persisted)),
            Some(Effort::High),
            true
        )
        .as_deref(),
        Some("Gemini 3.1 Pro (High)")
    );
    assert_eq!(
        resolve_agy_model(
            Some(("Gemini 3.1 Pro (Low)", ModelSource::Explicit)),
            Some(Effort::High),
            true
        )
        .as_deref(),
        Some("Gemini 3.1 Pro (Low)")
    );
    // Through the request kwargs.
    let mut a = agent();
    a.model = Some("Gemini 3 Flash (Low)".into());
    a.effort = Some(Effort::Medium);
    a.kwargs = json!({"model_source": "persisted", "reapply_effort": true})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let argv = GeminiProvider::default().invocation(&a).unwrap().argv;
    assert!(argv.contains(&"Gemini 3 Flash (Medium)".to_owned()));
}

#[test]
fn gemini_31_pro_gets_only_low_or_high_and_no_effort_flag() {
    // contract: PRV-067, PRV-033
    for e in Effort::ALL {
        let m = resolve_agy_model(
            Some(("gemini-3.1-pro", ModelSource::Explicit)),
            Some(e),
            false,
        )
        .unwrap();
        assert!(
            m == "Gemini 3.1 Pro (Low)" || m == "Gemini 3.1 Pro (High)",
            "{e}: {m}"
        );
        let mut a = agent();
        a.model = Some("gemini-3.1-pro".into());
        a.effort = Some(e);
        let argv = GeminiProvider::default().invocation(&a).unwrap().argv;
        assert!(
            !argv
                .iter()
                .any(|x| x.contains("effort") || x.contains("thinking")),
            "{argv:?}"
        );
        assert!(argv.contains(&m));
    }
    // Effort without a model lands on the default family.
    assert_eq!(
        resolve_agy_model(None, Some(Effort::Low), false).as_deref(),
        Some("Gemini 3.1 Pro (Low)")
    );
    assert_eq!(resolve_agy_model(None, None, false), None);
    // Unknown models are passed through, never suffixed by guesswork.
    assert_eq!(
        resolve_agy_model(
            Some(("custom-x", ModelSource::Explicit)),
            Some(Effort::High),
            false
        )
        .as_deref(),
        Some("custom-x")
    );
}

#[test]
fn workspace_is_cwd_and_stdin_is_null() {
    // contract: PRV-069, PRV-070
    let inv = GeminiProvider::default().invocation(&agent()).unwrap();
    assert_eq!(inv.cwd, Some(PathBuf::from("/repo")));
    assert_eq!(inv.stdin, Stdin::Null);
    assert!(!inv.argv.iter().any(|a| a == "-C" || a == "--cwd"));
}

#[test]
fn no_early_output() {
    // contract: PRV-071
    assert!(!GeminiProvider::default().streams_first_output_early());
}

#[test]
fn bad_input_is_typed() {
    let mut a = agent();
    a.kwargs.insert("model_source".into(), json!("guess"));
    assert!(matches!(
        GeminiProvider::default().invocation(&a),
        Err(Error::Core(_))
    ));
    assert!(matches!(
        GeminiProvider::default().invocation(&AgentRequest::new("")),
        Err(Error::EmptyPrompt)
    ));
}
