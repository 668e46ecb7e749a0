//! Codex's reasoning-effort ceilings, per model.

use providers_core::{Effort, strip_provider};

/// Codex models known to top out at `xhigh` (everything before gpt-5.6).
const CODEX_XHIGH_MODELS: &[&str] = &[
    "gpt-5",
    "gpt-5-codex",
    "gpt-5-codex-mini",
    "gpt-5-mini",
    "gpt-5-nano",
    "gpt-5.1",
    "gpt-5.1-codex",
    "gpt-5.1-codex-mini",
    "gpt-5.1-codex-max",
    "gpt-5.2",
    "gpt-5.2-codex",
    "gpt-5.3-codex",
    "gpt-5.3-codex-spark",
    "gpt-5.4",
    "gpt-5.4-mini",
    "gpt-5.5",
    "o3",
    "o4-mini",
];

/// The highest effort codex accepts for `model`, `None` for a model this
/// table does not know (which is passed through unclamped so a genuinely
/// new tier is never degraded).
///
/// Matching strips a provider prefix (`openai/`) and a trailing
/// `-YYYY-MM-DD` date, then compares exactly: `gpt-5` does not match
/// `gpt-5.6-sol`.
pub fn codex_effort_ceiling(model: &str) -> Option<Effort> {
    let base = strip_date(strip_provider(model.trim()));
    match base {
        "gpt-5.6-sol" | "gpt-5.6-terra" => Some(Effort::Ultra),
        "gpt-5.6-luna" => Some(Effort::Max),
        m if CODEX_XHIGH_MODELS.contains(&m) => Some(Effort::XHigh),
        _ => None,
    }
}

/// Clamps `effort` to codex's ceiling for `model` (unknown models unclamped).
pub fn clamp_codex_effort(model: &str, effort: Effort) -> Effort {
    match codex_effort_ceiling(model) {
        Some(ceiling) => effort.min(ceiling),
        None => effort,
    }
}

fn strip_date(model: &str) -> &str {
    // `-YYYY-MM-DD` is 11 ASCII bytes; `get` refuses a split inside a
    // multi-byte character instead of panicking.
    let Some(cut) = model.len().checked_sub(11).filter(|c| *c > 0) else {
        return model;
    };
    let (Some(head), Some(tail)) = (model.get(..cut), model.get(cut..)) else {
        return model;
    };
    let b = tail.as_bytes();
    let is_date = b.iter().enumerate().all(|(i, c)| match i {
        0 | 5 | 8 => *c == b'-',
        _ => c.is_ascii_digit(),
    });
    if is_date { head } else { model }
}
