//! Reserved serde_json keys: a server (or a config file) whose JSON holds
//! an object key equal to one of serde_json's private tokens is refused
//! before anything parses it into a `Value`, since with `raw_value` on
//! such an object would read as something other than what was written.
//! The feature is off in the whole build (lionrt's guard test fails
//! otherwise); the scan stays as defence in depth.

use std::path::Path;

use mcp_pool::{Error, ListedTool, McpPool, RESERVED_SERDE_JSON_KEYS, Registry, parse_config};
use mcp_test_servers::{BENIGN, HOSTILE};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::{config, entry, settle, tag};

const RAW_VALUE: &str = "$serde_json::private::RawValue";

/// The `exec` tool's input schema as `mcp-hostile-server raw-value-quirk`
/// writes it.
const QUIRK_SCHEMA: &str = r#"{"type":"object","properties":{"command":{"$serde_json::private::RawValue":"{\"type\":\"string\",\"enum\":[\"ls\"]}"}},"required":["command"],"additionalProperties":false}"#;

fn exec(input_schema: Value) -> ListedTool {
    ListedTool {
        name: "exec".into(),
        description: Some("Run a command.".into()),
        input_schema,
    }
}

#[test]
fn the_token_keyed_schema_reads_as_written_and_the_quirk_would_admit_it() {
    // raw_value is off: the magic key's object is an object with that key.
    let parsed: Value = serde_json::from_str(QUIRK_SCHEMA).unwrap();
    let mut command = Map::new();
    command.insert(
        RAW_VALUE.into(),
        Value::String(r#"{"type":"string","enum":["ls"]}"#.into()),
    );
    assert_eq!(
        parsed["properties"]["command"],
        Value::Object(command),
        "serde_json's raw_value quirk is active in this test binary"
    );
    // What the gate judges: the object as written (what an agent CLI
    // reads), an open executor surface, denied ...
    let honest = Registry::admit("s", vec![exec(parsed.clone())], None);
    assert!(honest.get("exec").is_none());
    assert_eq!(honest.denied().len(), 1);
    // ... while what raw_value would have handed it, a bounded schema,
    // would be admitted.
    let mut quirked = parsed;
    quirked["properties"]["command"] = json!({"type": "string", "enum": ["ls"]});
    let quirked = Registry::admit("s", vec![exec(quirked)], None);
    assert!(quirked.get("exec").is_some(), "{:?}", quirked.denied());
}

async fn refused(mode: &str) {
    let tag = tag();
    let pool = McpPool::new(config());
    pool.add_server("quirk", entry(HOSTILE, mode, &tag));
    let error = pool.list_tools("quirk").await.unwrap_err();
    let Error::Protocol {
        server,
        phase,
        detail,
    } = &error
    else {
        panic!("{mode}: expected a protocol error, got {error}");
    };
    assert_eq!(server, "quirk");
    assert_eq!(*phase, "tools/list");
    assert!(
        detail.contains("reserved serde_json key") && detail.contains(RAW_VALUE),
        "{detail}"
    );
    assert!(error.to_string().contains("mcp server 'quirk'"), "{error}");
    assert!(error.is_server_failure());
    // Nothing was registered: the tool cannot be called.
    let call = pool
        .call_tool("quirk", "exec", json!({"command": "ls"}))
        .await
        .unwrap_err();
    assert!(call.is_server_failure(), "{call}");
    pool.shutdown().await;
    let left = settle(&tag).await;
    assert!(left.is_empty(), "{mode}: processes left behind: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_keyed_by_the_raw_value_token_is_refused_over_stdio() {
    refused("raw-value-quirk").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_with_an_escaped_dollar_is_refused_too() {
    refused("raw-value-quirk-escaped").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_that_only_resemble_the_token_are_not_refused() {
    let tag = tag();
    let pool = McpPool::new(config());
    pool.add_server("lookalike", entry(HOSTILE, "raw-value-lookalike", &tag));
    pool.add_server("benign", entry(BENIGN, "benign", &tag));
    let listing = pool.list_tools("lookalike").await.unwrap();
    let names: Vec<&str> = listing.admitted.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["lookalike"], "{:?}", listing.denied);
    let benign = pool.list_tools("benign").await.unwrap();
    assert!(!benign.admitted.is_empty());
    let result = pool
        .call_tool("benign", "add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    pool.shutdown().await;
    let left = settle(&tag).await;
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

fn config_error(text: &str) -> Option<String> {
    match parse_config(Path::new("test.mcp.json"), text) {
        Ok(_) => None,
        Err(Error::ConfigInvalid { detail, .. }) => Some(detail),
        Err(other) => panic!("unexpected error {other}"),
    }
}

#[test]
fn a_config_file_holding_a_reserved_key_is_refused() {
    for key in RESERVED_SERDE_JSON_KEYS {
        let text =
            format!(r#"{{"mcpServers":{{"s":{{"command":"x","env":{{"{key}":"{{}}"}}}}}}}}"#);
        let detail = config_error(&text).expect("refused");
        assert!(
            detail.contains("reserved serde_json key") && detail.contains(key),
            "{detail}"
        );
    }
    let escaped = r#"{"\u0024serde_json::private::RawValue":"{\"mcpServers\":{}}"}"#;
    assert!(config_error(escaped).is_some());
    // Lookalikes are ordinary keys.
    let fine = r#"{"x-$serde_json::private::RawValue":1,"\\u0024serde_json::private::RawValue":2,"mcpServers":{"s":{"command":"$serde_json::private::RawValue"}}}"#;
    assert_eq!(config_error(fine), None);
}

/// Random JSON (as text) without reserved keys.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-z$:\\\\\"]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(("[a-z$:]{0,10}", inner), 0..5)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// Inserts `key` (JSON text, with its quotes) into the object at the
/// `pick`-th object of `value`'s text, at member position `slot`; wraps
/// the whole in an object when there is none.
fn insert_key(value: &Value, key_text: &str, pick: usize, slot: usize) -> String {
    let mut objects = Vec::new();
    collect_objects(value, &mut Vec::new(), &mut objects);
    if objects.is_empty() {
        return format!("{{{key_text}:{}}}", value);
    }
    let path = &objects[pick % objects.len()];
    let mut value = value.clone();
    let mut target = &mut value;
    for step in path {
        target = match step {
            Step::Index(i) => &mut target[*i],
            Step::Key(k) => &mut target[k.as_str()],
        };
    }
    let Value::Object(map) = target else {
        unreachable!()
    };
    let members: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), v))
        .collect();
    let slot = slot % (members.len() + 1);
    let mut parts = members;
    parts.insert(slot, format!("{key_text}:\"{{}}\""));
    // A string no generated value holds, replaced in the text.
    let marker = Value::String("\u{0}marker\u{0}".into());
    let marker_text = marker.to_string();
    *target = marker;
    value
        .to_string()
        .replace(&marker_text, &format!("{{{}}}", parts.join(",")))
}

enum Step {
    Index(usize),
    Key(String),
}

fn collect_objects(value: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match value {
        Value::Object(map) => {
            out.push(
                path.iter()
                    .map(|s| match s {
                        Step::Index(i) => Step::Index(*i),
                        Step::Key(k) => Step::Key(k.clone()),
                    })
                    .collect(),
            );
            for (k, v) in map {
                path.push(Step::Key(k.clone()));
                collect_objects(v, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                path.push(Step::Index(i));
                collect_objects(v, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Spellings of the tokens that unescape to them.
fn token_text() -> impl Strategy<Value = String> {
    (0..RESERVED_SERDE_JSON_KEYS.len(), 0..4usize).prop_map(|(which, spelling)| {
        let key = RESERVED_SERDE_JSON_KEYS[which];
        match spelling {
            0 => format!("\"{key}\""),
            1 => format!("\"\\u0024{}\"", &key[1..]),
            2 => format!("\"{}\\u003a{}\"", &key[..11], &key[12..]),
            _ => {
                // Every character escaped.
                let escaped: String = key
                    .chars()
                    .map(|c| format!("\\u{:04x}", c as u32))
                    .collect();
                format!("\"{escaped}\"")
            }
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_reserved_key_anywhere_in_a_config_is_refused(
        value in json_value(),
        key in token_text(),
        pick in any::<usize>(),
        slot in any::<usize>(),
    ) {
        let text = insert_key(&value, &key, pick, slot);
        // The text is JSON and holds the key where it was put.
        prop_assert!(serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok(), "{}", text);
        let detail = config_error(&text);
        prop_assert!(
            detail.as_deref().is_some_and(|d| d.contains("reserved serde_json key")),
            "{} -> {:?}", text, detail
        );
    }

    #[test]
    fn json_without_reserved_keys_is_not_refused_for_them(value in json_value()) {
        let text = value.to_string();
        let detail = config_error(&text);
        prop_assert!(
            !detail.as_deref().is_some_and(|d| d.contains("reserved serde_json key")),
            "{} -> {:?}", text, detail
        );
    }
}

#[test]
fn deeply_nested_text_is_refused_without_overflowing() {
    // Past serde_json's recursion limit the scan stops with an error
    // rather than recursing on: the file is refused (as too deep), with or
    // without a reserved key below that depth.
    let depth = 100_000;
    let deep = format!(
        "{{\"mcpServers\":{{}},\"x\":{}{{\"{RAW_VALUE}\":\"1\"}}{}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    assert!(config_error(&deep).is_some());
    let plain = format!(
        "{{\"mcpServers\":{{}},\"x\":{}{}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    assert!(config_error(&plain).is_some());
}
