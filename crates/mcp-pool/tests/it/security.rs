//! Transport authorization, and its independence from admission.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;

use mcp_pool::{DenialReason, Error, McpPool, PoolConfig, SecurityConfig, ServerSpec};
use mcp_test_servers::BENIGN;
use serde_json::json;

use crate::{config, entry, fixture, settle, tag};

fn stdio(command: &str) -> ServerSpec {
    ServerSpec::from_entry("s", &json!({"command": command})).expect("spec")
}

fn url(url: &str) -> ServerSpec {
    ServerSpec::from_entry("s", &json!({"url": url})).expect("spec")
}

#[test]
fn the_default_refuses_every_command_and_url() {
    let default = SecurityConfig::default();
    let e = default.authorize("s", &stdio("true")).unwrap_err();
    assert!(e.to_string().contains("allow_commands is off"), "{e}");
    let e = default
        .authorize("s", &url("https://example.com/mcp"))
        .unwrap_err();
    assert!(e.to_string().contains("allow_urls is off"), "{e}");
}

#[test]
fn allowlists_name_bare_commands_and_exact_hosts() {
    let mut security = SecurityConfig::trusted();
    security.command_allowlist = Some(BTreeSet::from(["true".to_owned()]));
    security.url_allowlist = Some(BTreeSet::from(["example.com".to_owned()]));
    assert!(security.authorize("s", &stdio("true")).is_ok());
    assert!(security.authorize("s", &stdio("false")).is_err());
    let e = security.authorize("s", &stdio("/bin/true")).unwrap_err();
    assert!(e.to_string().contains("path separator"), "{e}");
    assert!(
        security
            .authorize("s", &url("https://EXAMPLE.com:8443/mcp"))
            .is_ok()
    );
    assert!(
        security
            .authorize("s", &url("https://user@example.com/mcp"))
            .is_ok()
    );
    for refused in [
        "https://example.com.evil/mcp",
        "https://evil.com/?x=example.com",
        "http://example.com/mcp",
        "ftp://example.com/mcp",
        "example.com/mcp",
        "https://evil.com\\@example.com/mcp",
        "https://example.com@evil.com/mcp",
        "https://exa%6Dple.com/mcp",
        "https:///mcp",
    ] {
        assert!(
            security.authorize("s", &url(refused)).is_err(),
            "{refused} must be refused"
        );
    }
}

#[test]
fn sensitive_inherited_variables_are_dropped_and_declared_ones_kept() {
    let security = SecurityConfig::default();
    let inherited = [
        ("PATH", "/bin"),
        ("OPENAI_API_KEY", "sk-1"),
        ("my_password", "p"),
        ("GITHUB_TOKEN_NAME", "ok"),
    ]
    .map(|(k, v)| (OsString::from(k), OsString::from(v)));
    let declared = BTreeMap::from([("SERVICE_API_KEY".to_owned(), "declared".to_owned())]);
    let env: BTreeMap<String, String> = security
        .child_env(inherited, &declared)
        .into_iter()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    assert_eq!(env.get("PATH").map(String::as_str), Some("/bin"));
    assert!(!env.contains_key("OPENAI_API_KEY"));
    assert!(!env.contains_key("my_password"));
    assert!(env.contains_key("GITHUB_TOKEN_NAME"));
    assert_eq!(
        env.get("SERVICE_API_KEY").map(String::as_str),
        Some("declared")
    );
}

// contract: ADM-002
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_tool_stays_denied_when_transport_allows_its_server() {
    let tag = tag();
    // The narrowest authorization that still lets this exact server in: a
    // command allowlist naming it, found on the entry's own PATH.
    let dir = fixture(BENIGN).parent().expect("fixture dir").to_owned();
    let mut security = SecurityConfig::trusted();
    security.command_allowlist = Some(BTreeSet::from([BENIGN.to_owned()]));
    let mut pool_config = config();
    pool_config.security = security;
    let pool = McpPool::new(pool_config);
    pool.add_server(
        "exec",
        json!({"command": BENIGN, "args": ["executor", tag], "env": {"PATH": dir.to_string_lossy()}}),
    );
    let listing = pool
        .list_tools("exec")
        .await
        .expect("authorized and listed");
    let denied: Vec<&str> = listing.denied.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(denied, ["bash", "run_script"]);
    assert!(matches!(
        listing.denied[0].reason,
        DenialReason::Admission(mcp_admission::Reason::UnboundedCommandInput)
    ));
    let refused = pool
        .call_tool("exec", "bash", json!({"command": "id"}))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, Error::ToolNotAdmitted { .. }),
        "{refused}"
    );
    // ...and the denial never revoked the server's authorization: its
    // admitted tools are still served over the same connection.
    let pid = pool.server_pid("exec").await;
    let echoed = pool
        .call_tool("exec", "echo", json!({"text": "hi"}))
        .await
        .expect("echo");
    assert!(echoed.result.to_string().contains("hi"));
    assert_eq!(pool.server_pid("exec").await, pid);
    pool.shutdown().await;
    assert!(settle(&tag).await.is_empty());
}

