//! The script model: entries, matching phases, modes, clones.

use providers_scripted::{Error, Response, ScriptCall, ScriptMode, ScriptModel, ScriptedEndpoint};
use serde_json::json;

fn call(p: &str) -> ScriptCall {
    ScriptCall {
        prompt: p.into(),
        tools: vec![],
    }
}

fn text(t: &str) -> Response {
    Response::Text { text: t.into() }
}

fn script(v: serde_json::Value) -> ScriptModel {
    ScriptModel::from_value(&v).expect("valid script")
}

#[test]
fn clones_get_an_independent_cursor() {
    // contract: TST-001
    let mut a = ScriptedEndpoint::new(script(
        json!([{"type": "text", "text": "e0"}, {"type": "text", "text": "e1"}]),
    ));
    let mut b = a.clone();
    assert_eq!(a.call(call("x")).unwrap(), text("e0"));
    assert_eq!(
        b.call(call("y")).unwrap(),
        text("e0"),
        "clone B still gets entry 0"
    );
    assert_eq!(a.call(call("x")).unwrap(), text("e1"));
}

#[test]
fn clones_copy_recorded_calls_shallowly() {
    // contract: TST-002
    let mut a = ScriptedEndpoint::new(script(
        json!([{"type": "text", "text": "e0"}, {"type": "text", "text": "e1"}, {"type": "text", "text": "e2"}]),
    ));
    a.call(call("before")).unwrap();
    let mut b = a.clone();
    assert_eq!(
        b.calls(),
        [call("before")],
        "clone starts with the prior calls"
    );
    a.call(call("only-a")).unwrap();
    b.call(call("only-b")).unwrap();
    assert_eq!(a.calls(), [call("before"), call("only-a")]);
    assert_eq!(b.calls(), [call("before"), call("only-b")]);
}

#[test]
fn entries_are_built_as_their_declared_kind() {
    // contract: TST-003
    let s = script(json!([
        {"type": "text", "text": "hi"},
        {"type": "tool_call", "id": "c1", "name": "read", "arguments": {"path": "a"}},
        {"type": "structured", "data": {"ok": true}},
        {"type": "stream", "chunks": ["a", "b"]},
        {"type": "error", "message": "boom", "status": 429}
    ]));
    let kinds: Vec<_> = s.entries().iter().map(|e| e.response.kind()).collect();
    assert_eq!(
        kinds,
        ["text", "tool_call", "structured", "stream", "error"]
    );
    assert_eq!(
        s.entries()[1].response,
        Response::ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: json!({"path": "a"})
        }
    );
    assert_eq!(
        s.entries()[4].response,
        Response::Error {
            message: "boom".into(),
            status: Some(429)
        }
    );
}

#[test]
fn malformed_entries_name_their_kind_and_field() {
    // contract: TST-004
    let cases = [
        (
            json!([{"type": "text"}]),
            "script entry 0 (text): field `text` is required",
        ),
        (
            json!([{"type": "text", "text": "ok"}, {"type": "tool_call", "arguments": {}}]),
            "script entry 1 (tool_call): field `name` is required",
        ),
        (
            json!([{"type": "stream", "chunks": [1]}]),
            "script entry 0 (stream): field `chunks` must hold only strings",
        ),
        (
            json!([{"type": "structured", "data": 3}]),
            "script entry 0 (structured): field `data` must be an object or a list",
        ),
        (
            json!([{"type": "error", "message": "m", "status": "x"}]),
            "script entry 0 (error): field `status` must be an integer status",
        ),
        (
            json!([{"type": "text", "text": "t", "chunks": []}]),
            "script entry 0 (text): field `chunks` is not a field of this kind",
        ),
        (
            json!([{"type": "text", "text": "t", "when": {"prompt_regex": "("}}]),
            "script entry 0 (text): field `when.prompt_regex` is not a valid regex",
        ),
        (
            json!([{"type": "text", "text": "t", "when": {"sometimes": 1}}]),
            "script entry 0 (text): field `when.sometimes` is not a when predicate",
        ),
    ];
    for (v, msg) in cases {
        let err = ScriptModel::from_value(&v).unwrap_err();
        assert!(matches!(err, Error::InvalidEntry { .. }), "{err:?}");
        assert_eq!(err.to_string(), msg);
    }
    let err = ScriptModel::from_value(&json!([{"type": "image"}])).unwrap_err();
    assert!(matches!(err, Error::UnknownType { index: 0, ref kind } if kind == "image"));
    assert!(matches!(
        ScriptModel::from_value(&json!([{"text": "x"}])),
        Err(Error::MissingType { index: 0 })
    ));
    assert!(matches!(
        ScriptModel::from_json("{not json"),
        Err(Error::NotJson(_))
    ));
    assert!(matches!(
        ScriptModel::from_value(&json!({"mode": "random", "responses": []})),
        Err(Error::BadScript(_))
    ));
}

