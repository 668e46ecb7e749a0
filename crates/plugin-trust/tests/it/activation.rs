//! Activation: lazy stages, fresh revalidation, tamper refusal per declared
//! file kind, the cache, and execution from sealed copies.

use std::fs::FileTimes;
use std::process::Command;
use std::time::{Duration, SystemTime};

use plugin_trust::{Error, Registry, Target};

use crate::support::{Env, KIT_MANIFEST, sha256_hex};

fn tool() -> Target {
    Target::Tool("echo".into())
}

fn every_target() -> Vec<Target> {
    vec![
        tool(),
        Target::Agent("agents/reviewer.md".into()),
        Target::Playbook("playbooks/ship.yaml".into()),
        Target::Pack("packs/base.yaml".into()),
        Target::Provider("providers/acme.yaml".into()),
    ]
}

fn trusted_kit() -> (Env, Registry) {
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    registry.trust("kit").expect("trust");
    (env, registry)
}

fn run_tool(registry: &Registry) -> String {
    let activation = registry.activate("kit", &tool()).expect("activate tool");
    let out = activation
        .command()
        .expect("executable")
        .output()
        .expect("run");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).expect("utf8")
}

#[test]
fn creating_a_registry_scans_nothing() {
    // contract: PLG-001
    let env = Env::new();
    let registry = env.registry();
    assert!(!registry.is_discovered());
    // Installed after construction, still found by the first consumer.
    env.kit();
    assert!(!registry.is_discovered());
    assert_eq!(registry.discovered_names(), ["kit"]);
    assert!(registry.is_discovered());
}

#[test]
fn discovery_runs_once_and_is_cached() {
    // contract: PLG-002
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    assert_eq!(registry.discovered_names(), ["kit"]);
    env.bundle("late", "name: late\nversion: '1'\nlionagi: '>=0.9'\n", &[]);
    assert_eq!(
        registry.discovered_names(),
        ["kit"],
        "cached for the registry's life"
    );
    assert_eq!(registry.list().expect("list").plugins.len(), 1);
    registry.rediscover();
    assert_eq!(registry.discovered_names(), ["kit", "late"]);
}

#[test]
fn discovery_and_trust_operations_never_load_a_target() {
    // contract: PLG-003
    let env = Env::new();
    env.kit();
    // Discovery does not read targets: an unreadable target does not stop it.
    std::fs::remove_file(env.file("kit", "bin/echo.sh")).expect("rm");
    let registry = env.registry();
    assert_eq!(registry.list().expect("list").plugins.len(), 1);
    env.write("kit", "bin/echo.sh", b"#!/bin/sh\necho \"echo:$1\"\n");
    registry.show("kit").expect("show");
    registry.trust("kit").expect("trust");
    registry.verify("kit").expect("verify");
    assert_eq!(
        registry.cache_stats().loads,
        0,
        "nothing loaded before activation"
    );
    // Activating one capability loads that one only.
    registry
        .activate("kit", &Target::Agent("agents/reviewer.md".into()))
        .expect("agent");
    assert_eq!(registry.cache_stats().loads, 1);
    registry
        .activate_hooks("kit", "NoSuchEvent")
        .expect("no hooks for an unrelated event");
    assert_eq!(
        registry.cache_stats().loads,
        1,
        "an unrelated event loads nothing"
    );
    run_tool(&registry);
    assert_eq!(registry.cache_stats().loads, 2);
}

#[test]
fn every_call_rereads_manifest_settings_and_declared_files() {
    // contract: PLG-004
    let (env, registry) = trusted_kit();
    let agent = Target::Agent("agents/reviewer.md".into());
    registry.activate("kit", &agent).expect("first");
    // A declared file that is not the target: still re-read.
    env.write("kit", "playbooks/ship.yaml", b"steps: [ship-it-now]\n");
    assert!(matches!(
        registry.activate("kit", &agent),
        Err(Error::Changed { .. })
    ));
    env.write(
        "kit",
        "playbooks/ship.yaml",
        b"steps: [build, test, ship]\n",
    );
    registry
        .activate("kit", &agent)
        .expect("restored content is trusted again");
    // The settings file: removing the record by hand takes effect at once.
    let text = env.settings_text();
    env.write_settings("trusted_plugins: {}\n");
    assert!(matches!(
        registry.activate("kit", &agent),
        Err(Error::Untrusted { .. })
    ));
    env.write_settings(&text);
    registry.activate("kit", &agent).expect("record back");
    // The manifest: an incompatible specifier, edited and re-trusted, is
    // refused on the next call.
    let manifest = env.file("kit", "plugin.yaml");
    std::fs::write(&manifest, KIT_MANIFEST.replace(">=0.9, <2", "<1.0")).expect("edit");
    registry.trust("kit").expect("re-trust");
    assert!(matches!(
        registry.activate("kit", &agent),
        Err(Error::Incompatible { .. })
    ));
}

