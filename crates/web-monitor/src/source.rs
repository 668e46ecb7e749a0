//! The seam between the monitor and a store: [`Source`] runs one
//! parameterised `SELECT` and hands back plain cells. It is implemented for
//! the SQLite store's read-only engine and for the PostgreSQL store, and
//! every query of the monitor ([`crate::queries`]) is written once over
//! it, so each route answers the same on both stores.
//!
//! The SQL is the dialect both servers share: parameters are `$1`, `$2`...
//! in order of first use (SQLite numbers `$N` names by first appearance,
//! so positional binding lines up), sums of integers are `CAST(.. AS
//! BIGINT)` (PostgreSQL's `sum(bigint)` is `numeric`), and the one name
//! that differs, a message's write-order cursor, comes from
//! [`Dialect::message_seq`].

use std::fmt;

use serde::Serialize;

/// A query parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// A 64-bit integer (`BIGINT` on PostgreSQL).
    Int(i64),
    /// Text.
    Text(String),
}

/// One cell of a result row.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Cell {
    /// SQL NULL.
    Null,
    /// An integer (booleans read as 0 or 1).
    Int(i64),
    /// A floating-point number.
    Real(f64),
    /// Text.
    Text(String),
}

impl Cell {
    /// The integer, if the cell holds one.
    pub fn int(&self) -> Option<i64> {
        match self {
            Cell::Int(n) => Some(*n),
            _ => None,
        }
    }

    /// The number, if the cell holds one (integers widened).
    pub fn real(&self) -> Option<f64> {
        match self {
            Cell::Real(x) => Some(*x),
            #[allow(clippy::cast_precision_loss, reason = "sums of costs and tokens")]
            Cell::Int(n) => Some(*n as f64),
            _ => None,
        }
    }

    /// The text, if the cell holds text.
    pub fn text(&self) -> Option<&str> {
        match self {
            Cell::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The cell as JSON.
    pub fn json(&self) -> serde_json::Value {
        match self {
            Cell::Null => serde_json::Value::Null,
            Cell::Int(n) => (*n).into(),
            Cell::Real(x) => {
                serde_json::Number::from_f64(*x).map_or(serde_json::Value::Null, Into::into)
            }
            Cell::Text(s) => s.clone().into(),
        }
    }
}

/// A result row.
pub type Row = Vec<Cell>;

/// Where the two SQL dialects differ for the monitor's queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

impl Dialect {
    /// The column giving messages their global write order (SQLite's
    /// rowid, PostgreSQL's identity column `seq`).
    pub fn message_seq(self) -> &'static str {
        match self {
            Dialect::Sqlite => "m.rowid",
            Dialect::Postgres => "m.seq",
        }
    }
}

/// Why a read failed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The SQLite store refused.
    #[error("reading the SQLite store: {0}")]
    Sqlite(#[from] state_sqlite::StoreError),
    /// SQLite refused the statement.
    #[error("reading the SQLite store: {0}")]
    Rusqlite(#[from] rusqlite::Error),
    /// The PostgreSQL store refused.
    #[error("reading the PostgreSQL store: {0}")]
    Postgres(#[from] state_postgres::PgStoreError),
    /// PostgreSQL refused the statement.
    #[error("reading the PostgreSQL store: {0}")]
    PostgresClient(#[from] postgres::Error),
    /// A column of a type the monitor does not read.
    #[error("a column of type {0} the monitor does not read")]
    ColumnType(String),
}

/// A store the monitor reads: one `SELECT` at a time, read-only.
pub trait Source: Send + Sync + 'static {
    /// The store's dialect.
    fn dialect(&self) -> Dialect;

    /// Runs `sql` with `params` bound in order; every row, every column.
    ///
    /// # Errors
    ///
    /// [`SourceError`] when the store refuses.
    fn query(&self, sql: &str, params: &[Param]) -> Result<Vec<Row>, SourceError>;

    /// Where the store is, safe to show (a path, or a server URL with its
    /// password masked).
    fn location(&self) -> String;
}

impl fmt::Debug for dyn Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("location", &self.location())
            .finish()
    }
}

/// A SQLite file opened read-only.
pub struct SqliteSource {
    engine: state_sqlite::ReadOnlyEngine,
    location: String,
}

impl SqliteSource {
    /// The monitor's source over `engine` (`location` is what pages show).
    pub fn new(engine: state_sqlite::ReadOnlyEngine, location: impl Into<String>) -> Self {
        SqliteSource {
            engine,
            location: location.into(),
        }
    }
}

impl Source for SqliteSource {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn query(&self, sql: &str, params: &[Param]) -> Result<Vec<Row>, SourceError> {
        use rusqlite::types::{Value, ValueRef};
        let conn = self.engine.conn()?;
        let mut stmt = conn.prepare_cached(sql)?;
        let columns = stmt.column_count();
        let values = params.iter().map(|p| match p {
            Param::Int(n) => Value::Integer(*n),
            Param::Text(s) => Value::Text(s.clone()),
        });
        let mut rows = stmt.query(rusqlite::params_from_iter(values))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let mut row = Vec::with_capacity(columns);
            for i in 0..columns {
                row.push(match r.get_ref(i)? {
                    ValueRef::Null => Cell::Null,
                    ValueRef::Integer(n) => Cell::Int(n),
                    ValueRef::Real(x) => Cell::Real(x),
                    ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(_) => return Err(SourceError::ColumnType("BLOB".into())),
                });
            }
            out.push(row);
        }
        Ok(out)
    }