#[test]
fn when_entries_are_checked_first_in_script_order() {
    // contract: TST-005
    let mut s = script(json!([
        {"type": "text", "text": "positional"},
        {"type": "text", "text": "w1", "when": {"prompt_contains": "deploy"}},
        {"type": "text", "text": "w2", "when": {"prompt_contains": "deploy"}}
    ]));
    assert_eq!(s.next(&call("deploy now")).unwrap(), text("w1"));
    assert_eq!(s.next(&call("hello")).unwrap(), text("positional"));
}

#[test]
fn a_served_when_entry_is_skipped_later() {
    // contract: TST-006
    let mut s = script(json!([
        {"type": "text", "text": "w1", "when": {"prompt_contains": "x"}},
        {"type": "text", "text": "w2", "when": {"prompt_contains": "x"}}
    ]));
    assert_eq!(s.next(&call("x")).unwrap(), text("w1"));
    assert_eq!(s.next(&call("x")).unwrap(), text("w2"));
    assert!(matches!(
        s.next(&call("x")),
        Err(Error::ScriptExhausted { calls: 2 })
    ));
}

#[test]
fn each_predicate_is_evaluated_against_the_current_call() {
    // contract: TST-007
    let mut s = script(json!({"mode": "when_only", "responses": [
        {"type": "text", "text": "by-index", "when": {"call_index": 1}},
        {"type": "text", "text": "by-after", "when": {"after_calls": 3}},
        {"type": "text", "text": "by-contains", "when": {"prompt_contains": "needle"}},
        {"type": "text", "text": "by-regex", "when": {"prompt_regex": "^fix #[0-9]+$"}},
        {"type": "text", "text": "by-tool", "when": {"has_tool": "bash"}},
        {"type": "text", "text": "by-and", "when": {"prompt_contains": "both", "has_tool": "read"}}
    ]}));
    assert_eq!(s.next(&call("with needle")).unwrap(), text("by-contains"));
    assert_eq!(s.next(&call("anything")).unwrap(), text("by-index"));
    assert_eq!(s.next(&call("fix #42")).unwrap(), text("by-regex"));
    assert_eq!(
        s.next(&call("both")).unwrap(),
        text("by-after"),
        "after_calls: 3 holds from call 3"
    );
    // ANDed: the prompt matches but the tool is absent.
    assert!(matches!(
        s.next(&call("both")),
        Err(Error::NoWhenMatch { call_index: 4 })
    ));
    let both = ScriptCall {
        prompt: "both".into(),
        tools: vec!["read".into()],
    };
    assert_eq!(s.next(&both).unwrap(), text("by-and"));
    let with_bash = ScriptCall {
        prompt: "p".into(),
        tools: vec!["bash".into()],
    };
    assert_eq!(s.next(&with_bash).unwrap(), text("by-tool"));
}

#[test]
fn when_only_never_falls_back_to_positional() {
    // contract: TST-008
    let mut s = script(json!({"mode": "when_only", "responses": [
        {"type": "text", "text": "positional"},
        {"type": "text", "text": "w", "when": {"prompt_contains": "yes"}}
    ]}));
    assert!(matches!(
        s.next(&call("no")),
        Err(Error::NoWhenMatch { call_index: 0 })
    ));
    assert_eq!(s.mode(), ScriptMode::WhenOnly);
}

