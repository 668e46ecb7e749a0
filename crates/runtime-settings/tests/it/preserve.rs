//! Writes keep the user's file: only the keys a write owns change; comments,
//! key order, formatting, the file's mode and a symlinked dotfile survive.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;

use proptest::prelude::*;
use runtime_settings::{Settings, SettingsFile, TrustRecord};

/// A settings file as people keep them: comments everywhere, sections the
/// plugin verbs do not own, odd quoting and spacing.
const HEAD: &str = "\
# ~/.lionagi/settings.yaml -- kept in my dotfiles repo
# (do not reformat: reviewed by hand)

secrets:
  # the pass(1) store, one secret per name
  lookup:
    argv: [pass, show, \"{name}\"]   # inline comment kept
    names:
      - ANTHROPIC_API_KEY
      - OPENAI_API_KEY

notify:
    on_terminal:   [desktop]     # four-space indent on purpose
    'quiet hours': \"22:00-07:00\"

# Plugins I trust (managed by `lionrt plugin trust`):
";
const TRUSTED: &str = "\
trusted_plugins:
  old-plugin:
    manifest: aaaa
    targets: {}
    bundle_path: /plugins/old
";
const TAIL: &str = "
# unrelated trailing section
zeta: last   # order matters to me
";

fn record(path: &str) -> TrustRecord {
    TrustRecord {
        manifest: "b".repeat(64),
        targets: BTreeMap::from([("hooks.py".to_owned(), Some("c".repeat(64)))]),
        bundle_path: path.to_owned(),
    }
}

fn commented_file() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("settings.yaml");
    std::fs::write(&path, format!("{HEAD}{TRUSTED}{TAIL}")).expect("write");
    (dir, path)
}

#[test]
fn trust_changes_only_trusted_plugins_byte_for_byte() {
    let (_dir, path) = commented_file();
    let file = SettingsFile::at(&path);
    file.update(|s| s.set_trust_record("acme", &record("/plugins/acme")))
        .expect("trust");
    let text = std::fs::read_to_string(&path).expect("read");
    // Byte-identical outside `trusted_plugins`.
    assert!(text.starts_with(HEAD), "head kept:\n{text}");
    assert!(text.ends_with(TAIL), "tail kept:\n{text}");
    let middle = &text[HEAD.len()..text.len() - TAIL.len()];
    assert!(middle.starts_with("trusted_plugins:"), "{middle}");
    let settings = file.load().expect("load");
    assert_eq!(settings.trust_record("acme"), Some(record("/plugins/acme")));
    assert!(
        settings
            .trust_record_names()
            .contains(&"old-plugin".to_owned())
    );
    let runtime_settings::LookupConfig::Ready(lookup) = settings.secret_lookup() else {
        panic!("the lookup section still reads")
    };
    assert_eq!(lookup.names(), ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]);

    // Untrusting everything drops the block and nothing else.
    file.update(|s| {
        s.remove_trust_record("acme");
        s.remove_trust_record("old-plugin");
    })
    .expect("untrust");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.starts_with(HEAD) && text.ends_with(TAIL), "{text}");
}

#[test]
fn disable_adds_its_key_and_keeps_every_other_byte() {
    let (_dir, path) = commented_file();
    let before = std::fs::read_to_string(&path).expect("read");
    let file = SettingsFile::at(&path);
    file.update(|s| s.set_plugin_disabled("acme", true))
        .expect("disable");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.starts_with(&before), "appended only:\n{text}");
    assert!(file.load().expect("load").is_plugin_disabled("acme"));
    // Enabling again empties the list in place; the rest is untouched.
    file.update(|s| s.set_plugin_disabled("acme", false))
        .expect("enable");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.starts_with(&before), "{text}");
    assert!(!file.load().expect("load").is_plugin_disabled("acme"));
    // A change that changes nothing writes nothing.
    let mtime = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .expect("mtime");
    file.update(|s| s.set_plugin_disabled("acme", false))
        .expect("no-op");
    assert_eq!(
        std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .expect("mtime"),
        mtime
    );
}

#[test]
fn the_files_mode_survives_and_a_new_file_is_owner_only() {
    let (dir, path) = commented_file();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    SettingsFile::at(&path)
        .update(|s| s.set_trust_record("acme", &record("/p")))
        .expect("trust");
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);

    let fresh = dir.path().join("new/settings.yaml");
    SettingsFile::at(&fresh)
        .update(|s| s.set_plugin_disabled("x", true))
        .expect("create");
    let mode = std::fs::metadata(&fresh)
        .expect("meta")
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_symlinked_dotfile_stays_a_link_and_its_target_is_updated() {
    let (dir, real) = commented_file();
    let home = dir.path().join("home/.lionagi");
    std::fs::create_dir_all(&home).expect("mkdir");
    let link = home.join("settings.yaml");
    // A relative link, as dotfile managers make them.
    std::os::unix::fs::symlink("../../settings.yaml", &link).expect("symlink");
    SettingsFile::at(&link)
        .update(|s| s.set_trust_record("acme", &record("/p")))
        .expect("trust");
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink(),
        "still a link"
    );
    let text = std::fs::read_to_string(&real).expect("read target");
    assert!(text.starts_with(HEAD) && text.ends_with(TAIL), "{text}");
    assert!(
        SettingsFile::at(&link)
            .load()
            .expect("load")
            .trust_record("acme")
            .is_some()
    );
}

