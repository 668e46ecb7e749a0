//! Criterion benches: sandbox create + cleanup on a 5,000-file repository,
//! and untracked listing of 10,000 files, each beside the git CLI doing the
//! same work in the same run.

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use sandbox_git::{CreateOptions, cleanup_sandbox, create_sandbox, list_untracked_files};

/// Writes `dirs * per_dir` small files under `root/<prefix><d>/f<i>.txt`.
fn write_files(root: &Path, prefix: &str, dirs: usize, per_dir: usize) {
    for d in 0..dirs {
        let dir = root.join(format!("{prefix}{d}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for i in 0..per_dir {
            std::fs::write(dir.join(format!("f{i}.txt")), format!("{d} {i}\n")).expect("write");
        }
    }
}

/// A repository on branch `work` whose one commit holds `dirs * per_dir`
/// files.
fn repo_with_files(dirs: usize, per_dir: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = git2::Repository::init(dir.path()).expect("init");
    let mut config = repo.config().expect("config");
    config.set_str("user.name", "Bench").expect("name");
    config
        .set_str("user.email", "bench@example.invalid")
        .expect("email");
    write_files(dir.path(), "src", dirs, per_dir);
    let mut index = repo.index().expect("index");
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .expect("add");
    index.write().expect("write index");
    let tree = repo
        .find_tree(index.write_tree().expect("tree"))
        .expect("find tree");
    let sig = repo.signature().expect("sig");
    repo.commit(Some("refs/heads/work"), &sig, &sig, "init", &tree, &[])
        .expect("commit");
    repo.set_head("refs/heads/work").expect("head");
    dir
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .expect("run git");
    assert!(status.success(), "git {args:?}");
}

fn create_and_cleanup(c: &mut Criterion) {
    let repo = repo_with_files(50, 100);
    let root = repo.path();
    let wt_dir = tempfile::tempdir().expect("worktrees dir");
    let counter = AtomicU64::new(0);
    let mut group = c.benchmark_group("create_cleanup_5000_files");
    group.sample_size(10);
    // The git CLI runs first: on a loaded machine later iterations tend to
    // be slower, and the CLI should not pay for that.
    group.bench_function("git-cli", |b| {
        b.iter(|| {
            let n = counter.fetch_add(1, Ordering::Relaxed);
            let branch = format!("cli/b{n}");
            let path = wt_dir.path().join(format!("cli-{n}"));
            let path = path.to_str().expect("utf-8");
            git(root, &["worktree", "add", "-q", "-b", &branch, path]);
            git(root, &["worktree", "remove", "--force", path]);
            git(root, &["branch", "-q", "-D", &branch]);
        });
    });
    group.bench_function("sandbox-git", |b| {
        b.iter(|| {
            let id = format!("b{}", counter.fetch_add(1, Ordering::Relaxed));
            let options = CreateOptions {
                id: Some(id),
                worktrees_dir: Some(wt_dir.path().to_owned()),
            };
            let mut session = create_sandbox(root, &options).expect("create");
            let _report = black_box(cleanup_sandbox(&mut session).expect("cleanup"));
        });
    });
    group.finish();
}

fn untracked(c: &mut Criterion) {
    let repo = repo_with_files(10, 100);
    write_files(repo.path(), "new", 100, 100);
    let root = repo.path();
    assert_eq!(list_untracked_files(root).expect("list").len(), 10_000);
    let mut group = c.benchmark_group("untracked_10000_files");
    group.bench_function("git-cli", |b| {
        b.iter(|| {
            let out = Command::new("git")
                .args(["ls-files", "--others", "--exclude-standard", "-z"])
                .current_dir(root)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .expect("git");
            assert!(out.status.success());
            black_box(out.stdout)
        });
    });
    group.bench_function("sandbox-git", |b| {
        b.iter(|| black_box(list_untracked_files(root).expect("list")))
    });
    group.finish();
}

criterion_group!(benches, create_and_cleanup, untracked);
criterion_main!(benches);