#[test]
fn positional_phase_serves_only_when_less_entries_in_order() {
    // contract: TST-009
    let mut s = script(json!([
        {"type": "text", "text": "p0"},
        {"type": "text", "text": "w", "when": {"prompt_contains": "zzz"}},
        {"type": "text", "text": "p1", "when": {}},
        {"type": "text", "text": "p2"}
    ]));
    assert_eq!(s.next(&call("a")).unwrap(), text("p0"));
    assert_eq!(
        s.next(&call("b")).unwrap(),
        text("p1"),
        "empty when is positional; non-empty when skipped"
    );
    assert_eq!(s.next(&call("c")).unwrap(), text("p2"));
    assert!(matches!(
        s.next(&call("d")),
        Err(Error::ScriptExhausted { .. })
    ));
}

#[test]
fn positional_mode_ignores_when_matchers() {
    // contract: TST-010
    let mut s = script(json!({"mode": "positional", "responses": [
        {"type": "text", "text": "w", "when": {"prompt_contains": "hit"}},
        {"type": "text", "text": "p0"}
    ]}));
    assert_eq!(s.next(&call("hit")).unwrap(), text("p0"));
    assert!(matches!(
        s.next(&call("hit")),
        Err(Error::ScriptExhausted { calls: 1 })
    ));
}

#[test]
fn exhaustion_is_an_error() {
    // contract: TST-011
    let mut s = script(json!([{"type": "text", "text": "only"}]));
    s.next(&call("1")).unwrap();
    let err = s.next(&call("2")).unwrap_err();
    assert!(matches!(err, Error::ScriptExhausted { calls: 1 }));
    assert_eq!(err.to_string(), "script exhausted after 1 call(s)");
    assert!(matches!(
        script(json!([])).next(&call("x")),
        Err(Error::ScriptExhausted { calls: 0 })
    ));
}

mod schema_agreement {
    //! The typed parser and the published schema
    //! (`docs/schemas/script.schema.json`) read scripts alike: whatever the
    //! parser accepts the schema accepts (so `Error::Schema` never fires on
    //! a good script), and whatever the schema refuses the parser refuses.

    use config_schema::{ConfigKind, validate};
    use proptest::prelude::*;
    use providers_scripted::{Error, ScriptModel};
    use serde_json::{Value, json};

    fn field_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!("s")),
            Just(json!(3)),
            Just(json!(-1)),
            Just(json!(70000)),
            Just(json!(true)),
            Just(json!(null)),
            Just(json!([])),
            Just(json!(["a", "b"])),
            Just(json!(["a", 1])),
            Just(json!({})),
            Just(json!({"k": 1})),
        ]
    }

    fn entry() -> impl Strategy<Value = Value> {
        let kind = prop_oneof![
            Just(json!("text")),
            Just(json!("tool_call")),
            Just(json!("structured")),
            Just(json!("stream")),
            Just(json!("error")),
            Just(json!("image")),
            Just(json!(5)),
        ];
        let fields = prop::collection::btree_map(
            prop_oneof![
                Just("text"),
                Just("id"),
                Just("name"),
                Just("arguments"),
                Just("data"),
                Just("chunks"),
                Just("message"),
                Just("status"),
                Just("when"),
                Just("extra"),
            ],
            field_value(),
            0..4,
        );
        (prop::option::of(kind), fields).prop_map(|(kind, fields)| {
            let mut o = serde_json::Map::new();
            if let Some(k) = kind {
                o.insert("type".into(), k);
            }
            for (k, v) in fields {
                o.insert(k.into(), v);
            }
            Value::Object(o)
        })
    }

    proptest! {
        #[test]
        fn the_parser_and_the_schema_agree(entries in prop::collection::vec(entry(), 0..4), wrap in any::<bool>()) {
            let doc = if wrap {
                json!({"mode": "auto", "responses": entries})
            } else {
                Value::Array(entries)
            };
            let parsed = ScriptModel::from_value(&doc);
            prop_assert!(!matches!(parsed, Err(Error::Schema(_))), "parser accepted what the schema refused: {doc}");
            if validate(ConfigKind::Script, "s", &doc).is_err() {
                prop_assert!(parsed.is_err(), "schema refused, parser accepted: {doc}");
            } else {
                prop_assert!(parsed.is_ok(), "schema accepted, parser refused: {doc}: {:?}", parsed.err());
            }
        }
    }
}
