//! Maintainer tasks, run as `cargo xtask <task>` (a cargo alias).
//!
//! - `migrate --db PATH`: create or migrate a state database and report the
//!   migrations applied.
//! - `tidy`: repository rules (also run as a test of this crate).
//! - `unicode-tables [--check]`: regenerate mcp-admission's Unicode tables
//!   from the UCD files in `fixtures/admission/ucd-14.0.0` (a test of this
//!   crate fails when the committed tables drift from them).
//! - `fixtures [--check] [--out DIR] [SET...]`: regenerate the generated
//!   fixtures from their sources: the Unicode tables (offline), and the
//!   recordings of third-party programs (the real agent CLIs' streams and
//!   transcripts, the original lionagi). `--out` writes under `DIR` instead
//!   of the workspace.
//!   `--check` regenerates the offline sets into a scratch directory and
//!   fails on any byte of drift (a test of this crate does the same).
//! - `ci`: what CI runs, defined once (`.ci/run` calls it after installing
//!   system packages): `cargo fmt --check`, clippy with `-D warnings` on
//!   every target (and on mcp-admission's `regex` feature), then the test
//!   suite (and mcp-admission's `regex` tests). First, `cargo tree` checks
//!   that serde_json's `raw_value`, `arbitrary_precision` and `preserve_order`
//!   features are off in the `lionrt` build and
//!   in the whole workspace's (dev-dependencies included).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use state_sqlite::{Engine, EngineConfig, MIGRATIONS, schema_version};

mod fixtures;
mod serde_features;
mod tidy;
mod unicode_tables;

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  migrate --db PATH   create or migrate the state database at PATH
  tidy                repository rules (file headers, dependency invariants)
  unicode-tables      regenerate mcp-admission's Unicode tables from the UCD
                      (fixtures/admission/ucd-14.0.0); --check fails on drift
  fixtures [--out DIR] [SET...]
                      regenerate generated fixtures: unicode-tables (offline),
                      real-cli (Claude Code and Codex from npm, loopback-only
                      namespace: their streams and transcripts), lionagi
                      (the original's state.db, pip); --out writes under DIR
                      (laid out as the workspace) instead; --check
                      regenerates the offline sets into a scratch directory
                      and fails on drift
  man [DIR]           write the lionrt command's man pages (default
                      target/man): lionrt.1, lionrt-run.1, ...
  ci                  fmt check, clippy -D warnings, tests (what .ci/run does)";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln_err(&format!("xtask: {e:#}"));
            ExitCode::FAILURE
        }
    }
}

#[allow(
    clippy::print_stderr,
    reason = "xtask reports to the maintainer's terminal"
)]
fn eprintln_err(msg: &str) {
    eprintln!("{msg}");
}

#[allow(
    clippy::print_stdout,
    reason = "xtask reports to the maintainer's terminal"
)]
pub(crate) fn say(msg: &str) {
    println!("{msg}");
}

fn run(args: Vec<String>) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("migrate") => migrate(&args[1..]),
        Some("ci") => ci(),
        Some("man") => man(&args[1..]),
        Some("fixtures") => fixtures::run(&args[1..]),
        Some("unicode-tables") => unicode_tables::run(&args[1..]),
        Some("tidy") => {
            let problems = tidy::check();
            for p in &problems {
                say(p);
            }
            if problems.is_empty() {
                Ok(())
            } else {
                bail!("{} tidy problem(s)", problems.len())
            }
        }
        Some("-h" | "--help" | "help") | None => {
            say(USAGE);
            Ok(())
        }
        Some(other) => bail!("unknown task {other:?}\n\n{USAGE}"),
    }
}

/// `cargo xtask man [DIR]`: the man pages come from the lionrt command's
/// own definition (`lionrt __man DIR`), so they never drift from `--help`.
fn man(args: &[String]) -> Result<()> {
    let dir = match args {
        [] => workspace_root().join("target").join("man"),
        [dir] => PathBuf::from(dir),
        _ => bail!("man takes at most one directory\n\n{USAGE}"),
    };
    cargo(&[
        "run",
        "--quiet",
        "-p",
        "lionrt",
        "--",
        "__man",
        &dir.display().to_string(),
    ])
}

/// The workspace root (xtask's parent directory).
pub(crate) fn workspace_root() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), std::path::Path::to_path_buf)
}

fn migrate(args: &[String]) -> Result<()> {
    let db = match args {
        [flag, path] if flag == "--db" => PathBuf::from(path),
        _ => bail!("migrate needs --db PATH\n\n{USAGE}"),
    };
    let engine = Engine::create(&db, EngineConfig::default())
        .with_context(|| format!("migrating {}", db.display()))?;
    let version = schema_version(&*engine.conn()?)?;
    let known = MIGRATIONS
        .iter()
        .map(|m| format!("{:04}_{}", m.version, m.name))
        .collect::<Vec<_>>();
    say(&format!(
        "{}: schema version {version} (migrations: {})",
        db.display(),
        known.join(", ")
    ));
    Ok(())
}

/// The environment every CI step runs with: no incremental build, no
/// colour, and `CI=true` (insta then writes no snapshots and fails on a
/// mismatch).
const CI_ENV: &[(&str, &str)] = &[
    ("CARGO_INCREMENTAL", "0"),
    ("CARGO_TERM_COLOR", "never"),
    ("CI", "true"),
];

/// CI, defined once: `.ci/run` installs the system packages the tests need
/// and then runs `cargo xtask ci`, which runs these steps in order and
/// stops at the first failure.
const CI_STEPS: &[&[&str]] = &[
    &["--version"],
    &["fmt", "--all", "--check"],
    &[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ],
    // Feature-gated paths the default build does not compile.
    &[
        "clippy",
        "-p",
        "mcp-admission",
        "--all-targets",
        "--features",
        "regex",
        "--",
        "-D",
        "warnings",
    ],
    // The README's test command.
    &["test", "--workspace"],
    &["test", "-p", "mcp-admission", "--features", "regex"],
];

fn cargo(args: &[&str]) -> Result<()> {
    say(&format!("==> cargo {}", args.join(" ")));
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .envs(CI_ENV.iter().copied())
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

fn ci() -> Result<()> {
    serde_features::check()?;
    for step in CI_STEPS {
        cargo(step)?;
    }
    Ok(())
}
