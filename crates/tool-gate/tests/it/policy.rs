//! Permission policy: rule precedence, globs and escalation (GATE-012).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tool_gate::{
    ControlUnavailable, Decision, DenyKind, EscalationAnswer, Gate, PermissionPolicy, Rule,
    ToolCall,
};

fn call(tool: &str) -> ToolCall {
    ToolCall::new("srv", tool, json!({}))
}

fn escalating() -> PermissionPolicy {
    PermissionPolicy::new(Decision::Allow)
        .with_rule(Rule::tool("deploy_*", Decision::Escalate).expect("rule"))
}

#[test]
fn escalation_without_a_handler_is_control_unavailable() {
    // contract: GATE-012
    let err = escalating().check(&call("deploy_prod")).unwrap_err();
    assert!(err.is_unavailable());
    assert!(err.message().contains("no escalation handler"), "{err}");
    let result = Gate::builder()
        .security(escalating())
        .build()
        .check(&call("deploy_prod"));
    assert!(result.errored());
    assert_eq!(result.deny_kind(), Some(DenyKind::Unavailable));
}

#[test]
fn a_declined_escalation_is_an_ordinary_denial_that_says_so() {
    // contract: GATE-012
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    let policy = escalating().on_escalate(move |c: &ToolCall, rule: &str| {
        seen.fetch_add(1, Ordering::SeqCst);
        assert_eq!(rule, "deploy_*");
        Ok(if c.tool == "deploy_staging" {
            EscalationAnswer::Approve
        } else {
            EscalationAnswer::Decline {
                reason: Some("change freeze".into()),
            }
        })
    });
    let gate = Gate::builder().security(policy).build();
    let declined = gate.check(&call("deploy_prod"));
    assert_eq!(declined.deny_kind(), Some(DenyKind::Denied));
    assert!(!declined.errored());
    let reason = declined.reason().expect("reason");
    assert!(
        reason.contains("declined") && reason.contains("change freeze"),
        "{reason}"
    );
    assert!(gate.check(&call("deploy_staging")).is_allowed());
    assert!(gate.check(&call("read")).is_allowed());
    assert_eq!(
        asked.load(Ordering::SeqCst),
        2,
        "only escalating calls reach the handler"
    );
}

#[test]
fn a_handler_that_cannot_answer_is_errored() {
    // contract: GATE-012
    let policy = escalating()
        .on_escalate(|_: &ToolCall, _: &str| Err(ControlUnavailable::new("pager down")));
    let result = Gate::builder()
        .security(policy)
        .build()
        .check(&call("deploy_prod"));
    assert_eq!(result.deny_kind(), Some(DenyKind::Unavailable));
    assert!(result.reason().expect("reason").contains("pager down"));
}

#[test]
fn the_most_restrictive_matching_rule_wins_whatever_the_order() {
    let allow_all = Rule::tool("*", Decision::Allow).expect("rule");
    let deny_bash = Rule::tool("bash", Decision::Deny).expect("rule");
    let escalate_write = Rule::tool("write_*", Decision::Escalate).expect("rule");
    for rules in [
        [allow_all.clone(), deny_bash.clone(), escalate_write.clone()],
        [escalate_write.clone(), deny_bash.clone(), allow_all.clone()],
        [deny_bash.clone(), allow_all.clone(), escalate_write.clone()],
    ] {
        let policy = rules
            .into_iter()
            .fold(PermissionPolicy::default(), PermissionPolicy::with_rule);
        assert_eq!(policy.decide(&call("bash")).0, Decision::Deny);
        assert_eq!(policy.decide(&call("write_file")).0, Decision::Escalate);
        assert_eq!(policy.decide(&call("read_file")).0, Decision::Allow);
    }
}

#[test]
fn unmatched_calls_get_the_default_which_denies_by_default() {
    let policy =
        PermissionPolicy::default().with_rule(Rule::tool("read_*", Decision::Allow).expect("rule"));
    assert!(policy.check(&call("read_file")).is_ok());
    let err = policy.check(&call("Read_file")).unwrap_err();
    assert!(!err.is_unavailable());
    assert!(err.message().contains("the default"), "{err}");
    let scoped = PermissionPolicy::default()
        .with_rule(Rule::server_tool("github", "*", Decision::Allow).expect("rule"));
    assert!(
        scoped
            .check(&ToolCall::new("github", "list_issues", json!({})))
            .is_ok()
    );
    assert!(
        scoped
            .check(&ToolCall::new("githubx", "list_issues", json!({})))
            .is_err()
    );
    assert!(Rule::tool("", Decision::Allow).is_err());
}

