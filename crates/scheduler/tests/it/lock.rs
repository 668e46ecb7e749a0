//! The tick lock belongs to the database file, not to the path naming it:
//! a symlink to the file or to its directory, a hard link, a relative path,
//! `.`/`..`/`//` spellings and `/proc/self/root` (a bind-style alias) all
//! find it taken, in this process and in another; and a holder killed by
//! SIGKILL leaves it free.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use proptest::prelude::*;
use scheduler::{Error, TickLock};
use state_sqlite::{Engine, EngineConfig};

const ROLE: &str = "SCHEDULER_TEST_LOCK_ROLE";
const DB: &str = "SCHEDULER_TEST_LOCK_DB";
const DEADLINE: Duration = Duration::from_secs(120);

/// A state file and the aliases of it: `dir/state.db`, `dir/link.db` (a
/// symlink), `dir/chain.db` (a symlink to the symlink), `dir/sub/hard.db`
/// (a hard link) and `alias` (a symlink to `dir`).
struct Aliases {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    alias: PathBuf,
}

impl Aliases {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("dir");
        std::fs::create_dir_all(dir.join("sub")).expect("dirs");
        Engine::create(dir.join("state.db"), EngineConfig::default()).expect("db");
        std::os::unix::fs::symlink("state.db", dir.join("link.db")).expect("symlink");
        std::os::unix::fs::symlink("link.db", dir.join("chain.db")).expect("symlink");
        std::fs::hard_link(dir.join("state.db"), dir.join("sub/hard.db")).expect("hard link");
        let alias = tmp.path().join("alias");
        std::os::unix::fs::symlink(&dir, &alias).expect("symlink to the directory");
        Self {
            _tmp: tmp,
            dir,
            alias,
        }
    }

    /// The path of spelling `(base, name, odd)`: the directory as itself,
    /// through its symlink, through `/proc/self/root` or through `sub/..`;
    /// the file as itself, its symlink, its symlink's symlink or its hard
    /// link; with a `./` or a doubled `/` inserted or not.
    fn spell(&self, (base, name, odd): (usize, usize, usize)) -> PathBuf {
        let base = match base {
            0 => self.dir.display().to_string(),
            1 => self.alias.display().to_string(),
            2 => format!("/proc/self/root{}", self.dir.display()),
            _ => format!("{}/sub/..", self.dir.display()),
        };
        let name = ["state.db", "link.db", "chain.db", "sub/hard.db"][name];
        let sep = ["/", "/./", "//"][odd];
        PathBuf::from(format!("{base}{sep}{name}"))
    }
}

fn spelling() -> impl Strategy<Value = (usize, usize, usize)> {
    (0usize..4, 0usize..4, 0usize..3)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever two spellings: the lock taken by one is refused by the
    /// other until it is dropped, then taken by the other.
    #[test]
    fn a_lock_taken_by_one_path_is_refused_by_every_other_path_to_the_file(
        a in spelling(),
        b in spelling(),
    ) {
        let files = Aliases::new();
        let (pa, pb) = (files.spell(a), files.spell(b));
        let first = TickLock::acquire(&pa).expect("the first lock");
        let second = TickLock::acquire(&pb);
        prop_assert!(matches!(second, Err(Error::Locked(_))), "{pa:?} then {pb:?}: {second:?}");
        drop(first);
        let again = TickLock::acquire(&pb);
        prop_assert!(again.is_ok(), "{pb:?} after {pa:?} was dropped: {again:?}");
    }
}

#[test]
fn another_database_is_not_locked_by_this_one() {
    let one = Aliases::new();
    let other = Aliases::new();
    let _held = TickLock::acquire(&one.spell((0, 0, 0))).expect("lock");
    TickLock::acquire(&other.spell((1, 1, 0))).expect("another file's lock is free");
}

/// Worker role: holds the lock of `DB` (relative to its working directory
/// or not), says so, then waits to be killed.
#[test]
fn worker_lock_holder() {
    if std::env::var(ROLE).as_deref() != Ok("hold") {
        return;
    }
    let db = std::env::var(DB).expect("the parent sets DB");
    let lock = TickLock::acquire(Path::new(&db));
    #[allow(clippy::print_stdout, reason = "the worker reports to its parent")]
    {
        match &lock {
            Ok(_) => println!("\nHELD"),
            Err(e) => println!("\nREFUSED {e}"),
        }
    }
    std::io::stdout().flush().expect("flush");
    loop {
        std::thread::park();
    }
}

/// The holder; dropping it kills it.
struct Holder(Child);

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a worker locking `db` from `cwd`; returns it and its first word
/// (`HELD` or `REFUSED`).
fn hold(db: &Path, cwd: &Path) -> (Holder, String) {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "lock::worker_lock_holder",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, "hold")
        .env(DB, db)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn a holder");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if line.starts_with("HELD") || line.starts_with("REFUSED") {
                let _ = tx.send(line);
            }
        }
    });
    let said = rx.recv_timeout(DEADLINE).expect("the holder's word");
    (Holder(child), said)
}

#[test]
fn two_processes_reaching_one_file_by_different_paths_never_both_hold_its_lock() {
    let files = Aliases::new();
    // A holder reaching the file by a relative path from its directory.
    let (mut holder, said) = hold(Path::new("./sub/../link.db"), &files.dir);
    assert_eq!(said, "HELD");
    // Every other path to the file, from this process and from another.
    for spelling in [(0, 0, 0), (1, 3, 1), (2, 2, 2), (3, 1, 0)] {
        let path = files.spell(spelling);
        let here = TickLock::acquire(&path);
        assert!(matches!(here, Err(Error::Locked(_))), "{path:?}: {here:?}");
        let (_other, said) = hold(&path, Path::new("/"));
        assert!(said.starts_with("REFUSED"), "{path:?}: {said}");
    }
    let (_other, said) = hold(Path::new("hard.db"), &files.dir.join("sub"));
    assert!(said.starts_with("REFUSED"), "{said}");

    // SIGKILL of the holder frees it: the next daemon is not blocked.
    holder.0.kill().expect("SIGKILL the holder");
    holder.0.wait().expect("reap the holder");
    let (_next, said) = hold(&files.spell((1, 2, 0)), Path::new("/"));
    assert_eq!(said, "HELD", "a dead holder's lock is free");
}
