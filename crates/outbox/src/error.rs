//! The crate's error type.

/// Everything the outbox can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutboxError {
    /// A bulk purge named neither a status nor an age bound.
    #[error(
        "purge_dispatches needs a status, a before bound or both (refusing a full-table delete)"
    )]
    EmptyPurgeSelection,
    /// A status name outside the dispatch vocabulary.
    #[error("unknown dispatch status {0:?}")]
    UnknownStatus(String),
    /// A command template that cannot be run safely.
    #[error("invalid command template: {0}")]
    Template(String),
    /// An enqueue request that breaks a bound.
    #[error("invalid dispatch: {0}")]
    Invalid(String),
    /// No row with that id.
    #[error("no dispatch {0:?}")]
    NotFound(String),
    /// The row is not in a status the operation accepts.
    #[error("dispatch {id:?} is {status}; {operation} needs {expected}")]
    WrongStatus {
        /// Row id.
        id: String,
        /// Its status.
        status: crate::DispatchStatus,
        /// What was attempted.
        operation: &'static str,
        /// Which statuses it accepts.
        expected: &'static str,
    },
    /// The row changed under the operation (another writer won the race).
    #[error("dispatch {0:?} changed concurrently; read it again and retry")]
    Conflict(String),
    /// The lifecycle policy refused the move (audited).
    #[error("dispatch {id:?}: the lifecycle policy refused {from} -> {to}")]
    Rejected {
        /// Row id.
        id: String,
        /// From.
        from: crate::DispatchStatus,
        /// To.
        to: crate::DispatchStatus,
    },
    /// A scan setting that would let a live lease be taken over.
    #[error("invalid scan config: {0}")]
    Config(String),
    /// The store failed.
    #[error("outbox store failed")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl OutboxError {
    /// Wraps a store error.
    pub fn store(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        OutboxError::Store(Box::new(e))
    }
}
