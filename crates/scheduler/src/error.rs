//! The scheduler's error type.

/// Everything that can go wrong defining, storing or firing a schedule.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A schedule definition is invalid (the message says which field).
    #[error("invalid schedule {name:?}: {reason}")]
    Invalid {
        /// The schedule's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A declarative set file is not a set of schedules (the message says
    /// where and what was expected).
    #[error("not a schedule set: {0}")]
    BadSet(String),
    /// No schedule has this name or id.
    #[error("no schedule named {0:?}")]
    NotFound(String),
    /// A schedule with this name already exists.
    #[error("a schedule named {0:?} already exists")]
    Exists(String),
    /// Another daemon holds the tick lock of this database (whatever path
    /// reached it).
    #[error("another scheduler already ticks this database ({0}: its lock is held)")]
    Locked(String),
    /// Another daemon holds the PostgreSQL advisory tick lock of this
    /// schema (on any host).
    #[error(
        "another scheduler already ticks this database (the advisory lock of schema {0:?} is held)"
    )]
    AdvisoryLocked(String),
    /// A stored definition could not be read back.
    #[error("stored definition of schedule {id:?} is unreadable: {source}")]
    Stored {
        /// The schedule's id.
        id: String,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A lifecycle rule refused a write (decided before any SQL).
    #[error("lifecycle rule: {0}")]
    Rule(#[from] lifecycle_core::CoreError),
    /// The lifecycle store refused or failed.
    #[error(transparent)]
    Store(#[from] state_sqlite::StoreError),
    /// SQLite failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The PostgreSQL store failed (connection, query, lifecycle rule).
    #[error(transparent)]
    Postgres(#[from] state_postgres::PgStoreError),
    /// The thread that runs PostgreSQL calls for a current-thread async
    /// runtime could not be started or is gone.
    #[error("the PostgreSQL worker thread is unavailable: {0}")]
    Worker(String),
    /// The lock file could not be opened.
    #[error("lock file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Self {
        Error::Postgres(e.into())
    }
}
