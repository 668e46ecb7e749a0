//! The exec adapter with real processes: process group, teardown and
//! reaping on timeout and cancellation, stderr capture, redaction.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

use notify::{Argv, Ending, ExecAdapter, Handler, Registration, Registry, RunDir, reason};

use crate::common::{
    capture_logs, current_thread, envelope, multi_thread, pgid_of_stat, proc_state, read_pid,
    wait_gone,
};

fn argv(words: &[&str]) -> Argv {
    Argv::new(words.iter().map(|w| (*w).to_owned()).collect()).expect("non-empty")
}

/// A script that records its pid (and a background grandchild's) and then
/// ignores SIGTERM and hangs, so only the SIGKILL pass can end it.
fn stubborn(dir: &std::path::Path) -> (Argv, std::path::PathBuf, std::path::PathBuf) {
    let pid = dir.join("pid");
    let child = dir.join("child");
    let script = "trap '' TERM; sleep 1000 & echo $! > \"$1\"; echo $$ > \"$0\"; wait; sleep 1000";
    let p = pid.display().to_string();
    let c = child.display().to_string();
    (argv(&["/bin/sh", "-c", script, &p, &c]), pid, child)
}

// contract: NTF-021
#[test]
fn the_child_runs_in_its_own_process_group_with_the_envelope_on_stdin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stat = dir.path().join("stat");
    let stdin = dir.path().join("stdin.json");
    let adapter = ExecAdapter::new(argv(&[
        "/bin/sh",
        "-c",
        "cat /proc/$$/stat > \"$0\"; cat > \"$1\"",
        &stat.display().to_string(),
        &stdin.display().to_string(),
    ]));
    let report = multi_thread()
        .block_on(adapter.call(&envelope("session", "s1")))
        .expect("call");
    assert!(report.ok(), "{report:?}");
    let stat = std::fs::read_to_string(&stat).expect("stat");
    let own_group = rustix::process::getpgrp().as_raw_nonzero().get();
    assert_eq!(
        pgid_of_stat(&stat),
        report.pid,
        "the child leads its own group"
    );
    assert_ne!(pgid_of_stat(&stat), own_group);
    let read =
        notify::RunTerminalEnvelope::from_json(&std::fs::read_to_string(&stdin).expect("stdin"))
            .expect("the envelope on stdin");
    assert_eq!(read, envelope("session", "s1"));
    assert!(wait_gone(report.pid, true));
}

// contract: NTF-022
#[test]
fn the_calls_own_timeout_ends_and_reaps_the_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (argv, pid_file, child_file) = stubborn(dir.path());
    let run = Arc::new(RunDir::new(dir.path()));
    let adapter = ExecAdapter::new(argv)
        .timeout(Duration::from_millis(500))
        .grace(Duration::from_millis(200))
        .record_to(run.clone());
    let report = multi_thread()
        .block_on(adapter.call(&envelope("session", "s1")))
        .expect("call");
    assert_eq!(report.ending, Ending::TimedOut);
    assert_eq!(
        report.signal,
        Some(9),
        "SIGTERM was ignored, SIGKILL ended it"
    );
    let pid = read_pid(&pid_file);
    assert_eq!(pid, report.pid);
    // The call returned only after the teardown reaped the child.
    assert_eq!(proc_state(pid), None, "no live or zombie child");
    let grandchild = read_pid(&child_file);
    assert!(
        wait_gone(grandchild, false),
        "the group's other member is gone"
    );
    let outcome = run.read_outcome().expect("read").expect("recorded");
    assert_eq!(outcome.reason.as_deref(), Some(reason::TIMED_OUT));
}

// contract: NTF-022
#[test]
fn the_registry_deadline_ends_and_reaps_the_child() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (argv, pid_file, child_file) = stubborn(dir.path());
    // The registry's deadline fires before the call's own (longer) timeout.
    let registry = Registry::new(Duration::from_millis(400));
    let run = Arc::new(RunDir::new(dir.path()));
    registry.register(Registration::new(
        "hook",
        ExecAdapter::new(argv)
            .timeout(Duration::from_secs(60))
            .grace(Duration::from_millis(200))
            .record_to(run.clone())
            .into_handler(),
    ));
    let runtime = multi_thread();
    let report = runtime.block_on(registry.emit(&envelope("session", "s1")));
    assert_eq!(report.timed_out, ["hook"]);
    let pid = read_pid(&pid_file);
    let grandchild = read_pid(&child_file);
    assert!(
        wait_gone(pid, true),
        "the child was reaped after the deadline"
    );
    assert!(wait_gone(grandchild, false));
    // The detached task records the cancellation once it has reaped.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    let outcome = loop {
        if let Some(outcome) = run.read_outcome().expect("read") {
            break outcome;
        }
        assert!(std::time::Instant::now() < until, "no outcome recorded");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(outcome.reason.as_deref(), Some(reason::CANCELLED));
    drop(runtime);
}

