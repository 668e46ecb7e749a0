//! The per-run notify outcome scope.

use std::sync::Arc;
use std::time::Duration;

use notify::{
    EntityRef, Level, Registry, RunDir, RunScope, SETTINGS_REGISTRATION,
    register_run_notify_outcome_scope, register_settings_terminal_callback, resolve_value,
};
use serde_json::json;

use crate::common::{envelope, multi_thread};

fn marker_hook(marker: &std::path::Path) -> serde_json::Value {
    json!({"adapter": {"kind": "exec", "argv": ["/bin/sh", "-c", "grep -o '\"id\":\"[^\"]*\"' >> \"$0\"", marker]}})
}

// contract: NTF-030
#[test]
fn none_says_only_that_nothing_was_registered() {
    let registry = Registry::default();
    let scope = RunScope::entity("session", "s1");
    let cases = [
        json!("hook | tee"), // refused
        json!({"enabled": false, "adapter": {"kind": "exec", "argv": ["hook"]}}), // disabled
        json!({"adapter": {"kind": "exec", "argv": ["hook"]}, "filter": {"ids": ["other"]}}), // excluded
    ];
    let mut written = Vec::new();
    for value in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = Arc::new(RunDir::new(dir.path()));
        let resolution = resolve_value(&value, Level::PerRun);
        assert_eq!(
            register_run_notify_outcome_scope(&registry, run.clone(), &scope, &resolution),
            None
        );
        written.push(run.read_outcome().expect("read").is_some());
    }
    // Same return value, different cases: only the run record tells.
    assert_eq!(written, [true, false, false]);
    assert!(registry.names().is_empty());
    let dir = tempfile::tempdir().expect("tempdir");
    let resolution = resolve_value(
        &json!({"adapter": {"kind": "exec", "argv": ["hook"]}}),
        Level::PerRun,
    );
    let name = register_run_notify_outcome_scope(
        &registry,
        Arc::new(RunDir::new(dir.path())),
        &scope,
        &resolution,
    );
    assert!(name.is_some());
    assert_eq!(registry.names(), [name.expect("name")]);
}

// contract: NTF-031
#[test]
fn a_refused_notifier_is_recorded_on_the_run_before_returning() {
    for (value, reason) in [
        (
            json!("hook && other"),
            "on_terminal_command_requires_shell_features",
        ),
        (json!("hook 'open"), "on_terminal_command_not_parseable"),
        (json!(""), "on_terminal_command_is_empty"),
        (
            json!({"adapter": {"kind": "python", "ref": "m:f"}}),
            "python_adapter_unsupported",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = Arc::new(RunDir::new(dir.path()));
        let registry = Registry::default();
        let resolution = resolve_value(&value, Level::PerRun);
        assert_eq!(
            register_run_notify_outcome_scope(
                &registry,
                run.clone(),
                &RunScope::entity("session", "s1"),
                &resolution
            ),
            None
        );
        let outcome = run
            .read_outcome()
            .expect("read")
            .expect("recorded before returning");
        assert!(!outcome.ok);
        assert_eq!(outcome.reason.as_deref(), Some(reason));
        assert_eq!(outcome.exit_code, None);
        assert_eq!(outcome.stderr_path, None);
    }
    // A run directory that cannot be written does not fail the run either.
    let resolution = resolve_value(&json!("a | b"), Level::PerRun);
    let gone = Arc::new(RunDir::new("/nonexistent/run/dir"));
    assert_eq!(
        register_run_notify_outcome_scope(
            &Registry::default(),
            gone,
            &RunScope::entity("session", "s1"),
            &resolution
        ),
        None
    );
}

// contract: NTF-032
#[test]
fn benign_cases_write_nothing_to_the_run() {
    for value in [
        None,
        Some(json!({"enabled": false, "adapter": {"kind": "exec", "argv": ["hook"]}})),
        Some(json!({"adapter": {"kind": "exec", "argv": ["hook"]}, "filter": {"kinds": ["play"]}})),
        Some(json!({"adapter": {"kind": "exec", "argv": ["hook"]}, "filter": {"ids": ["s2"]}})),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = Arc::new(RunDir::new(dir.path()));
        let resolution = notify::resolve_on_terminal(value.as_ref(), None, None);
        assert_eq!(
            register_run_notify_outcome_scope(
                &Registry::default(),
                run,
                &RunScope::entity("session", "s1"),
                &resolution
            ),
            None
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).expect("dir").count(),
            0,
            "{value:?} wrote something"
        );
    }
}

// contract: NTF-033
#[test]
fn the_scoped_registration_overrides_the_process_wide_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let global_marker = dir.path().join("global.log");
    let run_marker = dir.path().join("run.log");
    let registry = Registry::new(Duration::from_secs(10));
    assert!(register_settings_terminal_callback(
        &registry,
        &resolve_value(&marker_hook(&global_marker), Level::Global)
    ));
    let run_dir = tempfile::tempdir().expect("tempdir");
    let run = Arc::new(RunDir::new(run_dir.path()));
    let name = register_run_notify_outcome_scope(
        &registry,
        run.clone(),
        &RunScope::entity("session", "s1"),
        &resolve_value(&marker_hook(&run_marker), Level::PerRun),
    )
    .expect("registered");
    let runtime = multi_thread();
    let report = runtime.block_on(registry.emit(&envelope("session", "s1")));
    assert_eq!(report.fired, std::slice::from_ref(&name));
    let report = runtime.block_on(registry.emit(&envelope("session", "s2")));
    assert_eq!(report.fired, [SETTINGS_REGISTRATION]);
    assert_eq!(
        std::fs::read_to_string(&run_marker).expect("run fired"),
        "\"id\":\"s1\"\n"
    );
    assert_eq!(
        std::fs::read_to_string(&global_marker).expect("global fired"),
        "\"id\":\"s2\"\n"
    );
    let outcome = run
        .read_outcome()
        .expect("read")
        .expect("outcome recorded on the run");
    assert!(outcome.ok, "{outcome:?}");
    notify::unregister_run_notify_outcome_scope(&registry, Some(&name));
    assert_eq!(registry.names(), [SETTINGS_REGISTRATION]);
}

