//! The effort vocabulary, its normalisation and the per-provider clamps.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// The runtime's eight effort levels, in increasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Effort {
    /// `none`.
    None,
    /// `minimal`.
    Minimal,
    /// `low`.
    Low,
    /// `medium`.
    Medium,
    /// `high`.
    High,
    /// `xhigh`.
    XHigh,
    /// `max`.
    Max,
    /// `ultra`.
    Ultra,
}

impl Effort {
    /// Every level, lowest first.
    pub const ALL: [Effort; 8] = [
        Self::None,
        Self::Minimal,
        Self::Low,
        Self::Medium,
        Self::High,
        Self::XHigh,
        Self::Max,
        Self::Ultra,
    ];

    /// The lowercase wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::XHigh => "xhigh",
            Self::Max => "max",
            Self::Ultra => "ultra",
        }
    }
}

impl fmt::Display for Effort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Effort {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        normalize_effort(s)
    }
}

/// Normalises a raw effort string (surrounding whitespace, any case) into
/// the vocabulary. Call it once at every boundary where an effort string
/// enters: the clamp tables are keyed on [`Effort`], so an un-normalised
/// `"High"` can never silently misclamp. An unknown level is an error, never
/// a clamp.
pub fn normalize_effort(raw: &str) -> Result<Effort, Error> {
    let norm = raw.trim().to_ascii_lowercase();
    Effort::ALL
        .into_iter()
        .find(|e| e.as_str() == norm)
        .ok_or_else(|| Error::UnknownEffort(raw.trim().to_owned()))
}

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

/// The level Claude Code's `--effort` gets for `effort`: the CLI takes
/// `low|medium|high|xhigh|max` (2.1.x), so `none` and `minimal` rise to
/// `low` and `ultra` falls to `max`; the rest pass as they are.
pub fn clamp_claude_effort(effort: Effort) -> Effort {
    effort.clamp(Effort::Low, Effort::Max)
}

/// Strips one `provider/` prefix.
pub fn strip_provider(model: &str) -> &str {
    model.rsplit_once('/').map_or(model, |(_, m)| m)
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

/// agy's effort tiers, expressed only as a suffix of the model display name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AgyTier {
    /// `(Low)`.
    Low,
    /// `(Medium)`.
    Medium,
    /// `(High)`.
    High,
}

impl AgyTier {
    /// The display suffix word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "Low",
            Self::Medium => "Medium",
            Self::High => "High",
        }
    }
}

/// The one clamp table from the eight-level vocabulary onto agy's tiers.
///
/// With `has_medium = false` (Gemini 3.1 Pro) `medium` goes to `High`: the
/// spec leaves the landing open, and rounding up means a caller never gets
/// less reasoning than asked for.
pub fn clamp_agy_effort(effort: Effort, has_medium: bool) -> AgyTier {
    match effort {
        Effort::None | Effort::Minimal | Effort::Low => AgyTier::Low,
        Effort::Medium if has_medium => AgyTier::Medium,
        Effort::Medium | Effort::High | Effort::XHigh | Effort::Max | Effort::Ultra => {
            AgyTier::High
        }
    }
}
