//! A secret-bearing MCP server set reaches the CLI by an owner-only file,
//! never by argv, and no rendering of the request shows a secret value.

use std::collections::BTreeMap;

use proptest::prelude::*;
use providers_claude::{ClaudeCodeRequest, ClaudeProvider, MCP_CONFIG_FILE};
use providers_core::{AgentRequest, ForwardedMcp, Provider, apply_forwarded_mcp_servers};
use serde_json::{Value, json};

fn servers() -> Value {
    json!({
        "github": {"command": "gh-mcp", "args": ["--stdio"], "env": {"GITHUB_TOKEN": "ghp_TOPSECRET"}},
        "docs": {"type": "http", "url": "https://mcp.example", "headers": {"Authorization": "Bearer HDRSECRET"}},
        "plain": {"command": "echo-mcp"}
    })
}

fn agent_with(servers: Value, dir: Option<&std::path::Path>) -> AgentRequest {
    let mut agent = AgentRequest::new("p");
    let forwarded = ForwardedMcp {
        servers: servers.as_object().cloned().unwrap_or_default(),
        exclusive: true,
    };
    assert!(apply_forwarded_mcp_servers(
        &ClaudeProvider::default(),
        &mut agent.kwargs,
        &forwarded
    ));
    if let Some(dir) = dir {
        agent
            .kwargs
            .insert("mcp_config_dir".into(), json!(dir.to_string_lossy()));
    }
    agent
}

#[test]
fn secret_bearing_set_goes_to_an_owner_only_file_not_argv() {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = agent_with(servers(), Some(dir.path()));
    let inv = ClaudeProvider::default()
        .invocation(&agent)
        .expect("invocation");
    let joined = inv.argv.join(" ");
    assert!(
        !joined.contains("TOPSECRET") && !joined.contains("HDRSECRET"),
        "{joined}"
    );
    let path = dir.path().join(MCP_CONFIG_FILE);
    let path_text = path.to_string_lossy().into_owned();
    assert!(
        inv.argv
            .windows(2)
            .any(|w| w[0] == "--mcp-config" && w[1] == path_text),
        "{joined}"
    );
    assert!(inv.argv.iter().any(|a| a == "--strict-mcp-config"));
    assert!(!format!("{inv:?}").contains("SECRET"));

    assert_eq!(inv.files.len(), 1);
    assert_eq!(inv.files[0].path, path);
    inv.files[0].write_owner_only().expect("write");
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path)
            .expect("written")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // The file holds the whole set, secrets included, in Claude's format.
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    assert_eq!(written, json!({ "mcpServers": servers() }));
}

#[test]
fn secret_bearing_set_without_a_directory_is_refused_without_the_secret() {
    let agent = agent_with(servers(), None);
    let err = ClaudeProvider::default()
        .invocation(&agent)
        .expect_err("refused");
    let text = format!("{err} {err:?}");
    assert!(text.contains("mcp_config_dir"), "{text}");
    assert!(!text.contains("SECRET"), "{text}");
}

#[test]
fn a_set_without_secrets_stays_inline_and_writes_no_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Empty env and headers carry nothing.
    let set = json!({"plain": {"command": "echo-mcp", "env": {}, "headers": null}});
    let inv = ClaudeProvider::default()
        .invocation(&agent_with(set.clone(), Some(dir.path())))
        .expect("invocation");
    let at = inv
        .argv
        .iter()
        .position(|a| a == "--mcp-config")
        .expect("flag");
    let inline: Value = serde_json::from_str(&inv.argv[at + 1]).expect("inline json");
    assert_eq!(inline, json!({ "mcpServers": set }));
    assert!(inv.files.is_empty());
}

#[test]
fn request_renderings_redact_values_and_keep_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let req = ClaudeCodeRequest::from_agent_request(&agent_with(servers(), Some(dir.path())))
        .expect("request");
    let dump = serde_json::to_value(&req).expect("serialise");
    assert_eq!(
        dump["mcp_servers"]["github"]["env"],
        json!({"GITHUB_TOKEN": "<redacted>"})
    );
    assert_eq!(
        dump["mcp_servers"]["docs"]["headers"],
        json!({"Authorization": "<redacted>"})
    );
    assert_eq!(dump["mcp_servers"]["plain"], json!({"command": "echo-mcp"}));
    for text in [format!("{req:?}"), format!("{req:#?}"), dump.to_string()] {
        assert!(!text.contains("SECRET"), "{text}");
        assert!(
            text.contains("GITHUB_TOKEN") && text.contains("gh-mcp"),
            "{text}"
        );
    }
}

fn secret_values() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map("[A-Z][A-Z0-9_]{2,10}", "zz[A-Za-z0-9+/=:. -]{12,40}", 1..5)
}

proptest! {
    /// Whatever the values and wherever they sit (env or headers, one
    /// server or several), they never reach argv, Debug or serde.
    #[test]
    fn random_mcp_secrets_never_reach_argv_or_any_rendering(
        env in secret_values(),
        headers in secret_values(),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let set = json!({
            "a": {"command": "a-mcp", "env": env},
            "b": {"url": "https://b.example", "headers": headers},
        });
        let agent = agent_with(set, Some(dir.path()));
        let req = ClaudeCodeRequest::from_agent_request(&agent).expect("request");
        let inv = ClaudeProvider::default().invocation_for(&req).expect("invocation");
        let texts = [
            inv.argv.join(" "),
            format!("{inv:?}"),
            format!("{req:?}"),
            serde_json::to_string(&req).unwrap_or_default(),
        ];
        for value in env.values().chain(headers.values()) {
            for text in &texts {
                prop_assert!(!text.contains(value.as_str()), "{} in {}", value, text);
            }
        }
    }
}