// contract: NTF-034
#[test]
fn the_scoped_registration_applies_the_configured_filter_itself() {
    let dir = tempfile::tempdir().expect("tempdir");
    let global_marker = dir.path().join("global.log");
    let run_marker = dir.path().join("run.log");
    let registry = Registry::new(Duration::from_secs(10));
    assert!(register_settings_terminal_callback(
        &registry,
        &resolve_value(&marker_hook(&global_marker), Level::Global)
    ));
    // The run covers its session and one invocation; the configured filter
    // accepts sessions only.
    let mut hook = marker_hook(&run_marker);
    hook["filter"] = json!({"kinds": ["session"]});
    let run_dir = tempfile::tempdir().expect("tempdir");
    let run = Arc::new(RunDir::new(run_dir.path()));
    let scope = RunScope {
        entities: vec![
            EntityRef::new("session", "s1"),
            EntityRef::new("invocation", "i1"),
        ],
    };
    let name = register_run_notify_outcome_scope(
        &registry,
        run.clone(),
        &scope,
        &resolve_value(&hook, Level::PerRun),
    )
    .expect("registered");
    let runtime = multi_thread();
    // The invocation is in the run's scope, so the override claims it (the
    // process-wide one stays silent), and its own filter drops it.
    let report = runtime.block_on(registry.emit(&envelope("invocation", "i1")));
    assert_eq!(report.fired, [name]);
    assert!(
        !run_marker.exists(),
        "the filtered envelope did not invoke the adapter"
    );
    assert!(!global_marker.exists());
    assert_eq!(run.read_outcome().expect("read"), None);
    runtime.block_on(registry.emit(&envelope("session", "s1")));
    assert_eq!(
        std::fs::read_to_string(&run_marker).expect("fired"),
        "\"id\":\"s1\"\n"
    );
}

// contract: NTF-013, NTF-031, NTF-033
#[test]
fn install_for_run_sets_up_both_registrations_and_records_refusals() {
    let dir = tempfile::tempdir().expect("tempdir");
    let global_marker = dir.path().join("global.log");
    let run_marker = dir.path().join("run.log");
    let global = json!({"notify": {"on_terminal": marker_hook(&global_marker)}});
    let registry = Registry::new(Duration::from_secs(10));
    let run_dir = tempfile::tempdir().expect("tempdir");
    let run = Arc::new(RunDir::new(run_dir.path()));
    let per_run = marker_hook(&run_marker);
    let installed = notify::install_for_run(
        &registry,
        Some(&per_run),
        None,
        notify::on_terminal_in(&global),
        run.clone(),
        &RunScope::entity("session", "s1"),
    );
    assert!(installed.settings_registered);
    assert!(installed.warnings().is_empty());
    let runtime = multi_thread();
    runtime.block_on(registry.emit(&envelope("session", "s1")));
    runtime.block_on(registry.emit(&envelope("session", "s2")));
    assert_eq!(
        std::fs::read_to_string(&run_marker).expect("run"),
        "\"id\":\"s1\"\n"
    );
    assert_eq!(
        std::fs::read_to_string(&global_marker).expect("global"),
        "\"id\":\"s2\"\n"
    );
    installed.uninstall(&registry);
    assert!(registry.names().is_empty());

    // A refused per-run value: recorded on the run, one warning, the
    // process-wide notifier still installed for other entities.
    let other_dir = tempfile::tempdir().expect("tempdir");
    let other = Arc::new(RunDir::new(other_dir.path()));
    let installed = notify::install_for_run(
        &registry,
        Some(&json!("hook; rm -rf /")),
        None,
        notify::on_terminal_in(&global),
        other.clone(),
        &RunScope::entity("session", "s3"),
    );
    assert_eq!(installed.run_registration, None);
    assert!(installed.settings_registered);
    assert_eq!(installed.warnings().len(), 1);
    assert!(!installed.warnings()[0].contains("rm -rf"));
    let outcome = other
        .read_outcome()
        .expect("read")
        .expect("refusal recorded");
    assert_eq!(
        outcome.reason.as_deref(),
        Some("on_terminal_command_requires_shell_features")
    );
    // The per-run level decided: the process-wide notifier stays silent for
    // this run's session, and still serves other entities.
    assert!(installed.silenced.is_some());
    runtime.block_on(registry.emit(&envelope("session", "s3")));
    runtime.block_on(registry.emit(&envelope("session", "s4")));
    assert_eq!(
        std::fs::read_to_string(&global_marker).expect("global"),
        "\"id\":\"s2\"\n\"id\":\"s4\"\n"
    );
    installed.uninstall(&registry);
    assert!(registry.names().is_empty());
}
