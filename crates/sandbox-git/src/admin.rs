//! Worktree admin folders (`<common dir>/worktrees/<name>`) read, judged and
//! pruned by this crate, and sandbox work trees removed in a crash-safe order.
//!
//! libgit2 is not used for any of this. Its worktree listing (1.9) drops an
//! invalid admin folder from the list but skips checking the entry after it,
//! so two half-made folders in a row leave one in the list; looking that one
//! up then fails with no message ("look up worktree failed ... no error"),
//! and every call that walks the worktrees (branch delete, worktree add)
//! fails with it or reads "already checked out". A `lionrt sandbox create`
//! killed while libgit2 writes the folder leaves exactly such folders, so the
//! crate judges them itself and prunes stale ones before any libgit2 call
//! that walks the worktrees.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Git worktree names cannot contain `/`, so a sandbox's worktree is
/// registered as `lionrt-sandbox-<id>`.
pub(crate) const WORKTREE_PREFIX: &str = "lionrt-sandbox-";

/// An admin folder of another tool is pruned only once it has not changed
/// for this long: `git worktree add` makes the folder and only then writes
/// its `locked` marker, and that window must not be mistaken for a stale
/// folder. A sandbox's own folders are judged under the sandbox lock, where
/// a half-made one can only belong to a creator that died.
const FOREIGN_GRACE: Duration = Duration::from_secs(60);

/// What an admin folder holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AdminState {
    /// No folder.
    Absent,
    /// A `locked` marker: `git worktree lock` asked that it be kept.
    Locked,
    /// A complete folder whose `gitdir` points at an existing `.git` file of
    /// the work tree `worktree`.
    Valid { worktree: PathBuf },
    /// Anything else: a folder git would prune, or one libgit2 cannot read.
    Stale { reason: &'static str },
}

/// `<common dir>/worktrees`.
pub(crate) fn admin_root(commondir: &Path) -> PathBuf {
    commondir.join("worktrees")
}

/// The admin folder of sandbox `id`.
pub(crate) fn admin_dir(commondir: &Path, id: &str) -> PathBuf {
    admin_root(commondir).join(format!("{WORKTREE_PREFIX}{id}"))
}

/// Judges the admin folder at `dir`.
///
/// `strict` adds libgit2's requirements (`commondir` and `HEAD` present and
/// non-empty) to git's prune rules (a missing or empty `gitdir`, or one
/// pointing at nothing); it is used for the sandbox's own folders only.
pub(crate) fn admin_state(dir: &Path, strict: bool) -> AdminState {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(_) => return AdminState::Absent,
    };
    if !meta.is_dir() {
        return AdminState::Stale {
            reason: "not a directory",
        };
    }
    if dir.join("locked").exists() {
        return AdminState::Locked;
    }
    let Some(gitdir) = read_trimmed(&dir.join("gitdir")) else {
        return AdminState::Stale {
            reason: "gitdir file missing or empty",
        };
    };
    let gitfile = dir.join(OsStr::from_bytes(&gitdir));
    if std::fs::symlink_metadata(&gitfile).is_err() {
        return AdminState::Stale {
            reason: "gitdir points at nothing",
        };
    }
    if strict
        && (read_trimmed(&dir.join("commondir")).is_none()
            || read_trimmed(&dir.join("HEAD")).is_none())
    {
        return AdminState::Stale {
            reason: "commondir or HEAD missing",
        };
    }
    match gitfile.parent() {
        Some(worktree) => AdminState::Valid {
            worktree: worktree.to_owned(),
        },
        None => AdminState::Stale {
            reason: "gitdir has no parent",
        },
    }
}

/// Registers the work tree `worktree` of branch `refname` under the admin
/// folder of sandbox `id`, in place of libgit2's worktree add (which walks
/// every admin folder first, see the module docs). The order is chosen for a
/// kill at any instant: the admin folder's `commondir` and `HEAD`, then the
/// work tree with its `.git` file, and the admin folder's `gitdir` last (by
/// rename), so the folder reads as valid only once everything it names
/// exists; until then [`prune`] removes it and [`owns`] recognises the work
/// tree. The caller checks the branch out afterwards.
pub(crate) fn add_worktree(
    commondir: &Path,
    id: &str,
    worktree: &Path,
    refname: &str,
) -> Result<(), (&'static str, PathBuf, io::Error)> {
    let admin = admin_dir(commondir, id);
    let at = |op: &'static str, path: &Path| {
        let path = path.to_owned();
        move |e| (op, path, e)
    };
    std::fs::create_dir_all(admin_root(commondir))
        .map_err(at("create directory", &admin_root(commondir)))?;
    std::fs::create_dir(&admin).map_err(at("create admin folder", &admin))?;
    let mut common = commondir.as_os_str().as_bytes().to_vec();
    common.push(b'\n');
    std::fs::write(admin.join("commondir"), common).map_err(at("write commondir", &admin))?;
    std::fs::write(admin.join("HEAD"), format!("ref: {refname}\n"))
        .map_err(at("write HEAD", &admin))?;
    std::fs::create_dir(worktree).map_err(at("create worktree", worktree))?;
    let mut gitfile = b"gitdir: ".to_vec();
    gitfile.extend_from_slice(admin.as_os_str().as_bytes());
    gitfile.extend_from_slice(b"/\n");
    std::fs::write(worktree.join(".git"), gitfile).map_err(at("write .git", worktree))?;
    let mut gitdir = worktree.join(".git").into_os_string().into_vec();
    gitdir.push(b'\n');
    let tmp = admin.join("gitdir.tmp");
    std::fs::write(&tmp, gitdir).map_err(at("write gitdir", &tmp))?;
    std::fs::rename(&tmp, admin.join("gitdir")).map_err(at("write gitdir", &admin))
}

