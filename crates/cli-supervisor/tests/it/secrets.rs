//! Secret lookup rules, one test each.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use cli_supervisor::{
    ChildEnv, EnvPolicy, Leg, LegSpec, LookupConfig, SecretResolution, SettingsFile,
    fill_declared_secrets, parse_secret_lookup, reason,
};

use crate::support::{capture_logs, fixture, fnv1a_hex, next_json, runtime, script};

struct Store {
    dir: tempfile::TempDir,
}

impl Store {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn calls_path(&self) -> PathBuf {
        self.dir.path().join("calls.log")
    }

    /// Names the store was asked for, in order.
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.calls_path())
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// A settings.yaml whose lookup runs the stand-in store.
    fn settings(&self, names: &str) -> SettingsFile {
        let yaml = format!(
            "secrets:\n  lookup:\n    argv: [/bin/sh, {:?}, \"{{name}}\", {:?}]\n    names: {names}\n",
            script("secret-store.sh"),
            self.calls_path().to_string_lossy(),
        );
        self.write_settings(&yaml)
    }

    fn write_settings(&self, yaml: &str) -> SettingsFile {
        let path = self.dir.path().join("settings.yaml");
        std::fs::write(&path, yaml).expect("write settings");
        SettingsFile::at(path)
    }
}

fn explicit(pairs: &[(&str, &str)]) -> EnvPolicy {
    EnvPolicy::Explicit(ChildEnv::try_from_pairs(pairs.iter().copied()).expect("valid env"))
}

fn fill(config: &LookupConfig, env: EnvPolicy) -> (SecretResolution, String) {
    capture_logs(|| runtime().block_on(fill_declared_secrets(config, env)))
}

fn env_value(env: &EnvPolicy, name: &str) -> Option<String> {
    match env {
        EnvPolicy::Explicit(env) => env.get(name).map(|v| v.to_string_lossy().into_owned()),
        _ => None,
    }
}

#[test]
fn nothing_configured_returns_the_env_unchanged() {
    // contract: SUP-047
    // contract: SUP-050
    let store = Store::new();
    let missing = SettingsFile::at(store.dir.path().join("absent.yaml"));
    for config in [
        missing.secret_lookup(),
        parse_secret_lookup(""),
        parse_secret_lookup("other: 1\n"),
        parse_secret_lookup("secrets:\n  other: 1\n"),
    ] {
        assert_eq!(config, LookupConfig::NotConfigured);
        let (inherit, _) = fill(&config, EnvPolicy::Inherit);
        assert_eq!(inherit.env, EnvPolicy::Inherit, "None stays None");
        assert_eq!(inherit.reason, None);
        let (explicit_env, _) = fill(&config, explicit(&[("A", "1")]));
        assert_eq!(explicit_env.env, explicit(&[("A", "1")]));
    }
}

#[test]
fn disabled_lookup_has_no_reason_and_runs_nothing() {
    // contract: SUP-050
    let store = Store::new();
    let yaml = format!(
        "secrets:\n  lookup:\n    enabled: false\n    argv: [/bin/sh, {:?}, \"{{name}}\", {:?}]\n    names: [KEY_A]\n",
        script("secret-store.sh"),
        store.calls_path().to_string_lossy()
    );
    let config = store.write_settings(&yaml).secret_lookup();
    assert_eq!(config, LookupConfig::Disabled);
    let (resolution, _) = fill(&config, explicit(&[]));
    assert_eq!(resolution.reason, None);
    assert!(store.calls().is_empty());
}

