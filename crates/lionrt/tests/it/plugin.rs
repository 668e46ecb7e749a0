//! `lionrt plugin ...` end to end on a copy of the example bundle.

use std::path::Path;
use std::process::{Command, Output};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn plugin(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("plugin")
        .args(args)
        .arg("--settings")
        .arg(home.join("settings.yaml"))
        .arg("--plugins-dir")
        .arg(home.join("plugins"))
        .env_remove("LIONAGI_SETTINGS_FILE")
        .env_remove("LIONAGI_PLUGINS_DIR")
        .env("HOME", home)
        .output()
        .expect("lionrt")
}

fn state(home: &Path) -> String {
    let out = plugin(home, &["--json", "list"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    v["plugins"][0]["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn trust_verify_tamper_and_gc() {
    let home = tempfile::tempdir().expect("tempdir");
    let bundle = home.path().join("plugins").join("hello");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/plugins/hello"),
        &bundle,
    );
    assert_eq!(state(home.path()), "untrusted");
    let out = plugin(home.path(), &["trust", "hello"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "no --yes and no terminal: refused"
    );
    assert_eq!(state(home.path()), "untrusted");
    let out = plugin(home.path(), &["trust", "hello", "--yes"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(state(home.path()), "trusted");
    assert!(plugin(home.path(), &["verify", "hello"]).status.success());
    let show = plugin(home.path(), &["--json", "show", "hello"]);
    let v: serde_json::Value = serde_json::from_slice(&show.stdout).expect("json");
    let first = v["files"][0]["path"]
        .as_str()
        .expect("a declared file")
        .to_owned();
    std::fs::write(bundle.join(&first), "tampered\n").expect("tamper");
    assert_eq!(state(home.path()), "changed");
    assert_eq!(
        plugin(home.path(), &["verify", "hello"]).status.code(),
        Some(1)
    );
    std::fs::remove_dir_all(&bundle).expect("remove bundle");
    let out = plugin(home.path(), &["--json", "gc"]);
    let pruned: Vec<String> = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(pruned, ["hello"]);
    let out = plugin(home.path(), &["--json", "gc"]);
    let pruned: Vec<String> = serde_json::from_slice(&out.stdout).expect("json");
    assert!(pruned.is_empty(), "gc is idempotent");
}