// contract: ADM-002
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transport_refusal_does_not_depend_on_the_tools_being_benign() {
    let tag = tag();
    // A server whose every tool would be admitted is still not started when
    // transport authorization refuses its command.
    let pool = McpPool::new(PoolConfig::default());
    pool.add_server("benign", entry(BENIGN, "benign", &tag));
    let e = pool.list_tools("benign").await.unwrap_err();
    assert!(matches!(e, Error::TransportDenied { .. }), "{e}");
    assert!(crate::live_with_tag(&tag).is_empty(), "nothing was started");
}

proptest::proptest! {
    // Whatever surrounds it, a URL is let in only when its real host is on
    // the allowlist: userinfo, ports, paths and look-alike suffixes never
    // smuggle an allowed name past the check.
    #[test]
    fn only_the_real_host_is_matched(
        host in "[a-z]{1,8}\\.(com|org)",
        other in "[a-z]{1,8}\\.(com|org)",
        port in proptest::option::of(1u16..),
        path in "[a-z/]{0,8}",
    ) {
        let mut security = SecurityConfig::trusted();
        security.url_allowlist = Some(BTreeSet::from([host.clone()]));
        let port = port.map(|p| format!(":{p}")).unwrap_or_default();
        let allowed = format!("https://{host}{port}/{path}");
        proptest::prop_assert!(security.authorize("s", &url(&allowed)).is_ok());
        let same = other == host;
        let cases = [
            (format!("https://{host}@{other}{port}/{path}"), same),
            (format!("https://{other}{port}/{host}"), same),
            (format!("https://{host}.{other}{port}/{path}"), false),
            (format!("https://{other}\\@{host}/{path}"), same),
        ];
        for (candidate, expected_ok) in cases {
            proptest::prop_assert_eq!(
                security.authorize("s", &url(&candidate)).is_ok(),
                expected_ok,
                "{}", candidate
            );
        }
    }
}

#[test]
fn plain_http_is_allowed_only_to_loopback_and_only_when_asked() {
    let mut security = SecurityConfig::trusted();
    let e = security
        .authorize("s", &url("http://127.0.0.1:8080/mcp"))
        .unwrap_err();
    assert!(e.to_string().contains("allow_loopback_http"), "{e}");
    security.allow_loopback_http = true;
    for allowed in [
        "http://127.0.0.1:8080/mcp",
        "http://127.10.0.3/mcp",
        "http://localhost:3000/mcp",
        "http://LOCALHOST/mcp",
        "http://[::1]:9000/mcp",
        "https://example.com/mcp",
    ] {
        assert!(
            security.authorize("s", &url(allowed)).is_ok(),
            "{allowed} must be allowed"
        );
    }
    for refused in [
        "http://example.com/mcp",
        "http://127.0.0.1.example.com/mcp",
        "http://localhost.example.com/mcp",
        "http://127.0.0.1@example.com/mcp",
        "http://example.com\\@127.0.0.1/mcp",
        "http://2130706433/mcp",
        "http://0x7f.0.0.1/mcp",
        "http://127.1/mcp",
        "http://0.0.0.0/mcp",
        "http://[::ffff:127.0.0.1]/mcp",
        "http://10.0.0.1/mcp",
    ] {
        assert!(
            security.authorize("s", &url(refused)).is_err(),
            "{refused} must be refused"
        );
    }
    // The host allowlist still applies to loopback.
    security.url_allowlist = Some(BTreeSet::from(["localhost".to_owned()]));
    assert!(
        security
            .authorize("s", &url("http://localhost/mcp"))
            .is_ok()
    );
    assert!(
        security
            .authorize("s", &url("http://127.0.0.1/mcp"))
            .is_err()
    );
}
