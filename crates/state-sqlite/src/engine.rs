//! Read-write and read-only engines: r2d2 pools with connect-time pragmas.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use r2d2::{Pool, PooledConnection};
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OpenFlags};

use crate::error::StoreError;
use crate::migrate::migrate;
use crate::recognise::{StoreKind, file_uri, recognise};
use crate::version::warn_if_unfixed;

/// A pooled connection.
pub type Conn = PooledConnection<SqliteConnectionManager>;

/// SQLite's `synchronous` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synchronous {
    /// Durable against process crashes in WAL mode (the default).
    Normal,
    /// Also durable against power loss.
    Full,
}

/// Engine settings; the defaults suit one host with several writers.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// How long a writer waits for the lock before failing with
    /// [`StoreError::Locked`].
    pub busy_timeout: Duration,
    /// The `synchronous` pragma.
    pub synchronous: Synchronous,
    /// Pages between automatic WAL checkpoints.
    pub wal_autocheckpoint: u32,
    /// Maximum pooled connections.
    pub pool_size: u32,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            busy_timeout: Duration::from_secs(5),
            synchronous: Synchronous::Normal,
            wal_autocheckpoint: 1000,
            pool_size: 8,
        }
    }
}

fn configure(conn: &mut Connection, config: &EngineConfig) -> Result<(), rusqlite::Error> {
    conn.busy_timeout(config.busy_timeout)?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))?;
    let sync = match config.synchronous {
        Synchronous::Normal => "NORMAL",
        Synchronous::Full => "FULL",
    };
    conn.pragma_update(None, "synchronous", sync)?;
    conn.query_row(
        &format!("PRAGMA wal_autocheckpoint = {}", config.wal_autocheckpoint),
        [],
        |r| r.get::<_, i64>(0),
    )?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // A closing connection never checkpoints: the WAL stays in place for
    // the next connection or process (see [`Engine`]).
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    Ok(())
}

fn map_open_error(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(rusqlite::ffi::ErrorCode::NotADatabase) => {
            StoreError::NotADatabase(path.to_path_buf())
        }
        Some(rusqlite::ffi::ErrorCode::CannotOpen) if !path.exists() => {
            StoreError::Missing(path.to_path_buf())
        }
        _ => StoreError::from(e),
    }
}

/// The read-write engine: WAL, `synchronous`, `busy_timeout`,
/// `wal_autocheckpoint` and foreign keys on every connection; migrations
/// applied at open.
///
/// No connection checkpoints when it closes (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`):
/// by default SQLite checkpoints and deletes the WAL when the last
/// connection to a file closes, and the next write recreates it. For a
/// short-lived `lionrt` command that was four fsyncs per process (the
/// WAL, its directory for the recreated file, the WAL again and the
/// database). The WAL now stays in place between processes and is
/// checkpointed by `wal_autocheckpoint` (or `lionrt state checkpoint`),
/// so its size stays bounded; the next process recovers its index by
/// reading it, which costs less than the fsyncs did. The connection that
/// checked and migrated the file is kept open as long as the engine (any
/// clone of it) lives, so the pool's first connection does not run that
/// recovery a second time.
///
/// Durability: with [`Synchronous::Normal`] (the default) a committed
/// transaction survives a crash of the process (SIGKILL, panic, OOM
/// kill), which is the crash model of this store; the WAL is fsynced at
/// checkpoints only, so a power loss or kernel crash can lose the last
/// transactions since one (never corrupt the file). [`Synchronous::Full`]
/// fsyncs the WAL at every commit.
#[derive(Debug, Clone)]
pub struct Engine {
    pool: Pool<SqliteConnectionManager>,
    path: PathBuf,
    /// The first connection, held open only so the pool's connections
    /// find the WAL index ready (see the type docs); never queried.
    _keeper: Arc<Mutex<Connection>>,
}

impl Engine {
    /// Opens (creating if needed) the database at `path` and migrates it.
    pub fn create(path: impl AsRef<Path>, config: EngineConfig) -> Result<Self, StoreError> {
        Self::open_inner(path.as_ref(), config, true)
    }

    /// Opens an existing database and migrates it; a missing file is
    /// [`StoreError::Missing`], never silently created.
    pub fn open(path: impl AsRef<Path>, config: EngineConfig) -> Result<Self, StoreError> {
        Self::open_inner(path.as_ref(), config, false)
    }

