//! The effort vocabulary and its normalisation. Each provider clamps the
//! levels onto what its CLI takes (`Provider::clamp_effort`).

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

/// Strips one `provider/` prefix.
pub fn strip_provider(model: &str) -> &str {
    model.rsplit_once('/').map_or(model, |(_, m)| m)
}
