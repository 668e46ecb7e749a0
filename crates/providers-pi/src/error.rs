//! The crate's error type.

/// Everything building a pi invocation can refuse.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A shared-protocol refusal (unknown kwarg, wrong shape).
    #[error(transparent)]
    Core(#[from] providers_core::Error),
    /// The prompt is empty.
    #[error("prompt is empty")]
    EmptyPrompt,
}
