//! Hostile bundles on disk: symlinks out of the bundle, FIFOs, devices.

use std::os::unix::fs::symlink;

use plugin_trust::{Error, Target};

use crate::support::Env;

const MANIFEST: &str =
    "name: evil\nversion: '1'\nlionagi: '>=0.9'\ncapabilities:\n  agents: [agents/a.md]\n";

fn assert_unreadable(env: &Env) {
    let registry = env.registry();
    let err = registry.trust("evil").expect_err("refused");
    assert!(
        matches!(&err, Error::Unreadable { path, .. } if path == "agents/a.md"),
        "{err}"
    );
    assert!(!env.settings.exists());
    let shown = registry.show("evil").expect("show still discloses");
    assert!(shown.files[0].sha256.is_none());
}

#[test]
fn a_symlinked_file_escaping_the_bundle_is_refused() {
    let env = Env::new();
    let dir = env.bundle("evil", MANIFEST, &[]);
    std::fs::create_dir_all(dir.join("agents")).expect("mkdir");
    symlink("/etc/passwd", dir.join("agents/a.md")).expect("symlink");
    assert_unreadable(&env);
}

#[test]
fn a_symlinked_directory_escaping_the_bundle_is_refused() {
    let env = Env::new();
    let outside = env.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("a.md"), "secret").expect("write");
    let dir = env.bundle("evil", MANIFEST, &[]);
    symlink(&outside, dir.join("agents")).expect("symlink");
    assert_unreadable(&env);
}

#[test]
fn a_symlink_swapped_in_after_trust_is_refused() {
    let env = Env::new();
    let dir = env.bundle("evil", MANIFEST, &[("agents/a.md", "fine")]);
    let registry = env.registry();
    registry.trust("evil").expect("trust");
    // Same content, but reached through a symlink to outside the bundle.
    let outside = env.tmp.path().join("copy.md");
    std::fs::write(&outside, "fine").expect("write");
    std::fs::remove_file(dir.join("agents/a.md")).expect("rm");
    symlink(&outside, dir.join("agents/a.md")).expect("symlink");
    let err = registry
        .activate("evil", &Target::Agent("agents/a.md".into()))
        .expect_err("symlink");
    assert!(matches!(err, Error::Unreadable { .. }), "{err}");
}

#[test]
fn fifos_and_devices_are_refused_without_blocking() {
    let env = Env::new();
    let dir = env.bundle("evil", MANIFEST, &[]);
    std::fs::create_dir_all(dir.join("agents")).expect("mkdir");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        dir.join("agents/a.md"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .expect("mkfifo");
    assert_unreadable(&env);
    std::fs::remove_file(dir.join("agents/a.md")).expect("rm");
    symlink("/dev/zero", dir.join("agents/a.md")).expect("symlink");
    assert_unreadable(&env);
}

#[test]
fn an_oversized_file_is_refused() {
    let env = Env::new();
    let big = "x".repeat(100_000);
    env.bundle("evil", MANIFEST, &[("agents/a.md", big.as_str())]);
    let registry = plugin_trust::Registry::new(plugin_trust::Config {
        max_file_size: 4096,
        ..env.config()
    });
    let err = registry.trust("evil").expect_err("too large");
    assert!(matches!(err, Error::Unreadable { .. }), "{err}");
}
