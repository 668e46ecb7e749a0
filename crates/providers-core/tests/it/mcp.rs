//! MCP server set forwarding.

use providers_core::{
    ForwardedMcp, McpServers, REDACTED, apply_forwarded_mcp_servers, codex_mcp_overrides,
    codex_profile_file_name, provider_accepts_forwarded_mcp,
};
use serde_json::{Map, Value, json};

fn servers(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("test input is an object"),
    }
}

#[test]
fn forwarding_sets_mcp_servers_never_mcp_config() {
    // contract: PRV-091, PRV-093
    let fwd = ForwardedMcp {
        servers: servers(json!({"fs": {"command": "mcp-fs"}})),
        exclusive: false,
    };
    for provider in ["claude", "codex"] {
        let mut kwargs = Map::new();
        assert!(apply_forwarded_mcp_servers(provider, &mut kwargs, &fwd));
        assert_eq!(
            kwargs.get("mcp_servers"),
            Some(&json!({"fs": {"command": "mcp-fs"}}))
        );
        assert!(!kwargs.contains_key("mcp_config"));
    }
}

#[test]
fn explicit_empty_selection_is_forwarded() {
    // contract: PRV-092
    let mut kwargs = Map::new();
    assert!(apply_forwarded_mcp_servers(
        "claude",
        &mut kwargs,
        &ForwardedMcp::default()
    ));
    assert_eq!(kwargs.get("mcp_servers"), Some(&json!({})));
}

#[test]
fn non_accepting_providers_are_left_unchanged() {
    // contract: PRV-093
    let fwd = ForwardedMcp {
        servers: servers(json!({"fs": {}})),
        exclusive: true,
    };
    for provider in ["gemini", "agy", "pi", "openai", "scripted"] {
        assert!(!provider_accepts_forwarded_mcp(provider));
        let mut kwargs = servers(json!({"keep": 1}));
        assert!(!apply_forwarded_mcp_servers(provider, &mut kwargs, &fwd));
        assert_eq!(kwargs, servers(json!({"keep": 1})));
    }
    assert!(provider_accepts_forwarded_mcp("Claude-Code"));
}

#[test]
fn exclusive_marks_the_set_as_whole() {
    // contract: PRV-095
    let fwd = ForwardedMcp {
        servers: servers(json!({"fs": {}})),
        exclusive: true,
    };
    let mut claude = Map::new();
    apply_forwarded_mcp_servers("claude", &mut claude, &fwd);
    assert_eq!(claude.get("strict_mcp_config"), Some(&json!(true)));
    let mut codex = Map::new();
    apply_forwarded_mcp_servers("codex", &mut codex, &fwd);
    assert_eq!(codex.get("mcp_exclusive"), Some(&json!(true)));

    let plan = codex_mcp_overrides(
        &fwd.servers,
        true,
        &["fs".into(), "github".into(), "jira".into()],
        "lionrt",
    )
    .unwrap();
    assert!(
        plan.args
            .contains(&"mcp_servers.github.enabled=false".to_owned())
    );
    assert!(
        plan.args
            .contains(&"mcp_servers.jira.enabled=false".to_owned())
    );
    assert!(
        !plan
            .args
            .iter()
            .any(|a| a.starts_with("mcp_servers.fs.enabled"))
    );
}

