//! Manifest parsing: the format, hostile manifests, the manifest hash.

use std::path::Path;

use plugin_trust::{Error, Manifest, parse_tool_target};

use crate::support::KIT_MANIFEST;

fn parse(yaml: &str) -> Result<Manifest, Error> {
    Manifest::parse(yaml.as_bytes(), Path::new("plugin.yaml"))
}

fn with_caps(caps: &str) -> String {
    format!("name: p\nversion: '1'\nlionagi: '>=0.9'\ncapabilities:\n{caps}")
}

fn check_refused(yaml: &str, needle: &str) {
    match parse(yaml) {
        Err(Error::ManifestInvalid { reason, .. }) => assert!(
            reason.contains(needle),
            "reason {reason:?} should mention {needle:?} for:\n{yaml}"
        ),
        other => panic!("expected a refusal mentioning {needle:?}, got {other:?} for:\n{yaml}"),
    }
}

#[test]
fn kit_manifest_parses_with_defaults_and_drops_x_keys() {
    let m = parse(KIT_MANIFEST).expect("kit parses");
    assert_eq!(m.name, "kit");
    assert_eq!(m.capabilities.tools[0].target, "bin/echo.sh:main");
    let declared: Vec<String> = m.declared_paths().into_iter().collect();
    assert_eq!(
        declared,
        [
            "agents/reviewer.md",
            "bin/echo.sh",
            "hooks/check.sh",
            "hooks/pre.sh",
            "packs/base.yaml",
            "playbooks/ship.yaml",
            "providers/acme.yaml",
        ]
    );
    let minimal = parse("name: hi\nversion: '1'\nlionagi: '>=0.9'\n").expect("minimal parses");
    assert_eq!(minimal.description, "");
    assert!(minimal.capabilities.tools.is_empty());
}

#[test]
fn manifest_hash_matches_python_canonical_json() {
    // Golden values from Python: hashlib.sha256(json.dumps(model_dump,
    // sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    let kit = parse(KIT_MANIFEST).expect("kit parses");
    assert_eq!(
        kit.sha256(),
        "731b932d2ac6a7920d93f68f3f3c72c9cf74a6c063eb63dfc7f5e8e106c8a312"
    );
    let minimal = parse("name: hi\nversion: '1'\nlionagi: '>=0.9'\n").expect("minimal");
    assert_eq!(
        minimal.sha256(),
        "b5e81df0385e6dbae397aa26d5fd0344246b56a8cb2f81a5f6733312241e11ee"
    );
    // Defaults written out explicitly and x- keys hash the same.
    let explicit = parse(
        "name: hi\nversion: '1'\ndescription: ''\nlionagi: '>=0.9'\nx-note: 1\n\
         capabilities: {tools: [], hooks_external: {}, agents: [], playbooks: [], packs: [], providers: []}\n",
    )
    .expect("explicit");
    assert_eq!(explicit.sha256(), minimal.sha256());
    let unicode = parse("name: hi\nversion: '1'\ndescription: \"café ☕ 𝄞\"\nlionagi: '>=0.9'\n")
        .expect("unicode");
    assert_eq!(
        unicode.sha256(),
        "212ca9bda9bd01dea012f707382f73a43603dc38e2848ada14ada1546516d056"
    );
}

#[test]
fn bad_names_are_refused() {
    for name in [
        "''",
        "Upper",
        "-lead",
        "a_b",
        "ab c",
        "é",
        &"a".repeat(33),
        "a.b",
    ] {
        check_refused(
            &format!("name: {name}\nversion: '1'\nlionagi: '>=0.9'\n"),
            "name",
        );
    }
    for name in ["a", "0", "a-1", &"b".repeat(32), "9lives"] {
        parse(&format!("name: '{name}'\nversion: '1'\nlionagi: '>=0.9'\n"))
            .unwrap_or_else(|e| panic!("{name} should be accepted: {e}"));
    }
}

#[test]
fn tool_targets_need_exactly_one_colon_and_an_identifier() {
    for target in [
        "bin/x.sh:a:b",
        "bin/x.sh",
        "bin/x.sh:",
        ":main",
        "bin/x.sh:1a",
        "bin/x.sh:a-b",
        "bin/x.sh:a b",
        "c:/x.sh:main",
    ] {
        assert!(
            parse_tool_target(target).is_err(),
            "{target} must be refused"
        );
        check_refused(
            &with_caps(&format!("  tools: [{{name: t, target: '{target}'}}]\n")),
            "",
        );
    }
    let ok = parse_tool_target("lib/tool.py:run_it").expect("valid");
    assert_eq!(
        (ok.path.as_str(), ok.callable.as_str()),
        ("lib/tool.py", "run_it")
    );
}

