//! `lionrt doctor`: is this machine ready to run agents? Checks the linked
//! SQLite (version and the WAL-reset fix), the state database, the
//! settings file, the plugin directories, the agent CLIs on `PATH` (and
//! their versions), cgroup v2 and pidfd. Read-only: nothing is created or
//! changed. Exit status 1 when a check fails; warnings do not fail.
//!
//! (`lionrt state doctor` is the orphan sweep; this is the environment.)

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use serde_json::json;
use state_sqlite::StoreKind;

use crate::out;
use crate::view::{self, paint};

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Seconds to wait for each agent CLI's `--version`.
    #[arg(long, default_value_t = 5)]
    version_timeout: u64,
}

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Serialize)]
struct Check {
    check: String,
    level: Level,
    detail: String,
}

fn check(list: &mut Vec<Check>, name: impl Into<String>, level: Level, detail: impl Into<String>) {
    list.push(Check {
        check: name.into(),
        level,
        detail: detail.into(),
    });
}

/// The agent CLIs the providers drive, by provider.
const AGENTS: &[(&str, &str)] = &[
    ("claude", "claude"),
    ("codex", "codex"),
    ("gemini", "agy"),
    ("pi", "pi"),
];

pub(crate) fn run(db: &Path, json: bool, args: DoctorArgs) -> Result<ExitCode> {
    let mut checks = Vec::new();
    sqlite(&mut checks);
    database(&mut checks, db);
    settings(&mut checks);
    plugins(&mut checks);
    for (provider, program) in AGENTS {
        agent(
            &mut checks,
            provider,
            program,
            Duration::from_secs(args.version_timeout),
        );
    }
    cgroup(&mut checks);
    pidfd(&mut checks);
    let failed = checks.iter().any(|c| c.level == Level::Fail);
    if json {
        out::json(&json!({"ok": !failed, "checks": checks}));
    } else {
        let colour = view::stdout_colour();
        for c in &checks {
            let (label, sgr) = match c.level {
                Level::Ok => ("ok  ", "32"),
                Level::Warn => ("warn", "33"),
                Level::Fail => ("FAIL", "31"),
            };
            out::line(format!(
                "{} {:<18} {}",
                paint(colour, sgr, label),
                c.check,
                c.detail
            ));
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn sqlite(checks: &mut Vec<Check>) {
    let version = state_sqlite::linked_sqlite_version();
    if state_sqlite::has_wal_reset_fix(version) {
        check(
            checks,
            "sqlite",
            Level::Ok,
            format!("{version} (has the WAL-reset fix)"),
        );
    } else {
        check(
            checks,
            "sqlite",
            Level::Fail,
            format!("{version} lacks the WAL-reset fix (3.51.3, 3.50.7 or 3.44.6 and later)"),
        );
    }
}

/// li's own store, when it is in its default place and `--db` is elsewhere:
/// reported as li's, never used.
fn lionagi_store(checks: &mut Vec<Check>, db: &Path) {
    let li = crate::dbpath::lionagi_db();
    if li == db {
        return;
    }
    if let Ok(kind @ StoreKind::Lionagi { .. }) = state_sqlite::recognise(&li) {
        check(
            checks,
            "lionagi",
            Level::Ok,
            format!(
                "{} is {} (not used by lionrt; `lionrt state import --from-lionagi` copies it)",
                li.display(),
                kind.describe()
            ),
        );
    }
}

fn database(checks: &mut Vec<Check>, db: &Path) {
    if let Some(url) = crate::pg::url(db) {
        // Probed read-only: the schema must be there, migrated by this
        // build's migrations (checksums included), and the server answer.
        let probe = || -> Result<String> {
            let backend = crate::backend::Postgres::open(&url)?;
            let store = crate::backend::Backend::reader(&backend);
            Ok(format!(
                "{} (PostgreSQL {}, schema version {})",
                crate::backend::Backend::location(&backend),
                store.server_version()?,
                store.schema_version()?
            ))
        };
        match probe() {
            Ok(detail) => check(checks, "database", Level::Ok, detail),
            Err(e) => check(checks, "database", Level::Fail, format!("{e:#}")),
        }
        return;
    }
    lionagi_store(checks, db);
    // What the file is, recognised without changing it.
    let (level, detail) = match state_sqlite::recognise(db) {
        Ok(StoreKind::Missing) => (
            Level::Ok,
            format!(
                "{} does not exist yet (the first run creates it)",
                db.display()
            ),
        ),
        Ok(StoreKind::Empty) => (
            Level::Ok,
            format!(
                "{} is an empty file (the first run makes it lionrt's store)",
                db.display()
            ),
        ),
        Ok(kind @ StoreKind::Lionagi { .. }) => (
            Level::Fail,
            format!(
                "{} is {}: lionrt does not use it (`lionrt state import --from-lionagi {}` copies it)",
                db.display(),
                kind.describe(),
                db.display()
            ),
        ),
        Ok(kind @ StoreKind::LionrtNewer { .. }) => (
            Level::Warn,
            format!(
                "{} is {}: this lionrt only reads it",
                db.display(),
                kind.describe()
            ),
        ),
        Ok(StoreKind::Lionrt { .. }) => (Level::Ok, String::new()),
        Ok(kind) => (
            Level::Fail,
            format!(
                "{} is {}: lionrt does not use it",
                db.display(),
                kind.describe()
            ),
        ),
        Err(e) => (Level::Fail, format!("{}: {e}", db.display())),
    };
    if !detail.is_empty() {
        check(checks, "database", level, detail);
        return;
    }
    let probe = || -> Result<String> {
        let (_engine, conn) = view::open_read(db)?;
        let version = state_sqlite::schema_version(&conn)?;
        let journal: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        let integrity: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        if integrity != "ok" {
            anyhow::bail!("quick_check: {integrity}");
        }
        Ok(format!(
            "{} (schema {version}, journal {journal})",
            db.display()
        ))
    };
    match probe() {
        Ok(detail) => check(checks, "database", Level::Ok, detail),
        Err(e) => check(
            checks,
            "database",
            Level::Fail,
            format!("{}: {e:#}", db.display()),
        ),
    }
}

fn settings(checks: &mut Vec<Check>) {
    let Some(file) = runtime_settings::SettingsFile::locate() else {
        check(
            checks,
            "settings",
            Level::Warn,
            "no HOME and no LIONAGI_SETTINGS_FILE",
        );
        return;
    };
    let path = file.path().to_owned();
    if !path.exists() {
        check(
            checks,
            "settings",
            Level::Ok,
            format!("{} absent (defaults)", path.display()),
        );
        return;
    }
    match file.check() {
        Ok(settings) => match settings.check_plugin_sections() {
            Ok(()) => check(
                checks,
                "settings",
                Level::Ok,
                format!("{} parses", path.display()),
            ),
            Err(e) => check(
                checks,
                "settings",
                Level::Fail,
                format!("{}: {e}", path.display()),
            ),
        },
        Err(e) => check(checks, "settings", Level::Fail, format!("{e}")),
    }
}

fn plugin_root() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("LIONAGI_PLUGINS_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(Path::new(&home).join(".lionagi").join("plugins"))
}

fn plugins(checks: &mut Vec<Check>) {
    let Some(root) = plugin_root() else {
        check(
            checks,
            "plugins",
            Level::Warn,
            "no HOME and no LIONAGI_PLUGINS_DIR",
        );
        return;
    };
    match std::fs::read_dir(&root) {
        Ok(entries) => {
            let bundles = entries
                .filter_map(Result::ok)
                .filter(|e| e.path().join("plugin.yaml").is_file())
                .count();
            check(
                checks,
                "plugins",
                Level::Ok,
                format!(
                    "{} ({bundles} bundle(s) with a plugin.yaml)",
                    root.display()
                ),
            );
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => check(
            checks,
            "plugins",
            Level::Ok,
            format!("{} absent (no plugins)", root.display()),
        ),
        Err(e) => check(
            checks,
            "plugins",
            Level::Fail,
            format!("{}: {e}", root.display()),
        ),
    }
}

/// `program` on `PATH`, the first executable match.
fn which(program: &str) -> Option<PathBuf> {
    let path: OsString = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
        })
}

fn agent(checks: &mut Vec<Check>, provider: &str, program: &str, timeout: Duration) {
    let name = format!("agent {provider}");
    let Some(path) = which(program) else {
        check(
            checks,
            name,
            Level::Warn,
            format!("`{program}` not on PATH"),
        );
        return;
    };
    match version_of(&path, timeout) {
        Ok(version) => check(
            checks,
            name,
            Level::Ok,
            format!("{} {version}", path.display()),
        ),
        Err(e) => check(
            checks,
            name,
            Level::Warn,
            format!("{}: {e}", path.display()),
        ),
    }
}

/// Runs `path --version` with no stdin, killing it after `timeout`.
fn version_of(path: &Path, timeout: Duration) -> Result<String, String> {
    let mut child = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start: {e}"))?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "--version did not answer within {}s",
                    timeout.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting: {e}")),
        }
    };
    let mut text = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut text);
    }
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if !status.success() {
        return Err(format!("--version exited with {status}"));
    }
    Ok(if first.is_empty() {
        "(no version printed)".to_owned()
    } else {
        view::one_line(first, 80)
    })
}

