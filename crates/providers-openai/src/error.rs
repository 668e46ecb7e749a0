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
    /// The model's circuit breaker is open: the call was not sent.
    #[error("circuit breaker open: endpoint calls are refused until its cooldown passes")]
    CircuitOpen,
    /// The model's executor is stopped (the model was closed): the call was
    /// not sent.
    #[error("executor stopped: the model is closed")]
    ExecutorClosed,
    /// The executor's queue of calls waiting for budget is full.
    #[error("executor queue full ({capacity} calls waiting)")]
    QueueFull {
        /// The queue's capacity.
        capacity: usize,
    },
    /// Rate-limit settings that can never grant a call.
    #[error("invalid rate limit: {0}")]
    InvalidRateLimit(&'static str),
    /// An API call on a model whose endpoint is a CLI (agentic) endpoint;
    /// those run as supervised legs, not over a transport.
    #[error("model for provider {0:?} has a cli endpoint, not an api endpoint")]
    NotAnApiEndpoint(String),
}
