//! The crate's error type.

/// A boxed error from a seam (the recorder or a provider).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the runner, the sweep or a kill can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The session recorder failed.
    #[error("session store: {what}")]
    Store {
        /// What was being recorded or read.
        what: &'static str,
        /// The store's error.
        #[source]
        source: BoxError,
    },
    /// The sandbox could not be created (before any session was started).
    #[error("creating a sandbox of {workspace}")]
    Sandbox {
        /// The workspace.
        workspace: String,
        /// The sandbox error.
        #[source]
        source: sandbox_git::Error,
    },
    /// The provider could not build its invocation.
    #[error("provider {provider}: building the invocation")]
    Provider {
        /// The provider name.
        provider: &'static str,
        /// Its error.
        #[source]
        source: BoxError,
    },
    /// The supervisor failed (spawning, reading, a watchdog).
    #[error(transparent)]
    Supervisor(#[from] cli_supervisor::Error),
    /// Local I/O (leg files, the scratch directory).
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A blocking task panicked.
    #[error("a blocking {what} task panicked")]
    Panicked {
        /// Which task.
        what: &'static str,
    },
    /// No session id starts with the given prefix.
    #[error("no session matches {prefix:?}")]
    NoSuchSession {
        /// The prefix given.
        prefix: String,
    },
    /// Several session ids start with the given prefix.
    #[error("{prefix:?} is ambiguous: it matches {candidates:?}")]
    AmbiguousSession {
        /// The prefix given.
        prefix: String,
        /// Some of the matching ids.
        candidates: Vec<String>,
    },
    /// The session is already terminal.
    #[error("session {id} already ended ({status})")]
    AlreadyEnded {
        /// Session id.
        id: String,
        /// Its status.
        status: String,
    },
    /// The session's owner runs on another host: it is ended there.
    #[error("session {id} is owned by another host ({host}); end it there")]
    OtherHost {
        /// Session id.
        id: String,
        /// The owner's recorded host identity.
        host: String,
    },
    /// The session has no spawn record yet (its leg has not been spawned).
    #[error("session {id} has no leg recorded yet; try again in a moment")]
    NoLegYet {
        /// Session id.
        id: String,
    },
}

impl Error {
    pub(crate) fn store<E: std::error::Error + Send + Sync + 'static>(
        what: &'static str,
    ) -> impl FnOnce(E) -> Self {
        move |e| Self::Store {
            what,
            source: Box::new(e),
        }
    }
}
