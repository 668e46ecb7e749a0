//! Expected-artifact resolution rules, over a directory view the caller
//! supplies (this crate does no I/O).

use std::path::{Path, PathBuf};

/// A read-only view of an artifact root. The filesystem implementation lives
/// with the caller; tests use an in-memory one.
pub trait ArtifactTree {
    /// Whether `rel` (relative to the root) exists, as a file or directory.
    fn exists(&self, rel: &Path) -> bool;
    /// Names of the root's immediate subdirectories, in any order.
    fn subdirectories(&self) -> Vec<String>;
}

/// Resolves one expected-artifact entry to the produced path (relative to the
/// root), or `None`.
///
/// - An entry with a directory component (`sub/out.md`), or naming a
///   directory, is matched exactly at that path, with no search.
/// - A bare filename is matched at the root first, then in immediate
///   subdirectories only, searched in sorted name order so the same worker
///   wins on every run. The contract need not name the producing worker.
pub fn resolve_produced(tree: &dyn ArtifactTree, entry: &str) -> Option<PathBuf> {
    let path = Path::new(entry.trim_end_matches('/'));
    let bare = path.components().count() == 1 && !entry.ends_with('/');
    if tree.exists(path) {
        return Some(path.to_path_buf());
    }
    if !bare {
        return None;
    }
    let mut subdirs = tree.subdirectories();
    subdirs.sort();
    subdirs
        .into_iter()
        .map(|d| Path::new(&d).join(path))
        .find(|candidate| tree.exists(candidate))
}