#[test]
fn disabling_stops_an_activated_target_at_the_next_call() {
    // contract: PLG-005
    let (_env, registry) = trusted_kit();
    assert_eq!(run_tool(&registry), "echo:main\n");
    registry.set_enabled("kit", false).expect("disable");
    for target in every_target() {
        let err = registry.activate("kit", &target).expect_err("disabled");
        assert!(matches!(err, Error::Disabled { .. }), "{err}");
    }
    assert!(matches!(
        registry.activate_hooks("kit", "PreToolUse"),
        Err(Error::Disabled { .. })
    ));
    registry.set_enabled("kit", true).expect("enable");
    assert_eq!(run_tool(&registry), "echo:main\n");
}

/// Tampering any one declared file (or the manifest) refuses every target.
#[test]
fn tampering_any_declared_file_kind_refuses_every_target() {
    // contract: PLG-006
    let cases = [
        ("bin/echo.sh", "tool"),
        ("hooks/pre.sh", "hook program"),
        ("hooks/check.sh", "hook argument"),
        ("agents/reviewer.md", "agent"),
        ("playbooks/ship.yaml", "playbook"),
        ("packs/base.yaml", "pack"),
        ("providers/acme.yaml", "provider"),
    ];
    for (rel, kind) in cases {
        let (env, registry) = trusted_kit();
        for target in every_target() {
            registry.activate("kit", &target).expect("trusted");
        }
        assert_eq!(
            registry
                .activate_hooks("kit", "PreToolUse")
                .expect("hooks")
                .len(),
            2
        );
        let original = std::fs::read(env.file("kit", rel)).expect("read");
        let mut tampered = original.clone();
        tampered.extend_from_slice(b"# tampered\n");
        env.write("kit", rel, &tampered);
        for target in every_target() {
            let err = registry.activate("kit", &target).expect_err(kind);
            assert!(
                matches!(&err, Error::Changed { what, .. } if what.contains(rel)),
                "{kind}: {err}"
            );
        }
        assert!(
            registry.activate_hooks("kit", "PreToolUse").is_err(),
            "{kind}"
        );
        // Deleting it is a refusal too.
        std::fs::remove_file(env.file("kit", rel)).expect("rm");
        assert!(matches!(
            registry.activate("kit", &Target::Pack("packs/base.yaml".into())),
            Err(Error::Unreadable { .. } | Error::Changed { .. })
        ));
    }
}

#[test]
fn tampering_the_manifest_refuses_every_target() {
    // contract: PLG-006, PLG-011
    let (env, registry) = trusted_kit();
    registry.activate("kit", &tool()).expect("trusted");
    // The registry discovered the old manifest; the edit must still count.
    assert!(registry.is_discovered());
    let manifest = env.file("kit", "plugin.yaml");
    std::fs::write(&manifest, KIT_MANIFEST.replace("--flag", "--other-flag")).expect("edit");
    for target in every_target() {
        let err = registry
            .activate("kit", &target)
            .expect_err("manifest changed");
        assert!(
            matches!(&err, Error::Changed { what, .. } if what.contains("manifest")),
            "{err}"
        );
    }
    let report = registry.verify("kit").expect("verify");
    assert!(!report.manifest.matches);
    assert_ne!(report.manifest.current, report.manifest.recorded);
    // A cosmetic YAML change that parses to the same manifest stays trusted.
    std::fs::write(&manifest, format!("# comment\n{KIT_MANIFEST}")).expect("edit");
    registry
        .activate("kit", &tool())
        .expect("same parsed manifest");
}