    fn open_inner(path: &Path, config: EngineConfig, create: bool) -> Result<Self, StoreError> {
        // Recognise the file before anything writes to it: another
        // program's database (the original lionagi's above all) is refused
        // with not a byte of it changed, as is a store newer than this build.
        match recognise(path)? {
            StoreKind::Missing if !create => {
                return Err(StoreError::Missing(path.to_path_buf()));
            }
            StoreKind::Missing => create_file(path)?,
            StoreKind::Empty | StoreKind::Lionrt { .. } => {}
            StoreKind::NotADatabase => {
                return Err(StoreError::NotADatabase(path.to_path_buf()));
            }
            StoreKind::LionrtNewer { version, known } => {
                return Err(StoreError::SchemaTooNew {
                    found: version,
                    known,
                });
            }
            kind => {
                return Err(StoreError::ForeignStore {
                    path: path.to_path_buf(),
                    what: kind.describe(),
                    kind,
                });
            }
        }
        warn_if_unfixed(rusqlite::version());
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        // Check the file with one plain connection first: a pool would retry
        // a hopeless open until its timeout instead of failing at once.
        let mut first =
            Connection::open_with_flags(path, flags).map_err(|e| map_open_error(path, e))?;
        configure(&mut first, &config).map_err(|e| map_open_error(path, e))?;
        migrate(&mut first)?;
        let init_config = config.clone();
        let manager = SqliteConnectionManager::file(path)
            .with_flags(flags)
            .with_init(move |c| configure(c, &init_config));
        // No validity check on checkout: r2d2 would run `SELECT 1` on every
        // one (r2d2_sqlite's `is-valid`), about 5% of a one-row write, and
        // a connection to a local file cannot go stale the way a network
        // connection does (an I/O error surfaces on the statement itself).
        let pool = Pool::builder()
            .max_size(config.pool_size.max(1))
            .min_idle(Some(0))
            .test_on_check_out(false)
            .connection_timeout(config.busy_timeout + Duration::from_secs(5))
            .build_unchecked(manager);
        Ok(Engine {
            pool,
            path: path.to_path_buf(),
            _keeper: Arc::new(Mutex::new(first)),
        })
    }

    /// A pooled connection.
    pub fn conn(&self) -> Result<Conn, StoreError> {
        Ok(self.pool.get()?)
    }

    /// The database path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A read-only engine over an existing SQLite file, opened through SQLite's
/// URI `mode=ro`. No mutating pragma is applied (they would persist into the
/// file); each connection sets only `busy_timeout` and `query_only = ON`.
#[derive(Debug, Clone)]
pub struct ReadOnlyEngine {
    pool: Pool<SqliteConnectionManager>,
}

/// Creates the new, empty database file (mode 0600: the store holds
/// prompts and transcripts), so that a failure names its real cause (a
/// directory that is not writable, a read-only file system) instead of
/// SQLite's "unable to open". A file another process created meanwhile is
/// fine.
fn create_file(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(StoreError::CannotCreate {
            path: path.to_path_buf(),
            source,
        }),
    }
}

impl ReadOnlyEngine {
    /// Opens `path` read-only. The file must exist and be a database; no
    /// file is ever created.
    pub fn open(path: impl AsRef<Path>, busy_timeout: Duration) -> Result<Self, StoreError> {
        let path = path.as_ref();
        if !path.is_file() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let uri = file_uri(path, "mode=ro");
        let init = move |c: &mut Connection| -> Result<(), rusqlite::Error> {
            c.busy_timeout(busy_timeout)?;
            c.pragma_update(None, "query_only", "ON")?;
            Ok(())
        };
        let first =
            Connection::open_with_flags(&uri, flags).map_err(|e| map_open_error(path, e))?;
        let mut first = first;
        init(&mut first).map_err(|e| map_open_error(path, e))?;
        // Touch the schema so a non-database file fails here, by name.
        first
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })
            .map_err(|e| map_open_error(path, e))?;
        drop(first);
        let manager = SqliteConnectionManager::file(uri)
            .with_flags(flags)
            .with_init(init);
        let pool = Pool::builder()
            .max_size(4)
            .min_idle(Some(0))
            .test_on_check_out(false)
            .connection_timeout(busy_timeout + Duration::from_secs(5))
            .build_unchecked(manager);
        Ok(ReadOnlyEngine { pool })
    }

    /// Opens a read-only engine from a URL: `sqlite://PATH`, `sqlite:PATH`
    /// or a bare path. Any other scheme (e.g. `postgres://`) is refused: a
    /// read-only PostgreSQL connection is a database-role concern.
    pub fn open_url(url: &str, busy_timeout: Duration) -> Result<Self, StoreError> {
        let path = if let Some(rest) = url.strip_prefix("sqlite://") {
            rest
        } else if let Some(rest) = url.strip_prefix("sqlite:") {
            rest
        } else if url.contains("://") {
            return Err(StoreError::UnsupportedUrl(url.to_owned()));
        } else {
            url
        };
        Self::open(path, busy_timeout)
    }

    /// A pooled read-only connection.
    pub fn conn(&self) -> Result<Conn, StoreError> {
        Ok(self.pool.get()?)
    }
}
