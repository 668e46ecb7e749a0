//! Untracked-file listing with raw, verbatim paths.

use std::path::Path;

use git2::{Status, StatusOptions, StatusShow};

use crate::error::Error;

/// Lists the untracked, not-ignored files of the work tree at `worktree`, as
/// `git ls-files --others --exclude-standard -z` does: raw path bytes
/// relative to the work tree, `/`-separated, sorted bytewise.
///
/// Paths come back verbatim (spaces, quotes, newlines, non-UTF-8 bytes; no
/// quoting or escaping as in `git status --porcelain`), each file inside an
/// untracked directory is its own entry (never one `dir/` entry), and files
/// matched by `.gitignore`, `.git/info/exclude` or `core.excludesFile` are
/// left out.
///
/// # Errors
/// When the repository cannot be opened or its status cannot be read.
pub fn list_untracked_files(worktree: &Path) -> Result<Vec<Vec<u8>>, Error> {
    let repo = crate::session::open(worktree)?;
    let mut opts = StatusOptions::new();
    opts.show(StatusShow::Workdir)
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true)
        .renames_index_to_workdir(false);
    let statuses = repo
        .statuses(Some(&mut opts))
        .map_err(|e| Error::git("read status", worktree, e))?;
    let mut paths: Vec<Vec<u8>> = statuses
        .iter()
        .filter(|e| e.status().contains(Status::WT_NEW))
        .map(|e| e.path_bytes().to_vec())
        .collect();
    paths.sort_unstable();
    Ok(paths)
}