#[test]
fn codex_secrets_go_to_the_profile_never_argv() {
    // contract: PRV-094
    let set = servers(json!({
        "github": {
            "command": "npx",
            "args": ["-y", "@mcp/github"],
            "env": {"GITHUB_TOKEN": "ghp_SECRET_ENV"},
            "startup_timeout_sec": 20
        },
        "remote": {"url": "https://mcp.example/x", "http_headers": {"Authorization": "Bearer SECRET_HDR"}}
    }));
    let plan = codex_mcp_overrides(&set, false, &[], "lionrt").unwrap();
    let joined = plan.args.join("\n");
    assert!(!joined.contains("SECRET"), "argv holds no secret: {joined}");
    assert!(
        !format!("{plan:?}").contains("SECRET"),
        "debug holds no secret"
    );
    assert_eq!(
        plan.args,
        [
            "-c",
            r#"mcp_servers.github.args=["-y", "@mcp/github"]"#,
            "-c",
            r#"mcp_servers.github.command="npx""#,
            "-c",
            "mcp_servers.github.startup_timeout_sec=20",
            "-c",
            r#"mcp_servers.remote.url="https://mcp.example/x""#,
            "--profile",
            "lionrt",
        ]
    );
    let toml = plan.profile_toml.expect("profile written");
    // Codex 0.171 reads `--profile NAME` from `$CODEX_HOME/NAME.config.toml`
    // with top-level server tables; a `[profiles.X]` table is ignored there.
    assert!(!toml.contains("[profiles."), "{toml}");
    assert_eq!(codex_profile_file_name("lionrt"), "lionrt.config.toml");
    assert!(toml.contains("[mcp_servers.github.env]\nGITHUB_TOKEN = \"ghp_SECRET_ENV\""));
    assert!(
        toml.contains("[mcp_servers.remote.http_headers]\nAuthorization = \"Bearer SECRET_HDR\"")
    );
}

#[test]
fn codex_refuses_claude_style_headers_rather_than_put_them_on_argv() {
    let set = servers(json!({
        "remote": {"url": "https://mcp.example/x", "headers": {"Authorization": "Bearer SECRET_HDR"}}
    }));
    let err = codex_mcp_overrides(&set, false, &[], "lionrt").expect_err("refused");
    let text = format!("{err} {err:?}");
    assert!(
        text.contains("headers") && !text.contains("SECRET"),
        "{text}"
    );
}

#[test]
fn codex_refuses_names_that_could_inject_keys() {
    for bad in ["a.b", "x=y", "", "sp ace"] {
        let set = servers(json!({ bad: {"command": "x"} }));
        assert!(
            codex_mcp_overrides(&set, false, &[], "p").is_err(),
            "{bad:?}"
        );
    }
    let set = servers(json!({"ok": {"env": {"K": 1}}}));
    assert!(
        codex_mcp_overrides(&set, false, &[], "p").is_err(),
        "non-string env value"
    );
}

#[test]
fn mcp_servers_knows_which_sets_carry_secrets() {
    let set = |v: Value| McpServers::from(servers(v));
    assert!(!set(json!({})).carries_secrets());
    assert!(!set(json!({"a": {"command": "x", "args": ["--token-file", "t"]}})).carries_secrets());
    // Empty or null secret fields carry nothing.
    assert!(!set(json!({"a": {"env": {}, "headers": null, "http_headers": {}}})).carries_secrets());
    assert!(set(json!({"a": {"env": {"K": "v"}}})).carries_secrets());
    assert!(set(json!({"a": {}, "b": {"headers": {"Authorization": "t"}}})).carries_secrets());
    assert!(set(json!({"a": {"http_headers": {"X-Key": "t"}}})).carries_secrets());
    // A secret field of an unexpected shape is not known to be empty.
    assert!(set(json!({"a": {"env": "K=v"}})).carries_secrets());
    assert!(set(json!({"a": {"headers": ["Authorization: t"]}})).carries_secrets());
}

#[test]
fn mcp_servers_render_redacted_in_debug_and_serde() {
    let set = McpServers::from(servers(json!({
        "gh": {"command": "gh-mcp", "env": {"GH_TOKEN": "s3cr3t-env"}},
        "web": {"url": "https://x", "headers": {"Authorization": "s3cr3t-hdr"}, "http_headers": "s3cr3t-raw"}
    })));
    let dump = serde_json::to_value(&set).expect("serialise");
    assert_eq!(
        dump,
        json!({
            "gh": {"command": "gh-mcp", "env": {"GH_TOKEN": REDACTED}},
            "web": {"url": "https://x", "headers": {"Authorization": REDACTED}, "http_headers": REDACTED}
        })
    );
    for text in [format!("{set:?}"), format!("{set:#?}"), dump.to_string()] {
        assert!(!text.contains("s3cr3t"), "{text}");
    }
    // The real set is still there for the leg.
    assert_eq!(set.as_map()["gh"]["env"]["GH_TOKEN"], "s3cr3t-env");
    assert_eq!(set.clone().into_map()["web"]["http_headers"], "s3cr3t-raw");
}
