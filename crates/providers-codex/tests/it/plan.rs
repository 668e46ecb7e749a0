//! The Codex MCP plan (`-c` overrides, secrets in the profile file) and
//! the effort ceilings, tested on their own.

use providers_codex::{
    CodexProvider, clamp_codex_effort, codex_effort_ceiling, codex_mcp_overrides,
    codex_profile_file_name,
};
use providers_core::{Effort, Provider, normalize_effort};
use serde_json::{Map, Value, json};

fn servers(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("test input is an object"),
    }
}

#[test]
fn exclusive_disables_every_other_configured_server_by_name() {
    // contract: PRV-095
    let fwd_servers = servers(json!({"fs": {}}));
    let plan = codex_mcp_overrides(
        &fwd_servers,
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
fn codex_ceilings_by_model() {
    // contract: PRV-031
    for m in ["gpt-5.6-sol", "gpt-5.6-terra", "openai/gpt-5.6-sol"] {
        assert_eq!(clamp_codex_effort(m, Effort::Ultra), Effort::Ultra, "{m}");
        assert_eq!(clamp_codex_effort(m, Effort::Max), Effort::Max, "{m}");
    }
    assert_eq!(clamp_codex_effort("gpt-5.6-luna", Effort::Max), Effort::Max);
    assert_eq!(
        clamp_codex_effort("gpt-5.6-luna", Effort::Ultra),
        Effort::Max
    );
    for m in [
        "gpt-5",
        "gpt-5-codex",
        "gpt-5.1-codex-max",
        "gpt-5.5",
        "gpt-5-2025-08-07",
        "o3",
    ] {
        assert_eq!(codex_effort_ceiling(m), Some(Effort::XHigh), "{m}");
        assert_eq!(clamp_codex_effort(m, Effort::Ultra), Effort::XHigh);
        assert_eq!(clamp_codex_effort(m, Effort::Max), Effort::XHigh);
        assert_eq!(clamp_codex_effort(m, Effort::High), Effort::High);
    }
}

#[test]
fn unknown_codex_models_pass_through() {
    // contract: PRV-032
    for m in ["gpt-6", "gpt-5.7-nova", "gpt-5.6-sol-preview-x"] {
        assert_eq!(codex_effort_ceiling(m), None, "{m}");
        for e in Effort::ALL {
            assert_eq!(clamp_codex_effort(m, e), e);
        }
    }
}

#[test]
fn normalised_levels_clamp_alike() {
    // contract: PRV-030
    let a = normalize_effort("High").unwrap();
    let b = normalize_effort("high").unwrap();
    for m in ["gpt-5", "gpt-5.6-luna", "gpt-6"] {
        assert_eq!(clamp_codex_effort(m, a), clamp_codex_effort(m, b));
    }
    let a = normalize_effort(" ULTRA ").unwrap();
    assert_eq!(clamp_codex_effort("gpt-5.6-luna", a), Effort::Max);
}

#[test]
fn the_provider_clamps_with_the_same_table() {
    let p = CodexProvider::default();
    for e in Effort::ALL {
        assert_eq!(p.clamp_effort(None, e), Some(e), "no model: as asked");
        for m in ["gpt-5", "gpt-5.6-luna", "gpt-5.6-sol", "gpt-6"] {
            assert_eq!(p.clamp_effort(Some(m), e), Some(clamp_codex_effort(m, e)));
        }
    }
}

proptest::proptest! {
    #[test]
    fn clamping_never_panics_on_any_model_string(model in ".*") {
        for e in Effort::ALL {
            let _ = clamp_codex_effort(&model, e);
        }
        let _ = codex_effort_ceiling(&format!("{model}-2025-08-07"));
    }
}

#[test]
fn dated_variants_and_multibyte_names() {
    assert_eq!(
        codex_effort_ceiling("gpt-5.6-luna-2026-01-02"),
        Some(Effort::Max)
    );
    assert_eq!(codex_effort_ceiling("éééééé-2025"), None);
    assert_eq!(codex_effort_ceiling("gpt-5-2025-8-07"), None);
}
