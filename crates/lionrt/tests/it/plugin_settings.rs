//! `lionrt plugin trust|disable|enable|untrust|gc` keep the user's
//! settings file: a file full of comments and unrelated sections, kept as a
//! symlink into a dotfiles directory with mode 0640, is byte-identical
//! afterwards outside the keys the verbs own.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Output};

const HEAD: &str = "\
# my settings -- in git, reviewed by hand
secrets:
  lookup:                      # pass(1)
    argv: [pass, show, \"{name}\"]
    names: [ANTHROPIC_API_KEY]

notify:
    on_terminal: [desktop]     # four spaces, on purpose

";
const TAIL: &str = "
# keep last
zeta: 1
";

fn plugin(settings: &Path, plugins: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lionrt"))
        .arg("plugin")
        .args(args)
        .arg("--settings")
        .arg(settings)
        .arg("--plugins-dir")
        .arg(plugins)
        .env_remove("LIONAGI_SETTINGS_FILE")
        .env_remove("LIONAGI_PLUGINS_DIR")
        .output()
        .expect("lionrt")
}

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

#[test]
fn plugin_verbs_change_only_the_keys_they_own() {
    let home = tempfile::tempdir().expect("tempdir");
    let plugins = home.path().join("plugins");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/plugins/hello"),
        &plugins.join("hello"),
    );
    let dotfiles = home.path().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).expect("mkdir");
    let real = dotfiles.join("settings.yaml");
    std::fs::write(&real, format!("{HEAD}{TAIL}")).expect("write");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let lionagi = home.path().join(".lionagi");
    std::fs::create_dir_all(&lionagi).expect("mkdir");
    let link = lionagi.join("settings.yaml");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");

    let kept = |what: &str| {
        let text = std::fs::read_to_string(&real).expect("read");
        assert!(text.starts_with(HEAD), "{what}: head changed:\n{text}");
        assert!(
            text.contains(TAIL),
            "{what}: unrelated tail changed:\n{text}"
        );
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("meta")
                .file_type()
                .is_symlink(),
            "{what}: the dotfile is still a link"
        );
        let mode = std::fs::metadata(&real).expect("meta").permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640, "{what}: mode kept");
        text
    };
    for args in [
        &["trust", "hello", "--yes"][..],
        &["disable", "hello"],
        &["enable", "hello"],
    ] {
        let out = plugin(&link, &plugins, args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        kept(&args.join(" "));
    }
    let text = kept("after enable");
    assert!(text.contains("trusted_plugins:"), "{text}");
    // gc drops the record of a bundle that is gone; untrust of the last
    // one leaves the owner's bytes exactly as they were, plus the verbs'
    // own (now empty) keys.
    std::fs::remove_dir_all(plugins.join("hello")).expect("rm bundle");
    let out = plugin(&link, &plugins, &["gc"]);
    assert!(out.status.success(), "{out:?}");
    let text = kept("after gc");
    assert!(!text.contains("hello:"), "record collected:\n{text}");
    let out = plugin(&link, &plugins, &["untrust", "hello"]);
    assert!(out.status.code().is_some(), "{out:?}");
    kept("after untrust");
}
