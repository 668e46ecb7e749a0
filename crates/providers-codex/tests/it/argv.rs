//! Golden argv, the -C rule, effort clamps and MCP forwarding.

use providers_codex::{CodexProvider, CodexRequest, Error, MCP_EXCLUSIVE_KEY, MCP_PROFILE};
use providers_core::{AgentRequest, Effort, ForwardedMcp, Provider, apply_forwarded_mcp_servers};
use serde_json::json;

fn agent(prompt: &str) -> AgentRequest {
    let mut a = AgentRequest::new(prompt);
    a.workspace = Some("repo".into());
    a
}

#[test]
fn golden_typical_request() {
    let mut a = agent("fix issue 42");
    a.model = Some("gpt-5.6-luna".into());
    a.effort = Some(Effort::Ultra);
    a.kwargs =
        json!({"sandbox": "workspace-write", "skip_git_repo_check": true, "add_dir": ["/data"]})
            .as_object()
            .cloned()
            .unwrap_or_default();
    let inv = CodexProvider::default().invocation(&a).unwrap();
    assert_eq!(
        inv.argv,
        [
            "codex",
            "exec",
            "--json",
            "--model",
            "gpt-5.6-luna",
            "--sandbox",
            "workspace-write",
            "--skip-git-repo-check",
            "--add-dir",
            "/data",
            "-c",
            "model_reasoning_effort=\"max\"",
            "-C",
            "repo",
            "--",
            "fix issue 42",
        ]
    );
    assert!(inv.files.is_empty());
    assert!(CodexProvider::default().streams_first_output_early());
}

#[test]
fn workspace_goes_only_to_dash_c_never_cwd() {
    // contract: PRV-079
    let inv = CodexProvider::default().invocation(&agent("p")).unwrap();
    assert_eq!(inv.cwd, None);
    let i = inv.argv.iter().position(|a| a == "-C").expect("-C present");
    assert_eq!(inv.argv[i + 1], "repo");
}

#[test]
fn resume_uses_the_exec_resume_subcommand() {
    let mut a = agent("continue");
    a.resume = Some("019a4c2e-7d31".into());
    let argv = CodexProvider::default().invocation(&a).unwrap().argv;
    assert_eq!(
        &argv[argv.len() - 4..],
        ["resume", "019a4c2e-7d31", "--", "continue"]
    );
    a.resume = Some("--last".into());
    assert!(matches!(
        CodexProvider::default().invocation(&a),
        Err(Error::BadResumeId)
    ));
}

#[test]
fn effort_is_clamped_by_model_in_argv() {
    // contract: PRV-031, PRV-032
    let cases = [
        ("gpt-5.6-sol", Effort::Ultra, "ultra"),
        ("gpt-5.6-terra", Effort::Max, "max"),
        ("gpt-5.6-luna", Effort::Ultra, "max"),
        ("gpt-5.1-codex", Effort::Ultra, "xhigh"),
        ("gpt-9-future", Effort::Ultra, "ultra"),
    ];
    for (model, effort, expect) in cases {
        let r = CodexRequest {
            prompt: "p".into(),
            model: Some(model.into()),
            effort: Some(effort),
            ..Default::default()
        };
        let argv = CodexProvider::default().invocation_for(&r).unwrap().argv;
        assert!(
            argv.contains(&format!("model_reasoning_effort=\"{expect}\"")),
            "{model}: {argv:?}"
        );
    }
}

fn forwarded(exclusive: bool) -> ForwardedMcp {
    ForwardedMcp {
        servers: json!({
            "github": {"command": "npx", "args": ["-y", "gh-mcp"], "env": {"GITHUB_TOKEN": "ghp_TOPSECRET"}},
            "docs": {"url": "https://mcp.example", "http_headers": {"Authorization": "Bearer HDRSECRET"}}
        })
        .as_object()
        .cloned()
        .unwrap_or_default(),
        exclusive,
    }
}

