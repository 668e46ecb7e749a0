//! The crate's error type.

/// Everything an OpenAI-compatible call can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A retry-contract or body failure from providers-core (the
    /// non-retryable sentinel, an HTTP error, a one-shot body refused).
    #[error(transparent)]
    Core(#[from] providers_core::Error),
    /// A request with no messages.
    #[error("chat request has no messages")]
    NoMessages,
    /// A response body that is not the expected shape.
    #[error("response has no {0}")]
    BadResponse(&'static str),
}
