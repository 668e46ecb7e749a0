//! The full declared-edge matrix of every default policy, checked against an
//! edge table typed in here from lifecycle-vocabulary.md (not read back from
//! the policies under test).

use lifecycle_core::{
    Actor, ActorType, CompatOptions, CoreError, Decision, Expected, Override, Reason, Rejection,
    RowSnapshot, TransitionCommand, decide, decide_with, default_registry,
};
use serde_json::json;

struct Vocab {
    entity: &'static str,
    statuses: &'static [&'static str],
    terminal: &'static [&'static str],
    same_status_noop: bool,
    /// (from, to, operator only)
    edges: Vec<(&'static str, &'static str, bool)>,
    reason: &'static str,
}

const RUN: &[&str] = &[
    "running",
    "completed",
    "completed_empty",
    "failed",
    "timed_out",
    "aborted",
    "cancelled",
];

fn all_to_all(
    statuses: &'static [&'static str],
    terminal: &[&str],
) -> Vec<(&'static str, &'static str, bool)> {
    let mut out = Vec::new();
    for f in statuses.iter().filter(|s| !terminal.contains(s)) {
        for t in statuses.iter().filter(|t| *t != f) {
            out.push((*f, *t, false));
        }
    }
    out
}

fn pairs(list: &[(&'static str, &[&'static str])]) -> Vec<(&'static str, &'static str, bool)> {
    list.iter()
        .flat_map(|(f, ts)| ts.iter().map(move |t| (*f, *t, false)))
        .collect()
}

fn vocabularies() -> Vec<Vocab> {
    const SHOW: &[&str] = &["active", "completed", "aborted", "imported"];
    const PLAY: &[&str] = &[
        "pending",
        "prepared",
        "running",
        "running_complete",
        "gated",
        "gate_failed",
        "redoing",
        "merged",
        "escalated",
        "blocked",
        "aborted_after_finish",
    ];
    const PLAY_T: &[&str] = &[
        "merged",
        "escalated",
        "gate_failed",
        "blocked",
        "aborted_after_finish",
    ];
    let mut dispatch = pairs(&[
        ("pending", &["delivering", "expired", "acked"]),
        (
            "delivering",
            &[
                "delivering",
                "pending",
                "delivered",
                "acked",
                "dead_letter",
                "expired",
            ],
        ),
    ]);
    dispatch.push(("dead_letter", "pending", true));
    dispatch.push(("expired", "pending", true));
    vec![
        Vocab {
            entity: "session",
            statuses: RUN,
            terminal: &RUN[1..],
            same_status_noop: false,
            edges: pairs(&[("running", &RUN[1..])]),
            reason: "run.completed.ok",
        },
        Vocab {
            entity: "invocation",
            statuses: RUN,
            terminal: &RUN[1..],
            same_status_noop: false,
            edges: pairs(&[("running", &RUN[1..])]),
            reason: "run.completed.ok",
        },
        Vocab {
            entity: "show",
            statuses: SHOW,
            terminal: &["completed", "aborted"],
            same_status_noop: false,
            edges: all_to_all(SHOW, &["completed", "aborted"]),
            reason: "show.active.created",
        },
        Vocab {
            entity: "play",
            statuses: PLAY,
            terminal: PLAY_T,
            same_status_noop: false,
            edges: all_to_all(PLAY, PLAY_T),
            reason: "play.pending.ready",
        },
        Vocab {
            entity: "team",
            statuses: &["active", "archived"],
            terminal: &["archived"],
            same_status_noop: false,
            edges: pairs(&[("active", &["archived"])]),
            reason: "team.archived.operator",
        },
        Vocab {
            entity: "schedule_run",
            statuses: &[
                "queued",
                "waiting_dependency",
                "running",
                "retry_wait",
                "completed",
                "failed",
                "timed_out",
                "skipped",
                "cancelled",
            ],
            terminal: &["completed", "failed", "timed_out", "skipped", "cancelled"],
            same_status_noop: false,
            edges: pairs(&[
                (
                    "queued",
                    &["waiting_dependency", "running", "skipped", "cancelled"],
                ),
                ("waiting_dependency", &["queued", "cancelled"]),
                (
                    "running",
                    &[
                        "completed",
                        "failed",
                        "timed_out",
                        "retry_wait",
                        "queued",
                        "cancelled",
                    ],
                ),
                ("retry_wait", &["queued", "cancelled"]),
            ]),
            reason: "schedule.fired.due",
        },
        Vocab {
            entity: "dispatch",
            statuses: &[
                "pending",
                "delivering",
                "delivered",
                "acked",
                "dead_letter",
                "expired",
            ],
            terminal: &["delivered", "acked", "dead_letter", "expired"],
            same_status_noop: false,
            edges: dispatch,
            reason: "dispatch.delivering.attempt",
        },
        Vocab {
            entity: "schedule",
            statuses: &["enabled", "disabled", "deleted"],
            terminal: &["deleted"],
            same_status_noop: true,
            edges: pairs(&[
                ("enabled", &["disabled", "deleted"]),
                ("disabled", &["enabled", "deleted"]),
            ]),
            reason: "schedule_definition.disabled.manual",
        },
    ]
}