#[test]
fn mcp_env_and_headers_go_to_an_owner_only_profile_never_argv() {
    // contract: PRV-094
    let dir = tempfile::tempdir().unwrap();
    let mut a = agent("p");
    assert!(apply_forwarded_mcp_servers(
        &CodexProvider::default(),
        &mut a.kwargs,
        &forwarded(false)
    ));
    a.kwargs.insert(
        "mcp_profile_dir".into(),
        json!(dir.path().to_string_lossy()),
    );
    let inv = CodexProvider::default().invocation(&a).unwrap();
    let joined = inv.argv.join(" ");
    assert!(
        !joined.contains("TOPSECRET") && !joined.contains("HDRSECRET"),
        "{joined}"
    );
    assert!(!format!("{inv:?}").contains("SECRET"));
    assert!(
        inv.argv
            .contains(&r#"mcp_servers.github.command="npx""#.to_owned())
    );
    assert!(
        inv.argv
            .contains(&r#"mcp_servers.docs.url="https://mcp.example""#.to_owned())
    );
    let i = inv
        .argv
        .iter()
        .position(|a| a == "--profile")
        .expect("--profile");
    let profile = &inv.argv[i + 1];
    assert!(profile.starts_with(&format!("{MCP_PROFILE}-")), "{profile}");
    assert_eq!(inv.files.len(), 1);
    // Codex 0.171 reads `--profile NAME` from `$CODEX_HOME/NAME.config.toml`,
    // with top-level server tables, and the child's home is pinned there.
    assert_eq!(
        inv.files[0].path,
        dir.path().join(format!("{profile}.config.toml"))
    );
    assert_eq!(
        inv.env.get("CODEX_HOME").map(String::as_str),
        Some(&*dir.path().to_string_lossy())
    );
    inv.files[0].write_owner_only().unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&inv.files[0].path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
    }
    let written = std::fs::read_to_string(&inv.files[0].path).unwrap();
    assert!(written.contains("[mcp_servers.github.env]\nGITHUB_TOKEN = \"ghp_TOPSECRET\""));
    assert!(!written.contains("[profiles."), "{written}");
    assert!(written.contains("Authorization = \"Bearer HDRSECRET\""));

    // Without a directory for the profile, refused rather than leaked.
    a.kwargs.remove("mcp_profile_dir");
    assert!(matches!(
        CodexProvider::default().invocation(&a),
        Err(Error::NoProfileDir)
    ));
}

#[test]
fn request_renderings_redact_mcp_env_and_headers() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = agent("p");
    apply_forwarded_mcp_servers(&CodexProvider::default(), &mut a.kwargs, &forwarded(false));
    a.kwargs.insert(
        "mcp_profile_dir".into(),
        json!(dir.path().to_string_lossy()),
    );
    let req = CodexRequest::from_agent_request(&a).unwrap();
    let dump = serde_json::to_value(&req).unwrap();
    assert_eq!(
        dump["mcp_servers"]["github"]["env"],
        json!({"GITHUB_TOKEN": "<redacted>"})
    );
    assert_eq!(
        dump["mcp_servers"]["docs"]["http_headers"],
        json!({"Authorization": "<redacted>"})
    );
    for text in [format!("{req:?}"), format!("{req:#?}"), dump.to_string()] {
        assert!(!text.contains("SECRET"), "{text}");
        assert!(
            text.contains("GITHUB_TOKEN") && text.contains("npx"),
            "{text}"
        );
    }
}

