//! [`PgEngine`]: a connection pool onto one schema of one database, the
//! schema migrated (read-write) or checked (read-only) at open.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use postgres::types::Type;
use postgres::{Client, NoTls};
use r2d2::{Pool, PooledConnection};
use r2d2_postgres::PostgresConnectionManager;

use crate::error::{PgStoreError, connect_error};
use crate::migrate::{check_schema, migrate};
use crate::offload::drop_off_runtime;
use crate::url::DbUrl;

type Manager = PostgresConnectionManager<NoTls>;

/// A pooled connection (a [`Client`] through `Deref`), back to the pool
/// when dropped. Safe to drop inside a tokio runtime: a broken connection
/// is closed off the runtime's thread, and should it hold the pool's last
/// handle, so is the pool.
pub struct PgConn {
    conn: PooledConnection<Manager>,
    // Dropped after `conn`: the pool's last handle is always this one.
    _closer: Arc<Closer>,
}

impl std::fmt::Debug for PgConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConn").finish_non_exhaustive()
    }
}

impl std::ops::Deref for PgConn {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.conn
    }
}

impl std::ops::DerefMut for PgConn {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.conn
    }
}

/// Holds one handle on the pool and, when the last engine or connection
/// lets go of it, drops that handle (then the pool's last, closing its
/// idle connections) off any tokio runtime's thread.
struct Closer {
    pool: Option<Pool<Manager>>,
}

impl Drop for Closer {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            drop_off_runtime("pool", pool);
        }
    }
}

/// Closes each connection the pool lets go of (broken, expired, failed
/// its check) off any tokio runtime's thread.
#[derive(Debug)]
struct CloseOffRuntime;

impl r2d2::CustomizeConnection<Client, postgres::Error> for CloseOffRuntime {
    fn on_release(&self, conn: Client) {
        drop_off_runtime("connection", conn);
    }
}

/// How to open an engine.
#[derive(Debug, Clone)]
pub struct PgConfig {
    /// The server and database (the password never shows in logs).
    pub url: DbUrl,
    /// The schema holding the tables (created and migrated by a read-write
    /// open). Distinct schemas are independent stores in one database.
    pub schema: String,
    /// Pool size.
    pub pool_size: u32,
    /// How long to wait for a connection.
    pub connect_timeout: Duration,
}

impl PgConfig {
    /// Defaults: schema `public`, 8 connections, 10 s timeout.
    pub fn new(url: impl Into<DbUrl>) -> Self {
        PgConfig {
            url: url.into(),
            schema: "public".into(),
            pool_size: 8,
            connect_timeout: Duration::from_secs(10),
        }
    }

    /// Sets the schema.
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Sets the pool size.
    pub fn with_pool_size(mut self, n: u32) -> Self {
        self.pool_size = n.max(1);
        self
    }
}

/// Checks a schema or role name: it reaches SQL text, so only plain
/// lowercase identifiers pass.
pub(crate) fn identifier(what: &'static str, name: &str) -> Result<(), PgStoreError> {
    let mut chars = name.chars();
    let ok = name.len() <= 63
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(PgStoreError::BadIdentifier {
            what,
            name: name.to_owned(),
        })
    }
}

/// The types of every column of the store's tables, read once at open, so
/// dynamic statements bind each JSON value with its column's type and run
/// in one round trip.
pub(crate) type ColumnTypes = HashMap<(String, String), Type>;

/// A pool onto one schema. Cheap to clone. Safe to drop inside a tokio
/// runtime: the last handle's pool (and its connections) is closed on a
/// plain thread, as the driver would panic closing them there.
#[derive(Clone)]
pub struct PgEngine {
    pool: Pool<Manager>,
    closer: Arc<Closer>,
    config: postgres::Config,
    url: DbUrl,
    schema: String,
    read_only: bool,
    columns: Arc<ColumnTypes>,
}

impl std::fmt::Debug for PgEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgEngine")
            .field("url", &self.url)
            .field("schema", &self.schema)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

fn driver_config(cfg: &PgConfig, read_only: bool) -> Result<postgres::Config, PgStoreError> {
    identifier("schema", &cfg.schema)?;
    let mut config: postgres::Config =
        cfg.url
            .expose()
            .parse()
            .map_err(|e: postgres::Error| PgStoreError::InvalidUrl {
                url: cfg.url.redacted(),
                detail: e.to_string(),
            })?;
    let mut options = config.get_options().unwrap_or_default().to_owned();
    options.push_str(&format!(" -c search_path={}", cfg.schema));
    if read_only {
        options.push_str(" -c default_transaction_read_only=on");
    }
    config.options(options.trim());
    config.connect_timeout(cfg.connect_timeout);
    if config.get_application_name().is_none() {
        config.application_name("lionrt");
    }
    Ok(config)
}