fn operator_override() -> Override {
    Override {
        actor: Actor::new(ActorType::Operator, "ops"),
        justification: "repair".into(),
    }
}

#[derive(Debug, PartialEq)]
enum Expect {
    Write { overridden: bool },
    Noop,
    Reject(Rejection),
}

fn summarize(d: Decision) -> Expect {
    match d {
        Decision::Write(plan) => Expect::Write {
            overridden: plan.override_used.is_some(),
        },
        Decision::Noop { .. } => Expect::Noop,
        Decision::Reject { rejection, .. } => Expect::Reject(rejection),
        Decision::Conflict { current_status } => {
            panic!("unexpected conflict at {current_status:?}")
        }
    }
}

// contract: LC-020, LC-021, LC-022, LC-023
#[test]
fn every_pair_of_every_default_policy_decides_as_declared() {
    let registry = default_registry();
    let mut checked = 0;
    for v in vocabularies() {
        let policy = registry.get(v.entity).expect("default policy");
        assert_eq!(policy.statuses(), v.statuses, "{} vocabulary", v.entity);
        for from in v.statuses {
            for to in v.statuses {
                for actor in ActorType::ALL {
                    for with_override in [false, true] {
                        let declared = v.edges.iter().find(|(f, t, _)| f == from && t == to);
                        let mut cmd = TransitionCommand::new(
                            v.entity,
                            "e1",
                            *to,
                            Reason::new(v.reason),
                            Actor::new(actor, "x"),
                        )
                        .expecting(*from);
                        let mut row = RowSnapshot {
                            status: (*from).into(),
                            version: 7,
                            columns: Default::default(),
                        };
                        if let Some((_, _, true)) = declared {
                            for f in ["attempt", "next_attempt_at", "last_error"] {
                                cmd = cmd.with_patch(f, json!(1));
                            }
                        }
                        if v.entity == "dispatch" && from == to && *from == "delivering" {
                            // The guarded self-edge: give it its version guard.
                            cmd = cmd.with_version(7);
                            row.columns.insert("attempt".into(), json!(1));
                        }
                        if with_override {
                            cmd = cmd.with_override(operator_override());
                        }
                        let got = summarize(decide(policy, Some(&row), &cmd).expect("decides"));
                        let expected = match declared {
                            Some((_, _, operator_only))
                                if !operator_only || actor == ActorType::Operator =>
                            {
                                Expect::Write { overridden: false }
                            }
                            Some(_) if with_override => Expect::Write { overridden: true },
                            Some(_) => Expect::Reject(Rejection::ActorNotPermitted),
                            None if from == to && v.same_status_noop => Expect::Noop,
                            None if from == to => Expect::Write { overridden: false },
                            None if with_override => Expect::Write { overridden: true },
                            None if v.terminal.contains(from) => {
                                Expect::Reject(Rejection::TerminalExit)
                            }
                            None => Expect::Reject(Rejection::UndeclaredEdge),
                        };
                        assert_eq!(
                            got, expected,
                            "{} {from} -> {to} as {actor} override={with_override}",
                            v.entity
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 2000, "matrix too small: {checked}");
}

// contract: LC-026
#[test]
fn a_status_outside_the_vocabulary_is_an_error_for_every_policy() {
    let no_edges = CompatOptions {
        enforce_edges: false,
        raise_on_unguarded_conflict: true,
        ..CompatOptions::default()
    };
    for v in vocabularies() {
        let policy = default_registry().get(v.entity).expect("policy");
        let cmd = TransitionCommand::new(
            v.entity,
            "e",
            "exploded",
            Reason::new(v.reason),
            Actor::new(ActorType::Admin, "a"),
        );
        let row = RowSnapshot {
            status: v.statuses[0].into(),
            version: 1,
            columns: Default::default(),
        };
        assert!(matches!(
            decide(policy, Some(&row), &cmd),
            Err(CoreError::UnknownStatus { .. })
        ));
        // Also with edge enforcement off (the update_status mode).
        assert!(matches!(
            decide_with(policy, Some(&row), &cmd, &no_edges),
            Err(CoreError::UnknownStatus { .. })
        ));
        let mut cmd = cmd;
        cmd.to_status = v.statuses[0].into();
        cmd.expected_statuses
            .insert(Expected::Status("nope".into()));
        assert!(matches!(
            decide(policy, Some(&row), &cmd),
            Err(CoreError::UnknownStatus { .. })
        ));
        assert!(matches!(
            decide_with(policy, Some(&row), &cmd, &no_edges),
            Err(CoreError::UnknownStatus { .. })
        ));
    }
}