/// Where the branch `refname` is checked out: the main work tree (`HEAD` in
/// the common dir) or any admin folder whose `HEAD` names it, half-made or
/// locked ones included. libgit2's own check walks the worktrees and reads
/// "checked out" whenever one of them cannot be opened.
pub(crate) fn checked_out_by(commondir: &Path, refname: &str) -> io::Result<Option<PathBuf>> {
    let names = |head: &Path| {
        std::fs::read(head).is_ok_and(|bytes| {
            bytes
                .trim_ascii()
                .strip_prefix(b"ref:")
                .is_some_and(|r| r.trim_ascii() == refname.as_bytes())
        })
    };
    if names(&commondir.join("HEAD")) {
        return Ok(Some(commondir.to_owned()));
    }
    let entries = match std::fs::read_dir(admin_root(commondir)) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let path = entry?.path();
        if names(&path.join("HEAD")) {
            return Ok(Some(recorded_worktree(&path).unwrap_or(path)));
        }
    }
    Ok(None)
}

/// The work tree named by the admin folder's `gitdir` file, complete or not.
pub(crate) fn recorded_worktree(dir: &Path) -> Option<PathBuf> {
    let gitdir = read_trimmed(&dir.join("gitdir"))?;
    dir.join(OsStr::from_bytes(&gitdir))
        .parent()
        .map(Path::to_owned)
}

/// The sandbox ids that have an admin folder, complete or not.
pub(crate) fn admin_ids(commondir: &Path) -> io::Result<Vec<String>> {
    let entries = match std::fs::read_dir(admin_root(commondir)) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut ids = Vec::new();
    for entry in entries {
        let name = entry?.file_name();
        if let Some(id) = name.to_str().and_then(|n| n.strip_prefix(WORKTREE_PREFIX)) {
            ids.push(id.to_owned());
        }
    }
    Ok(ids)
}

/// `git worktree prune` as this crate applies it: removes every admin folder
/// that is stale (see [`admin_state`]) and not locked. The sandbox's own
/// folders are judged strictly and at once (the caller holds the sandbox
/// lock); another tool's only by git's rules and after [`FOREIGN_GRACE`].
/// Work trees are never touched here. Returns the pruned folder names.
pub(crate) fn prune(commondir: &Path) -> io::Result<Vec<String>> {
    let root = admin_root(commondir);
    let entries = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut pruned = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let ours = name.as_bytes().starts_with(WORKTREE_PREFIX.as_bytes());
        let path = entry.path();
        let AdminState::Stale { reason } = admin_state(&path, ours) else {
            continue;
        };
        if !ours && !unchanged_for(&path, FOREIGN_GRACE) {
            continue;
        }
        tracing::info!(folder = %path.display(), reason, "pruning stale worktree admin folder");
        remove_any(&path)?;
        pruned.push(name.to_string_lossy().into_owned());
    }
    Ok(pruned)
}

/// True when `dir` is the work tree of the admin folder `admin`, or the
/// remains of one that a killed create or cleanup left: an empty directory,
/// or one whose `.git` file points at `admin`, or one holding nothing but a
/// `.git` file cut short while it was written. Anything else (a symlink, a
/// foreign directory) is not ours and is never deleted.
pub(crate) fn owns(dir: &Path, admin: &Path) -> bool {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        _ => return false,
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut count = 0usize;
    for entry in entries {
        match entry {
            Ok(_) => count += 1,
            Err(_) => return false,
        }
    }
    if count == 0 {
        return true;
    }
    let gitfile = dir.join(".git");
    match std::fs::symlink_metadata(&gitfile) {
        Ok(meta) if meta.is_file() => {}
        _ => return false,
    }
    let Ok(content) = std::fs::read(&gitfile) else {
        return false;
    };
    let admin = admin.as_os_str().as_bytes();
    let admin = admin.strip_suffix(b"/").unwrap_or(admin);
    let mut expected = b"gitdir: ".to_vec();
    expected.extend_from_slice(admin);
    let trimmed = content.trim_ascii_end();
    let trimmed = trimmed.strip_suffix(b"/").unwrap_or(trimmed);
    if trimmed == expected.as_slice() {
        return true;
    }
    // Cut short: libgit2 writes `gitdir: <admin>/\n` with no rename.
    expected.extend_from_slice(b"/\n");
    count == 1 && expected.starts_with(&content)
}

/// Removes a sandbox work tree so that a kill at any instant leaves something
/// [`owns`] still recognises: everything but the `.git` file first, then
/// the `.git` file, then the (then empty) directory.
pub(crate) fn remove_worktree(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name() == ".git" {
            continue;
        }
        remove_any(&entry.path())?;
    }
    remove_if_present(std::fs::remove_file(dir.join(".git")))?;
    remove_if_present(std::fs::remove_dir(dir))
}

/// Removes a file, symlink or directory tree (never following symlinks);
/// an absent path is not an error.
pub(crate) fn remove_any(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => remove_if_present(std::fs::remove_dir_all(path)),
        Ok(_) => remove_if_present(std::fs::remove_file(path)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

fn remove_if_present(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn read_trimmed(path: &Path) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let trimmed = bytes.trim_ascii();
    (!trimmed.is_empty()).then(|| trimmed.to_vec())
}

fn unchanged_for(path: &Path, grace: Duration) -> bool {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|modified| SystemTime::now().duration_since(modified).ok())
        .is_some_and(|age| age >= grace)
}
