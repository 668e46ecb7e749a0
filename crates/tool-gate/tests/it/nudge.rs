//! Nudge engine bookkeeping and failure isolation (GATE-022, GATE-023).

use tool_gate::{NudgeEngine, NudgeRule, estimate_tokens};

use crate::capture_logs;

/// A context: which rules' conditions hold this turn.
struct Ctx {
    on: Vec<&'static str>,
}

fn rule(name: &'static str, message: &'static str) -> NudgeRule<Ctx> {
    NudgeRule::new(
        name,
        move |c: &Ctx| Ok(c.on.contains(&name)),
        move |_| Ok(message.to_owned()),
    )
}

const TEN_TOKENS: &str = "0123456789012345678901234567890123456789"; // 40 chars

#[test]
fn a_message_the_cap_dropped_does_not_consume_once() {
    // contract: GATE-022
    assert_eq!(estimate_tokens(TEN_TOKENS), 10);
    let mut engine = NudgeEngine::new(12)
        .rule(rule("urgent", TEN_TOKENS).once().priority(5))
        .rule(rule("tip", TEN_TOKENS).once());
    let ctx = Ctx {
        on: vec!["urgent", "tip"],
    };
    let turn1 = engine.evaluate(1, &ctx);
    assert_eq!(turn1.delivered, ["urgent"]);
    assert_eq!(turn1.dropped, ["tip"]);
    assert_eq!(turn1.text, TEN_TOKENS);
    // tip was never delivered, so its once is still available; urgent's is used.
    let turn2 = engine.evaluate(2, &ctx);
    assert_eq!(turn2.delivered, ["tip"]);
    assert!(turn2.dropped.is_empty());
    let turn3 = engine.evaluate(3, &ctx);
    assert!(turn3.delivered.is_empty() && turn3.dropped.is_empty() && turn3.text.is_empty());
}

#[test]
fn a_message_the_cap_dropped_does_not_start_its_cooldown() {
    // contract: GATE-022
    let mut engine = NudgeEngine::new(12)
        .rule(rule("big", TEN_TOKENS).priority(1).cooldown(10))
        .rule(rule("cool", TEN_TOKENS).cooldown(3));
    let both = Ctx {
        on: vec!["big", "cool"],
    };
    assert_eq!(engine.evaluate(1, &both).dropped, ["cool"]);
    // Turn 2: big is cooling down, cool fires (its cooldown never started).
    assert_eq!(engine.evaluate(2, &both).delivered, ["cool"]);
    // Delivered at 2 with cooldown 3: quiet on 3 and 4, back on 5.
    assert!(
        engine
            .evaluate(3, &Ctx { on: vec!["cool"] })
            .delivered
            .is_empty()
    );
    assert!(
        engine
            .evaluate(4, &Ctx { on: vec!["cool"] })
            .delivered
            .is_empty()
    );
    assert_eq!(
        engine.evaluate(5, &Ctx { on: vec!["cool"] }).delivered,
        ["cool"]
    );
}

#[test]
fn merged_messages_fit_the_cap_in_priority_order() {
    let mut engine = NudgeEngine::new(25)
        .rule(rule("low", "low priority message"))
        .rule(rule("high", "high priority message").priority(9))
        .rule(rule("mid", "mid").priority(3));
    let out = engine.evaluate(
        1,
        &Ctx {
            on: vec!["low", "high", "mid"],
        },
    );
    assert_eq!(out.delivered, ["high", "mid", "low"]);
    assert_eq!(
        out.text,
        "high priority message\n\nmid\n\nlow priority message"
    );
    assert!(estimate_tokens(&out.text) <= 25);
}

#[test]
fn a_failing_rule_is_skipped_and_logged_and_the_others_still_deliver() {
    // contract: GATE-023
    let mut engine = NudgeEngine::new(100)
        .rule(NudgeRule::new(
            "bad-condition",
            |_: &Ctx| Err("no state".into()),
            |_| Ok("x".into()),
        ))
        .rule(NudgeRule::new(
            "bad-render",
            |_: &Ctx| Ok(true),
            |_| Err("template error".into()),
        ))
        .rule(NudgeRule::new(
            "panicking",
            |_: &Ctx| -> Result<bool, tool_gate::NudgeError> { panic!("rule bug") },
            |_| Ok("x".into()),
        ))
        .rule(rule("good", "keep going").once());
    let (out, logs) = capture_logs(|| engine.evaluate(1, &Ctx { on: vec!["good"] }));
    assert_eq!(out.delivered, ["good"]);
    assert_eq!(out.text, "keep going");
    assert_eq!(out.failed, ["bad-condition", "bad-render", "panicking"]);
    for name in ["bad-condition", "bad-render", "panicking"] {
        assert!(
            logs.lines().any(|l| l.contains("WARN") && l.contains(name)),
            "{name}: {logs}"
        );
    }
    assert!(
        logs.contains("template error") && logs.contains("no state"),
        "{logs}"
    );
    // A failed rule commits nothing: a later working turn can still fire it.
    let out = engine.evaluate(2, &Ctx { on: vec![] });
    assert_eq!(out.failed.len(), 3);
}