#[test]
fn the_hashed_bytes_are_the_bytes_handed_out() {
    // contract: PLG-007
    let (env, registry) = trusted_kit();
    for target in every_target() {
        let activation = registry.activate("kit", &target).expect("activate");
        let on_disk = std::fs::read(env.file("kit", activation.path())).expect("read");
        assert_eq!(activation.bytes(), on_disk.as_slice());
        assert_eq!(activation.sha256(), sha256_hex(activation.bytes()));
    }
    let activation = registry.activate("kit", &tool()).expect("tool");
    let sealed = activation
        .sealed_bytes()
        .expect("tool is sealed")
        .expect("read back");
    assert_eq!(sealed, activation.bytes());
    // Swapping the file after activation changes nothing that runs.
    let command_before = activation.command();
    env.write("kit", "bin/echo.sh", b"#!/bin/sh\necho evil\n");
    let out = command_before.expect("cmd").output().expect("run");
    assert_eq!(out.stdout, b"echo:main\n");
}

#[test]
fn a_retrusted_edit_in_the_same_second_runs_the_new_content() {
    // contract: PLG-008
    let (env, registry) = trusted_kit();
    let path = env.file("kit", "bin/echo.sh");
    let stamp = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let pin = || {
        let file = std::fs::File::options()
            .write(true)
            .open(&path)
            .expect("open");
        file.set_times(FileTimes::new().set_modified(stamp).set_accessed(stamp))
            .expect("set times");
    };
    pin();
    registry.trust("kit").expect("trust");
    assert_eq!(run_tool(&registry), "echo:main\n");
    // Same length, same mtime: only the bytes differ.
    env.write("kit", "bin/echo.sh", b"#!/bin/sh\necho \"ECHO:$1\"\n");
    pin();
    registry.trust("kit").expect("re-trust");
    assert_eq!(run_tool(&registry), "ECHO:main\n");
}

#[test]
fn load_results_are_cached_per_content_hash_failures_included() {
    // contract: PLG-009
    let (env, registry) = trusted_kit();
    run_tool(&registry);
    run_tool(&registry);
    let stats = registry.cache_stats();
    assert_eq!((stats.loads, stats.hits), (1, 1));
    // A definition that does not load fails once and is not retried.
    env.write(
        "kit",
        "providers/acme.yaml",
        b"name: acme-cli\nbinary: ../escape\n",
    );
    registry.trust("kit").expect("trust the broken definition");
    let provider = Target::Provider("providers/acme.yaml".into());
    for _ in 0..3 {
        let err = registry.activate("kit", &provider).expect_err("broken");
        assert!(matches!(err, Error::Load { .. }), "{err}");
    }
    let stats = registry.cache_stats();
    assert_eq!((stats.loads, stats.hits), (2, 3));
}

#[test]
fn retrusting_changed_content_is_a_cache_miss_without_eviction() {
    // contract: PLG-010
    let (env, registry) = trusted_kit();
    assert_eq!(run_tool(&registry), "echo:main\n");
    let original = std::fs::read(env.file("kit", "bin/echo.sh")).expect("read");
    env.write("kit", "bin/echo.sh", b"#!/bin/sh\necho \"v2:$1\"\n");
    registry.trust("kit").expect("re-trust v2");
    assert_eq!(run_tool(&registry), "v2:main\n");
    assert_eq!(registry.cache_stats().loads, 2, "new hash, new load");
    // Back to the first content: its entry was never evicted and is reused.
    env.write("kit", "bin/echo.sh", &original);
    registry.trust("kit").expect("re-trust v1");
    assert_eq!(run_tool(&registry), "echo:main\n");
    assert_eq!(registry.cache_stats().loads, 2);
}

