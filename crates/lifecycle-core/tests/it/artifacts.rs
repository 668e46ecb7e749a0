//! Expected-artifact resolution.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use lifecycle_core::{ArtifactTree, resolve_produced};

struct Tree {
    paths: BTreeSet<PathBuf>,
    /// Deliberately unsorted, as a filesystem may list them.
    subdirs: Vec<String>,
}

impl Tree {
    fn new(paths: &[&str], subdirs: &[&str]) -> Self {
        Tree {
            paths: paths.iter().map(PathBuf::from).collect(),
            subdirs: subdirs.iter().map(|s| (*s).to_owned()).collect(),
        }
    }
}

impl ArtifactTree for Tree {
    fn exists(&self, rel: &Path) -> bool {
        self.paths.contains(rel)
    }
    fn subdirectories(&self) -> Vec<String> {
        self.subdirs.clone()
    }
}

// contract: LC-049
#[test]
fn an_entry_with_a_directory_is_matched_exactly() {
    let t = Tree::new(&["w2/out.md", "w1/sub/out.md"], &["w2", "w1"]);
    assert_eq!(
        resolve_produced(&t, "w2/out.md"),
        Some(PathBuf::from("w2/out.md"))
    );
    assert_eq!(
        resolve_produced(&t, "sub/out.md"),
        None,
        "no fallback search for a path entry"
    );
    let t = Tree::new(&["reports"], &["reports"]);
    assert_eq!(
        resolve_produced(&t, "reports/"),
        Some(PathBuf::from("reports"))
    );
}

// contract: LC-050
#[test]
fn the_root_wins_over_subdirectories() {
    let t = Tree::new(&["out.md", "a/out.md"], &["a"]);
    assert_eq!(
        resolve_produced(&t, "out.md"),
        Some(PathBuf::from("out.md"))
    );
}

// contract: LC-051
#[test]
fn only_immediate_subdirectories_are_searched() {
    let t = Tree::new(&["a/deep/out.md"], &["a"]);
    assert_eq!(resolve_produced(&t, "out.md"), None);
}

// contract: LC-052, LC-053
#[test]
fn subdirectories_are_searched_in_sorted_order() {
    let t = Tree::new(
        &["worker-b/out.md", "worker-a/out.md", "worker-c/out.md"],
        &["worker-c", "worker-a", "worker-b"],
    );
    assert_eq!(
        resolve_produced(&t, "out.md"),
        Some(PathBuf::from("worker-a/out.md"))
    );
    let t = Tree::new(&["worker-z/out.md"], &["worker-c", "worker-z"]);
    assert_eq!(
        resolve_produced(&t, "out.md"),
        Some(PathBuf::from("worker-z/out.md"))
    );
}
