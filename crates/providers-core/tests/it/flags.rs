//! The flag metadata protocol: one round-trip per kind, and properties.

use std::collections::BTreeMap;

use proptest::prelude::*;
use providers_core::{
    Error, FlagKind, FlagSpec, FlagValue, build_cli_args_from_map, build_declarative_cli_args,
    parse_declarative_cli_args,
};
use serde_json::json;

const SPECS: &[FlagSpec] = &[
    FlagSpec::new("model", "--model", FlagKind::Value),
    FlagSpec::new("verbose", "--verbose", FlagKind::Bool),
    FlagSpec::new(
        "color",
        "--color",
        FlagKind::BoolPair {
            negative: "--no-color",
        },
    ),
    FlagSpec::new("add_dir", "--add-dir", FlagKind::ListArgs),
    FlagSpec::new("config", "--config-json", FlagKind::JsonValue),
    FlagSpec::new("tool", "--tool", FlagKind::Repeat),
    FlagSpec::new("image", "--image", FlagKind::RepeatJoined),
];

fn build(values: &[(&str, FlagValue)]) -> Result<Vec<String>, Error> {
    let map: BTreeMap<String, FlagValue> = values
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    build_cli_args_from_map(SPECS, &map)
}

fn roundtrip(field: &'static str, value: FlagValue, expect_argv: &[&str]) {
    let argv = build(&[(field, value.clone())]).expect("builds");
    assert_eq!(argv, expect_argv, "argv for {field}");
    let back = parse_declarative_cli_args(SPECS, &argv).expect("parses");
    assert_eq!(back.get(field), Some(&value), "round trip of {field}");
}

#[test]
fn value_kind_round_trips() {
    // contract: PRV-053
    roundtrip(
        "model",
        FlagValue::Str("claude sonnet; rm -rf /".into()),
        &["--model", "claude sonnet; rm -rf /"],
    );
    // A JSON scalar renders as its string.
    assert_eq!(
        build(&[("model", FlagValue::Json(json!(7)))]).unwrap(),
        ["--model", "7"]
    );
}

#[test]
fn bool_kind_emits_flag_only_when_true() {
    // contract: PRV-053
    roundtrip("verbose", FlagValue::Bool(true), &["--verbose"]);
    assert!(
        build(&[("verbose", FlagValue::Bool(false))])
            .unwrap()
            .is_empty()
    );
    assert!(build(&[]).unwrap().is_empty());
}

#[test]
fn bool_pair_kind_has_three_states() {
    // contract: PRV-054
    roundtrip("color", FlagValue::Bool(true), &["--color"]);
    roundtrip("color", FlagValue::Bool(false), &["--no-color"]);
    assert!(build(&[]).unwrap().is_empty(), "unset emits nothing");
}

#[test]
fn list_args_kind_is_one_flag_then_items() {
    // contract: PRV-055
    roundtrip(
        "add_dir",
        FlagValue::List(vec!["/abs/one".into(), "rel two".into()]),
        &["--add-dir", "/abs/one", "rel two"],
    );
}

#[test]
fn repeat_kind_repeats_the_flag() {
    // contract: PRV-055
    roundtrip(
        "tool",
        FlagValue::List(vec!["Bash".into(), "Read".into()]),
        &["--tool", "Bash", "--tool", "Read"],
    );
}

#[test]
fn repeat_joined_kind_gives_each_occurrence_one_value() {
    // A multi-value flag (codex's `-i/--image FILE...`) in its separate
    // form reads whatever follows as more values; joined, nothing is.
    roundtrip(
        "image",
        FlagValue::List(vec!["a.png".into(), "b c.png".into()]),
        &["--image=a.png", "--image=b c.png"],
    );
    let argv = build(&[
        ("image", FlagValue::List(vec!["a.png".into()])),
        ("model", FlagValue::Str("m".into())),
    ])
    .unwrap();
    assert!(argv.iter().all(|a| a != "--image"), "{argv:?}");
    assert!(build(&[("image", FlagValue::Str("a.png".into()))]).is_err());
    // A bare occurrence has no value to read.
    assert!(matches!(
        parse_declarative_cli_args(SPECS, &["--image".to_owned(), "x".to_owned()]),
        Err(Error::MissingFlagValue(_))
    ));
}