impl PgEngine {
    /// Opens a read-write engine: connects (classifying a refusal or an
    /// authentication failure), creates the schema if missing, applies the
    /// pending migrations under an advisory lock (concurrent openers wait
    /// for each other) and builds the pool.
    pub fn open(cfg: &PgConfig) -> Result<Self, PgStoreError> {
        Self::open_as(cfg, false)
    }

    /// Opens a read-only engine: every transaction starts with
    /// `default_transaction_read_only = on`, so any write fails with
    /// [`PgStoreError::ReadOnly`]. PostgreSQL has no `mode=ro`; for a
    /// guarantee the server enforces against any client, connect as a role
    /// made by [`PgEngine::provision_read_only_role`]. Never migrates: a
    /// schema that is missing, older or newer than this build is an error.
    pub fn open_read_only(cfg: &PgConfig) -> Result<Self, PgStoreError> {
        Self::open_as(cfg, true)
    }

    fn open_as(cfg: &PgConfig, read_only: bool) -> Result<Self, PgStoreError> {
        let config = driver_config(cfg, read_only)?;
        let redacted = cfg.url.redacted();
        let mut first = config
            .connect(NoTls)
            .map_err(|e| connect_error(&redacted, e))?;
        if read_only {
            check_schema(&mut first, &cfg.schema)?;
        } else {
            migrate(&mut first, &cfg.schema)?;
        }
        let columns = column_types(&mut first, &cfg.schema)?;
        drop(first);
        let pool = Pool::builder()
            .max_size(cfg.pool_size)
            .min_idle(Some(0))
            .connection_timeout(cfg.connect_timeout)
            .connection_customizer(Box::new(CloseOffRuntime))
            .build(PostgresConnectionManager::new(config.clone(), NoTls))?;
        tracing::debug!(url = %cfg.url, schema = %cfg.schema, read_only, "postgres engine open");
        let closer = Arc::new(Closer {
            pool: Some(pool.clone()),
        });
        Ok(PgEngine {
            pool,
            closer,
            config,
            url: cfg.url.clone(),
            schema: cfg.schema.clone(),
            read_only,
            columns: Arc::new(columns),
        })
    }

    /// A pooled connection.
    pub fn conn(&self) -> Result<PgConn, PgStoreError> {
        Ok(PgConn {
            conn: self.pool.get()?,
            _closer: Arc::clone(&self.closer),
        })
    }

    /// A connection of its own, outside the pool (listeners, advisory
    /// locks: both belong to one session for as long as they live).
    pub fn connect_direct(&self) -> Result<Client, PgStoreError> {
        self.config
            .connect(NoTls)
            .map_err(|e| connect_error(&self.url.redacted(), e))
    }

    /// The schema.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The connection target, redacted when shown.
    pub fn url(&self) -> &DbUrl {
        &self.url
    }

    /// Whether this engine only reads.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    pub(crate) fn column_type(&self, table: &str, column: &str) -> Option<&Type> {
        self.columns.get(&(table.to_owned(), column.to_owned()))
    }

    /// Creates (or updates) a login role that can only read this schema:
    /// `USAGE` on the schema, `SELECT` on its tables (now and future) and
    /// `default_transaction_read_only = on`. The server then refuses any
    /// write by that role, whatever the client does.
    pub fn provision_read_only_role(&self, role: &str) -> Result<(), PgStoreError> {
        identifier("role", role)?;
        let schema = &self.schema;
        let mut conn = self.conn()?;
        let mut tx = conn.transaction()?;
        let exists = tx
            .query_opt("SELECT 1 FROM pg_roles WHERE rolname = $1", &[&role])?
            .is_some();
        if !exists {
            tx.batch_execute(&format!("CREATE ROLE {role} LOGIN"))?;
        }
        tx.batch_execute(&format!(
            "ALTER ROLE {role} SET default_transaction_read_only = on;
             GRANT USAGE ON SCHEMA {schema} TO {role};
             GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role};
             ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT SELECT ON TABLES TO {role};"
        ))?;
        tx.commit()?;
        Ok(())
    }
}

fn column_types(client: &mut Client, schema: &str) -> Result<ColumnTypes, PgStoreError> {
    let rows = client.query(
        "SELECT c.relname::text, a.attname::text, a.atttypid
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
         JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = $1 AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped",
        &[&schema],
    )?;
    let mut out = HashMap::new();
    for r in rows {
        let oid: u32 = r.get(2);
        if let Some(ty) = Type::from_oid(oid) {
            out.insert((r.get(0), r.get(1)), ty);
        }
    }
    Ok(out)
}
