//! What a file is, before anything writes to it: lionrt's own store (at a
//! schema version this build knows, or a newer one), an empty file, the
//! original lionagi's store (by its own `schema_meta` lineage marker), or
//! something else. Recognising changes nothing: no byte of the file, and
//! no `-wal` or `-shm` side file is created where there was none (with no
//! WAL beside it, the file is read as immutable, which takes no lock and
//! opens no side file; with one, a read-only open reads it as it is).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::error::StoreError;
use crate::migrate::MIGRATIONS;

/// What a database path holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreKind {
    /// Nothing is there.
    Missing,
    /// An empty file (no bytes, or a SQLite database without a table).
    Empty,
    /// lionrt's own store, at a schema version this build knows.
    Lionrt {
        /// The highest applied migration.
        version: u32,
    },
    /// lionrt's store, with migrations newer than this build knows.
    LionrtNewer {
        /// The highest applied migration.
        version: u32,
        /// The highest this build knows.
        known: u32,
    },
    /// The original lionagi's store (the `li` command's state.db).
    Lionagi {
        /// Its `schema_meta` version, as stored.
        schema_version: Option<String>,
    },
    /// A file that is not a SQLite database.
    NotADatabase,
    /// Another program's SQLite database.
    Unknown {
        /// What it is, for a message.
        detail: String,
    },
}

impl StoreKind {
    /// Whether lionrt may open it for writing (create or migrate it).
    pub fn is_writable_by_lionrt(&self) -> bool {
        matches!(
            self,
            StoreKind::Missing | StoreKind::Empty | StoreKind::Lionrt { .. }
        )
    }

    /// A short description, for messages and `doctor`.
    pub fn describe(&self) -> String {
        match self {
            StoreKind::Missing => "no file".into(),
            StoreKind::Empty => "an empty file".into(),
            StoreKind::Lionrt { version } => format!("lionrt's store, schema version {version}"),
            StoreKind::LionrtNewer { version, known } => {
                format!("lionrt's store, schema version {version}, newer than this build ({known})")
            }
            StoreKind::Lionagi { schema_version } => match schema_version {
                Some(v) => format!("lionagi's store (the `li` command's state.db, schema {v})"),
                None => "lionagi's store (the `li` command's state.db)".into(),
            },
            StoreKind::NotADatabase => "not a SQLite database".into(),
            StoreKind::Unknown { detail } => format!("not a lionrt store ({detail})"),
        }
    }
}

/// The path with `suffix` appended (`state.db` -> `state.db-wal`).
pub(crate) fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

/// A `file:` URI for `path` with the query `query`.
pub(crate) fn file_uri(path: &Path, query: &str) -> String {
    let mut uri = String::from("file:");
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'?' | b'#' | b'%' => uri.push_str(&format!("%{b:02X}")),
            _ if b.is_ascii() && !b.is_ascii_control() => uri.push(char::from(*b)),
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri.push('?');
    uri.push_str(query);
    uri
}

fn nonempty(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() > 0)
}

