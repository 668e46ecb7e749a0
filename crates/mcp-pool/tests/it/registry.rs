//! Registration against a previous listing: the remembered verdicts and the
//! fresh ones (judged on several threads when there are many) must give
//! exactly the registry a listing judged from scratch gives.

use mcp_pool::{ListedTool, Registry};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A narrow lookup tool (admitted) or an executor-shaped one (refused).
/// The description depends on the variant alone, so a change of kind
/// changes only the schema and a change of variant only the description.
fn descriptor(name: String, executor: bool, variant: u8) -> ListedTool {
    if executor {
        ListedTool {
            name,
            description: Some(format!("Tool, variant {variant}.")),
            input_schema: json!({
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"]
            }),
        }
    } else {
        ListedTool {
            name,
            description: Some(format!("Tool, variant {variant}.")),
            input_schema: json!({
                "type": "object",
                "properties": {"record_id": {"type": "string", "maxLength": 64}},
                "required": ["record_id"],
                "additionalProperties": false
            }),
        }
    }
}

fn listing(spec: &[(bool, u8)]) -> Vec<ListedTool> {
    spec.iter()
        .enumerate()
        .map(|(i, &(executor, variant))| descriptor(format!("tool_{i}"), executor, variant))
        .collect()
}

/// What a registry says: admitted names, and denied names with reasons.
fn verdicts(registry: &Registry) -> (Vec<String>, Vec<(String, String)>) {
    (
        registry.admitted().map(|t| t.name().to_owned()).collect(),
        registry
            .denied()
            .iter()
            .map(|d| (d.name.clone(), d.reason.code().to_owned()))
            .collect(),
    )
}

#[test]
fn the_descriptors_cover_both_verdicts() {
    let registry = Registry::admit("s", listing(&[(false, 0), (true, 0)]), None);
    let (admitted, denied) = verdicts(&registry);
    assert_eq!(admitted, ["tool_0"]);
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(denied[0].0, "tool_1");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Up to 200 tools, each changed or not since the previous listing
    /// (in kind, in description, or dropped from it), so both the
    /// remembered path and the threaded fresh path are taken.
    #[test]
    fn a_relisting_registers_what_a_fresh_listing_registers(
        spec in prop::collection::vec((any::<bool>(), 0u8..3), 0..200),
        before in prop::collection::vec(prop::option::of((any::<bool>(), 0u8..3)), 0..200),
    ) {
        let previous_spec: Vec<(String, bool, u8)> = before
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.map(|(e, v)| (format!("tool_{i}"), e, v)))
            .collect();
        let previous = Registry::admit(
            "s",
            previous_spec
                .into_iter()
                .map(|(name, e, v)| descriptor(name, e, v))
                .collect(),
            None,
        );
        let now = listing(&spec);
        let warm = Registry::admit("s", now.clone(), Some(&previous));
        let cold = Registry::admit("s", now, None);
        prop_assert_eq!(verdicts(&warm), verdicts(&cold));
        let schemas = |r: &Registry| -> Vec<Value> {
            r.admitted().map(|t| t.input_schema().clone()).collect()
        };
        prop_assert_eq!(schemas(&warm), schemas(&cold));
    }
}
