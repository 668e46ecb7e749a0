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

/// The trust record lionagi 0.36.0 itself wrote for the `hello` bundle
/// (`fixtures/plugins/li-written`) reads as trusted here, and the record
/// lionrt writes keys every file as li does (a hook's file `./hooks/...`),
/// so either tool's trust holds in the other (issue 25: it read `changed`).
/// An edit of the hook's file after li trusted it reads `changed`.
#[test]
fn a_record_lionagi_wrote_is_trusted_and_ours_is_keyed_as_lionagi_keys_it() {
    let home = tempfile::tempdir().expect("tempdir");
    let plugins = home.path().join("plugins");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/plugins");
    copy_dir(&fixtures.join("hello"), &plugins.join("hello"));
    let li_written =
        std::fs::read_to_string(fixtures.join("li-written/settings.yaml")).expect("li's record");
    let bundle = std::fs::canonicalize(plugins.join("hello")).expect("canonical");
    let settings = home.path().join("settings.yaml");
    std::fs::write(
        &settings,
        li_written.replace("@BUNDLE@", bundle.to_str().expect("utf-8")),
    )
    .expect("write");
    let state = |settings: &Path| {
        let out = plugin(settings, &plugins, &["--json", "ls"]);
        assert!(out.status.success(), "{out:?}");
        let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        listed["plugins"][0]["state"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(state(&settings), "trusted", "li's own record");

    let ours = home.path().join("ours.yaml");
    let out = plugin(&ours, &plugins, &["trust", "hello", "--yes"]);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&ours).expect("read");
    let keys = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("      ") && l.contains(": "))
            .map(|l| l.trim().split(": ").next().unwrap_or_default().to_owned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    assert_eq!(keys(&text), keys(&li_written), "{text}");
    assert!(text.contains("./hooks/audit.sh: "), "{text}");

    std::fs::write(plugins.join("hello/hooks/audit.sh"), "#!/bin/sh\nexit 0\n").expect("edit");
    assert_eq!(state(&settings), "changed", "an edited hook file");
}

/// The differential with lionagi 0.36.0 itself as the oracle, when
/// `LIONRT_TEST_LI` names its `li` (CI installs it): a plugin li trusts is
/// trusted here, one lionrt trusts is trusted (listed `active`) by li, and
/// an edit after either makes both say `changed`. Without `li` it says why
/// it did not run.
#[test]
fn trust_holds_across_li_and_lionrt_both_ways() {
    let Some(li) = std::env::var_os("LIONRT_TEST_LI") else {
        #[allow(clippy::print_stderr, reason = "a skipped test says why")]
        {
            eprintln!(
                "skipping the li trust differential: LIONRT_TEST_LI (the path of li) is not set"
            );
        }
        return;
    };
    let li_state = |home: &Path| -> String {
        let mut command = crate::offline(&li);
        let out = command
            .args(["plugin", "list"])
            .env("HOME", home)
            .env_remove("LIONAGI_HOME")
            .output()
            .expect("li");
        assert!(out.status.success(), "li plugin list: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .find(|l| l.starts_with("hello "))
            .and_then(|l| l.split_whitespace().nth(2))
            .unwrap_or_default()
            .to_owned()
    };
    let li_trust = |home: &Path| {
        let out = crate::offline(&li)
            .args(["plugin", "trust", "hello", "--yes"])
            .env("HOME", home)
            .env_remove("LIONAGI_HOME")
            .output()
            .expect("li");
        assert!(out.status.success(), "li plugin trust: {out:?}");
    };
    let ours = |home: &Path| -> String {
        let lionagi = home.join(".lionagi");
        let out = plugin(
            &lionagi.join("settings.yaml"),
            &lionagi.join("plugins"),
            &["--json", "ls"],
        );
        assert!(out.status.success(), "{out:?}");
        let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        listed["plugins"][0]["state"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/plugins/hello");
    let fresh = || {
        let home = tempfile::tempdir().expect("tempdir");
        copy_dir(&fixtures, &home.path().join(".lionagi/plugins/hello"));
        home
    };

    // li trusts, lionrt reads.
    let home = fresh();
    assert_eq!(li_state(home.path()), "untrusted");
    li_trust(home.path());
    assert_eq!(ours(home.path()), "trusted", "li's trust read by lionrt");
    // lionrt trusts, li reads.
    let home = fresh();
    let lionagi = home.path().join(".lionagi");
    let out = plugin(
        &lionagi.join("settings.yaml"),
        &lionagi.join("plugins"),
        &["trust", "hello", "--yes"],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(li_state(home.path()), "active", "lionrt's trust read by li");
    // An edit: both say changed.
    std::fs::write(lionagi.join("plugins/hello/hooks/audit.sh"), "#!/bin/sh\n").expect("edit");
    assert_eq!(li_state(home.path()), "changed");
    assert_eq!(ours(home.path()), "changed");
}