/// Recognises what `path` holds without changing it (see the module docs).
/// A directory, an unreadable file or a damaged database is an error
/// naming `path`.
pub fn recognise(path: &Path) -> Result<StoreKind, StoreError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        // A path through a plain file names nothing either.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(StoreKind::Missing);
        }
        Err(source) => {
            return Err(StoreError::Unreadable {
                path: path.to_owned(),
                source,
            });
        }
    };
    if meta.is_dir() {
        return Err(StoreError::IsADirectory(path.to_owned()));
    }
    if !meta.is_file() {
        return Ok(StoreKind::Unknown {
            detail: "not a regular file".into(),
        });
    }
    let wal = side_file(path, "-wal");
    let journal = side_file(path, "-journal");
    if meta.len() == 0 {
        if !nonempty(&wal) {
            return Ok(StoreKind::Empty);
        }
    } else {
        let mut header = Vec::with_capacity(16);
        std::fs::File::open(path)
            .and_then(|f| f.take(16).read_to_end(&mut header))
            .map_err(|source| StoreError::Unreadable {
                path: path.to_owned(),
                source,
            })?;
        if header != b"SQLite format 3\0" {
            return Ok(StoreKind::NotADatabase);
        }
    }
    // With no WAL and no rollback journal beside it, the file holds every
    // committed page: read it as immutable (no lock, no side file). With
    // one, read it read-only as SQLite would (the side files exist).
    let query = if wal.exists() || journal.exists() {
        "mode=ro"
    } else {
        "mode=ro&immutable=1"
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let unreadable = |e: rusqlite::Error| StoreError::Damaged {
        path: path.to_owned(),
        source: e,
    };
    let conn = Connection::open_with_flags(file_uri(path, query), flags).map_err(unreadable)?;
    conn.busy_timeout(Duration::from_secs(5))
        .map_err(unreadable)?;
    let tables: Vec<String> = {
        let mut stmt = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
            )
            .map_err(unreadable)?;
        stmt.query_map([], |r| r.get(0))
            .map_err(unreadable)?
            .collect::<Result<_, _>>()
            .map_err(unreadable)?
    };
    if tables.is_empty() {
        // Only a file of at most its schema page is empty; more pages and
        // no table is something else (damaged?): fail closed.
        let pages: i64 = conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .map_err(unreadable)?;
        if pages <= 1 {
            return Ok(StoreKind::Empty);
        }
        return Ok(StoreKind::Unknown {
            detail: format!("a SQLite database of {pages} pages and no table (damaged?)"),
        });
    }
    let has = |t: &str| tables.iter().any(|n| n == t);
    if has("schema_meta") {
        let value = |key: &str| -> Option<String> {
            conn.query_row(
                "SELECT CAST(value AS TEXT) FROM schema_meta WHERE key = ?1",
                [key],
                |r| r.get(0),
            )
            .optional()
            .ok()
            .flatten()
        };
        if value("lineage").as_deref() == Some("lionagi") {
            return Ok(StoreKind::Lionagi {
                schema_version: value("version"),
            });
        }
    }
    if !has("schema_migrations") {
        let shown: Vec<&str> = tables.iter().take(4).map(String::as_str).collect();
        return Ok(StoreKind::Unknown {
            detail: format!(
                "{} table(s) ({}{}), and no schema_migrations table of lionrt's",
                tables.len(),
                shown.join(", "),
                if tables.len() > shown.len() {
                    ", ..."
                } else {
                    ""
                }
            ),
        });
    }
    let applied: Vec<(i64, String)> = {
        let mut stmt = conn
            .prepare("SELECT version, CAST(name AS TEXT) FROM schema_migrations ORDER BY version")
            .map_err(unreadable)?;
        stmt.query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get::<_, Option<String>>(1)?.unwrap_or_default(),
            ))
        })
        .map_err(unreadable)?
        .collect::<Result<_, _>>()
        .map_err(unreadable)?
    };
    let known = MIGRATIONS.last().map_or(0, |m| m.version);
    let Some(&(top, _)) = applied.last() else {
        return Ok(StoreKind::Unknown {
            detail: format!(
                "{} table(s) and an empty schema_migrations table: no lionrt migration was ever applied",
                tables.len()
            ),
        });
    };
    let top = u32::try_from(top).unwrap_or(u32::MAX);
    for (version, name) in &applied {
        let Ok(v) = u32::try_from(*version) else {
            return Ok(StoreKind::Unknown {
                detail: format!("schema_migrations holds version {version}"),
            });
        };
        if v > known {
            continue;
        }
        if !MIGRATIONS.iter().any(|m| m.version == v && m.name == name) {
            return Ok(StoreKind::Unknown {
                detail: format!(
                    "schema_migrations holds {v} {name:?}, not one of lionrt's migrations"
                ),
            });
        }
    }
    if top > known {
        return Ok(StoreKind::LionrtNewer {
            version: top,
            known,
        });
    }
    Ok(StoreKind::Lionrt { version: top })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Engine, EngineConfig};

    /// The `li` command's own state.db (lionagi 0.36.0; see
    /// fixtures/lionagi-import/make_li_state_db.sh), copied into `dir`.
    fn li_store(dir: &Path) -> PathBuf {
        let from =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/lionagi-import/li-state.db");
        let to = dir.join("state.db");
        std::fs::copy(from, &to).expect("copy the fixture");
        to
    }

    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn each_kind_of_file_is_told_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = |n: &str| dir.path().join(n);
        assert_eq!(
            recognise(&p("none.db")).expect("missing"),
            StoreKind::Missing
        );
        std::fs::write(p("empty.db"), b"").expect("write");
        assert_eq!(recognise(&p("empty.db")).expect("empty"), StoreKind::Empty);
        std::fs::write(p("text.db"), b"hello, not a database at all").expect("write");
        assert_eq!(
            recognise(&p("text.db")).expect("text"),
            StoreKind::NotADatabase
        );
        std::fs::write(p("short.db"), b"SQL").expect("write");
        assert_eq!(
            recognise(&p("short.db")).expect("short"),
            StoreKind::NotADatabase
        );
        assert!(matches!(
            recognise(dir.path()),
            Err(StoreError::IsADirectory(_))
        ));
        let other = Connection::open(p("other.db")).expect("open");
        other
            .execute_batch("CREATE TABLE sessions (id TEXT)")
            .expect("create");
        drop(other);
        assert!(matches!(
            recognise(&p("other.db")).expect("other"),
            StoreKind::Unknown { .. }
        ));
        drop(Engine::create(p("own.db"), EngineConfig::default()).expect("create"));
        let known = MIGRATIONS.last().map(|m| m.version).expect("migrations");
        assert_eq!(
            recognise(&p("own.db")).expect("own"),
            StoreKind::Lionrt { version: known }
        );
        let li = li_store(&dir.path().join("li-dir").tap_mkdir());
        assert_eq!(
            recognise(&li).expect("li"),
            StoreKind::Lionagi {
                schema_version: Some("4".into())
            }
        );
    }

    trait Mkdir {
        fn tap_mkdir(self) -> Self;
    }
    impl Mkdir for PathBuf {
        fn tap_mkdir(self) -> Self {
            std::fs::create_dir_all(&self).expect("mkdir");
            self
        }
    }

    #[test]
    fn a_newer_lionrt_store_is_recognised_and_never_migrated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("state.db");
        drop(Engine::create(&db, EngineConfig::default()).expect("create"));
        let known = MIGRATIONS.last().map(|m| m.version).expect("migrations");
        let conn = Connection::open(&db).expect("open");
        conn.execute(
            "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?1, 'future', 'x', 0)",
            [known + 1],
        )
        .expect("insert");
        drop(conn);
        assert_eq!(
            recognise(&db).expect("newer"),
            StoreKind::LionrtNewer {
                version: known + 1,
                known
            }
        );
        assert!(matches!(
            Engine::open(&db, EngineConfig::default()),
            Err(StoreError::SchemaTooNew { .. })
        ));
    }

    #[test]
    fn recognising_and_refusing_lis_store_changes_nothing_and_leaves_no_side_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let li = li_store(dir.path());
        let before = std::fs::read(&li).expect("read");
        let names = listing(dir.path());
        assert!(matches!(
            recognise(&li).expect("li"),
            StoreKind::Lionagi { .. }
        ));
        for create in [false, true] {
            let opened = if create {
                Engine::create(&li, EngineConfig::default())
            } else {
                Engine::open(&li, EngineConfig::default())
            };
            match opened {
                Err(StoreError::ForeignStore { kind, .. }) => {
                    assert!(matches!(kind, StoreKind::Lionagi { .. }));
                }
                other => panic!("li's store was opened for writing: {other:?}"),
            }
        }
        assert_eq!(
            std::fs::read(&li).expect("read"),
            before,
            "li's file changed"
        );
        assert_eq!(listing(dir.path()), names, "a side file was left behind");
    }

    #[test]
    fn another_programs_database_is_refused_and_keeps_no_lionrt_table() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("other.db");
        let conn = Connection::open(&db).expect("open");
        conn.execute_batch(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY); INSERT INTO sessions VALUES ('a')",
        )
        .expect("create");
        drop(conn);
        let before = std::fs::read(&db).expect("read");
        let err = Engine::create(&db, EngineConfig::default()).expect_err("refused");
        assert!(matches!(err, StoreError::ForeignStore { .. }), "{err:?}");
        assert_eq!(std::fs::read(&db).expect("read"), before);
    }

    #[test]
    fn a_database_that_cannot_be_created_says_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("plain-file");
        std::fs::write(&file, b"x").expect("write");
        let err = Engine::create(file.join("state.db"), EngineConfig::default())
            .expect_err("cannot create");
        match &err {
            StoreError::CannotCreate { source, .. } => {
                assert_eq!(source.raw_os_error(), Some(20), "{err}");
            }
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().contains("Not a directory"), "{err}");
    }

    #[test]
    fn a_first_migration_that_fails_leaves_no_schema_migrations_table() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("x.db");
        let mut conn = Connection::open(&db).expect("open");
        // Not recognised (the engine would refuse it): migrate directly.
        conn.execute_batch("CREATE TABLE sessions (id TEXT)")
            .expect("create");
        assert!(crate::migrate(&mut conn).is_err());
        let left: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'",
                [],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(left, 0);
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;
    use crate::{Engine, EngineConfig};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever bytes a file holds (bare, or behind SQLite's header,
        /// or li's store with a page scrambled), recognising it and trying
        /// to open it for writing never panics, never takes it for lionrt's
        /// store unless it is one, and leaves every byte and the directory
        /// as they were.
        #[test]
        fn no_file_is_changed_by_being_recognised_or_refused(
            body in proptest::collection::vec(any::<u8>(), 1..6000),
            header in any::<bool>(),
            scramble_li in any::<bool>(),
            at in 0usize..700_000,
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("state.db");
            let bytes = if scramble_li {
                let mut li = std::fs::read(
                    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/lionagi-import/li-state.db"),
                ).expect("fixture");
                let at = at % li.len();
                for (i, b) in body.iter().enumerate() {
                    if let Some(slot) = li.get_mut(at + i) {
                        *slot = *b;
                    }
                }
                li
            } else if header {
                let mut v = b"SQLite format 3\0".to_vec();
                v.extend_from_slice(&body);
                v
            } else {
                body
            };
            std::fs::write(&path, &bytes).expect("write");
            let kind = recognise(&path);
            prop_assert!(!matches!(kind, Ok(StoreKind::Lionrt { .. } | StoreKind::LionrtNewer { .. } | StoreKind::Missing)), "{kind:?}");
            // Only a header-sized file can be empty; li's store never is.
            prop_assert!(!(scramble_li && matches!(kind, Ok(StoreKind::Empty))), "{kind:?}");
            let opened = Engine::create(&path, EngineConfig::default());
            if !matches!(kind, Ok(StoreKind::Empty)) {
                prop_assert!(opened.is_err(), "{kind:?} was opened for writing");
                prop_assert_eq!(std::fs::read(&path).expect("read"), bytes);
                let names: Vec<_> = std::fs::read_dir(dir.path()).expect("ls").map(|e| e.expect("e").file_name()).collect();
                prop_assert_eq!(names, vec![std::ffi::OsString::from("state.db")]);
            }
        }
    }
}
