//! The nudge engine: rules that add short reminders to an agent's next turn,
//! under a token cap, with once/cooldown bookkeeping.

use std::panic::{AssertUnwindSafe, catch_unwind};

/// An error a rule's condition or render may return.
pub type NudgeError = Box<dyn std::error::Error + Send + Sync>;

type Condition<C> = Box<dyn Fn(&C) -> Result<bool, NudgeError> + Send + Sync>;
type Render<C> = Box<dyn Fn(&C) -> Result<String, NudgeError> + Send + Sync>;

/// One nudge rule over a context `C`.
pub struct NudgeRule<C> {
    name: String,
    once: bool,
    cooldown_turns: u64,
    priority: i32,
    condition: Condition<C>,
    render: Render<C>,
}

impl<C> NudgeRule<C> {
    /// A rule that fires when `condition` holds, with the message `render`
    /// makes.
    pub fn new(
        name: impl Into<String>,
        condition: impl Fn(&C) -> Result<bool, NudgeError> + Send + Sync + 'static,
        render: impl Fn(&C) -> Result<String, NudgeError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            once: false,
            cooldown_turns: 0,
            priority: 0,
            condition: Box::new(condition),
            render: Box::new(render),
        }
    }

    /// Fire at most once per engine.
    #[must_use]
    pub fn once(mut self) -> Self {
        self.once = true;
        self
    }

    /// After firing on turn `t`, stay quiet until turn `t + turns`.
    #[must_use]
    pub fn cooldown(mut self, turns: u64) -> Self {
        self.cooldown_turns = turns;
        self
    }

    /// Higher priority is merged first under the token cap (default 0; ties
    /// keep registration order).
    #[must_use]
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Fired {
    consumed: bool,
    last_turn: Option<u64>,
}

/// What one evaluation delivers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nudges {
    /// The merged messages, highest priority first, separated by blank lines.
    pub text: String,
    /// Rules whose message is in `text` (their bookkeeping is committed).
    pub delivered: Vec<String>,
    /// Rules that fired but whose message the token cap dropped (nothing
    /// committed: they can fire again).
    pub dropped: Vec<String>,
    /// Rules skipped because their condition or render failed.
    pub failed: Vec<String>,
}

/// Evaluates rules each turn and merges their messages under a token cap.
///
/// Once/cooldown bookkeeping is committed only for rules whose message
/// survives the merge (GATE-022): a message the cap dropped was never
/// delivered, so its once is not consumed and its cooldown not started. A
/// rule whose condition or render fails (error or panic) is skipped and
/// logged; the others are still evaluated and delivered (GATE-023).
pub struct NudgeEngine<C> {
    rules: Vec<NudgeRule<C>>,
    fired: Vec<Fired>,
    token_cap: usize,
}

impl<C> NudgeEngine<C> {
    /// An engine whose merged text stays within `token_cap` tokens (as
    /// counted by [`estimate_tokens`]).
    pub fn new(token_cap: usize) -> Self {
        Self {
            rules: Vec::new(),
            fired: Vec::new(),
            token_cap,
        }
    }

    /// Adds a rule.
    #[must_use]
    pub fn rule(mut self, rule: NudgeRule<C>) -> Self {
        self.rules.push(rule);
        self.fired.push(Fired::default());
        self
    }

    /// Evaluates every rule for `turn` and merges the messages.
    pub fn evaluate(&mut self, turn: u64, ctx: &C) -> Nudges {
        let mut out = Nudges::default();
        let mut candidates: Vec<(usize, String)> = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            let state = self.fired[i];
            if rule.once && state.consumed {
                continue;
            }
            if let Some(last) = state.last_turn
                && turn < last.saturating_add(rule.cooldown_turns)
            {
                continue;
            }
            match guarded(|| (rule.condition)(ctx)) {
                Ok(false) => continue,
                Ok(true) => {}
                Err(error) => {
                    tracing::warn!(rule = %rule.name, %error, "nudge rule skipped: its condition failed");
                    out.failed.push(rule.name.clone());
                    continue;
                }
            }
            match guarded(|| (rule.render)(ctx)) {
                Ok(message) => candidates.push((i, message)),
                Err(error) => {
                    tracing::warn!(rule = %rule.name, %error, "nudge rule skipped: its render failed");
                    out.failed.push(rule.name.clone());
                }
            }
        }
        candidates.sort_by_key(|(i, _)| std::cmp::Reverse(self.rules[*i].priority));
        let mut used = 0usize;
        for (i, message) in candidates {
            let separator = if out.text.is_empty() { 0 } else { 1 };
            let cost = estimate_tokens(&message) + separator;
            let name = self.rules[i].name.clone();
            if used + cost > self.token_cap {
                out.dropped.push(name);
                continue;
            }
            used += cost;
            if !out.text.is_empty() {
                out.text.push_str("\n\n");
            }
            out.text.push_str(&message);
            self.fired[i] = Fired {
                consumed: true,
                last_turn: Some(turn),
            };
            out.delivered.push(name);
        }
        out
    }
}

/// The token estimate the cap counts in: one token per four characters,
/// rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

fn guarded<T>(f: impl FnOnce() -> Result<T, NudgeError>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("panicked".to_owned()),
    }
}
