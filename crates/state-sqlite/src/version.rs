//! The WAL-reset corruption check on the linked SQLite.

/// Whether SQLite `version` ("3.51.3") has the fix for the WAL-reset data
/// race (a starting checkpoint racing a commit that resets the WAL). Every
/// WAL-capable release from 3.7.0 through 3.51.2 is affected except the
/// backports 3.44.6+ and 3.50.7+. Releases before 3.7.0 have no WAL at all
/// and so nothing to race: reported as fixed. Unparseable versions are
/// reported as unfixed (fail closed: the warning is harmless).
pub fn has_wal_reset_fix(version: &str) -> bool {
    let mut parts = version.trim().split('.').map(|p| p.parse::<u32>());
    let (Some(Ok(major)), Some(Ok(minor))) = (parts.next(), parts.next()) else {
        return false;
    };
    let patch = match parts.next() {
        Some(Ok(p)) => p,
        Some(Err(_)) => return false,
        None => 0,
    };
    let v = (major, minor, patch);
    if v < (3, 7, 0) {
        return true;
    }
    if v >= (3, 51, 3) {
        return true;
    }
    matches!((major, minor), (3, 44) if patch >= 6)
        || matches!((major, minor), (3, 50) if patch >= 7)
}

/// The warning to emit at startup for the linked SQLite, if any.
pub fn wal_reset_warning(version: &str) -> Option<String> {
    (!has_wal_reset_fix(version)).then(|| {
        format!(
            "linked SQLite {version} lacks the WAL-reset fix (3.51.3, or 3.44.6 / 3.50.7 backports); \
             concurrent writers and checkpoints can corrupt the database"
        )
    })
}

/// Logs [`wal_reset_warning`] for `version` at warn level; returns whether
/// it warned.
pub fn warn_if_unfixed(version: &str) -> bool {
    match wal_reset_warning(version) {
        Some(message) => {
            tracing::warn!(sqlite_version = version, "{message}");
            true
        }
        None => false,
    }
}

/// The version of the SQLite library linked into this build.
pub fn linked_sqlite_version() -> &'static str {
    rusqlite::version()
}