#[test]
fn json_value_kind_serialises_compactly() {
    // contract: PRV-056
    let v = json!({"mcpServers": {}, "list": [1, "two"]});
    roundtrip(
        "config",
        FlagValue::Json(v),
        &["--config-json", r#"{"list":[1,"two"],"mcpServers":{}}"#],
    );
}

#[test]
fn all_kinds_together_round_trip() {
    // contract: PRV-057
    let values = [
        ("model", FlagValue::Str("m".into())),
        ("verbose", FlagValue::Bool(true)),
        ("color", FlagValue::Bool(false)),
        ("add_dir", FlagValue::List(vec!["a".into(), "b".into()])),
        ("config", FlagValue::Json(json!([1, 2]))),
        ("tool", FlagValue::List(vec!["x".into()])),
    ];
    let argv = build(&values).unwrap();
    // Each set value appears in its kind's shape, not only as something the
    // library's own parser reads back.
    assert_eq!(
        argv,
        [
            "--model",
            "m",
            "--verbose",
            "--no-color",
            "--add-dir",
            "a",
            "b",
            "--config-json",
            "[1,2]",
            "--tool",
            "x"
        ]
    );
    let back = parse_declarative_cli_args(SPECS, &argv).unwrap();
    for (field, value) in values {
        assert_eq!(back.get(field), Some(&value), "{field}");
    }
}

#[test]
fn wrong_shapes_and_unknown_fields_are_typed_errors() {
    assert!(matches!(
        build(&[("verbose", FlagValue::Str("yes".into()))]),
        Err(Error::KindMismatch { kind: "bool", .. })
    ));
    assert!(matches!(
        build(&[("config", FlagValue::Json(json!("scalar")))]),
        Err(Error::KindMismatch {
            kind: "json_value",
            ..
        })
    ));
    assert_eq!(
        build(&[("nope", FlagValue::Bool(true))]),
        Err(Error::UnknownField("nope".into()))
    );
    assert_eq!(
        parse_declarative_cli_args(SPECS, &["--bogus".to_owned()]),
        Err(Error::UnknownFlag("--bogus".into()))
    );
    assert_eq!(
        parse_declarative_cli_args(SPECS, &["--model".to_owned()]),
        Err(Error::MissingFlagValue("--model".into()))
    );
}

fn json_leaf() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        ".*".prop_map(serde_json::Value::from),
    ]
}

fn json_container() -> impl Strategy<Value = serde_json::Value> {
    let inner = json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map(".*", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    });
    prop_oneof![
        prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
        prop::collection::btree_map(".*", inner, 0..4)
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
    ]
}

proptest! {
    #[test]
    fn json_value_always_round_trips(v in json_container()) {
        let argv = build_declarative_cli_args(SPECS, |f| (f == "config").then(|| FlagValue::Json(v.clone()))).unwrap();
        prop_assert_eq!(argv.len(), 2);
        let back: serde_json::Value = serde_json::from_str(&argv[1]).unwrap();
        prop_assert_eq!(back, v);
    }

    #[test]
    fn argv_is_never_a_shell_string(
        model in ".*",
        dirs in prop::collection::vec(".*", 0..4),
        tools in prop::collection::vec(".*", 0..4),
    ) {
        // Every value, whatever spaces, quotes or metacharacters it holds,
        // is exactly one argv element, verbatim: nothing is joined, split or
        // quoted for a shell.
        let argv = build(&[
            ("model", FlagValue::Str(model.clone())),
            ("add_dir", FlagValue::List(dirs.clone())),
            ("tool", FlagValue::List(tools.clone())),
        ]).unwrap();
        let mut expect = vec!["--model".to_owned(), model];
        if !dirs.is_empty() {
            expect.push("--add-dir".into());
            expect.extend(dirs);
        }
        for t in tools {
            expect.push("--tool".into());
            expect.push(t);
        }
        prop_assert_eq!(argv, expect);
    }
}