// contract: NTF-023
#[test]
fn cleanup_completes_when_the_surrounding_scope_is_already_cancelled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (argv, pid_file, child_file) = stubborn(dir.path());
    let adapter = ExecAdapter::new(argv)
        .timeout(Duration::from_secs(60))
        .grace(Duration::from_millis(200));
    let runtime = current_thread();
    runtime.block_on(async {
        // The whole task around the call is aborted once the child runs:
        // nothing in that scope gets to await anything any more.
        let task = tokio::spawn(async move { adapter.call(&envelope("session", "s1")).await });
        let waiting = pid_file.clone();
        tokio::task::spawn_blocking(move || read_pid(&waiting))
            .await
            .expect("pid");
        task.abort();
        assert!(task.await.expect_err("aborted").is_cancelled());
        // Keep the runtime turning while the detached reaper works.
        let pid = read_pid(&pid_file);
        let grandchild = read_pid(&child_file);
        let gone = tokio::task::spawn_blocking(move || {
            (wait_gone(pid, true), wait_gone(grandchild, false))
        })
        .await
        .expect("wait");
        assert_eq!(
            gone,
            (true, true),
            "child {pid} and grandchild {grandchild} ended and reaped"
        );
    });
}

// contract: NTF-029
#[test]
fn raw_stderr_goes_to_an_owner_only_file_referred_to_by_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = Arc::new(RunDir::new(dir.path()));
    let adapter = ExecAdapter::new(argv(&[
        "/bin/sh",
        "-c",
        "echo \"failed posting to $0\" >&2; echo second line >&2; exit 3",
        "https://hooks.example/T0KEN-abcdef",
    ]))
    .record_to(run.clone());
    let (report, logs) = capture_logs(|| {
        current_thread()
            .block_on(adapter.call(&envelope("session", "s1")))
            .expect("call")
    });
    assert_eq!(report.exit_code, Some(3));
    let path = report.stderr_path.clone().expect("stderr captured");
    assert_eq!(path, dir.path().join(RunDir::STDERR_FILE));
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(
        std::fs::read_to_string(&path).expect("stderr"),
        "failed posting to https://hooks.example/T0KEN-abcdef\nsecond line\n",
        "the file holds the raw stderr"
    );
    let outcome = run.read_outcome().expect("read").expect("recorded");
    assert!(!outcome.ok);
    assert_eq!(outcome.exit_code, Some(3));
    assert_eq!(outcome.stderr_path.as_deref(), Some(path.as_path()));
    assert_eq!(
        outcome.reason.as_deref(),
        Some(reason::EXITED_UNSUCCESSFULLY)
    );
    let json_mode = std::fs::metadata(run.outcome_path())
        .expect("meta")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(json_mode, 0o600);
    // The surfaces refer to the file; none quotes the stderr.
    let json = std::fs::read_to_string(run.outcome_path()).expect("json");
    assert!(
        !json.contains("failed posting") && !json.contains("second line"),
        "{json}"
    );
    assert!(logs.contains(&path.display().to_string()), "{logs}");
    assert!(
        !logs.contains("failed posting") && !logs.contains("second line"),
        "{logs}"
    );
}

