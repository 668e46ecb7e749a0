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
    assert!(
        matches!(err, sandbox_git::Error::NotARepository { .. }),
        "{err}"
    );
}

/// Each case: ignore files to write, files to create; the listing must
/// equal the git CLI's.
fn check_against_cli(ignores: &[(&str, &str)], files: &[&[u8]], tracked: &[&str]) {
    let repo = TestRepo::new("work");
    for rel in tracked {
        commit_file(&repo.root, rel, "tracked", "track");
    }
    for (rel, content) in ignores {
        let path = repo.root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write ignore file");
    }
    for rel in files {
        touch(&repo.root, rel);
    }
    let got = list_untracked_files(&repo.root).expect("list");
    let want = cli_untracked(&repo.root);
    assert_eq!(
        got.iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect::<Vec<_>>(),
        want.iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect::<Vec<_>>(),
        "ignores {ignores:?}"
    );
}

// contract: GIT-008
#[test]
fn ignore_rules_match_git() {
    let files: &[&[u8]] = &[
        b"a.log",
        b"keep.log",
        b"docs/a.log",
        b"docs/readme.txt",
        b"build/x.o",
        b"src/build/y.o",
        b"root-only.txt",
        b"sub/root-only.txt",
        b"deep/a/b/c/target.tmp",
        b"deep/a/b/c/keep.rs",
        b"vendor/lib/keep-me.txt",
        b"vendor/lib/other.txt",
        b"trailing ",
        b"#hash",
        b"dironly/file",
        b"notdir",
    ];
    check_against_cli(
        &[
            (
                ".gitignore",
                "*.log\n!keep.log\n/root-only.txt\n**/target.tmp\nvendor/*\n!vendor/lib/\nvendor/lib/other.txt\n\\#hash\ndironly/\nnotdir/\n",
            ),
            ("docs/.gitignore", "!*.log\n"),
            ("src/.gitignore", "build/\n"),
        ],
        files,
        &[],
    );
}

// contract: GIT-008
#[test]
fn tracked_files_under_ignore_rules_and_info_exclude_match_git() {
    check_against_cli(
        &[
            (".gitignore", "generated/\n*.tmp\n"),
            (".git/info/exclude", "local-notes/\n"),
        ],
        &[
            b"generated/new.rs",
            b"tracked-dir/new.tmp",
            b"tracked-dir/new.rs",
            b"local-notes/n.md",
            b"x.rs",
        ],
        &["tracked-dir/old.tmp.keep", "src/main.rs"],
    );
}

// contract: GIT-008
#[test]
fn info_exclude_of_the_main_repository_applies_in_a_sandbox_worktree() {
    let repo = TestRepo::new("work");
    std::fs::write(repo.root.join(".git/info/exclude"), "agent-scratch/\n").expect("exclude");
    let session = create_sandbox(&repo.root, &CreateOptions::default()).expect("create");
    touch(&session.worktree_path, b"agent-scratch/notes.md");
    touch(&session.worktree_path, b"real.rs");
    let got = list_untracked_files(&session.worktree_path).expect("list");
    assert_eq!(got, vec![b"real.rs".to_vec()]);
    assert_eq!(got, cli_untracked(&session.worktree_path));
}

// contract: GIT-008
#[test]
fn symlinks_and_nested_repositories_match_git() {
    let repo = TestRepo::new("work");
    std::fs::create_dir_all(repo.root.join("real dir")).expect("mkdir");
    touch(&repo.root, b"real dir/f");
    std::os::unix::fs::symlink("real dir", repo.root.join("link to dir")).expect("symlink");
    std::os::unix::fs::symlink("/nonexistent/target", repo.root.join("dangling")).expect("symlink");
    let nested = repo.root.join("nested");
    git2::Repository::init(&nested).expect("nested init");
    touch(&nested, b"inside.txt");
    let got = list_untracked_files(&repo.root).expect("list");
    assert_eq!(got, cli_untracked(&repo.root));
    assert!(
        got.contains(&b"link to dir".to_vec()) && got.contains(&b"nested/".to_vec()),
        "{got:?}"
    );
}

use proptest::strategy::Strategy as _;

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, failure_persistence: None, ..Default::default() })]

    // contract: GIT-008
    #[test]
    fn arbitrary_names_match_git(names in proptest::collection::btree_set(
        proptest::collection::vec(proptest::prelude::any::<u8>().prop_filter("no NUL or slash", |b| *b != 0 && *b != b'/'), 1..12),
        1..8,
    )) {
        let repo = TestRepo::new("work");
        let mut made = Vec::new();
        for (i, name) in names.iter().enumerate() {
            if name == b"." || name == b".." || name == b".git" || name.eq_ignore_ascii_case(b".gitignore") {
                continue;
            }
            // Alternate between top-level files and files inside an
            // untracked directory with the same hostile name.
            let rel = if i % 2 == 0 { name.clone() } else { [b"d ".as_slice(), name, b"/f"].concat() };
            touch(&repo.root, &rel);
            made.push(rel);
        }
        let got = list_untracked_files(&repo.root).expect("list");
        proptest::prop_assert_eq!(&got, &cli_untracked(&repo.root));
        made.sort();
        // TestRepo's .gitignore has `*.log` (files and directories alike).
        let ignored_by_default = |p: &Vec<u8>| p.split(|b| *b == b'/').next().is_some_and(|c| c.ends_with(b".log"));
        made.retain(|p| !ignored_by_default(p));
        proptest::prop_assert_eq!(got, made);
    }
}

// contract: GIT-008
#[test]
fn the_repository_excludes_file_applies_like_git() {
    let repo = TestRepo::new("work");
    let excludes = repo.root.join(".git/test-excludes");
    std::fs::write(&excludes, "*.swp\nscratch/\n/top-only.txt\n").expect("write");
    for rel in [
        &b"a.swp"[..],
        b"scratch/x",
        b"keep.rs",
        b"dir/b.swp",
        b"top-only.txt",
        b"sub/top-only.txt",
    ] {
        touch(&repo.root, rel);
    }
    let got = list_untracked_files(&repo.root).expect("list");
    assert_eq!(got, vec![b"keep.rs".to_vec(), b"sub/top-only.txt".to_vec()]);
    assert_eq!(got, cli_untracked(&repo.root));
}
