//! The settings file: lock under concurrent writers (threads and
//! processes), other keys kept, a broken file never clobbered.

use std::process::{Command, Stdio};
use std::thread;

use plugin_trust::{Config, Error, Registry, SettingsFile, Target};
use serde_json::Value;

use crate::support::Env;

const CHILD_SETTINGS: &str = "PLUGIN_TRUST_TEST_CHILD_SETTINGS";
const CHILD_ID: &str = "PLUGIN_TRUST_TEST_CHILD_ID";
const PER_WRITER: usize = 12;

fn disabled_names(env: &Env) -> Vec<String> {
    let root: Value = serde_saphyr::from_str(&env.settings_text()).expect("parse");
    let mut names: Vec<String> = root["disabled_plugins"]
        .as_array()
        .expect("list")
        .iter()
        .map(|v| v.as_str().expect("name").to_owned())
        .collect();
    names.sort();
    names
}

fn expected(writers: &[String]) -> Vec<String> {
    let mut names: Vec<String> = writers
        .iter()
        .flat_map(|w| (0..PER_WRITER).map(move |j| format!("{w}-{j}")))
        .collect();
    names.sort();
    names
}

fn write_names(registry: &Registry, writer: &str) {
    for j in 0..PER_WRITER {
        registry
            .set_enabled(&format!("{writer}-{j}"), false)
            .expect("write under lock");
    }
}

/// Not a test on its own: the body of the child processes of
/// `concurrent_processes_lose_no_update`, which re-runs this binary.
#[test]
fn child_writer() {
    let (Some(path), Some(id)) = (
        std::env::var_os(CHILD_SETTINGS),
        std::env::var(CHILD_ID).ok(),
    ) else {
        return;
    };
    let registry = Registry::new(Config {
        settings_path: path.into(),
        ..Config::default()
    });
    write_names(&registry, &id);
}

#[test]
fn concurrent_threads_lose_no_update() {
    let env = Env::new();
    env.kit();
    env.write_settings("keep: me\n");
    let writers: Vec<String> = (0..6).map(|i| format!("t{i}")).collect();
    thread::scope(|scope| {
        for writer in &writers {
            let registry = env.registry();
            scope.spawn(move || write_names(&registry, writer));
        }
        let registry = env.registry();
        scope.spawn(move || {
            for _ in 0..5 {
                registry.trust("kit").expect("trust while others write");
            }
        });
    });
    assert_eq!(disabled_names(&env), expected(&writers));
    let root: Value = serde_saphyr::from_str(&env.settings_text()).expect("parse");
    assert_eq!(root["keep"], "me");
    assert!(root["trusted_plugins"]["kit"].is_object());
}

#[test]
fn concurrent_processes_lose_no_update() {
    let env = Env::new();
    let exe = std::env::current_exe().expect("test binary");
    let writers: Vec<String> = (0..4).map(|i| format!("proc{i}")).collect();
    let children: Vec<_> = writers
        .iter()
        .map(|id| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "settings::child_writer",
                    "--test-threads=1",
                    "--quiet",
                ])
                .env(CHILD_SETTINGS, &env.settings)
                .env(CHILD_ID, id)
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn child writer")
        })
        .collect();
    let registry = env.registry();
    write_names(&registry, "parent");
    for mut child in children {
        assert!(child.wait().expect("wait").success());
    }
    let mut all = writers.clone();
    all.push("parent".to_owned());
    assert_eq!(disabled_names(&env), expected(&all));
}

#[test]
fn a_broken_settings_file_refuses_and_is_never_clobbered() {
    let env = Env::new();
    env.kit();
    let registry = env.registry();
    registry.trust("kit").expect("trust");
    for broken in [
        "trusted_plugins: [1, 2]\n",
        "a: [unclosed\n",
        "- just a list\n",
        "disabled_plugins: 3\n",
    ] {
        env.write_settings(broken);
        let err = registry
            .activate("kit", &Target::Pack("packs/base.yaml".into()))
            .expect_err("broken settings");
        assert!(matches!(err, Error::SettingsRead { .. }), "{err}");
        assert!(!err.is_refusal());
        assert!(registry.trust("kit").is_err());
        assert!(registry.gc().is_err());
        assert_eq!(env.settings_text(), broken, "left as it was");
    }
}

#[test]
fn locate_prefers_the_variable_then_home() {
    let vars = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| std::ffi::OsString::from(v))
        }
    };
    let found = SettingsFile::locate_with(vars(&[
        ("LIONAGI_SETTINGS_FILE", "/x/s.yaml"),
        ("HOME", "/home/u"),
    ]))
    .expect("set");
    assert_eq!(found.path(), std::path::Path::new("/x/s.yaml"));
    let found = SettingsFile::locate_with(vars(&[("HOME", "/home/u")])).expect("home");
    assert_eq!(
        found.path(),
        std::path::Path::new("/home/u/.lionagi/settings.yaml")
    );
    assert!(SettingsFile::locate_with(vars(&[])).is_none());
    let config = Config::from_env_with(
        vars(&[("HOME", "/home/u"), ("LIONAGI_PLUGINS_DIR", "/p")]),
        Some(std::path::Path::new("/proj")),
    )
    .expect("config");
    assert_eq!(
        config.plugin_roots,
        [
            std::path::PathBuf::from("/p"),
            std::path::PathBuf::from("/proj/.lionagi/plugins")
        ]
    );
}

#[test]
fn an_unconfigured_settings_path_is_an_error_not_an_empty_file() {
    let env = Env::new();
    env.kit();
    let registry = Registry::new(Config {
        plugin_roots: vec![env.root.clone()],
        ..Config::default()
    });
    assert!(matches!(
        registry.trust("kit"),
        Err(Error::SettingsWrite { .. })
    ));
    assert!(matches!(
        registry.activate("kit", &Target::Pack("packs/base.yaml".into())),
        Err(Error::SettingsRead { .. })
    ));
}
