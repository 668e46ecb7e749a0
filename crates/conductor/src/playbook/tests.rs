//! Unit tests of playbooks.

use super::*;

const REVIEW: &str = r#"
name: review
description: Review a module.
argument-hint: '[--scope MODULE] [--poll]'
model: scripted/demo
effort: high
args:
  depth:
    type: int
    default: 2
    help: how deep to look
prompt: |
  Review {scope} to depth {depth} (poll={poll}). Focus: {input}. Keep {"json": 1} as is.
"#;

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn args_and_defaults_are_rendered_into_the_prompt() {
    let p = Playbook::from_yaml("review", REVIEW).expect("playbook");
    assert_eq!(p.args["scope"].kind, ArgKind::String);
    assert_eq!(p.args["poll"].kind, ArgKind::Bool);
    assert_eq!(p.args["depth"].default.as_deref(), Some("2"));
    let (input, values) = p
        .parse_args(&words(&["the parser", "--scope", "core", "--poll"]))
        .expect("args");
    let text = p.render(input.as_deref(), &values).expect("render");
    assert_eq!(
        text.trim_end(),
        r#"Review core to depth 2 (poll=true). Focus: the parser. Keep {"json": 1} as is."#
    );
    let (input, values) = p
        .parse_args(&words(&["--depth=5", "--scope", "x"]))
        .expect("args");
    let text = p.render(input.as_deref(), &values).expect("render");
    assert!(text.contains("depth 5 (poll=false)"), "{text}");
    // A string argument with no default, used by the prompt, must be given.
    let e = p.render(None, &BTreeMap::new()).expect_err("unset");
    assert!(e.to_string().contains("--scope"), "{e}");
}

#[test]
fn bad_command_lines_are_refused_by_name() {
    let p = Playbook::from_yaml("review", REVIEW).expect("playbook");
    let e = p.parse_args(&words(&["--nope", "1"])).expect_err("unknown");
    let e = e.to_string();
    assert!(
        e.contains("--nope") && e.contains("--depth, --poll, --scope"),
        "{e}"
    );
    assert!(p.parse_args(&words(&["--scope"])).is_err());
    assert!(p.parse_args(&words(&["a", "b"])).is_err());
}

#[test]
fn an_unknown_field_is_refused_with_the_accepted_list() {
    let e = Playbook::from_yaml("x", "prompt: hi\nmodle: claude/opus\n").expect_err("unknown");
    let e = e.to_string();
    assert!(
        e.contains("\"modle\"") && e.contains("with_synthesis, workers"),
        "{e}"
    );
    assert!(
        Playbook::from_yaml("x", "name: x\n").is_err(),
        "prompt is required"
    );
    assert!(Playbook::from_yaml("x", "prompt: hi\nworkers: 40\n").is_err());
    assert!(Playbook::from_yaml("x", "- a\n").is_err());
}

#[test]
fn a_prompt_without_input_gets_the_input_appended() {
    let p = Playbook::from_yaml("x", "prompt: Summarise the repo.\n").expect("playbook");
    let text = p
        .render(Some("focus on tests"), &BTreeMap::new())
        .expect("render");
    assert_eq!(text, "Summarise the repo.\n\nfocus on tests");
    assert_eq!(
        p.render(None, &BTreeMap::new()).expect("render"),
        "Summarise the repo."
    );
}

#[test]
fn workers_make_a_fanout_plan_with_the_playbooks_model() {
    let p = Playbook::from_yaml(
        "x",
        "prompt: go\nmodel: claude/opus\nworkers: 3\nwith_synthesis: true\n",
    )
    .expect("playbook");
    let plan = p.plan("go", &Agent::default());
    assert_eq!(plan.ops.len(), 4);
    assert!(
        plan.ops
            .iter()
            .all(|o| o.agent.model.as_deref() == Some("claude/opus"))
    );
    assert!(plan.ops[3].synthesis);
    let one = Playbook::from_yaml("x", "prompt: go\n").expect("playbook");
    assert_eq!(one.plan("go", &Agent::default()).ops.len(), 1);
    assert!(p.help().contains("lionrt play x"));
}
