//! Gate passes, verdict shape, legacy hooks and error classes (GATE-001..011).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tool_gate::{
    Control, ControlUnavailable, Decision, DenyKind, DestructiveGuard, FnControl, FnHook, Gate,
    GateResult, GuardSpec, HookControl, HookError, PathGuard, PathGuardConfig, PermissionError,
    PermissionPolicy, Rule, Stage, ToolCall,
};

use crate::{Recording, capture_logs, count};

fn call(args: Value) -> ToolCall {
    ToolCall::new("srv", "tool", args)
}

fn rewrite_to(args: Value) -> FnHook<impl Fn(&ToolCall) -> Result<Option<Value>, HookError>> {
    FnHook::new("rewriter", move |_: &ToolCall| Ok(Some(args.clone())))
}

#[test]
fn every_control_evaluates_exactly_once_per_pass() {
    // contract: GATE-001
    let controls: Vec<Recording> = (0..3)
        .map(|i| Recording::new(&format!("c{i}"), |_| GateResult::allow()))
        .collect();
    let counters: Vec<_> = controls.iter().map(Recording::counter).collect();
    let mut builder = Gate::builder();
    for c in controls {
        builder = builder.security(c);
    }
    let hooked = builder
        .user_hook(FnHook::new("noop", |_: &ToolCall| Ok(None)))
        .build();
    assert!(hooked.check(&call(json!({}))).is_allowed());
    // Two passes (before and after the user hook), once each.
    assert_eq!(
        counters.iter().map(|c| count(c)).collect::<Vec<_>>(),
        [2, 2, 2]
    );
}

#[test]
fn the_real_controls_are_gate_result_evaluators_run_by_the_pass_runner() {
    // contract: GATE-001
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = PermissionPolicy::new(Decision::Allow)
        .with_rule(Rule::tool("forbidden", Decision::Deny).expect("rule"));
    let gate = Gate::builder()
        .security(policy)
        .security(DestructiveGuard::default())
        .security(PathGuard::new(PathGuardConfig::new([dir.path()])).expect("guard"))
        .build();
    let cases = [
        (
            ToolCall::new("s", "forbidden", json!({})),
            "permission-policy",
        ),
        (
            ToolCall::new("s", "sh", json!({"command": "rm -rf ."})),
            "destructive-command-guard",
        ),
        (
            ToolCall::new("s", "read", json!({"path": "/etc/passwd"})),
            "path-guard",
        ),
    ];
    for (c, control) in cases {
        let result = gate.check(&c);
        assert!(result.is_denied(), "{c:?}");
        assert_eq!(result.control(), Some(control));
        assert_eq!(result.stage(), Some(Stage::Security));
        assert!(!result.errored());
    }
    assert!(
        gate.check(&ToolCall::new("s", "read", json!({"path": "a.txt"})))
            .is_allowed()
    );
}

#[test]
fn a_denial_ends_the_pass_and_later_controls_do_not_run() {
    // contract: GATE-001
    let first = Recording::new("first", |_| GateResult::deny("no"));
    let second = Recording::new("second", |_| GateResult::allow());
    let (a, b) = (first.counter(), second.counter());
    let gate = Gate::builder().security(first).security(second).build();
    let result = gate.check(&call(json!({})));
    assert_eq!(result.control(), Some("first"));
    assert_eq!((count(&a), count(&b)), (1, 0));
}

