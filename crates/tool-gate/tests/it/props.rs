//! Property tests: the gate against a reference model of its passes, and
//! the destructive-command guard against generated spellings.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use serde_json::{Value, json};
use tool_gate::{
    Control, ControlUnavailable, DenyKind, DestructiveGuard, FnHook, Gate, GateResult, HookError,
    PermissionError, Stage, ToolCall,
};

#[derive(Debug, Clone, Copy)]
enum Act {
    Deny,
    Unavailable,
    Panic,
}

/// A control that acts when the argument `v` equals `trigger`.
#[derive(Debug, Clone)]
struct ModelControl {
    trigger: u8,
    act: Act,
}

struct Counted(ModelControl, Arc<AtomicUsize>);

impl Control for Counted {
    fn name(&self) -> &str {
        "model"
    }
    fn evaluate(&self, call: &ToolCall) -> GateResult {
        self.1.fetch_add(1, Ordering::SeqCst);
        if call.arguments["v"] != json!(self.0.trigger) {
            return GateResult::allow();
        }
        match self.0.act {
            Act::Deny => GateResult::deny("model says no"),
            Act::Unavailable => GateResult::unavailable("model unreachable"),
            Act::Panic => panic!("model control bug"),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Hook {
    Continue,
    Rewrite(u8),
    Deny,
    Unavailable,
    Fail,
    Panic,
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![Just(Act::Deny), Just(Act::Unavailable), Just(Act::Panic)]
}

fn hook() -> impl Strategy<Value = Hook> {
    prop_oneof![
        4 => Just(Hook::Continue),
        4 => (0u8..4).prop_map(Hook::Rewrite),
        1 => Just(Hook::Deny),
        1 => Just(Hook::Unavailable),
        1 => Just(Hook::Fail),
        1 => Just(Hook::Panic),
    ]
}

#[derive(Debug, PartialEq)]
struct Outcome {
    deny: Option<DenyKind>,
    stage: Option<Stage>,
    counts: Vec<usize>,
    rewritten: Option<Value>,
}

fn model(controls: &[ModelControl], hooks: &[Hook], v0: u8) -> Outcome {
    let mut counts = vec![0; controls.len()];
    let pass = |v: u8, counts: &mut Vec<usize>| {
        for (i, c) in controls.iter().enumerate() {
            counts[i] += 1;
            if c.trigger == v {
                return Some(match c.act {
                    Act::Deny => DenyKind::Denied,
                    Act::Unavailable => DenyKind::Unavailable,
                    Act::Panic => DenyKind::EvaluatorFailed,
                });
            }
        }
        None
    };
    let refuse = |deny, stage, counts| Outcome {
        deny: Some(deny),
        stage: Some(stage),
        counts,
        rewritten: None,
    };
    if hooks.is_empty() {
        return match pass(v0, &mut counts) {
            Some(d) => refuse(d, Stage::Security, counts),
            None => Outcome {
                deny: None,
                stage: None,
                counts,
                rewritten: None,
            },
        };
    }
    if let Some(d) = pass(v0, &mut counts) {
        return refuse(d, Stage::SecurityBefore, counts);
    }
    let mut v = v0;
    let mut rewritten = false;
    for h in hooks {
        match h {
            Hook::Continue => {}
            Hook::Rewrite(n) => {
                v = *n;
                rewritten = true;
            }
            Hook::Deny => return refuse(DenyKind::Denied, Stage::UserHooks, counts),
            Hook::Unavailable => return refuse(DenyKind::Unavailable, Stage::UserHooks, counts),
            Hook::Fail | Hook::Panic => {
                return refuse(DenyKind::EvaluatorFailed, Stage::UserHooks, counts);
            }
        }
    }
    if let Some(d) = pass(v, &mut counts) {
        return refuse(d, Stage::SecurityAfter, counts);
    }
    Outcome {
        deny: None,
        stage: None,
        counts,
        rewritten: rewritten.then(|| json!({"v": v})),
    }
}

fn user_hook(h: Hook) -> FnHook<impl Fn(&ToolCall) -> Result<Option<Value>, HookError>> {
    FnHook::new("model-hook", move |_: &ToolCall| match h {
        Hook::Continue => Ok(None),
        Hook::Rewrite(n) => Ok(Some(json!({"v": n}))),
        Hook::Deny => Err(PermissionError::denied("hook says no").into()),
        Hook::Unavailable => Err(ControlUnavailable::new("hook backend down").into()),
        Hook::Fail => Err(HookError::failed("hook broke")),
        Hook::Panic => panic!("hook bug"),
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_gate_matches_the_pass_model(
        controls in prop::collection::vec((0u8..6, act()).prop_map(|(trigger, act)| ModelControl { trigger, act }), 0..5),
        hooks in prop::collection::vec(hook(), 0..4),
        v0 in 0u8..4,
    ) {
        // contract: GATE-001, GATE-002, GATE-003, GATE-004, GATE-009
        let counters: Vec<Arc<AtomicUsize>> = controls.iter().map(|_| Arc::default()).collect();
        let mut builder = Gate::builder();
        for (c, n) in controls.iter().zip(&counters) {
            builder = builder.security(Counted(c.clone(), n.clone()));
        }
        for h in &hooks {
            builder = builder.user_hook(user_hook(*h));
        }
        let result = builder.build().check(&ToolCall::new("s", "t", json!({"v": v0})));
        let got = Outcome {
            deny: result.deny_kind(),
            stage: result.stage(),
            counts: counters.iter().map(|c| c.load(Ordering::SeqCst)).collect(),
            rewritten: result.rewritten_arguments().cloned(),
        };
        let expected = model(&controls, &hooks, v0);
        prop_assert_eq!(result.errored(), matches!(expected.deny, Some(DenyKind::Unavailable | DenyKind::EvaluatorFailed)));
        prop_assert_eq!(got, expected);
    }
}

const DESTRUCTIVE: &[&[&str]] = &[
    &["rm", "-rf", "/"],
    &["rm", "-r", "-f", "~"],
    &["rm", "--recursive", "project"],
    &["git", "push", "--force", "origin", "main"],
    &["git", "reset", "--hard"],
    &["git", "clean", "-fd"],
    &["mkfs.ext4", "/dev/sda1"],
    &["dd", "if=/dev/zero", "of=/dev/sdb"],
    &["chmod", "-R", "777", "/"],
    &["find", ".", "-delete"],
    &["shutdown", "now"],
];

const BENIGN: &[&[&str]] = &[
    &["ls", "-la"],
    &["cat", "README.md"],
    &["git", "status"],
    &["git", "push", "origin", "main"],
    &["cargo", "build", "--release"],
    &["rm", "notes.txt"],
    &["echo", "hello"],
    &["grep", "-n", "foo", "src"],
    &["chmod", "-R", "755", "build"],
];

fn spelled(tokens: &'static [&'static str]) -> impl Strategy<Value = String> {
    spelled_with(tokens, true)
}

/// `substitute`: whether `$(command)` is among the wrappers. Benign commands
/// go without it: a substitution in command position runs its output, which
/// the guard refuses unread.
fn spelled_with(
    tokens: &'static [&'static str],
    substitute: bool,
) -> impl Strategy<Value = String> {
    let n = tokens.len();
    (
        prop::collection::vec(0usize..4, n),
        prop::collection::vec(
            prop::sample::select(vec![
                " ",
                "\t",
                "  ",
                "${IFS}",
                "\u{a0}",
                " \u{2003}",
                " \\\n",
            ]),
            n,
        ),
        prop::sample::select(vec![
            "",
            "sudo ",
            "env A=1 ",
            "nohup ",
            "/usr/bin/env ",
            "time ",
        ]),
        prop::sample::select(vec!["", "/bin/", "/usr/bin/", "\\"]),
        0usize..7,
    )
        .prop_map(move |(quoting, seps, prefix, dir, wrapper)| {
            let mut text = String::from(prefix);
            for (i, tok) in tokens.iter().enumerate() {
                if i > 0 {
                    text.push_str(seps[i]);
                } else {
                    text.push_str(dir);
                }
                let tok = match quoting[i] {
                    1 => format!("'{tok}'"),
                    2 => format!("\"{tok}\""),
                    3 if tok.len() > 1 => format!("{}''{}", &tok[..1], &tok[1..]),
                    _ => (*tok).to_owned(),
                };
                text.push_str(&tok);
            }
            match wrapper {
                1 => format!("bash -c '{text}'"),
                2 if substitute => format!("$({text})"),
                3 => format!("echo start; {text}"),
                4 => format!("true && {text} | tee log"),
                5 => format!("cd /tmp\n{text}"),
                // Brace expansion of the bare words.
                6 => format!("{{{}}}", tokens.join(",")),
                _ => text,
            }
        })
}

fn placed(text: String, shape: u8) -> Value {
    match shape {
        0 => json!({"command": text}),
        1 => json!({"input": {"steps": [text]}}),
        2 => json!([{"script": text}]),
        _ => json!({"x": text}),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn destructive_commands_are_refused_however_spelled(
        text in prop::sample::select(DESTRUCTIVE.to_vec()).prop_flat_map(spelled),
        shape in 0u8..4,
    ) {
        let args = placed(text.clone(), shape);
        prop_assert!(DestructiveGuard::default().find(&args).expect("budget").is_some(), "{:?}", text);
    }

    #[test]
    fn destructive_argv_arrays_are_refused(tokens in prop::sample::select(DESTRUCTIVE.to_vec())) {
        let argv: Vec<Value> = tokens.iter().map(|t| json!(t)).collect();
        let args = json!({"argv": argv});
        prop_assert!(DestructiveGuard::default().find(&args).expect("budget").is_some());
    }

    #[test]
    fn benign_commands_pass_however_spelled(
        text in prop::sample::select(BENIGN.to_vec()).prop_flat_map(|t| spelled_with(t, false)),
        shape in 0u8..4,
    ) {
        let args = placed(text.clone(), shape);
        prop_assert!(DestructiveGuard::default().find(&args).expect("budget").is_none(), "{:?}", text);
    }
}
