//! Where the state database lives when `--db` and `LIONRT_DB` are not
//! given: `$LIONAGI_HOME/state.db`, else `~/.lionagi/state.db` (the
//! original's home, so both tools see the same sessions), else `state.db`
//! in the current directory when there is no home at all.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The default database path from this process's environment.
pub(crate) fn default_db() -> PathBuf {
    default_db_with(|name| std::env::var_os(name))
}

/// [`default_db`] over any variable source.
pub(crate) fn default_db_with(lookup: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    if let Some(home) = lookup("LIONAGI_HOME").filter(|h| !h.is_empty()) {
        return Path::new(&home).join("state.db");
    }
    match lookup("HOME").filter(|h| !h.is_empty()) {
        Some(home) => Path::new(&home).join(".lionagi").join("state.db"),
        None => PathBuf::from("state.db"),
    }
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

    #[test]
    fn the_default_follows_lionagi_home_then_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        assert_eq!(
            default_db_with(env(&[("LIONAGI_HOME", "/x"), ("HOME", "/h")])),
            PathBuf::from("/x/state.db")
        );
        assert_eq!(
            default_db_with(env(&[("LIONAGI_HOME", ""), ("HOME", "/h")])),
            PathBuf::from("/h/.lionagi/state.db")
        );
        assert_eq!(default_db_with(env(&[])), PathBuf::from("state.db"));
    }
}
