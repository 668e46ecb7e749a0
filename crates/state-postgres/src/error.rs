//! The crate's error type and the classification of driver errors.

use std::io;

use lifecycle_core::CoreError;
use postgres::error::SqlState;

/// Everything the PostgreSQL store can fail with. No variant carries a
/// password: connection targets are shown through [`crate::DbUrl`]'s
/// redacted form only.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgStoreError {
    /// The command broke a lifecycle rule (unknown status, column, reason...).
    #[error(transparent)]
    Rule(#[from] CoreError),
    /// The connection string did not parse.
    #[error("invalid PostgreSQL connection string {url}: {detail}")]
    InvalidUrl {
        /// The redacted string.
        url: String,
        /// What is wrong.
        detail: String,
    },
    /// Nothing listens at the target (refused, or no socket file).
    #[error("no PostgreSQL server answers at {url}")]
    ConnectionRefused {
        /// The redacted target.
        url: String,
        /// The driver's error.
        #[source]
        source: postgres::Error,
    },
    /// The server refused the credentials or the role may not log in.
    #[error("PostgreSQL refused the login at {url}: {detail}")]
    Authentication {
        /// The redacted target.
        url: String,
        /// The server's message (never the password).
        detail: String,
    },
    /// A transaction kept failing with a serialization failure or a
    /// deadlock after every allowed retry.
    #[error("transaction still failed with a serialization conflict after {attempts} attempts")]
    Serialization {
        /// Attempts made.
        attempts: u32,
        /// The last error.
        #[source]
        source: postgres::Error,
    },
    /// A CAS transition lost its row to concurrent writers more times than
    /// allowed.
    #[error("{entity_type} {entity_id:?} kept changing under the transition ({attempts} attempts)")]
    Contention {
        /// The entity type.
        entity_type: String,
        /// The id.
        entity_id: String,
        /// Attempts made.
        attempts: u32,
    },
    /// A write through a read-only connection or role.
    #[error("the database connection is read-only")]
    ReadOnly(#[source] postgres::Error),
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
    /// The schema has not been migrated (a read-only open never migrates).
    #[error("schema {schema:?} holds no lionrt tables (open it read-write once to migrate)")]
    NotMigrated {
        /// The schema.
        schema: String,
    },
    /// A schema, role or channel name that is not a plain identifier.
    #[error("{what} {name:?} is not a plain lowercase identifier")]
    BadIdentifier {
        /// What the name is for.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// A session column outside the recorder's allowlist.
    #[error("column {column:?} is not allowed for {entity_type} updates")]
    ColumnNotAllowed {
        /// The entity type.
        entity_type: String,
        /// The column.
        column: String,
    },
    /// A JSON value that the column's type cannot hold.
    #[error("value {value} does not fit column {column} of type {ty}")]
    BadValue {
        /// The column.
        column: String,
        /// Its SQL type.
        ty: String,
        /// The value, as JSON.
        value: String,
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
    /// The connection pool gave no connection in time.
    #[error("no pooled PostgreSQL connection: {0}")]
    Pool(#[from] r2d2::Error),
    /// Any other driver or server error.
    #[error("postgres error")]
    Postgres(#[source] postgres::Error),
    /// A stored JSON column did not parse.
    #[error("stored JSON is malformed")]
    Json(#[from] serde_json::Error),
}

impl PgStoreError {
    /// Whether the whole transaction may be run again: a serialization
    /// failure or a deadlock, both of which PostgreSQL reports before
    /// anything committed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, PgStoreError::Postgres(e) if is_retryable(e))
    }
}

pub(crate) fn is_retryable(e: &postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    )
}

impl From<postgres::Error> for PgStoreError {
    fn from(e: postgres::Error) -> Self {
        match e.code() {
            Some(c)
                if *c == SqlState::READ_ONLY_SQL_TRANSACTION
                    || *c == SqlState::INSUFFICIENT_PRIVILEGE =>
            {
                PgStoreError::ReadOnly(e)
            }
            _ => PgStoreError::Postgres(e),
        }
    }
}

/// Classifies a failed connect: refused, authentication, or other.
pub(crate) fn connect_error(url: &str, e: postgres::Error) -> PgStoreError {
    if let Some(db) = e.as_db_error() {
        let class = db.code().code();
        if class.starts_with("28") {
            return PgStoreError::Authentication {
                url: url.to_owned(),
                detail: db.message().to_owned(),
            };
        }
    }
    let refused = std::error::Error::source(&e)
        .and_then(|s| s.downcast_ref::<io::Error>())
        .is_some_and(|io| {
            matches!(
                io.kind(),
                io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound
            )
        });
    if refused {
        PgStoreError::ConnectionRefused {
            url: url.to_owned(),
            source: e,
        }
    } else {
        PgStoreError::Postgres(e)
    }
}
