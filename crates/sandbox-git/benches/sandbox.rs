//! Criterion benches: sandbox create + cleanup on a 5,000-file repository,
//! and untracked listing of 10,000 files, each beside the git CLI doing the
//! same work in the same run.
//!
//! Fairness: the repositories live on tmpfs (`/dev/shm`) when the machine
//! has one, so disk writeback noise does not decide the result, and each
//! timed run of one tool is followed by an untimed run of the other, so both
//! see the same machine state over the whole run.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use sandbox_git::{CreateOptions, cleanup_sandbox, create_sandbox, list_untracked_files};

fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("temp dir")
}

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
    let dir = scratch_dir();
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

fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}");
    out.stdout
}

struct Lifecycle {
    root: PathBuf,
    worktrees: PathBuf,
    counter: AtomicU64,
}

impl Lifecycle {
    fn library(&self) {
        let id = format!("b{}", self.counter.fetch_add(1, Ordering::Relaxed));
        let options = CreateOptions {
            id: Some(id),
            worktrees_dir: Some(self.worktrees.clone()),
        };
        let mut session = create_sandbox(&self.root, &options).expect("create");
        let _report = black_box(cleanup_sandbox(&mut session).expect("cleanup"));
    }

    fn cli(&self) {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let branch = format!("cli/b{n}");
        let path = self.worktrees.join(format!("cli-{n}"));
        let path = path.to_str().expect("utf-8");
        git(&self.root, &["worktree", "add", "-q", "-b", &branch, path]);
        git(&self.root, &["worktree", "remove", "--force", path]);
        git(&self.root, &["branch", "-q", "-D", &branch]);
    }
}

/// Times `timed` `iters` times, running `other` untimed after each run.
fn interleaved(iters: u64, timed: impl Fn(), other: impl Fn()) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        timed();
        total += start.elapsed();
        other();
    }
    total
}

fn create_and_cleanup(c: &mut Criterion) {
    let repo = repo_with_files(50, 100);
    let worktrees = scratch_dir();
    let lc = Lifecycle {
        root: repo.path().to_owned(),
        worktrees: worktrees.path().to_owned(),
        counter: AtomicU64::new(0),
    };
    let mut group = c.benchmark_group("create_cleanup_5000_files");
    group.sample_size(10);
    group.bench_function("git-cli", |b| {
        b.iter_custom(|iters| interleaved(iters, || lc.cli(), || lc.library()));
    });
    group.bench_function("sandbox-git", |b| {
        b.iter_custom(|iters| interleaved(iters, || lc.library(), || lc.cli()));
    });
    group.finish();
}

fn untracked(c: &mut Criterion) {
    let repo = repo_with_files(10, 100);
    write_files(repo.path(), "new", 100, 100);
    let root = repo.path();
    assert_eq!(list_untracked_files(root).expect("list").len(), 10_000);
    let library = || {
        black_box(list_untracked_files(root).expect("list"));
    };
    let cli = || {
        black_box(git(
            root,
            &["ls-files", "--others", "--exclude-standard", "-z"],
        ));
    };
    let mut group = c.benchmark_group("untracked_10000_files");
    group.bench_function("git-cli", |b| {
        b.iter_custom(|iters| interleaved(iters, cli, library));
    });
    group.bench_function("sandbox-git", |b| {
        b.iter_custom(|iters| interleaved(iters, library, cli));
    });
    group.finish();
}

criterion_group!(benches, create_and_cleanup, untracked);
criterion_main!(benches);