// contract: NTF-024, NTF-025
#[test]
fn no_surface_carries_an_argument_value() {
    let secret_url = "https://hooks.example/services/SECRET-T0KEN-42";
    let secret_token = "tok_live_abcdef";
    let dir = tempfile::tempdir().expect("tempdir");
    let unbound = ExecAdapter::new(argv(&[
        "/usr/bin/env",
        "sh",
        "-c",
        "echo \"curl: could not post $1 with $2\" >&2; exit 7",
        "ignored",
        secret_url,
        secret_token,
    ]));
    let run = Arc::new(RunDir::new(dir.path()));
    let bound = unbound.clone().record_to(run.clone());
    let missing = ExecAdapter::new(argv(&["/nonexistent/dir/notifier", secret_url]));
    let registry = Registry::new(Duration::from_secs(10));
    registry.register(Registration::new("unbound", unbound.clone().into_handler()));
    let ((), logs) = capture_logs(|| {
        let runtime = current_thread();
        runtime.block_on(async {
            let report = registry.emit(&envelope("session", "s1")).await;
            assert_eq!(report.failed, ["unbound"]);
            let report = bound.call(&envelope("session", "s1")).await.expect("call");
            assert_eq!(report.exit_code, Some(7));
            let error = missing
                .call(&envelope("session", "s1"))
                .await
                .expect_err("no such program");
            let shown = format!("{error} {error:?}");
            assert!(shown.contains("notifier"), "{shown}");
            assert!(
                !shown.contains(secret_url) && !shown.contains("/nonexistent/dir"),
                "{shown}"
            );
        });
    });
    // The log: the adapter by basename; the stderr snippet (no run dir
    // bound) with both argument values replaced.
    assert!(logs.contains("adapter=env"), "{logs}");
    assert!(logs.contains("curl: could not post *** with ***"), "{logs}");
    for needle in [secret_url, secret_token, "SECRET-T0KEN", "/usr/bin/env"] {
        assert!(
            !logs.contains(needle),
            "{needle} leaked into the log: {logs}"
        );
    }
    let json = std::fs::read_to_string(run.outcome_path()).expect("json");
    for needle in [secret_url, secret_token] {
        assert!(!json.contains(needle), "{json}");
    }
    // Debug and Display of the argv and the adapter name the program only.
    let shown = format!(
        "{unbound:?} {} {:?}",
        argv(&["/usr/bin/env", secret_url]),
        argv(&["/usr/bin/env", secret_url])
    );
    assert!(
        !shown.contains(secret_url) && !shown.contains("/usr/bin"),
        "{shown}"
    );
    // A resolution warning names no argument either.
    let refused = notify::resolve_value(
        &serde_json::json!(format!("/opt/hooks/post {secret_url} | tee")),
        notify::Level::Global,
    );
    let warning = refused.warning.clone().expect("warning");
    assert!(
        !warning.contains(secret_url) && !format!("{refused:?}").contains(secret_url),
        "{warning}"
    );
}

/// A sync handler written by hand is allowed to run an adapter too; the
/// same cleanup applies when its emit times out.
#[test]
fn a_timed_out_call_inside_a_handler_still_reaps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (argv, pid_file, _) = stubborn(dir.path());
    let adapter = Arc::new(ExecAdapter::new(argv).grace(Duration::from_millis(100)));
    let registry = Registry::new(Duration::from_millis(300));
    let a = Arc::clone(&adapter);
    registry.register(Registration::new(
        "wrapped",
        Handler::from_async(move |envelope| {
            let a = Arc::clone(&a);
            async move { a.call(&envelope).await.map(drop).map_err(Into::into) }
        }),
    ));
    multi_thread().block_on(registry.emit(&envelope("session", "s1")));
    assert!(wait_gone(read_pid(&pid_file), true));
}

/// li's notify templates: an argument that is exactly `{status}`,
/// `{payload}`, `{session_id}` (or another placeholder) reaches the child
/// as that value, as one whole argument, shell metacharacters inert; an
/// argument that merely contains braces, and argv[0], are left alone.
#[test]
fn whole_argument_placeholders_are_filled_from_the_envelope() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = dir.path().join("args");
    let adapter = ExecAdapter::new(argv(&[
        "/bin/sh",
        "-c",
        "for a in \"$@\"; do printf '%s\\n--\\n' \"$a\"; done > \"$0\"",
        &args.display().to_string(),
        "{status}",
        "{session_id}",
        "{entity_type}",
        "{reason_code}",
        "{invocation_id}",
        "status={status}",
        "{payload}",
    ]));
    let env = envelope("session", "s1; rm -rf ~");
    let report = multi_thread().block_on(adapter.call(&env)).expect("call");
    assert!(report.ok(), "{report:?}");
    let text = std::fs::read_to_string(&args).expect("args");
    let got: Vec<&str> = text.split("\n--\n").collect();
    assert_eq!(got[0], env.terminal_status);
    assert_eq!(got[1], "s1; rm -rf ~");
    assert_eq!(got[2], "session");
    assert_eq!(got[3], env.reason_code);
    assert_eq!(got[4], "", "a value the envelope lacks is empty");
    assert_eq!(got[5], "status={status}");
    let payload = notify::RunTerminalEnvelope::from_json(got[6]).expect("the payload argument");
    assert_eq!(payload, env);
}
