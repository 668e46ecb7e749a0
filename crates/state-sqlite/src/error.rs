//! The crate's error type.

use std::path::PathBuf;

use lifecycle_core::CoreError;

/// Everything the store can fail with. Messages name the path, entity or
/// column at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The command broke a lifecycle rule (unknown status, column, reason...).
    #[error(transparent)]
    Rule(#[from] CoreError),
    /// The database file does not exist.
    #[error("no database at {0} (run `lionrt state init` first)")]
    Missing(PathBuf),
    /// The path names a directory, not a database file.
    #[error("{0} is a directory, not a database file")]
    IsADirectory(PathBuf),
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file starts as a SQLite database but cannot be read as one.
    #[error("{path} cannot be read as a SQLite database (damaged?): {source}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// A new database file could not be created (the directory is not
    /// writable, the file system is read-only, ...).
    #[error("cannot create the database {path}: {source}")]
    CannotCreate {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is the original lionagi's store: lionrt never writes it.
    #[error("{path} is {what}; lionrt does not write to it")]
    ForeignStore {
        /// The file.
        path: PathBuf,
        /// What it is ([`crate::StoreKind::describe`]).
        what: String,
        /// What it is.
        kind: crate::StoreKind,
    },
    /// The file exists but is not a SQLite database.
    #[error("{0} is not a SQLite database")]
    NotADatabase(PathBuf),
    /// Another writer held the lock past busy_timeout.
    #[error("database is locked by another writer (busy_timeout expired)")]
    Locked(#[source] rusqlite::Error),
    /// A write through a read-only engine or onto a read-only file.
    #[error("database is read-only")]
    ReadOnly(#[source] rusqlite::Error),
    /// A read-only engine was asked for on something other than SQLite.
    #[error(
        "read-only engines are SQLite-only; {0:?} is not a sqlite URL (use a read-only database role instead)"
    )]
    UnsupportedUrl(String),
    /// The legacy transition surface only serves dispatch and schedule_run.
    #[error("entity type {0:?} is not served by the legacy transition surface")]
    UnsupportedEntity(String),
    /// A guard or patch column outside the legacy surface's allowlist.
    #[error("column {column:?} is not allowed for {entity_type} guards or patches")]
    ColumnNotAllowed {
        /// The entity type.
        entity_type: String,
        /// The column.
        column: String,
    },
    /// An unguarded UPDATE matched no row although the row was just read:
    /// rolled back inside the transaction.
    #[error("storage anomaly: unguarded update of {entity_type} {entity_id:?} matched no row")]
    StorageAnomaly {
        /// The entity type.
        entity_type: String,
        /// The id.
        entity_id: String,
    },
    /// A stored row holds a value its type cannot (e.g. an unknown status).
    #[error("{entity_type} {entity_id:?} is malformed: {detail}")]
    MalformedRow {
        /// The entity type.
        entity_type: String,
        /// The id.
        entity_id: String,
        /// What is wrong.
        detail: String,
    },
    /// An applied migration's checksum differs from the embedded one.
    #[error("migration {version} was applied with a different checksum")]
    MigrationChecksum {
        /// The version.
        version: u32,
    },
    /// The database has migrations this build does not know.
    #[error("database schema version {found} is newer than this build ({known})")]
    SchemaTooNew {
        /// Found in the database.
        found: u32,
        /// Known to this build.
        known: u32,
    },
    /// A session control could not be applied.
    #[error("session control {id} failed to apply")]
    ControlFailed {
        /// The control row id.
        id: i64,
        /// The applier's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The connection pool failed.
    #[error("connection pool error")]
    Pool(#[from] r2d2::Error),
    /// Any other SQLite error.
    #[error("sqlite error")]
    Sqlite(#[source] rusqlite::Error),
    /// No entity id starts with the given prefix.
    #[error("no {entity_type} id starts with {prefix:?}")]
    NoSuchId {
        /// The entity type.
        entity_type: String,
        /// The prefix asked for.
        prefix: String,
    },
    /// More than one entity id starts with the given prefix.
    #[error("{prefix:?} matches several {entity_type} ids ({}); give more characters", candidates.join(", "))]
    AmbiguousId {
        /// The entity type.
        entity_type: String,
        /// The prefix asked for.
        prefix: String,
        /// Some of the ids it matches.
        candidates: Vec<String>,
    },
    /// A stored JSON column did not parse.
    #[error("stored JSON is malformed")]
    Json(#[from] serde_json::Error),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ffi::ErrorCode;
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked(e),
            Some(ErrorCode::ReadOnly) => StoreError::ReadOnly(e),
            _ => StoreError::Sqlite(e),
        }
    }
}
