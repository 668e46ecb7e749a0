//! Where the state database lives when `--db` and `LIONRT_DB` are not
//! given, and what a `--db` file is before any verb touches it.
//!
//! The original lionagi (`li`) keeps its own store, with its own schema, at
//! `$LIONAGI_HOME/state.db`, else `~/.lionagi/state.db`. lionrt keeps its
//! store beside it, in its own directory: `$LIONAGI_HOME/lionrt/state.db`,
//! else `~/.lionagi/lionrt/state.db` (else `lionrt/state.db` in the current
//! directory with no home at all), so both tools work side by side in one
//! home and neither ever opens the other's file. A store an earlier lionrt
//! made at li's path (recognised as lionrt's) is still used there, so an
//! upgrade loses nothing.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use state_sqlite::StoreKind;

/// The home both tools share: `$LIONAGI_HOME`, else `~/.lionagi`.
fn home_with(lookup: &impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(home) = lookup("LIONAGI_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home));
    }
    lookup("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| Path::new(&h).join(".lionagi"))
}

/// Where li (the original lionagi) keeps its store.
pub(crate) fn lionagi_db() -> PathBuf {
    lionagi_db_with(|name| std::env::var_os(name))
}

/// [`lionagi_db`] over any variable source.
pub(crate) fn lionagi_db_with(lookup: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    home_with(&lookup).map_or_else(|| PathBuf::from("state.db"), |h| h.join("state.db"))
}

/// Where lionrt keeps its own store: `lionrt/state.db` in the shared home.
pub(crate) fn own_db_with(lookup: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    home_with(&lookup)
        .map_or_else(|| PathBuf::from("lionrt"), |h| h.join("lionrt"))
        .join("state.db")
}

/// The default database path from this process's environment.
pub(crate) fn default_db() -> PathBuf {
    default_db_with(
        |name| std::env::var_os(name),
        |p| {
            matches!(
                state_sqlite::recognise(p),
                Ok(StoreKind::Lionrt { .. } | StoreKind::LionrtNewer { .. })
            )
        },
    )
}

/// [`default_db`] over any variable source; `is_lionrt` tells whether a
/// file at li's path is a store an earlier lionrt made there.
pub(crate) fn default_db_with(
    lookup: impl Fn(&str) -> Option<OsString>,
    is_lionrt: impl Fn(&Path) -> bool,
) -> PathBuf {
    let own = own_db_with(&lookup);
    if own.exists() {
        return own;
    }
    let legacy = lionagi_db_with(&lookup);
    if is_lionrt(&legacy) { legacy } else { own }
}

/// Refuses a lionrt store at an older schema version than this build's, for
/// a reading verb that would otherwise migrate it.
pub(crate) fn refuse_older(db: &Path, kind: &StoreKind) -> Result<()> {
    let known = state_sqlite::MIGRATIONS.last().map_or(0, |m| m.version);
    if let StoreKind::Lionrt { version } = kind
        && *version < known
    {
        anyhow::bail!(
            "{} has schema version {version}, older than this lionrt's ({known}); a reading verb \
             does not migrate it (`lionrt state init` does)",
            db.display()
        );
    }
    Ok(())
}

/// The verbs' relation to the store, for [`check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// A verb that may create or migrate the store (`run`, `state init`, ...).
    Write,
    /// A verb that only reads (it never creates or migrates anything).
    Read,
}

/// Recognises the file `--db` names before a verb touches it, and refuses
/// lionagi's store and any other program's file with what it is, which
/// command imports it and where lionrt keeps its own store; a store from a
/// newer lionrt is refused for writing and read with a warning.
pub(crate) fn check(db: &Path, access: Access) -> Result<StoreKind> {
    let kind = state_sqlite::recognise(db).with_context(|| format!("--db {}", db.display()))?;
    let own = own_db_with(|name| std::env::var_os(name));
    let elsewhere = if own == db {
        String::new()
    } else {
        format!(
            " lionrt keeps its own store at {} (the default without --db).",
            own.display()
        )
    };
    match &kind {
        StoreKind::Lionagi { .. } => anyhow::bail!(
            "{} is {}: lionrt neither writes nor reads it in place, and nothing in it was changed. \
             `lionrt state import --from-lionagi {}` copies its sessions into lionrt's store.{elsewhere}",
            db.display(),
            kind.describe(),
            db.display()
        ),
        StoreKind::Unknown { .. } | StoreKind::NotADatabase => anyhow::bail!(
            "{} is {}: lionrt changes nothing in it. Give --db a lionrt store or a new file.{elsewhere}",
            db.display(),
            kind.describe()
        ),
        StoreKind::LionrtNewer { version, known } => match access {
            Access::Write => anyhow::bail!(
                "{} has schema version {version}, newer than this lionrt knows ({known}): \
                 a newer lionrt wrote it; this one does not write to it",
                db.display()
            ),
            Access::Read => tracing::warn!(
                "{} has schema version {version}, newer than this lionrt knows ({known}); \
                 reading it may miss what the newer version records",
                db.display()
            ),
        },
        // A reading verb never creates or migrates anything: it says where
        // it looked.
        StoreKind::Missing if access == Access::Read => anyhow::bail!(
            "no database at {} (give --db, set LIONRT_DB, or run `lionrt run` / `lionrt state init` first)",
            db.display()
        ),
        StoreKind::Empty if access == Access::Read => anyhow::bail!(
            "{} is an empty file, not a lionrt store yet (`lionrt run` or `lionrt state init` makes it one)",
            db.display()
        ),
        _ => {}
    }
    Ok(kind)
}

/// Whether `--db` names a database server (a `postgres://` or
/// `postgresql://` URL, or a `host=... dbname=...` string) rather than a
/// file.
pub(crate) fn is_url(db: &Path) -> bool {
    db.to_str().is_some_and(|s| {
        s.starts_with("postgres://")
            || s.starts_with("postgresql://")
            || (s.contains('=') && (s.contains("host=") || s.contains("dbname=")))
    })
}

/// Creates the directory that will hold a new database (mode 0700, as the
/// store holds prompts and transcripts), for the verbs that create one.
pub(crate) fn ensure_parent(db: &Path) -> Result<()> {
    let Some(parent) = db.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    if parent.exists() {
        return Ok(());
    }
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(parent)
        .with_context(|| format!("creating {}", parent.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn lionrt_keeps_its_store_beside_lis_in_the_shared_home() {
        let never = |_: &Path| false;
        assert_eq!(
            default_db_with(env(&[("LIONAGI_HOME", "/x"), ("HOME", "/h")]), never),
            PathBuf::from("/x/lionrt/state.db")
        );
        assert_eq!(
            default_db_with(env(&[("LIONAGI_HOME", ""), ("HOME", "/h")]), never),
            PathBuf::from("/h/.lionagi/lionrt/state.db")
        );
        assert_eq!(
            lionagi_db_with(env(&[("HOME", "/h")])),
            PathBuf::from("/h/.lionagi/state.db")
        );
        assert_eq!(
            default_db_with(env(&[]), never),
            PathBuf::from("lionrt/state.db")
        );
        // A store an earlier lionrt made at li's path stays in use.
        assert_eq!(
            default_db_with(env(&[("HOME", "/h")]), |p| p
                == Path::new("/h/.lionagi/state.db")),
            PathBuf::from("/h/.lionagi/state.db")
        );
    }
}
