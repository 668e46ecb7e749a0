//! Untracked listing with hostile file names, cross-checked with the git CLI.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use sandbox_git::{CreateOptions, create_sandbox, list_untracked_files};

use crate::support::{TestRepo, commit_file, git};

fn touch(root: &Path, rel: &[u8]) {
    let path = root.join(OsStr::from_bytes(rel));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, b"x").expect("write");
}

fn cli_untracked(root: &Path) -> Vec<Vec<u8>> {
    let out = git(root, &["ls-files", "--others", "--exclude-standard", "-z"]);
    let mut paths: Vec<Vec<u8>> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    paths.sort();
    paths
}

const HOSTILE: &[&[u8]] = &[
    b"with space.txt",
    b"new\nline.txt",
    b"double\"quote.txt",
    b"single'quote.txt",
    b"tab\there.txt",
    b"back\\slash.txt",
    b"caf\xc3\xa9 \xe2\x98\x83.txt",
    b"latin1-\xff\xfe.bin",
    b"-leading-dash",
    b" leading space",
    b"untracked dir/inner file.txt",
    b"untracked dir/deeper/na\xefve\n.txt",
    b"untracked dir/deeper/x",
];

// contract: GIT-008
#[test]
fn hostile_names_come_back_verbatim_one_per_file_and_ignored_files_stay_out() {
    let repo = TestRepo::new("work");
    for rel in HOSTILE {
        touch(&repo.root, rel);
    }
    // Ignored by .gitignore (`*.log`, `build/`) and by info/exclude.
    touch(&repo.root, b"debug.log");
    touch(&repo.root, b"build/out.o");
    touch(&repo.root, b"dir with log/x.log");
    std::fs::write(repo.root.join(".git/info/exclude"), "secret-excluded\n").expect("exclude");
    touch(&repo.root, b"secret-excluded");
    // Tracked and modified: not untracked.
    std::fs::write(repo.root.join("README.md"), "changed").expect("write");

    let got = list_untracked_files(&repo.root).expect("list");
    let mut want: Vec<Vec<u8>> = HOSTILE.iter().map(|p| p.to_vec()).collect();
    want.sort();
    assert_eq!(
        got,
        want,
        "got {:?}",
        got.iter()
            .map(|p| String::from_utf8_lossy(p))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        got,
        cli_untracked(&repo.root),
        "must match git ls-files --others --exclude-standard -z"
    );
    assert!(
        got.iter().all(|p| !p.ends_with(b"/")),
        "no directory entries"
    );
}

// contract: GIT-008
#[test]
fn untracked_files_in_a_sandbox_worktree_match_the_cli() {
    let repo = TestRepo::new("work");
    let session = create_sandbox(&repo.root, &CreateOptions::default()).expect("create");
    commit_file(&session.worktree_path, "tracked/keep.txt", "k", "tracked");
    for rel in [
        &b"tracked/new one.txt"[..],
        b"fresh/a\"b",
        b"fresh/sub/c\nd",
        b"ignored.log",
    ] {
        touch(&session.worktree_path, rel);
    }
    let got = list_untracked_files(&session.worktree_path).expect("list");
    assert_eq!(
        got,
        vec![
            b"fresh/a\"b".to_vec(),
            b"fresh/sub/c\nd".to_vec(),
            b"tracked/new one.txt".to_vec()
        ]
    );
    assert_eq!(got, cli_untracked(&session.worktree_path));
}

#[test]
fn a_clean_tree_has_no_untracked_files() {
    let repo = TestRepo::new("work");
    assert!(list_untracked_files(&repo.root).expect("list").is_empty());
}

#[test]
fn a_path_that_is_no_repository_is_an_error() {
    let dir = tempfile::tempdir().expect("dir");
    let err = list_untracked_files(dir.path()).expect_err("not a repo");
    assert!(matches!(err, sandbox_git::Error::Git { .. }), "{err}");
}
