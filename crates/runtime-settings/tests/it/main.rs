//! The settings-file locator's precedence.

mod preserve;

use std::ffi::OsString;
use std::path::PathBuf;

use runtime_settings::{SETTINGS_PATH_VAR, locate_settings_with};

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| OsString::from(v))
    }
}

#[test]
fn the_variable_wins_then_home_then_nothing() {
    let both = vars(&[
        (SETTINGS_PATH_VAR, "/etc/lionrt.yaml"),
        ("HOME", "/home/ada"),
    ]);
    assert_eq!(
        locate_settings_with(both),
        Some(PathBuf::from("/etc/lionrt.yaml"))
    );
    let home = vars(&[("HOME", "/home/ada")]);
    assert_eq!(
        locate_settings_with(home),
        Some(PathBuf::from("/home/ada/.lionagi/settings.yaml"))
    );
    let empty_var = vars(&[(SETTINGS_PATH_VAR, ""), ("HOME", "/home/ada")]);
    assert_eq!(
        locate_settings_with(empty_var),
        Some(PathBuf::from("/home/ada/.lionagi/settings.yaml"))
    );
    assert_eq!(locate_settings_with(vars(&[("HOME", "")])), None);
    assert_eq!(locate_settings_with(vars(&[])), None);
}

/// One document, two owners: each section is read through its own view, a
/// malformed section of one owner does not hide the other's, and a write by
/// one keeps the other's keys.
#[test]
fn one_settings_file_serves_secret_lookup_and_plugin_trust() {
    use runtime_settings::{LookupConfig, SettingsFile, TrustRecord, reason};

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("settings.yaml");
    std::fs::write(
        &path,
        "secrets:\n  lookup:\n    argv: [store, get, \"{name}\"]\n    names: [API_KEY]\n\
         trusted_plugins: [not, a, mapping]\nother: kept\n",
    )
    .expect("write");
    let file = SettingsFile::at(&path);
    let settings = file.load().expect("load");
    let LookupConfig::Ready(lookup) = file.secret_lookup() else {
        panic!("lookup should be ready")
    };
    assert_eq!(lookup.names(), ["API_KEY"]);
    assert!(settings.check_plugin_sections().is_err());

    std::fs::write(
        &path,
        "secrets:\n  lookup:\n    argv: \"store get\"\n    names: [API_KEY]\nother: kept\n",
    )
    .expect("write");
    assert_eq!(
        file.secret_lookup(),
        LookupConfig::Rejected(reason::ARGV_NOT_LIST)
    );
    let record = TrustRecord {
        manifest: "m".repeat(64),
        targets: Default::default(),
        bundle_path: "/plugins/acme".to_owned(),
    };
    file.update(|s| {
        s.set_trust_record("acme", &record);
        s.set_plugin_disabled("acme", true);
    })
    .expect("update");
    let after = file.load().expect("reload");
    assert_eq!(after.trust_record("acme"), Some(record));
    assert!(after.is_plugin_disabled("acme"));
    assert_eq!(
        file.secret_lookup(),
        LookupConfig::Rejected(reason::ARGV_NOT_LIST),
        "the secrets section survives a plugin-trust write"
    );
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains("other: kept"), "{text}");

    std::fs::write(&path, [0xff, 0xfe]).expect("write");
    assert_eq!(
        file.secret_lookup(),
        LookupConfig::Rejected(reason::SETTINGS_UNREADABLE)
    );
    assert_eq!(
        SettingsFile::at(dir.path().join("absent.yaml")).secret_lookup(),
        LookupConfig::NotConfigured
    );
}
