//! The crate's error type.

/// What can go wrong building a policy or talking to the daemon. The
/// provider's public hooks ([`crate::KhiveProvider::provide`],
/// [`crate::KhiveProvider::writeback`]) never return it: they log it and
/// let the turn go on. The `try_` forms return it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A policy without an explicit profile id: khive's `auto_feedback`
    /// does no binding resolution, so a default profile would misattribute
    /// every feedback event.
    #[error("a khive policy needs an explicit, non-empty profile_id")]
    MissingProfile,
    /// A policy field that cannot be used.
    #[error("invalid khive policy: {detail}")]
    InvalidPolicy {
        /// What is wrong.
        detail: String,
    },
    /// The MCP transport (connection, admission, validation, gate or the
    /// call itself) failed.
    #[error("khive request over mcp server '{server}' failed")]
    Transport {
        /// The pool's server name for the daemon.
        server: String,
        /// Why.
        #[source]
        source: mcp_pool::Error,
    },
    /// The request did not finish within the policy's timeout.
    #[error("khive request over mcp server '{server}' timed out after {timeout:?}")]
    TimedOut {
        /// The pool's server name for the daemon.
        server: String,
        /// The policy's timeout.
        timeout: std::time::Duration,
    },
    /// The daemon answered the request with a tool error.
    #[error("khive daemon refused the request: {detail}")]
    Refused {
        /// The daemon's message (truncated).
        detail: String,
    },
    /// The daemon's answer does not have the expected shape.
    #[error("unexpected khive answer: {detail}")]
    BadAnswer {
        /// What is missing or wrong.
        detail: String,
    },
}