    fn location(&self) -> String {
        self.location.clone()
    }
}

/// A PostgreSQL schema (read through the store's pool; a store over a
/// read-only engine makes every transaction read-only).
pub struct PostgresSource {
    store: state_postgres::PgStore,
}

impl PostgresSource {
    /// The monitor's source over `store`.
    pub fn new(store: state_postgres::PgStore) -> Self {
        PostgresSource { store }
    }
}

impl Source for PostgresSource {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn query(&self, sql: &str, params: &[Param]) -> Result<Vec<Row>, SourceError> {
        use postgres::types::{ToSql, Type};
        let mut conn = self.store.engine().conn()?;
        let bound: Vec<&(dyn ToSql + Sync)> = params
            .iter()
            .map(|p| match p {
                Param::Int(n) => n as &(dyn ToSql + Sync),
                Param::Text(s) => s as &(dyn ToSql + Sync),
            })
            .collect();
        let stmt = conn.prepare(sql)?;
        let rows = conn.query(&stmt, &bound)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let mut row = Vec::with_capacity(r.len());
            for (i, col) in r.columns().iter().enumerate() {
                let t = col.type_();
                let cell = if *t == Type::INT8 {
                    r.try_get::<_, Option<i64>>(i)?.map(Cell::Int)
                } else if *t == Type::INT4 {
                    r.try_get::<_, Option<i32>>(i)?.map(|n| Cell::Int(n.into()))
                } else if *t == Type::INT2 {
                    r.try_get::<_, Option<i16>>(i)?.map(|n| Cell::Int(n.into()))
                } else if *t == Type::BOOL {
                    r.try_get::<_, Option<bool>>(i)?
                        .map(|b| Cell::Int(b.into()))
                } else if *t == Type::FLOAT8 {
                    r.try_get::<_, Option<f64>>(i)?.map(Cell::Real)
                } else if *t == Type::FLOAT4 {
                    r.try_get::<_, Option<f32>>(i)?
                        .map(|x| Cell::Real(x.into()))
                } else if [Type::TEXT, Type::VARCHAR, Type::NAME, Type::BPCHAR].contains(t) {
                    r.try_get::<_, Option<String>>(i)?.map(Cell::Text)
                } else {
                    return Err(SourceError::ColumnType(t.name().to_owned()));
                };
                row.push(cell.unwrap_or(Cell::Null));
            }
            out.push(row);
        }
        Ok(out)
    }

    fn location(&self) -> String {
        let engine = self.store.engine();
        format!("{} (schema {})", engine.url(), engine.schema())
    }
}
