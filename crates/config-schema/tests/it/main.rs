//! The published schemas: they compile, accept the runtime's own examples,
//! and refuse bad files naming the file, the JSON path and the expectation,
//! never the value.

use config_schema::{ConfigKind, Error, schema_text, validate};
use proptest::prelude::*;
use serde_json::{Value, json};

fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("json")
}

fn violations(kind: ConfigKind, doc: &Value) -> Vec<(String, String)> {
    match validate(kind, "f.yaml", doc) {
        Ok(()) => Vec::new(),
        Err(e) => e
            .violations()
            .iter()
            .map(|v| (v.path.clone(), v.expected.clone()))
            .collect(),
    }
}

#[test]
fn every_schema_is_published_and_compiles() {
    for kind in ConfigKind::ALL {
        let text = schema_text(kind);
        let schema: Value = serde_json::from_str(text).expect("valid json");
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema",
            "{}",
            kind.name()
        );
        // The published file is the compiled one.
        let on_disk = std::fs::read_to_string(format!(
            "{}/../../docs/schemas/{}.schema.json",
            env!("CARGO_MANIFEST_DIR"),
            kind.name()
        ))
        .expect("published under docs/schemas");
        assert_eq!(on_disk, text);
        // Compiles: any verdict but a schema error.
        assert!(!matches!(
            validate(kind, "x", &json!({})),
            Err(Error::Schema { .. })
        ));
    }
}

#[test]
fn the_runtimes_own_examples_pass() {
    let settings = json!({
        "secrets": {"lookup": {"argv": ["pass", "show", "{name}"], "names": ["API_KEY"], "enabled": true}},
        "trusted_plugins": {"hello": {"manifest": "ab".repeat(32), "targets": {"bin/x": null, "y": "cd".repeat(32)}, "bundle_path": "/p/hello"}},
        "disabled_plugins": ["other"],
        "notify": {"on_terminal": ["desktop"]},
        "anything_else": [1, 2, 3]
    });
    assert_eq!(violations(ConfigKind::Settings, &settings), []);
    let manifest = json!({
        "name": "hello", "version": "0.1.0", "description": "d", "lionagi": ">=0.9, <2",
        "x-homepage": "https://example.invalid",
        "capabilities": {
            "tools": [{"name": "greet", "target": "bin/greet.sh:main"}],
            "hooks_external": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": ["./hooks/audit.sh"]}]}]},
            "agents": ["agents/greeter.md"], "playbooks": [], "packs": [],
            "providers": [{"module": "providers/hello-cli.yaml"}]
        }
    });
    assert_eq!(violations(ConfigKind::PluginManifest, &manifest), []);
    let provider = json!({"name": "acme-cli", "aliases": ["acme"], "kind": "cli", "binary": "acme", "args": ["--json"], "env_keys": ["ACME_API_KEY"], "description": "Acme"});
    assert_eq!(violations(ConfigKind::ProviderDefinition, &provider), []);
    let script = parse(
        r#"{"mode": "when_only", "responses": [
            {"type": "text", "text": "t", "when": {"prompt_contains": "x", "call_index": 0}},
            {"type": "tool_call", "name": "Read", "arguments": {"p": 1}},
            {"type": "structured", "data": [1]},
            {"type": "stream", "chunks": ["a", "b"]},
            {"type": "error", "message": "quota", "status": 429}
        ]}"#,
    );
    assert_eq!(violations(ConfigKind::Script, &script), []);
    assert_eq!(
        violations(ConfigKind::Script, &json!([{"type": "text", "text": "x"}])),
        []
    );
}

#[test]
fn refusals_name_file_path_and_expectation() {
    let cases: Vec<(ConfigKind, Value, &str, &str)> = vec![
        (
            ConfigKind::Settings,
            json!({"secrets": {"lookup": {"argv": "pass show"}}}),
            "/secrets/lookup/argv",
            "array",
        ),
        (
            ConfigKind::Settings,
            json!({"disabled_plugins": [1]}),
            "/disabled_plugins/0",
            "string",
        ),
        (
            ConfigKind::Settings,
            json!({"trusted_plugins": {"p": {"manifest": "m"}}}),
            "/trusted_plugins/p",
            "required",
        ),
        (
            ConfigKind::PluginManifest,
            json!({"name": "Hello", "version": "1", "lionagi": ">=1"}),
            "/name",
            "match",
        ),
        (
            ConfigKind::PluginManifest,
            json!({"name": "h", "version": "1", "lionagi": ">=1", "extra": 1}),
            "",
            "extra",
        ),
        (
            ConfigKind::PluginManifest,
            json!({"name": "h", "version": "1", "lionagi": "1", "capabilities": {"tools": [{"name": "t", "target": "no-colon"}]}}),
            "/capabilities/tools/0/target",
            "match",
        ),
        (
            ConfigKind::ProviderDefinition,
            json!({"name": "a", "binary": "b", "env_keys": ["NOT OK"]}),
            "/env_keys/0",
            "match",
        ),
        (
            ConfigKind::ProviderDefinition,
            json!({"name": "a"}),
            "",
            "binary",
        ),
        (
            ConfigKind::Script,
            json!([{"type": "text", "text": 3}]),
            "/0/text",
            "string",
        ),
        (
            ConfigKind::Script,
            json!([{"type": "tool_call"}]),
            "/0",
            "name",
        ),
        (
            ConfigKind::Script,
            json!([{"type": "nope"}]),
            "/0/type",
            "one of",
        ),
        (
            ConfigKind::Script,
            json!({"mode": "sometimes", "responses": []}),
            "/mode",
            "one of",
        ),
        (
            ConfigKind::Script,
            json!([{"type": "stream", "chunks": []}]),
            "/0/chunks",
            "item",
        ),
    ];
    for (kind, doc, path, expect) in cases {
        let err = validate(kind, "conf/file.yaml", &doc).expect_err("refused");
        let text = err.to_string();
        assert!(text.starts_with("conf/file.yaml: "), "{text}");
        assert!(
            err.violations()
                .iter()
                .any(|v| v.path == path && v.expected.to_lowercase().contains(expect)),
            "{} {doc}: want {path:?} ~ {expect:?}, got {text}",
            kind.name()
        );
    }
}

proptest! {
    /// Whatever a wrongly-typed value holds, the error never repeats it.
    #[test]
    fn values_are_never_echoed(secret in "[A-Za-z0-9]{12,24}") {
        let doc = json!({"secrets": {"lookup": {"argv": secret.clone(), "enabled": secret.clone()}}});
        let err = validate(ConfigKind::Settings, "s.yaml", &doc).expect_err("refused");
        prop_assert!(!err.to_string().contains(&secret), "{}", err);
        let debug = format!("{:?}", err);
        prop_assert!(!debug.contains(&secret));
    }
}