/// Each refused shape: the reason, a stable identifier, and no store run.
fn check_refused(store: &Store, lookup_yaml: &str, expect: &'static str) {
    let config = store
        .write_settings(&format!("secrets:\n  lookup:\n{lookup_yaml}"))
        .secret_lookup();
    assert_eq!(config, LookupConfig::Rejected(expect), "{lookup_yaml}");
    let (resolution, logs) = fill(&config, explicit(&[]));
    assert_eq!(resolution.reason, Some(expect));
    assert!(resolution.resolved.is_empty());
    assert!(store.calls().is_empty(), "nothing was run");
    // Reasons never interpolate configured values.
    assert!(expect.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
    for configured in ["secret-store", "GOOD_NAME", "bad name"] {
        assert!(!expect.contains(configured));
        assert!(!logs.contains(configured), "{logs}");
    }
}

#[test]
fn argv_must_be_a_list_and_is_never_split() {
    // contract: SUP-053
    // contract: SUP-051
    let store = Store::new();
    let calls = store.calls_path().to_string_lossy().into_owned();
    check_refused(
        &store,
        &format!(
            "    argv: \"/bin/sh secret-store {{name}} {calls}; touch {calls}\"\n    names: [GOOD_NAME]\n"
        ),
        reason::ARGV_NOT_LIST,
    );
    check_refused(
        &store,
        "    argv: [/bin/sh, 5, \"{name}\"]\n    names: [GOOD_NAME]\n",
        reason::ARGV_NOT_STRINGS,
    );
    check_refused(
        &store,
        "    argv: []\n    names: [GOOD_NAME]\n",
        reason::ARGV_EMPTY,
    );
}

#[test]
fn lookup_without_a_name_placeholder_is_refused() {
    // contract: SUP-054
    // contract: SUP-051
    let store = Store::new();
    check_refused(
        &store,
        "    argv: [/bin/secret-store, -w]\n    names: [GOOD_NAME]\n",
        reason::NO_NAME_PLACEHOLDER,
    );
    check_refused(
        &store,
        "    argv: [\"{name}\"]\n    names: [GOOD_NAME]\n",
        reason::PROGRAM_VARIES,
    );
}

#[test]
fn program_may_not_vary_with_the_name() {
    // contract: SUP-055
    // contract: SUP-051
    let store = Store::new();
    check_refused(
        &store,
        "    argv: [\"/bin/secret-store-{name}\", \"{name}\"]\n    names: [GOOD_NAME]\n",
        reason::PROGRAM_VARIES,
    );
}

#[test]
fn one_malformed_name_refuses_the_whole_block() {
    // contract: SUP-052
    // contract: SUP-051
    let store = Store::new();
    let argv = format!(
        "    argv: [/bin/sh, {:?}, \"{{name}}\", {:?}]\n",
        script("secret-store.sh"),
        store.calls_path().to_string_lossy()
    );
    for names in [
        "[GOOD_NAME, \"bad name\"]",
        "[GOOD_NAME, 7]",
        "[GOOD_NAME, \"1ABC\"]",
        "GOOD_NAME",
        "[GOOD_NAME, \"A=B\"]",
    ] {
        let expect = if names.starts_with('[') {
            reason::MALFORMED_NAME
        } else {
            reason::NAMES_NOT_LIST
        };
        check_refused(&store, &format!("{argv}    names: {names}\n"), expect);
    }
}

#[test]
fn declared_names_are_looked_up_and_set_ones_never_overwritten() {
    // contract: SUP-056
    // contract: SUP-057
    // contract: SUP-058
    let store = Store::new();
    let config = store.settings("[KEY_A, KEY_B]").secret_lookup();
    let (resolution, _) = fill(
        &config,
        explicit(&[("PATH", "/bin"), ("KEY_B", "exported"), ("KEY_C", "x")]),
    );
    assert_eq!(resolution.reason, None);
    assert_eq!(resolution.resolved, vec!["KEY_A".to_owned()]);
    assert_eq!(resolution.already_set, vec!["KEY_B".to_owned()]);
    assert_eq!(
        env_value(&resolution.env, "KEY_A").as_deref(),
        Some("value-of-KEY_A")
    );
    assert_eq!(
        env_value(&resolution.env, "KEY_B").as_deref(),
        Some("exported")
    );
    // Only listed, unset names are ever requested from the store.
    assert_eq!(store.calls(), vec!["KEY_A".to_owned()]);

    // Inheriting: a variable this process exports (the child would see it)
    // also counts as set, and is neither looked up nor overwritten.
    assert!(std::env::var_os("PATH").is_some(), "PATH is set for tests");
    let store = Store::new();
    let config = store.settings("[PATH]").secret_lookup();
    let (resolution, _) = fill(&config, EnvPolicy::Inherit);
    assert_eq!(resolution.already_set, vec!["PATH".to_owned()]);
    assert!(resolution.resolved.is_empty());
    assert!(
        store.calls().is_empty(),
        "an exported variable is never looked up"
    );
    assert_ne!(
        env_value(&resolution.env, "PATH").as_deref(),
        Some("value-of-PATH")
    );
}

#[test]
fn a_failed_lookup_is_additive_and_its_stdout_is_discarded() {
    // contract: SUP-048
    // contract: SUP-060
    // contract: SUP-050
    let store = Store::new();
    let config = store
        .settings("[FAIL_KEY, EMPTY_KEY, KEY_OK]")
        .secret_lookup();
    let (resolution, logs) = fill(&config, explicit(&[("PATH", "/bin")]));
    assert_eq!(
        resolution.reason, None,
        "a store that fails is not a refused configuration"
    );
    assert_eq!(
        resolution.failed,
        vec!["FAIL_KEY".to_owned(), "EMPTY_KEY".to_owned()]
    );
    assert_eq!(resolution.resolved, vec!["KEY_OK".to_owned()]);
    assert_eq!(env_value(&resolution.env, "FAIL_KEY"), None);
    let rendered = format!("{resolution:?}");
    for place in [&logs, &rendered] {
        assert!(!place.contains("MARKER-STDOUT-ON-FAILURE"), "{place}");
    }
    let EnvPolicy::Explicit(env) = &resolution.env else {
        panic!("explicit env expected")
    };
    for name in ["PATH", "KEY_OK"] {
        let value = env
            .get(name)
            .map(|v| v.to_string_lossy().into_owned())
            .unwrap_or_default();
        assert!(!value.contains("MARKER"));
    }
}

#[test]
fn a_timed_out_lookup_discards_what_it_printed() {
    // contract: SUP-060
    // Another failure path: the store prints, then hangs past the timeout.
    let yaml = "secrets:\n  lookup:\n    argv: [/bin/sh, -c, \"echo MARKER-TIMEOUT-$0; exec sleep 30\", \"{name}\"]\n    names: [SLOW_KEY]\n";
    let LookupConfig::Ready(lookup) = parse_secret_lookup(yaml) else {
        panic!("a usable lookup")
    };
    let config = LookupConfig::Ready(lookup.with_timeout(std::time::Duration::from_millis(300)));
    let (resolution, logs) = fill(&config, explicit(&[("PATH", "/bin")]));
    assert_eq!(resolution.failed, vec!["SLOW_KEY".to_owned()]);
    assert!(resolution.resolved.is_empty());
    assert!(logs.contains("timed out"), "{logs}");
    let rendered = format!("{resolution:?}");
    for place in [&logs, &rendered] {
        assert!(!place.contains("MARKER-TIMEOUT"), "{place}");
    }
    assert_eq!(env_value(&resolution.env, "SLOW_KEY"), None);
}

#[test]
fn a_resolved_value_reaches_only_the_child_environment() {
    // contract: SUP-059
    // contract: SUP-056
    let store = Store::new();
    let config = store.settings("[CLI_SUPERVISOR_TEST_KEY]").secret_lookup();
    let (seen, logs) = capture_logs(|| {
        runtime().block_on(async {
            let resolution = fill_declared_secrets(&config, EnvPolicy::Inherit).await;
            assert_eq!(
                resolution.resolved,
                vec!["CLI_SUPERVISOR_TEST_KEY".to_owned()]
            );
            let rendered = format!("{resolution:?}");
            assert!(!rendered.contains("value-of-"), "{rendered}");
            let mut spec = LegSpec::new([fixture(), "env-hash", "CLI_SUPERVISOR_TEST_KEY", "PATH"]);
            spec.env = resolution.env;
            let spec_rendered = format!("{spec:?}");
            assert!(!spec_rendered.contains("value-of-"), "{spec_rendered}");
            let mut leg = Leg::spawn(spec).await.expect("spawn");
            let seen = next_json(&mut leg).await;
            leg.wait().await.expect("wait");
            seen
        })
    });
    // The child saw the value (its digest; echoing it back would be
    // redacted, see `redaction::a_leg_echoing_its_environment_*`).
    assert_eq!(
        seen["CLI_SUPERVISOR_TEST_KEY"],
        fnv1a_hex("value-of-CLI_SUPERVISOR_TEST_KEY")
    );
    // Inheriting env plus the secret: the parent's variables are still there.
    assert_eq!(
        seen["PATH"],
        fnv1a_hex(&std::env::var("PATH").unwrap_or_default())
    );
    assert!(!logs.contains("value-of-"), "{logs}");
    assert!(
        logs.contains("CLI_SUPERVISOR_TEST_KEY") && logs.contains("sh"),
        "{logs}"
    );
}

#[test]
fn only_the_global_settings_file_is_consulted() {
    // contract: SUP-049
    let home = tempfile::tempdir().expect("home");
    let project = Store::new();
    // A project-local block that would run the store if it were read.
    std::fs::create_dir_all(project.dir.path().join(".lionagi")).expect("mkdir");
    let local = project.settings("[KEY_A]");
    std::fs::rename(
        local.path(),
        project.dir.path().join(".lionagi/settings.yaml"),
    )
    .expect("move");

    let vars = |home: &Path, over: Option<&Path>| {
        let home = home.as_os_str().to_owned();
        let over = over.map(|p| p.as_os_str().to_owned());
        move |name: &str| -> Option<OsString> {
            match name {
                "HOME" => Some(home.clone()),
                SettingsFile::PATH_VAR => over.clone(),
                _ => None,
            }
        }
    };
    let global = SettingsFile::locate_with(vars(home.path(), None)).expect("located");
    assert_eq!(global.path(), home.path().join(".lionagi/settings.yaml"));
    let config = global.secret_lookup();
    assert_eq!(config, LookupConfig::NotConfigured);
    let (resolution, _) = fill(&config, explicit(&[]));
    assert!(resolution.resolved.is_empty());
    // A leg spawned inside the project (its cwd holds the project-local
    // block) resolves nothing from it either.
    let seen = runtime().block_on(async {
        let mut spec = LegSpec::new([fixture(), "env", "KEY_A"]);
        spec.cwd = Some(project.dir.path().to_owned());
        spec.secret_lookup = config.clone();
        spec.env = explicit(&[("PATH", "/bin")]);
        let mut leg = Leg::spawn(spec).await.expect("spawn");
        assert!(leg.resolved_secrets().is_empty());
        assert_eq!(leg.secret_lookup_reason(), None);
        let seen = next_json(&mut leg).await;
        leg.wait().await.expect("wait");
        seen
    });
    assert!(seen["KEY_A"].is_null(), "{seen}");
    assert!(
        project.calls().is_empty(),
        "the project-local program never ran"
    );

    let pointed = home.path().join("elsewhere.yaml");
    let overridden = SettingsFile::locate_with(vars(home.path(), Some(&pointed))).expect("located");
    assert_eq!(overridden.path(), pointed);
}

#[test]
fn each_spawn_resolves_secrets_exactly_once() {
    // contract: SUP-046
    let store = Store::new();
    let config = store.settings("[CLI_SUPERVISOR_SPAWN_KEY]").secret_lookup();
    runtime().block_on(async {
        for round in 1..=2 {
            let mut spec = LegSpec::new([fixture(), "env-hash", "CLI_SUPERVISOR_SPAWN_KEY"]);
            spec.secret_lookup = config.clone();
            spec.env = explicit(&[("PATH", "/bin")]);
            let mut leg = Leg::spawn(spec).await.expect("spawn");
            assert_eq!(
                leg.resolved_secrets(),
                ["CLI_SUPERVISOR_SPAWN_KEY".to_owned()]
            );
            assert_eq!(leg.secret_lookup_reason(), None);
            let seen = next_json(&mut leg).await;
            assert_eq!(
                seen["CLI_SUPERVISOR_SPAWN_KEY"],
                fnv1a_hex("value-of-CLI_SUPERVISOR_SPAWN_KEY")
            );
            leg.wait().await.expect("wait");
            assert_eq!(store.calls().len(), round, "one lookup per spawn");
        }
        let mut spec = LegSpec::new([fixture(), "env", "X"]);
        spec.secret_lookup = LookupConfig::Rejected(reason::MALFORMED_NAME);
        let leg = Leg::spawn(spec)
            .await
            .expect("a refused lookup does not stop the spawn");
        assert_eq!(leg.secret_lookup_reason(), Some(reason::MALFORMED_NAME));
        leg.wait().await.expect("wait");
    });
}
