//! MCP server set forwarding.

use providers_core::{
    ForwardedMcp, apply_forwarded_mcp_servers, codex_mcp_overrides, provider_accepts_forwarded_mcp,
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
    assert!(
        toml.contains(
            "[profiles.lionrt.mcp_servers.github.env]\nGITHUB_TOKEN = \"ghp_SECRET_ENV\""
        )
    );
    assert!(toml.contains(
        "[profiles.lionrt.mcp_servers.remote.http_headers]\nAuthorization = \"Bearer SECRET_HDR\""
    ));
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