#[test]
fn a_flow_style_file_is_rendered_whole_and_still_right() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("settings.yaml");
    std::fs::write(
        &path,
        r#"{"other": {"k": [1, 2]}, "disabled_plugins": ["a"]}"#,
    )
    .expect("write");
    let file = SettingsFile::at(&path);
    file.update(|s| s.set_plugin_disabled("b", true))
        .expect("disable");
    let back = file.load().expect("load");
    assert!(back.is_plugin_disabled("a") && back.is_plugin_disabled("b"));
    let text = std::fs::read_to_string(&path).expect("read");
    assert_eq!(
        Settings::from_yaml(&text).expect("parse"),
        Settings::from_yaml("other: {k: [1, 2]}\ndisabled_plugins: [a, b]\n").expect("parse")
    );
}

fn key() -> impl Strategy<Value = String> {
    "[a-z][a-z_]{0,8}"
}

fn block(k: &str, n: u8, comment: bool) -> String {
    let c = if comment { "   # note" } else { "" };
    match n % 3 {
        0 => format!("{k}: {n}{c}\n"),
        1 => format!("{k}:{c}\n  inner: v{n}\n  list:\n    - x\n"),
        _ => format!("{k}:\n- a{n}\n- b{c}\n"),
    }
}

proptest! {
    /// Whatever the other keys look like, trusting a plugin leaves every
    /// line outside `trusted_plugins` as it was and the document says
    /// exactly what was asked.
    #[test]
    fn other_keys_survive_any_trust_change(
        keys in prop::collection::btree_set(key(), 0..6),
        shapes in prop::collection::vec((any::<u8>(), any::<bool>(), any::<bool>()), 6),
        with_trusted in any::<bool>(),
        position in 0usize..7,
        remove in any::<bool>(),
    ) {
        let keys: Vec<String> = keys
            .into_iter()
            .filter(|k| k != "trusted_plugins")
            .collect();
        let mut parts: Vec<String> = keys
            .iter()
            .zip(&shapes)
            .map(|(k, (n, c, blank))| {
                let lead = if *blank { "\n# about this key\n" } else { "" };
                format!("{lead}{}", block(k, *n, *c))
            })
            .collect();
        if with_trusted {
            let at = position.min(parts.len());
            parts.insert(at, TRUSTED.to_owned());
        }
        let original = format!("# header\n{}", parts.concat());
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("settings.yaml");
        std::fs::write(&path, &original).expect("write");
        let file = SettingsFile::at(&path);
        let mut expected = file.load().expect("load");
        let change = |s: &mut Settings| {
            if remove {
                s.remove_trust_record("old-plugin");
            } else {
                s.set_trust_record("acme", &record("/p"));
            }
        };
        change(&mut expected);
        file.update(change).expect("update");
        let text = std::fs::read_to_string(&path).expect("read");
        prop_assert_eq!(file.load().expect("load"), expected);
        // Every line of the original outside the trusted block survives,
        // in order.
        let kept: Vec<&str> = original
            .lines()
            .filter(|l| !TRUSTED.lines().any(|t| t == *l))
            .collect();
        let now: Vec<&str> = text.lines().collect();
        let mut it = now.iter();
        for line in &kept {
            prop_assert!(it.any(|l| l == line), "lost {:?} in\n{}", line, text);
        }
    }
}

#[test]
fn check_names_the_file_the_json_path_and_the_expectation() {
    let (dir, path) = commented_file();
    // The commented file is valid.
    SettingsFile::at(&path).check().expect("valid");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "# mine\nsecrets:\n  lookup:\n    argv: \"pass show s3cr3t-value\"\ndisabled_plugins: [ok, 7]\n",
    )
    .expect("write");
    let err = SettingsFile::at(&bad).check().expect_err("refused");
    let text = err.to_string();
    assert!(text.contains(&*bad.to_string_lossy()), "{text}");
    assert!(
        text.contains("/secrets/lookup/argv") && text.contains("array"),
        "{text}"
    );
    assert!(
        text.contains("/disabled_plugins/1") && text.contains("string"),
        "{text}"
    );
    assert!(
        !text.contains("s3cr3t-value"),
        "values are not echoed: {text}"
    );
    // Loading stays lenient: the sections are read by their own views.
    assert!(SettingsFile::at(&bad).load().is_ok());
}

#[test]
fn a_malformed_plugin_section_is_refused_with_its_json_path() {
    let settings = Settings::from_yaml("# c\ndisabled_plugins: [ok, 7]\nother: {secret: s3cr3t}\n")
        .expect("parse");
    let reason = settings.check_plugin_sections().expect_err("refused");
    assert!(
        reason.contains("'disabled_plugins' is not a list of names"),
        "{reason}"
    );
    assert!(
        reason.contains("at /disabled_plugins/1") && reason.contains("string"),
        "{reason}"
    );
    assert!(!reason.contains("s3cr3t"), "{reason}");
    let ok = Settings::from_yaml("disabled_plugins: [a]\ntrusted_plugins: {}\n").expect("parse");
    assert_eq!(ok.check_plugin_sections(), Ok(()));
}