#[test]
fn exclusive_disables_every_other_configured_server() {
    // contract: PRV-095
    let dir = tempfile::tempdir().unwrap();
    let mut a = agent("p");
    assert!(apply_forwarded_mcp_servers(
        &CodexProvider::default(),
        &mut a.kwargs,
        &forwarded(true)
    ));
    assert_eq!(a.kwargs.get(MCP_EXCLUSIVE_KEY), Some(&json!(true)));
    a.kwargs.insert(
        "mcp_profile_dir".into(),
        json!(dir.path().to_string_lossy()),
    );
    a.kwargs.insert(
        "configured_mcp_servers".into(),
        json!(["github", "jira", "sentry"]),
    );
    let argv = CodexProvider::default().invocation(&a).unwrap().argv;
    assert!(argv.contains(&"mcp_servers.jira.enabled=false".to_owned()));
    assert!(argv.contains(&"mcp_servers.sentry.enabled=false".to_owned()));
    assert!(!argv.contains(&"mcp_servers.github.enabled=false".to_owned()));

    // An empty exclusive set still disables everything configured.
    let mut a = agent("p");
    apply_forwarded_mcp_servers(
        &CodexProvider::default(),
        &mut a.kwargs,
        &ForwardedMcp {
            exclusive: true,
            ..Default::default()
        },
    );
    a.kwargs
        .insert("configured_mcp_servers".into(), json!(["jira"]));
    let argv = CodexProvider::default().invocation(&a).unwrap().argv;
    assert!(argv.contains(&"mcp_servers.jira.enabled=false".to_owned()));
}

#[test]
fn unknown_kwargs_are_refused() {
    let mut a = agent("p");
    a.kwargs.insert("sandbox_mode".into(), json!("x"));
    assert!(matches!(
        CodexProvider::default().invocation(&a),
        Err(Error::Core(_))
    ));
    assert!(matches!(
        CodexProvider::default().invocation(&agent(" ")),
        Err(Error::EmptyPrompt)
    ));
}

#[test]
fn full_auto_is_refused_as_a_removed_flag() {
    // codex 0.171: "unexpected argument '--full-auto' found".
    let mut a = agent("p");
    a.kwargs.insert("full_auto".into(), json!(true));
    let err = CodexProvider::default().invocation(&a).unwrap_err();
    assert!(
        matches!(
            err,
            Error::RemovedFlag {
                flag: "--full-auto",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("workspace-write"), "{err}");
    a.kwargs.insert("full_auto".into(), json!(false));
    let argv = CodexProvider::default().invocation(&a).unwrap().argv;
    assert!(!argv.iter().any(|x| x.contains("full-auto")), "{argv:?}");
}

#[test]
fn images_never_swallow_the_resume_subcommand() {
    // codex's `-i/--image FILE...` reads every following non-flag as
    // another image: `--image a.png resume ID` would lose the resume.
    let mut a = agent("look");
    a.workspace = None;
    a.resume = Some("0199-abc".into());
    a.kwargs = json!({"images": ["a.png", "b.png"]})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let argv = CodexProvider::default().invocation(&a).unwrap().argv;
    assert_eq!(
        argv,
        [
            "codex",
            "exec",
            "--json",
            "--image=a.png",
            "--image=b.png",
            "resume",
            "0199-abc",
            "--",
            "look"
        ]
    );
    assert!(!argv.contains(&"--image".to_owned()));
}

#[test]
fn a_profile_outside_the_childs_codex_home_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = agent("p");
    apply_forwarded_mcp_servers(&CodexProvider::default(), &mut a.kwargs, &forwarded(false));
    a.kwargs.insert(
        "mcp_profile_dir".into(),
        json!(dir.path().to_string_lossy()),
    );
    let mut req = CodexRequest::from_agent_request(&a).unwrap();
    req.env = Some(
        providers_core::ChildEnv::try_from_pairs([("CODEX_HOME", "/elsewhere")]).expect("valid"),
    );
    let err = CodexProvider::default().invocation_for(&req).unwrap_err();
    assert!(matches!(err, Error::ProfileDirNotCodexHome { .. }), "{err}");
    assert!(!format!("{err} {err:?}").contains("SECRET"));
    // The same home is accepted.
    req.env = Some(
        providers_core::ChildEnv::try_from_pairs([(
            "CODEX_HOME".to_owned(),
            dir.path().to_string_lossy().into_owned(),
        )])
        .expect("valid"),
    );
    assert!(CodexProvider::default().invocation_for(&req).is_ok());
}
