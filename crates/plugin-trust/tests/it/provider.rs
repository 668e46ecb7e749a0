//! The provider registry fallback: plugin providers only through
//! activation, dropped as soon as their target stops being trusted.

use plugin_trust::{ProviderDefinition, ProviderFallback};

use crate::support::Env;

#[test]
fn a_miss_finds_a_trusted_plugin_provider_by_name_or_alias() {
    // contract: PRV-039
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    let fallback = ProviderFallback::new();
    assert!(
        fallback.lookup(&registry, "acme-cli").is_none(),
        "untrusted: not consulted"
    );
    registry.trust("kit").expect("trust");
    let found = fallback.lookup(&registry, "acme").expect("alias");
    assert_eq!(found.plugin, "kit");
    assert_eq!(found.definition.binary, "acme");
    assert_eq!(found.definition.env_keys, ["ACME_API_KEY"]);
    assert!(fallback.lookup(&registry, "acme-cli").is_some());
    assert!(
        fallback.lookup(&registry, "unknown-provider").is_none(),
        "generic fallback"
    );
    assert_eq!(fallback.remembered(), ["acme", "acme-cli"]);
}

#[test]
fn a_plugin_entry_is_dropped_when_its_target_stops_being_trusted() {
    // contract: PRV-043, PRV-039
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    registry.trust("kit").expect("trust");
    let fallback = ProviderFallback::new();
    fallback.lookup(&registry, "acme-cli").expect("found");
    env.write(
        "kit",
        "providers/acme.yaml",
        b"name: acme-cli\nbinary: /tmp/evil\n",
    );
    assert!(fallback.lookup(&registry, "acme-cli").is_none());
    assert!(fallback.remembered().is_empty());
    registry.trust("kit").expect("re-trust");
    let found = fallback
        .lookup(&registry, "acme-cli")
        .expect("trusted again");
    assert_eq!(found.definition.binary, "/tmp/evil");
    registry.set_enabled("kit", false).expect("disable");
    assert!(fallback.lookup(&registry, "acme-cli").is_none());
    assert!(fallback.remembered().is_empty());
}

#[test]
fn provider_modules_load_only_on_a_miss_and_once() {
    // contract: PRV-040, PRV-041
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    registry.trust("kit").expect("trust");
    let fallback = ProviderFallback::new();
    assert_eq!(registry.discovered_names(), ["kit"]);
    assert_eq!(
        registry.provider_modules("kit").expect("declared"),
        ["providers/acme.yaml"]
    );
    assert_eq!(
        registry.cache_stats().loads,
        0,
        "discovery and listing load no provider module"
    );
    fallback.lookup(&registry, "acme-cli").expect("found");
    let first = registry.cache_stats();
    assert_eq!(first.loads, 1, "the miss loaded the module once");
    for _ in 0..3 {
        fallback.lookup(&registry, "acme-cli").expect("remembered");
        fallback.lookup(&registry, "acme").expect("alias");
        assert!(
            fallback
                .lookup(&registry, "not-a-plugin-provider")
                .is_none()
        );
    }
    let later = registry.cache_stats();
    assert_eq!(
        later.loads, 1,
        "repeated misses reuse the cached activation"
    );
    assert!(later.hits > first.hits, "answered from the cache");
}

#[test]
fn no_matching_plugin_falls_back_exactly_as_with_no_plugins() {
    let bare = Env::new();
    let with_kit = Env::new();
    with_kit.kit();
    let with_kit_registry = with_kit.registry();
    with_kit_registry.trust("kit").expect("trust");
    for name in ["openai", "unknown-provider", ""] {
        assert_eq!(ProviderFallback::new().lookup(&bare.registry(), name), None);
        assert_eq!(
            ProviderFallback::new().lookup(&with_kit_registry, name),
            None,
            "{name:?}"
        );
    }
}

#[test]
fn provider_definitions_are_validated_data() {
    let ok = ProviderDefinition::parse(
        b"{\"name\": \"x\", \"binary\": \"/usr/bin/x\", \"args\": [\"-q\"]}",
    )
    .expect("json is yaml");
    assert!(ok.answers_to("x"));
    for bad in [
        "name: x\nbinary: ./run.sh\n",
        "name: x\nbinary: bin/run\n",
        "name: x\nbinary: ''\n",
        "name: 'a b'\nbinary: x\n",
        "name: x\nbinary: x\nenv_keys: [lower]\n",
        "name: x\nbinary: x\ncode: 'import os'\n",
        "name: x\nbinary: x\nkind: python\n",
    ] {
        assert!(ProviderDefinition::parse(bad.as_bytes()).is_err(), "{bad}");
    }
}
