//! Unit tests of plan validation.

use super::*;

fn op(id: &str, deps: &[&str]) -> Op {
    Op {
        id: id.into(),
        agent: Agent {
            prompt: Some(format!("do {id}")),
            ..Agent::default()
        },
        depends_on: deps.iter().map(|d| (*d).to_owned()).collect(),
        artifacts: Vec::new(),
        synthesis: false,
    }
}

fn plan(ops: Vec<Op>) -> Plan {
    Plan { name: None, ops }
}

#[test]
fn graph_errors_are_typed_and_carry_the_invalid_deps_reason() {
    let cases = [
        (plan(vec![op("a", &[]), op("a", &[])]), "used twice"),
        (plan(vec![op("a", &["b"])]), "not an op of the plan"),
        (plan(vec![op("a", &["a"])]), "cycle: a -> a"),
        (
            plan(vec![op("a", &["c"]), op("b", &["a"]), op("c", &["b"])]),
            "cycle",
        ),
        (
            plan(vec![op("a", &[]), op("b", &[]), op("c", &[]), op("d", &[])]),
            "more than --max-ops 3",
        ),
    ];
    for (p, want) in cases {
        let e = validate(p, 3).expect_err(want);
        assert!(e.to_string().contains(want), "{e}");
        assert_eq!(e.reason_code(), Some("play.blocked.invalid_deps"), "{e}");
    }
    // A cycle is reported as a closed walk along dependencies.
    let e = validate(
        plan(vec![
            op("x", &[]),
            op("a", &["c", "x"]),
            op("b", &["a"]),
            op("c", &["b"]),
        ]),
        9,
    )
    .expect_err("cycle");
    let PlanError::Cycle(walk) = e else {
        panic!("{e:?}")
    };
    assert_eq!(walk.first(), walk.last());
    assert_eq!(walk.len(), 4, "{walk:?}");
    assert!(!walk.contains(&"x".to_owned()), "{walk:?}");
}

#[test]
fn malformed_ops_are_refused_without_a_graph_reason() {
    let mut no_prompt = op("a", &[]);
    no_prompt.agent.prompt = None;
    let mut blank = op("a", &[]);
    blank.agent.prompt = Some(" \n".into());
    let mut two = op("a", &[]);
    two.agent.prompt_file = Some("p.md".into());
    let mut provider = op("a", &[]);
    provider.agent.provider = Some("gpt".into());
    for (p, want) in [
        (plan(vec![]), "no ops"),
        (plan(vec![op("../x", &[])]), "must be 1-64"),
        (plan(vec![op(".hidden", &[])]), "must be 1-64"),
        (plan(vec![op("", &[])]), "must be 1-64"),
        (plan(vec![no_prompt]), "no prompt"),
        (plan(vec![blank]), "no prompt"),
        (plan(vec![two]), "both"),
        (plan(vec![provider]), "unknown provider"),
    ] {
        let e = validate(p, 9).expect_err(want);
        assert!(e.to_string().contains(want), "{e}");
        assert_eq!(e.reason_code(), None);
    }
}

#[test]
fn a_synthesis_op_depends_on_every_other_op_and_ends_the_flow() {
    let mut s = op("s", &[]);
    s.synthesis = true;
    let v = validate(plan(vec![op("a", &[]), s.clone(), op("b", &["a"])]), 9).expect("valid");
    assert_eq!(v.synthesis(), Some(1));
    assert_eq!(v.deps(1), [0, 2]);
    assert_eq!(v.dependents(0), [1, 2]);
    let e = validate(plan(vec![s.clone(), op("b", &["s"])]), 9).expect_err("after synthesis");
    assert!(
        matches!(e, PlanError::SynthesisHasDependents { .. }),
        "{e:?}"
    );
    let mut t = op("t", &[]);
    t.synthesis = true;
    let e = validate(plan(vec![s, t]), 9).expect_err("two");
    assert!(matches!(e, PlanError::TwoSyntheses(..)), "{e:?}");
}

#[test]
fn plans_parse_from_json_and_yaml_and_refuse_unknown_fields() {
    let yaml = "ops:\n  - id: a\n    agent: {prompt: x, model: claude/opus}\n  - id: b\n    agent: {prompt: y}\n    depends_on: [a]\n";
    let json = r#"{"ops": [{"id": "a", "agent": {"prompt": "x", "model": "claude/opus"}},
                           {"id": "b", "agent": {"prompt": "y"}, "depends_on": ["a"]}]}"#;
    assert_eq!(
        Plan::from_yaml(yaml).expect("yaml"),
        Plan::from_json(json).expect("json")
    );
    let e = Plan::from_json(r#"{"ops": [{"id": "a", "agent": {"prompt": "x"}, "deps": []}]}"#)
        .expect_err("unknown");
    assert!(e.to_string().contains("deps"), "{e}");
    assert!(Plan::from_yaml("ops: 3").is_err());
}

#[test]
fn a_fanout_is_n_workers_and_a_synthesis() {
    let agent = Agent::default();
    let p = validate(fanout_plan(3, "task", &agent, Some(&agent)), 9).expect("valid");
    assert_eq!(p.ops().len(), 4);
    assert_eq!(p.deps(3), [0, 1, 2]);
    assert!(
        p.ops()[..3]
            .iter()
            .all(|o| o.agent.prompt.as_deref() == Some("task"))
    );
    let p = validate(fanout_plan(2, "task", &agent, None), 9).expect("valid");
    assert_eq!(p.synthesis(), None);
}