#[test]
fn globs_match_stars_and_literals_only() {
    let cases = [
        ("*", "", true),
        ("read_*", "read_file", true),
        ("*_file", "read_file", true),
        ("a*b*c", "aXbYc", true),
        ("a*b*c", "aXbY", false),
        ("bash", "bash2", false),
        ("bash", "Bash", false),
        ("read_*", "READ_file", false),
        ("**", "x", true),
        ("a?c", "abc", false),
        ("a.c", "abc", false),
    ];
    for (pattern, tool, expected) in cases {
        let policy = PermissionPolicy::default()
            .with_rule(Rule::tool(pattern, Decision::Allow).expect("rule"));
        assert_eq!(
            policy.check(&call(tool)).is_ok(),
            expected,
            "{pattern} vs {tool}"
        );
    }
}

#[test]
fn deny_and_escalate_rules_ignore_case_while_allow_rules_do_not() {
    let policy = PermissionPolicy::new(Decision::Allow)
        .with_rule(Rule::tool("bash", Decision::Deny).expect("rule"))
        .with_rule(Rule::tool("deploy_*", Decision::Escalate).expect("rule"));
    for tool in ["bash", "Bash", "BASH"] {
        assert_eq!(policy.decide(&call(tool)).0, Decision::Deny, "{tool}");
    }
    assert_eq!(policy.decide(&call("DEPLOY_prod")).0, Decision::Escalate);
    let scoped = PermissionPolicy::new(Decision::Allow)
        .with_rule(Rule::server_tool("shell", "*", Decision::Deny).expect("rule"));
    assert!(
        scoped
            .check(&ToolCall::new("Shell", "run", json!({})))
            .is_err()
    );
}

/// Decisions of lionagi 0.36.0's `PermissionPolicy(mode="rules")` (black
/// box, see fixtures/tool-gate/gen_policy_oracle.py).
const ORACLE: &str = include_str!("../../../../fixtures/tool-gate/policy_oracle.jsonl");

#[test]
fn decisions_agree_with_the_original_except_where_read_closed() {
    let mut departures = Vec::new();
    for line in ORACLE.lines().filter(|l| !l.trim().is_empty()) {
        let case: serde_json::Value = serde_json::from_str(line).expect("fixture line");
        let mut policy = PermissionPolicy::default();
        for (key, decision) in [
            ("allow", Decision::Allow),
            ("deny", Decision::Deny),
            ("escalate", Decision::Escalate),
        ] {
            for pattern in case["rules"][key].as_array().into_iter().flatten() {
                let pattern = pattern.as_str().expect("pattern");
                policy = policy.with_rule(Rule::tool(pattern, decision).expect("rule"));
            }
        }
        let tool = case["tool"].as_str().expect("tool");
        let ours = match policy.decide(&call(tool)).0 {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
            Decision::Escalate => "escalate",
        };
        let oracle = case["oracle"].as_str().expect("oracle");
        if ours != oracle {
            // Only ever stricter: allow -> escalate or deny.
            assert_eq!(oracle, "allow", "{line}: ours {ours}");
            departures.push(tool.to_owned());
        }
    }
    // Escalate beats a broad allow; an allow pattern does not fold case.
    assert_eq!(departures, ["write_file", "Bash"]);
}

#[test]
fn a_panicking_escalation_handler_refuses_the_call() {
    // contract: GATE-002
    let policy = escalating().on_escalate(
        |_: &ToolCall, _: &str| -> Result<EscalationAnswer, ControlUnavailable> {
            panic!("handler bug")
        },
    );
    let result = Gate::builder()
        .security(policy)
        .build()
        .check(&call("deploy_prod"));
    assert_eq!(result.deny_kind(), Some(DenyKind::EvaluatorFailed));
    assert_eq!(result.control(), Some("permission-policy"));
    assert!(result.reason().expect("reason").contains("handler bug"));
}