#[test]
fn a_panicking_control_is_a_fail_closed_deny_and_the_tool_does_not_run() {
    // contract: GATE-002
    struct Panics;
    impl Control for Panics {
        fn name(&self) -> &str {
            "panics"
        }
        fn evaluate(&self, call: &ToolCall) -> GateResult {
            let n: usize = call.arguments["n"].as_str().expect("n is a string").len();
            GateResult::deny(format!("{n}"))
        }
    }
    let after = Recording::new("after", |_| GateResult::allow());
    let after_count = after.counter();
    let gate = Gate::builder().security(Panics).security(after).build();
    let ran = AtomicUsize::new(0);
    let run_tool = |c: ToolCall| match gate.authorize(c) {
        Ok(_) => {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        Err(e) => Err(e),
    };
    let denied = run_tool(call(json!({"n": 5}))).unwrap_err();
    assert_eq!(denied.kind(), DenyKind::EvaluatorFailed);
    assert!(denied.errored());
    assert_eq!(denied.control(), "panics");
    assert!(
        denied.reason().contains("n is a string"),
        "{}",
        denied.reason()
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(count(&after_count), 0);
}

#[test]
fn a_panicking_or_failing_user_hook_is_a_fail_closed_deny() {
    // contract: GATE-002
    let panicking = Gate::builder()
        .user_hook(FnHook::new(
            "boom",
            |_: &ToolCall| -> Result<Option<Value>, HookError> { std::panic::panic_any(42_u32) },
        ))
        .build();
    let result = panicking.check(&call(json!({})));
    assert_eq!(result.deny_kind(), Some(DenyKind::EvaluatorFailed));
    assert_eq!(result.stage(), Some(Stage::UserHooks));
    assert_eq!(result.control(), Some("boom"));
    let failing = Gate::builder()
        .user_hook(FnHook::new("io", |_: &ToolCall| {
            Err(HookError::failed(std::io::Error::other("disk gone")))
        }))
        .build();
    let result = failing.check(&call(json!({})));
    assert_eq!(result.deny_kind(), Some(DenyKind::EvaluatorFailed));
    assert!(result.reason().expect("reason").contains("disk gone"));
}

#[test]
fn a_user_hook_cannot_rewrite_an_approved_argument_into_a_forbidden_one() {
    // contract: GATE-003
    let dir = tempfile::tempdir().expect("tempdir");
    let recorder = Recording::new("recorder", |_| GateResult::allow());
    let seen = recorder.seen.clone();
    let gate = Gate::builder()
        .security(recorder)
        .security(PathGuard::new(PathGuardConfig::new([dir.path()])).expect("guard"))
        .security(DestructiveGuard::default())
        .user_hook(rewrite_to(json!({"path": "/etc/shadow"})))
        .build();
    let result = gate.check(&call(json!({"path": "notes.txt"})));
    assert!(result.is_denied());
    assert_eq!(result.stage(), Some(Stage::SecurityAfter));
    assert_eq!(result.control(), Some("path-guard"));
    // The second pass judged the rewritten arguments, not the originals.
    assert_eq!(
        *seen.lock().expect("seen"),
        vec![json!({"path": "notes.txt"}), json!({"path": "/etc/shadow"})]
    );
    let shell = Gate::builder()
        .security(DestructiveGuard::default())
        .user_hook(FnHook::new("tidy", |_: &ToolCall| {
            Ok(Some(json!({"command": "ls"})))
        }))
        .user_hook(rewrite_to(
            json!({"command": "git push --force origin main"}),
        ))
        .build();
    let result = shell.check(&call(json!({"command": "git status"})));
    assert_eq!(result.stage(), Some(Stage::SecurityAfter));
    assert_eq!(result.control(), Some("destructive-command-guard"));
}

#[test]
fn an_approved_rewrite_is_returned_and_authorize_runs_it() {
    // contract: GATE-003
    let gate = Gate::builder()
        .security(DestructiveGuard::default())
        .user_hook(FnHook::new("add-flag", |c: &ToolCall| {
            let mut args = c.arguments.clone();
            args["dry_run"] = json!(true);
            Ok(Some(args))
        }))
        .build();
    let result = gate.check(&call(json!({"command": "ls"})));
    assert_eq!(
        result.rewritten_arguments(),
        Some(&json!({"command": "ls", "dry_run": true}))
    );
    let authorized = gate
        .authorize(call(json!({"command": "ls"})))
        .expect("allowed");
    assert_eq!(
        authorized.arguments,
        json!({"command": "ls", "dry_run": true})
    );
    // No rewrite: no rewritten arguments.
    let plain = Gate::builder()
        .security(DestructiveGuard::default())
        .build();
    assert_eq!(
        plain
            .check(&call(json!({"command": "ls"})))
            .rewritten_arguments(),
        None
    );
}

#[test]
fn without_user_hooks_the_security_pass_runs_once() {
    // contract: GATE-004
    let c = Recording::new("c", |_| GateResult::allow());
    let n = c.counter();
    let gate = Gate::builder().security(c).build();
    let result = gate.check(&call(json!({})));
    assert!(result.is_allowed());
    assert_eq!(count(&n), 1);
    gate.check(&call(json!({})));
    assert_eq!(count(&n), 2, "once per invocation");
}

#[test]
fn spec_guards_sit_in_the_security_bucket_and_run_in_both_passes() {
    // contract: GATE-005
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = GuardSpec {
        permission: Some(PermissionPolicy::new(Decision::Allow)),
        guard_destructive: true,
        guard_paths: Some(PathGuardConfig::new([dir.path()])),
    };
    let gate = Gate::builder()
        .spec(spec)
        .expect("spec")
        .user_hook(rewrite_to(
            json!({"command": "rm -r -f ~", "path": "ok.txt"}),
        ))
        .build();
    assert_eq!(
        gate.security_controls().collect::<Vec<_>>(),
        [
            "permission-policy",
            "destructive-command-guard",
            "path-guard"
        ]
    );
    assert_eq!(gate.user_hooks().collect::<Vec<_>>(), ["rewriter"]);
    let result = gate.check(&call(json!({"command": "ls", "path": "ok.txt"})));
    assert_eq!(result.stage(), Some(Stage::SecurityAfter));
    assert_eq!(result.control(), Some("destructive-command-guard"));
    // And in the first pass too.
    let result = gate.check(&call(json!({"path": "../../x"})));
    assert_eq!(result.stage(), Some(Stage::SecurityBefore));
    assert_eq!(result.control(), Some("path-guard"));
}

#[test]
fn adapters_turn_policy_guards_and_session_gate_into_gate_results() {
    // contract: GATE-006
    let dir = tempfile::tempdir().expect("tempdir");
    let session_gate = FnControl::new("session-gate", |c: &ToolCall| {
        if c.server == "blocked" {
            Err(PermissionError::denied("server blocked for this session"))
        } else {
            Ok(())
        }
    });
    let bad = ToolCall::new("blocked", "x", json!({}));
    let good = ToolCall::new("fine", "x", json!({}));
    assert_eq!(
        session_gate.evaluate(&bad),
        GateResult::deny("server blocked for this session")
    );
    assert_eq!(session_gate.evaluate(&good), GateResult::allow());
    let policy = PermissionPolicy::default();
    assert_eq!(policy.evaluate(&good).deny_kind(), Some(DenyKind::Denied));
    let guard = DestructiveGuard::default();
    assert!(
        guard
            .evaluate(&ToolCall::new(
                "s",
                "t",
                json!({"c": "mkfs.ext4 /dev/sda1"})
            ))
            .is_denied()
    );
    let paths = PathGuard::new(PathGuardConfig::new([dir.path()])).expect("guard");
    assert!(
        paths
            .evaluate(&ToolCall::new("s", "t", json!({"path": "/"})))
            .is_denied()
    );
    // A verdict handed out is a value: a clone compares equal and the gate
    // keeps no handle to change it later.
    let result = Gate::builder().security(session_gate).build().check(&bad);
    let copy = result.clone();
    assert_eq!(copy, result);
    assert_eq!(result.reason(), Some("server blocked for this session"));
}

type LegacyFn = Box<dyn Fn(&ToolCall) -> Result<Option<Value>, HookError> + Send + Sync>;

#[test]
fn legacy_hooks_deny_by_permission_error_rewrite_by_map_and_fail_closed_otherwise() {
    // contract: GATE-007
    let run = |f: LegacyFn| {
        Gate::builder()
            .user_hook(FnHook::new("legacy", f))
            .build()
            .check(&call(json!({"a": 1})))
    };
    let denied = run(Box::new(|_| Err(PermissionError::denied("nope").into())));
    assert_eq!(denied.deny_kind(), Some(DenyKind::Denied));
    assert_eq!(denied.reason(), Some("nope"));
    let rewritten = run(Box::new(|_| Ok(Some(json!({"a": 2})))));
    assert_eq!(rewritten.rewritten_arguments(), Some(&json!({"a": 2})));
    let unchanged = run(Box::new(|_| Ok(None)));
    assert!(unchanged.is_allowed() && unchanged.rewritten_arguments().is_none());
    for bad in [json!("a string"), json!([1]), json!(null), json!(3)] {
        let result = run(Box::new(move |_| Ok(Some(bad.clone()))));
        assert_eq!(
            result.deny_kind(),
            Some(DenyKind::EvaluatorFailed),
            "{result:?}"
        );
    }
    let failed = run(Box::new(|_| Err(HookError::failed("unexpected"))));
    assert_eq!(failed.deny_kind(), Some(DenyKind::EvaluatorFailed));
    // In the security bucket, a legacy hook may deny but not rewrite.
    let as_control = HookControl(FnHook::new("sec", |_: &ToolCall| Ok(Some(json!({"a": 9})))));
    let result = Gate::builder()
        .security(as_control)
        .build()
        .check(&call(json!({"a": 1})));
    assert_eq!(result.deny_kind(), Some(DenyKind::EvaluatorFailed));
    assert_eq!(result.control(), Some("sec"));
}

/// A caller that fails closed on permission errors, knowing nothing of
/// `ControlUnavailable`.
fn fails_closed(f: impl Fn() -> Result<(), PermissionError>) -> bool {
    f().is_ok()
}

fn backend_down() -> Result<(), ControlUnavailable> {
    Err(ControlUnavailable::new("policy server unreachable"))
}

#[test]
fn control_unavailable_is_a_kind_of_permission_error() {
    // contract: GATE-008
    let ran = fails_closed(|| {
        backend_down()?;
        Ok(())
    });
    assert!(!ran);
    let as_permission: PermissionError = ControlUnavailable::new("x").into();
    assert!(as_permission.is_unavailable());
    assert!(matches!(
        HookError::from(ControlUnavailable::new("x")),
        HookError::Permission(_)
    ));
}

#[test]
fn unavailable_sets_errored_and_plain_denial_does_not() {
    // contract: GATE-009
    let unavailable = FnControl::new("remote", |_: &ToolCall| {
        Err(ControlUnavailable::new("timeout").into())
    });
    let no = FnControl::new("remote", |_: &ToolCall| {
        Err(PermissionError::denied("not allowed"))
    });
    let r1 = Gate::builder()
        .security(unavailable)
        .build()
        .check(&call(json!({})));
    let r2 = Gate::builder().security(no).build().check(&call(json!({})));
    assert!(r1.is_denied() && r2.is_denied());
    assert!(r1.errored());
    assert_eq!(r1.deny_kind(), Some(DenyKind::Unavailable));
    assert!(!r2.errored());
    assert_eq!(r2.deny_kind(), Some(DenyKind::Denied));
    // The same through a legacy hook.
    let hook = FnHook::new("h", |_: &ToolCall| {
        Err(ControlUnavailable::new("down").into())
    });
    let r3 = Gate::builder()
        .user_hook(hook)
        .build()
        .check(&call(json!({})));
    assert!(r3.errored());
}

#[test]
fn an_errored_verdict_logs_at_error_and_a_plain_denial_logs_nothing() {
    // contract: GATE-010
    let errored = Gate::builder()
        .security(FnControl::new("opa", |_: &ToolCall| {
            Err(ControlUnavailable::new("opa down").into())
        }))
        .build();
    let (result, logs) = capture_logs(|| errored.check(&call(json!({}))));
    assert!(result.errored());
    let lines: Vec<&str> = logs.lines().collect();
    assert_eq!(lines.len(), 1, "{logs}");
    assert!(
        lines[0].contains("ERROR") && lines[0].contains("opa down") && lines[0].contains("opa"),
        "{logs}"
    );
    let plain = Gate::builder()
        .security(FnControl::new("opa", |_: &ToolCall| {
            Err(PermissionError::denied("no"))
        }))
        .build();
    let (result, logs) = capture_logs(|| plain.check(&call(json!({}))));
    assert!(result.is_denied() && !result.errored());
    assert_eq!(logs, "", "a plain denial logs nothing at any level");
    let panicking = Gate::builder()
        .security(FnControl::new(
            "bug",
            |_: &ToolCall| -> Result<(), PermissionError> { panic!("bug") },
        ))
        .build();
    let (_, logs) = capture_logs(|| panicking.check(&call(json!({}))));
    assert!(logs.contains("ERROR"), "{logs}");
}

#[test]
fn the_denied_error_says_could_not_answer_or_denied() {
    // contract: GATE-011
    let c = ToolCall::new("fs", "write", json!({}));
    let errored = Gate::builder()
        .security(FnControl::new("opa", |_: &ToolCall| {
            Err(ControlUnavailable::new("opa down").into())
        }))
        .build()
        .authorize(c.clone())
        .unwrap_err();
    let plain = Gate::builder()
        .security(FnControl::new("opa", |_: &ToolCall| {
            Err(PermissionError::denied("writes are off"))
        }))
        .build()
        .authorize(c)
        .unwrap_err();
    let (e, p) = (errored.to_string(), plain.to_string());
    assert!(
        e.contains("could not answer") && !e.contains("denied by"),
        "{e}"
    );
    assert!(
        p.contains("denied by opa") && !p.contains("could not answer"),
        "{p}"
    );
    assert!(e.contains("fs/write") && p.contains("writes are off"));
    let as_error: tool_gate::Error = plain.into();
    assert!(as_error.to_string().contains("denied by opa"));
}

#[test]
fn an_empty_gate_allows_and_shares_across_threads() {
    let gate = Arc::new(
        Gate::builder()
            .security(DestructiveGuard::default())
            .build(),
    );
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let gate = gate.clone();
            std::thread::spawn(move || {
                gate.check(&call(json!({"command": format!("echo {i}")})))
                    .is_allowed()
            })
        })
        .collect();
    assert!(handles.into_iter().all(|h| h.join().expect("thread")));
    assert!(
        Gate::default()
            .check(&call(json!({"command": "rm -rf /"})))
            .is_allowed()
    );
}
