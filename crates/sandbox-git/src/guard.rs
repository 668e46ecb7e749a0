//! The read-before-edit guard, with eviction of reads the agent can no
//! longer see.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// Tracks which files the agent has read, and through which read result, so
/// an edit of a file is allowed only while a read of it is still in the
/// agent's context.
///
/// When the context tool evicts or compacts a read result, call
/// [`ReadGuard::evict`] (or [`ReadGuard::retain_visible`]): the file's entry
/// is dropped and editing it is refused until it is read again. Otherwise the
/// guard would stay satisfied by a read the model can no longer see, and it
/// would edit blind.
///
/// Paths are compared after dropping `.` components and repeated
/// separators; `..` is kept as written, so two spellings of one file through
/// `..` do not match (the edit is refused, which is the safe side).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadGuard {
    reads: BTreeMap<PathBuf, String>,
}

impl ReadGuard {
    /// An empty guard.
    pub fn new() -> Self {
        ReadGuard::default()
    }

    /// Records that `path` was read and its content now sits in the agent's
    /// context as the result `read_id`. A newer read replaces an older one.
    pub fn record_read(&mut self, path: impl AsRef<Path>, read_id: impl Into<String>) {
        self.reads.insert(normalise(path.as_ref()), read_id.into());
    }

    /// Allows an edit of `path` only while a read of it is in context.
    ///
    /// # Errors
    /// [`Error::EditWithoutRead`].
    pub fn check_edit(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = normalise(path.as_ref());
        if self.reads.contains_key(&path) {
            Ok(())
        } else {
            Err(Error::EditWithoutRead { path })
        }
    }

    /// Drops the files whose read result is one of `evicted` (removed or
    /// compacted out of the context). Returns the paths dropped.
    pub fn evict<'a>(&mut self, evicted: impl IntoIterator<Item = &'a str>) -> Vec<PathBuf> {
        let evicted: std::collections::BTreeSet<&str> = evicted.into_iter().collect();
        self.retain_visible(|id| !evicted.contains(id))
    }

    /// Keeps only the files whose read result `visible` says is still in
    /// context. Returns the paths dropped.
    pub fn retain_visible(&mut self, mut visible: impl FnMut(&str) -> bool) -> Vec<PathBuf> {
        let mut dropped = Vec::new();
        self.reads.retain(|path, id| {
            let keep = visible(id);
            if !keep {
                dropped.push(path.clone());
            }
            keep
        });
        dropped
    }

    /// The files an edit is currently allowed for.
    pub fn readable_files(&self) -> impl Iterator<Item = &Path> {
        self.reads.keys().map(PathBuf::as_path)
    }
}

fn normalise(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect()
}
