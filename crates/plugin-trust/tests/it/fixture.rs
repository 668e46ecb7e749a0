//! The example bundle under fixtures/plugins/hello stays valid.

use std::path::Path;

use plugin_trust::{ProviderFallback, Target, TrustState};

use crate::support::Env;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read fixture") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

#[test]
fn the_example_bundle_trusts_and_activates() {
    let env = Env::new();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/plugins/hello");
    copy_dir(&fixture, &env.root.join("hello"));
    let registry = env.registry();
    let list = registry.list().expect("list");
    assert!(list.problems.is_empty(), "{:?}", list.problems);
    assert_eq!(list.plugins[0].state, TrustState::Untrusted);
    registry.trust("hello").expect("trust");
    let tool = registry
        .activate("hello", &Target::Tool("greet".into()))
        .expect("tool");
    let out = tool.command().expect("cmd").output().expect("run");
    assert_eq!(out.stdout, b"hello from main\n");
    let hooks = registry
        .activate_hooks("hello", "PreToolUse")
        .expect("hooks");
    let out = hooks[0].command().output().expect("hook");
    assert_eq!(out.stdout, b"audit --event PreToolUse\n");
    let provider = ProviderFallback::new()
        .lookup(&registry, "hello")
        .expect("provider");
    assert_eq!(provider.definition.binary, "hello-cli");
}