fn cgroup(checks: &mut Vec<Check>) {
    let root = Path::new("/sys/fs/cgroup");
    if !root.join("cgroup.controllers").exists() {
        check(
            checks,
            "cgroup",
            Level::Warn,
            "cgroup v2 is not mounted at /sys/fs/cgroup: legs are contained by process group only",
        );
        return;
    }
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("0::").map(str::to_owned))
        });
    let Some(own) = own else {
        check(
            checks,
            "cgroup",
            Level::Warn,
            "cgroup v2 mounted, but this process has no v2 cgroup",
        );
        return;
    };
    let dir = root.join(own.trim_start_matches('/'));
    // Opening cgroup.procs for writing (and writing nothing) is how the
    // supervisor would find out whether it may move a leg.
    let writable = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.procs"))
        .is_ok();
    if writable {
        check(
            checks,
            "cgroup",
            Level::Ok,
            format!("v2, {} is writable (legs get a cgroup)", dir.display()),
        );
    } else {
        check(
            checks,
            "cgroup",
            Level::Warn,
            format!(
                "v2, but {} is not writable: legs are contained by process group only",
                dir.display()
            ),
        );
    }
}

fn pidfd(checks: &mut Vec<Check>) {
    match rustix::process::pidfd_open(
        rustix::process::getpid(),
        rustix::process::PidfdFlags::empty(),
    ) {
        Ok(_fd) => check(
            checks,
            "pidfd",
            Level::Ok,
            "pidfd_open works (exits are watched without reaping races)",
        ),
        Err(e) => check(
            checks,
            "pidfd",
            Level::Warn,
            format!("pidfd_open failed ({e}): the supervisor falls back to waitid(WNOWAIT)"),
        ),
    }
}
