//! agy model resolution: effort lives only in the model display name.

use providers_core::Effort;

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

    /// The vocabulary level this tier stands for.
    pub fn effort(self) -> Effort {
        match self {
            Self::Low => Effort::Low,
            Self::Medium => Effort::Medium,
            Self::High => Effort::High,
        }
    }
}

/// The one clamp table from the eight-level vocabulary onto agy's tiers:
/// none, minimal and low are Low; medium is Medium; high and above are
/// High.
///
/// With `has_medium = false` (Gemini 3.1 Pro) `medium` goes to `High`: the
/// spec leaves the landing open (Ambiguities B.6), and rounding up means a
/// caller never gets less reasoning than asked for.
pub fn clamp_agy_effort(effort: Effort, has_medium: bool) -> AgyTier {
    match effort {
        Effort::None | Effort::Minimal | Effort::Low => AgyTier::Low,
        Effort::Medium if has_medium => AgyTier::Medium,
        Effort::Medium | Effort::High | Effort::XHigh | Effort::Max | Effort::Ultra => {
            AgyTier::High
        }
    }
}

/// Where the model string came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSource {
    /// The caller typed it in this turn; it always wins.
    Explicit,
    /// A prior turn's resolution, persisted (e.g. on resume).
    Persisted,
}

/// One known agy model family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgyModel {
    /// The display name without the tier suffix.
    pub display: &'static str,
    /// Short names that resolve to it.
    pub aliases: &'static [&'static str],
    /// Whether a `(Medium)` tier exists.
    pub has_medium: bool,
}

/// The model families agy offers with tier suffixes.
pub const AGY_MODELS: &[AgyModel] = &[
    AgyModel {
        display: "Gemini 3.1 Pro",
        aliases: &["gemini-3.1-pro", "gemini-3.1-pro-preview", "3.1-pro"],
        has_medium: false,
    },
    AgyModel {
        display: "Gemini 3 Pro",
        aliases: &["gemini-3-pro", "gemini-3-pro-preview"],
        has_medium: false,
    },
    AgyModel {
        display: "Gemini 3 Flash",
        aliases: &["gemini-3-flash", "gemini-3-flash-preview"],
        has_medium: true,
    },
];

/// The family used when effort is given without a model.
pub const DEFAULT_AGY_MODEL: &str = "Gemini 3.1 Pro";

/// Splits `Name (Suffix)` into the name and the suffix.
fn split_qualifier(model: &str) -> Option<(&str, &str)> {
    let m = model.trim();
    let open = m.rfind(" (")?;
    let inner = m.get(open + 2..)?.strip_suffix(')')?;
    Some((&m[..open], inner))
}

fn family(name: &str) -> Option<&'static AgyModel> {
    let n = name.trim();
    AGY_MODELS.iter().find(|f| {
        f.display.eq_ignore_ascii_case(n) || f.aliases.iter().any(|a| a.eq_ignore_ascii_case(n))
    })
}

fn with_tier(f: &AgyModel, effort: Effort) -> String {
    let tier: AgyTier = clamp_agy_effort(effort, f.has_medium);
    format!("{} ({})", f.display, tier.as_str())
}

/// The tier `effort` lands on for a model typed this turn (`None`: the
/// default family), as [`resolve_agy_model`] bakes it in; `None` when no
/// tier is applied (a concrete `(...)`-qualified display name wins over
/// effort, and an unknown model is passed through as it is).
pub fn agy_effort_tier(model: Option<&str>, effort: Effort) -> Option<AgyTier> {
    let f = match model {
        None => family(DEFAULT_AGY_MODEL)?,
        Some(m) if split_qualifier(m).is_some() => return None,
        Some(m) => family(m)?,
    };
    Some(clamp_agy_effort(effort, f.has_medium))
}

/// Resolves the `--model` display name.
///
/// - A model already carrying a `(...)` qualifier is a concrete display
///   name and wins over `effort`, unless it was persisted and
///   `reapply_effort` is set: then the new effort replaces the baked-in
///   suffix. A model the caller typed this turn wins even then.
/// - A known family without a qualifier gets the effort's tier suffix
///   (Gemini 3.1 Pro has no Medium; see [`clamp_agy_effort`]).
/// - An unknown model is passed through unchanged.
/// - Effort without a model applies to [`DEFAULT_AGY_MODEL`].
pub fn resolve_agy_model(
    model: Option<(&str, ModelSource)>,
    effort: Option<Effort>,
    reapply_effort: bool,
) -> Option<String> {
    let Some((model, source)) = model else {
        let f = family(DEFAULT_AGY_MODEL)?;
        return effort.map(|e| with_tier(f, e));
    };
    let model = model.trim();
    match (split_qualifier(model), effort) {
        (Some((base, _)), Some(e)) if reapply_effort && source == ModelSource::Persisted => {
            match family(base) {
                Some(f) => Some(with_tier(f, e)),
                None => Some(model.to_owned()),
            }
        }
        (Some(_), _) => Some(model.to_owned()),
        (None, Some(e)) => match family(model) {
            Some(f) => Some(with_tier(f, e)),
            None => Some(model.to_owned()),
        },
        (None, None) => Some(match family(model) {
            Some(f) => f.display.to_owned(),
            None => model.to_owned(),
        }),
    }
}
