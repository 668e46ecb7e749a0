//! Property tests over the one tool-target parser.

use std::path::Path;

use plugin_trust::{Manifest, parse_tool_target};
use proptest::prelude::*;

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_.-]{1,8}",
        Just("..".to_owned()),
        Just(".".to_owned()),
        Just(String::new()),
        Just("a:b".to_owned()),
    ]
}

fn target() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(segment(), 1..4),
        prop_oneof![Just("/".to_owned()), Just(String::new())],
        prop_oneof![
            "[A-Za-z_][A-Za-z0-9_]{0,6}",
            "[0-9:-][a-z]{0,3}",
            Just(String::new())
        ],
        prop_oneof![Just(":"), Just("::"), Just("")],
    )
        .prop_map(|(parts, lead, callable, sep)| {
            format!("{lead}{}{sep}{callable}", parts.join("/"))
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn resolution_and_hashing_agree_on_every_target(t in target()) {
        // contract: PLG-012
        let yaml = format!(
            "name: p\nversion: '1'\nlionagi: '>=0.9'\ncapabilities:\n  tools: [{{name: t, target: {}}}]\n",
            serde_json::to_string(&t).expect("quote")
        );
        match (parse_tool_target(&t), Manifest::parse(yaml.as_bytes(), Path::new("plugin.yaml"))) {
            (Ok(parsed), Ok(manifest)) => {
                let resolved = manifest.resolve_tool("t").expect("resolves");
                prop_assert_eq!(&resolved, &parsed);
                let declared = manifest.declared_paths();
                prop_assert!(declared.contains(&resolved.path));
                prop_assert_eq!(declared.len(), 1);
                prop_assert_eq!(format!("{}:{}", parsed.path, parsed.callable), t);
            }
            (Err(_), Err(_)) => {}
            (a, b) => prop_assert!(false, "parser and manifest disagree on {t:?}: {a:?} / {b:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Hostile manifest text never panics: it parses or is refused.
    #[test]
    fn arbitrary_manifest_text_never_panics(text in "(name|version|lionagi|capabilities|tools|target|x-|:|-|\\[|\\]|\\{|\\}|'|\"|&a|\\*a|\n| |[a-z./]{1,4}){0,60}") {
        let _ = Manifest::parse(text.as_bytes(), Path::new("plugin.yaml"));
    }

    /// Arbitrary bytes never panic either.
    #[test]
    fn arbitrary_manifest_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = Manifest::parse(&bytes, Path::new("plugin.yaml"));
    }
}