#[test]
fn rescan_rereads_the_manifest_from_disk() {
    // contract: PLG-011
    let (env, registry) = trusted_kit();
    registry.activate("kit", &tool()).expect("trusted");
    // Point the tool at another (existing, unpinned) file: the cached
    // discovery still holds the old manifest, the rescan must not.
    env.write("kit", "bin/other.sh", b"#!/bin/sh\necho other\n");
    std::fs::write(
        env.file("kit", "plugin.yaml"),
        KIT_MANIFEST.replace("bin/echo.sh:main", "bin/other.sh:main"),
    )
    .expect("edit");
    let err = registry
        .activate("kit", &tool())
        .expect_err("manifest changed");
    assert!(matches!(err, Error::Changed { .. }), "{err}");
    let shown = registry.show("kit").expect("show");
    assert_eq!(shown.tools[0].resolved.path, "bin/other.sh");
}

#[test]
fn hooks_run_from_sealed_copies_with_full_argv() {
    let (_env, registry) = trusted_kit();
    let hooks = registry.activate_hooks("kit", "PreToolUse").expect("hooks");
    let outputs: Vec<String> = hooks
        .iter()
        .map(|h| {
            let out = h.command().output().expect("run hook");
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).expect("utf8")
        })
        .collect();
    assert_eq!(outputs, ["pre --flag\n", "check arg with spaces\n"]);
    assert_eq!(hooks[0].matcher, "Bash");
    assert!(
        registry
            .activate_hooks("kit", "Other")
            .expect("none")
            .is_empty()
    );
}

#[test]
fn unknown_plugins_and_targets_are_refused() {
    let (_env, registry) = trusted_kit();
    assert!(matches!(
        registry.activate("nope", &tool()),
        Err(Error::UnknownPlugin { .. })
    ));
    for target in [
        Target::Tool("missing".into()),
        Target::Agent("packs/base.yaml".into()),
        Target::Pack("../../etc/passwd".into()),
        Target::Provider("agents/reviewer.md".into()),
    ] {
        assert!(
            matches!(
                registry.activate("kit", &target),
                Err(Error::UnknownTarget { .. })
            ),
            "{target:?}"
        );
    }
}

#[test]
fn untrusted_plugins_never_activate() {
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    for target in every_target() {
        let err = registry.activate("kit", &target).expect_err("untrusted");
        assert!(matches!(err, Error::Untrusted { .. }));
        assert!(err.is_refusal());
    }
    assert!(registry.activate_hooks("kit", "PreToolUse").is_err());
    assert_eq!(registry.cache_stats().loads, 0);
}

#[test]
fn sealed_copies_are_open_only_in_the_child_that_runs_them() {
    let (_env, registry) = trusted_kit();
    let activation = registry.activate("kit", &tool()).expect("tool");
    let list_fds = "for f in /proc/self/fd/*; do readlink \"$f\"; done";
    // Another child spawned while the activation is alive inherits nothing.
    let other = Command::new("/bin/sh")
        .args(["-c", list_fds])
        .output()
        .expect("run");
    let listing = String::from_utf8_lossy(&other.stdout);
    assert!(!listing.contains("memfd:"), "leaked: {listing}");
    // The sealed copy cannot be written through, even by its owner.
    let sealed_path = activation
        .command()
        .expect("cmd")
        .get_program()
        .to_string_lossy()
        .into_owned();
    assert!(sealed_path.starts_with("/proc/self/fd/"));
    if let Ok(mut file) = std::fs::OpenOptions::new().write(true).open(&sealed_path) {
        use std::io::Write;
        assert!(file.write_all(b"#!/bin/sh\necho evil\n").is_err(), "sealed");
    }
    assert_eq!(
        activation.sealed_bytes().expect("sealed").expect("read"),
        activation.bytes()
    );
}

#[test]
fn a_long_tool_path_still_runs() {
    let env = Env::new();
    let rel = format!("{}tool.sh", "deep-directory/".repeat(20));
    env.bundle(
        "long",
        &format!(
            "name: long\nversion: '1'\nlionagi: '>=0.9'\ncapabilities:\n  tools: [{{name: t, target: '{rel}:go'}}]\n"
        ),
        &[(rel.as_str(), "#!/bin/sh\necho \"ran $1\"\n")],
    );
    let registry = env.registry();
    registry.trust("long").expect("trust");
    let activation = registry
        .activate("long", &Target::Tool("t".into()))
        .expect("activate");
    let out = activation.command().expect("cmd").output().expect("run");
    assert_eq!(out.stdout, b"ran go\n");
}
