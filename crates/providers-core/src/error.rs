//! The crate's error type.

/// Everything providers-core can refuse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// An effort string outside the vocabulary (after normalisation).
    #[error(
        "unknown effort level {0:?}; expected one of none|minimal|low|medium|high|xhigh|max|ultra"
    )]
    UnknownEffort(String),
    /// A request field has no flag metadata.
    #[error("unknown cli field {0:?}")]
    UnknownField(String),
    /// A field's value does not fit its declared flag kind.
    #[error("field {field:?} of kind {kind} cannot take a {got} value")]
    KindMismatch {
        /// The request field.
        field: String,
        /// The declared kind.
        kind: &'static str,
        /// What was supplied.
        got: &'static str,
    },
    /// An argv element the flag parser does not know.
    #[error("unknown cli flag {0:?}")]
    UnknownFlag(String),
    /// A flag that needs a value came last.
    #[error("flag {0:?} is missing its value")]
    MissingFlagValue(String),
    /// A json_value flag whose argument is not JSON.
    #[error("flag {flag:?} carries invalid json")]
    InvalidJsonFlag {
        /// The flag.
        flag: String,
    },
    /// A request that cannot be turned into an invocation.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A `kwargs` value of the wrong shape.
    #[error("kwargs key {0:?} has the wrong shape")]
    InvalidKwargs(&'static str),
    /// A 4xx (not 429) response, wrapped so no retry layer replays it; the
    /// original stays inspectable as the source.
    #[error("non-retryable client error")]
    NonRetryableClient(#[source] HttpError),
    /// Any other HTTP error response (429, 5xx).
    #[error(transparent)]
    Http(HttpError),
    /// The transport failed before a response (connection, timeout).
    #[error("transport failed: {0}")]
    Transport(String),
    /// A one-shot stream was offered where a retry could replay it.
    #[error("request body is a non-seekable stream and a retry could replay it")]
    NotReplayable,
    /// A one-shot body was asked for a second time.
    #[error("one-shot request body already consumed")]
    BodyConsumed,
    /// Runtime-only values offered to an endpoint that cannot hold them.
    #[error("endpoint {0:?} has no runtime state to hold env or on_spawn")]
    NoRuntimeState(String),
    /// A runtime-only kwarg of the wrong kind (e.g. a non-string env value).
    #[error("runtime-only kwarg {0:?} has the wrong shape")]
    RuntimeValueShape(&'static str),
    /// A serialised config that cannot be hydrated.
    #[error("invalid endpoint config: {0}")]
    InvalidConfig(&'static str),
    /// Reading a request body failed.
    #[error("reading request body failed ({0})")]
    BodyIo(std::io::ErrorKind),
}

/// An HTTP error response (status and body), as a transport reports it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("http status {status}")]
pub struct HttpError {
    /// The status code.
    pub status: u16,
    /// The response body.
    pub body: String,
}

impl HttpError {
    /// A 4xx other than 429: the request itself is wrong and must be sent
    /// once only.
    pub fn is_non_retryable_client_error(&self) -> bool {
        (400..500).contains(&self.status) && self.status != 429
    }
}