#[test]
fn path_traversal_is_refused_in_every_declared_kind() {
    let hostile = [
        "../../etc/passwd",
        "/etc/passwd",
        "a/../../b",
        "a//b",
        "./a",
        "a/./b",
        "a/",
        "..",
        "a\\..\\b",
    ];
    for path in hostile {
        for caps in [
            format!("  tools: [{{name: t, target: '{path}:main'}}]\n"),
            format!("  agents: ['{path}']\n"),
            format!("  playbooks: ['{path}']\n"),
            format!("  packs: ['{path}']\n"),
            format!("  providers: [{{module: '{path}'}}]\n"),
            format!(
                "  hooks_external: {{Stop: [{{hooks: [{{type: command, command: ['./{path}']}}]}}]}}\n"
            ),
        ] {
            check_refused(&with_caps(&caps), "");
        }
    }
    // A hook argument without `./` is an ordinary argument, shown in full.
    parse(&with_caps(
        "  hooks_external: {Stop: [{hooks: [{type: command, command: [/bin/cat, /etc/passwd]}]}]}\n",
    ))
    .expect("plain absolute arguments are data");
}

#[test]
fn unknown_keys_are_errors_except_top_level_x_keys() {
    check_refused(
        "name: p\nversion: '1'\nlionagi: '>=0.9'\nrun_on_load: true\n",
        "unknown field",
    );
    check_refused(&with_caps("  x-extra: []\n"), "unknown field");
    check_refused(
        &with_caps("  tools: [{name: t, target: 'a:b', shell: true}]\n"),
        "unknown field",
    );
    check_refused(
        &with_caps(
            "  hooks_external: {Stop: [{hooks: [{type: command, command: [a], env: {}}]}]}\n",
        ),
        "unknown field",
    );
    parse("name: p\nversion: '1'\nlionagi: '>=0.9'\nx-anything: {deep: [1]}\n")
        .expect("x- dropped");
}

#[test]
fn malformed_shapes_are_refused() {
    check_refused("name: p\nversion: '1'\n", "lionagi");
    check_refused("- a list\n", "mapping");
    check_refused(
        &with_caps("  hooks_external: {Stop: [{hooks: [{type: command, command: []}]}]}\n"),
        "empty argv",
    );
    check_refused(
        &with_caps("  hooks_external: {Stop: [{hooks: [{type: shell, command: [a]}]}]}\n"),
        "",
    );
    check_refused(
        &with_caps("  tools: [{name: t, target: 'a:b'}, {name: t, target: 'c:d'}]\n"),
        "twice",
    );
    assert!(Manifest::parse(b"name: \xff\n", Path::new("plugin.yaml")).is_err());
}

#[test]
fn alias_bombs_and_deep_nesting_are_refused_quickly() {
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let prev = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
        ));
    }
    bomb.push_str("name: p\nversion: '1'\nlionagi: '>=0.9'\n");
    assert!(parse(&bomb).is_err());
    // Deep nesting must come back as a value or an error, never overflow
    // the stack.
    let deep = format!(
        "name: p\nversion: '1'\nlionagi: '>=0.9'\nx-deep: {}{}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let _ = parse(&deep);
}

#[test]
fn a_refusal_names_the_json_path_from_the_published_schema() {
    let err = parse("name: Bad_Name\nversion: '1'\nlionagi: '>=0.9'\ncapabilities:\n  tools: [{name: t, target: nocolon}]\n")
        .expect_err("refused");
    let Error::ManifestInvalid { path, reason } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(path, Path::new("plugin.yaml"));
    assert!(reason.contains("at /name"), "{reason}");
    assert!(
        reason.contains("at /capabilities/tools/0/target"),
        "{reason}"
    );
    // A provider definition likewise.
    let err =
        plugin_trust::ProviderDefinition::parse(b"name: ok\nbinary: b\nenv_keys: ['NOT OK']\n")
            .expect_err("refused");
    assert!(err.contains("at /env_keys/0"), "{err}");
}
