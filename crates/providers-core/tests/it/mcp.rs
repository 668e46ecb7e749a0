//! MCP server set forwarding, through the provider's own answer.

use providers_core::{
    AgentRequest, Effort, ForwardedMcp, Invocation, McpForwarding, McpServers, Provider, REDACTED,
    StreamEvent, StreamParser, apply_forwarded_mcp_servers,
};
use serde_json::{Map, Value, json};

fn servers(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("test input is an object"),
    }
}

/// A provider whose only trait to speak of is how it takes an MCP set.
struct Stub(Option<McpForwarding>);

struct NoParse;

impl StreamParser for NoParse {
    fn parse_value(&mut self, _: &Value) -> Vec<StreamEvent> {
        Vec::new()
    }
    fn finish(&mut self) -> Vec<StreamEvent> {
        Vec::new()
    }
    fn resume_id(&self) -> Option<&str> {
        None
    }
}

impl Provider for Stub {
    type Parser = NoParse;
    type Error = providers_core::Error;
    fn name(&self) -> &'static str {
        "stub"
    }
    fn invocation(&self, _: &AgentRequest) -> Result<Invocation, Self::Error> {
        Ok(Invocation::default())
    }
    fn parser(&self) -> NoParse {
        NoParse
    }
    fn streams_first_output_early(&self) -> bool {
        true
    }
    fn mcp_forwarding(&self) -> Option<McpForwarding> {
        self.0
    }
}

/// A provider that leaves every defaulted method alone.
struct Plain;

impl Provider for Plain {
    type Parser = NoParse;
    type Error = providers_core::Error;
    fn name(&self) -> &'static str {
        "plain"
    }
    fn invocation(&self, _: &AgentRequest) -> Result<Invocation, Self::Error> {
        Ok(Invocation::default())
    }
    fn parser(&self) -> NoParse {
        NoParse
    }
    fn streams_first_output_early(&self) -> bool {
        false
    }
}

const STRICT: Stub = Stub(Some(McpForwarding::new("strict")));
const WHOLE: Stub = Stub(Some(McpForwarding::new("whole_set")));

#[test]
fn forwarding_sets_mcp_servers_never_mcp_config() {
    // contract: PRV-091, PRV-093
    let fwd = ForwardedMcp {
        servers: servers(json!({"fs": {"command": "mcp-fs"}})),
        exclusive: false,
    };
    for provider in [STRICT, WHOLE] {
        let mut kwargs = Map::new();
        assert!(apply_forwarded_mcp_servers(&provider, &mut kwargs, &fwd));
        assert_eq!(
            kwargs,
            servers(json!({"mcp_servers": {"fs": {"command": "mcp-fs"}}}))
        );
        assert!(!kwargs.contains_key("mcp_config"));
    }
}

#[test]
fn explicit_empty_selection_is_forwarded() {
    // contract: PRV-092
    let mut kwargs = Map::new();
    assert!(apply_forwarded_mcp_servers(
        &STRICT,
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
    assert_eq!(Plain.mcp_forwarding(), None, "the default accepts no set");
    let mut kwargs = servers(json!({"keep": 1}));
    assert!(!apply_forwarded_mcp_servers(&Stub(None), &mut kwargs, &fwd));
    assert!(!apply_forwarded_mcp_servers(&Plain, &mut kwargs, &fwd));
    assert_eq!(kwargs, servers(json!({"keep": 1})));
}

#[test]
fn exclusive_sets_the_providers_own_key() {
    // contract: PRV-095
    let fwd = ForwardedMcp {
        servers: servers(json!({"fs": {}})),
        exclusive: true,
    };
    let mut a = Map::new();
    apply_forwarded_mcp_servers(&STRICT, &mut a, &fwd);
    assert_eq!(a.get("strict"), Some(&json!(true)));
    assert!(!a.contains_key("whole_set"));
    let mut b = Map::new();
    apply_forwarded_mcp_servers(&WHOLE, &mut b, &fwd);
    assert_eq!(b.get("whole_set"), Some(&json!(true)));
    assert!(!b.contains_key("strict"));
    let mut c = Map::new();
    apply_forwarded_mcp_servers(
        &STRICT,
        &mut c,
        &ForwardedMcp {
            exclusive: false,
            ..fwd
        },
    );
    assert!(!c.contains_key("strict"), "not exclusive: no key");
}

#[test]
fn the_default_effort_clamp_takes_every_level_as_it_is() {
    for e in Effort::ALL {
        assert_eq!(Plain.clamp_effort(None, e), Some(e));
        assert_eq!(Plain.clamp_effort(Some("any-model"), e), Some(e));
    }
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
