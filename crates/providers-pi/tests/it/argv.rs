//! argv, the provider map and the positional prompt.

use providers_core::{AgentRequest, Effort, ForwardedMcp, Provider, apply_forwarded_mcp_servers};
use providers_pi::{Error, PiProvider, pi_thinking, resolve_pi_model};
use serde_json::json;

fn argv_for(model: Option<&str>, provider: Option<&str>, prompt: &str) -> Vec<String> {
    let mut a = AgentRequest::new(prompt);
    a.model = model.map(str::to_owned);
    if let Some(p) = provider {
        a.kwargs.insert("provider".into(), json!(p));
    }
    PiProvider::default().invocation(&a).unwrap().argv
}

#[test]
fn golden_typical_request() {
    let mut a = AgentRequest::new("read README.md and summarise it");
    a.model = Some("claude-sonnet-4-5".into());
    a.effort = Some(Effort::High);
    a.workspace = Some("/repo".into());
    a.resume = Some("/home/u/.pi/sessions/s1.jsonl".into());
    a.kwargs = json!({"tools": ["read", "bash"]})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let inv = PiProvider::default().invocation(&a).unwrap();
    assert_eq!(
        inv.argv,
        [
            "pi",
            "--mode",
            "json",
            "--print",
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-5",
            "--thinking",
            "high",
            "--session",
            "/home/u/.pi/sessions/s1.jsonl",
            "--tools",
            "read,bash",
            "read README.md and summarise it",
        ]
    );
    assert_eq!(inv.cwd.as_deref(), Some(std::path::Path::new("/repo")));
}

#[test]
fn unambiguous_prefixes_map_and_strip() {
    // contract: PRV-085
    assert_eq!(
        resolve_pi_model("gpt-5", None),
        (Some("openai".into()), "gpt-5".into())
    );
    assert_eq!(
        resolve_pi_model("gemini-2.5-flash", None),
        (Some("google".into()), "gemini-2.5-flash".into())
    );
    assert_eq!(
        resolve_pi_model("openrouter/meta-llama/llama-3.3-70b", None),
        (Some("openrouter".into()), "meta-llama/llama-3.3-70b".into())
    );
    let argv = argv_for(Some("openrouter/qwen/qwen3"), None, "p");
    assert!(argv.windows(2).any(|w| w == ["--provider", "openrouter"]));
    assert!(argv.windows(2).any(|w| w == ["--model", "qwen/qwen3"]));
}

#[test]
fn ambiguous_families_are_never_guessed() {
    // contract: PRV-086
    for m in ["llama-3.3-70b", "gemma-3-27b", "mistral-large", "Llama-4"] {
        assert_eq!(resolve_pi_model(m, None), (None, m.to_owned()), "{m}");
        let argv = argv_for(Some(m), None, "p");
        assert!(!argv.contains(&"--provider".to_owned()), "{m}: {argv:?}");
        // An explicit provider is honoured as given.
        let argv = argv_for(Some(m), Some("groq"), "p");
        assert!(argv.windows(2).any(|w| w == ["--provider", "groq"]));
    }
    // Explicit beats the map too.
    assert_eq!(
        resolve_pi_model("gpt-5", Some("azure")),
        (Some("azure".into()), "gpt-5".into())
    );
}

#[test]
fn prompt_is_bare_positional_without_terminator() {
    // contract: PRV-087
    for prompt in ["-v is not a flag", "@README.md please", "plain"] {
        let argv = argv_for(None, None, prompt);
        assert_eq!(argv.last().map(String::as_str), Some(prompt));
        assert!(!argv.contains(&"--".to_owned()), "no terminator: {argv:?}");
    }
}

#[test]
fn effort_maps_to_thinking_levels() {
    assert_eq!(pi_thinking(Effort::None), "off");
    assert_eq!(pi_thinking(Effort::Ultra), "xhigh");
    assert_eq!(pi_thinking(Effort::Minimal), "minimal");
}

#[test]
fn no_early_output_and_typed_errors() {
    // contract: PRV-090
    assert!(!PiProvider::default().streams_first_output_early());
    assert!(matches!(
        PiProvider::default().invocation(&AgentRequest::new(" ")),
        Err(Error::EmptyPrompt)
    ));
    let mut a = AgentRequest::new("p");
    a.kwargs.insert("provder".into(), json!("x"));
    assert!(matches!(
        PiProvider::default().invocation(&a),
        Err(Error::Core(_))
    ));
}

#[test]
fn the_seam_reports_the_thinking_level_pi_gets() {
    let p = PiProvider::default();
    for e in Effort::ALL {
        let level = p
            .clamp_effort(Some("claude-sonnet-4"), e)
            .expect("pi takes effort");
        let expect = if e == Effort::None {
            "off"
        } else {
            level.as_str()
        };
        assert_eq!(pi_thinking(e), expect, "{e}");
        assert!(level <= Effort::XHigh);
    }
}

#[test]
fn pi_is_never_given_an_mcp_set() {
    // contract: PRV-093
    let p = PiProvider::default();
    assert_eq!(p.mcp_forwarding(), None);
    let mut a = AgentRequest::new("p");
    let fwd = ForwardedMcp::default();
    assert!(!apply_forwarded_mcp_servers(&p, &mut a.kwargs, &fwd));
    assert!(a.kwargs.is_empty(), "even an empty set is not applied");
}
