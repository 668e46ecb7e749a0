//! `cargo xtask fixtures [--check] [SET...]`: regenerates the generated
//! fixtures from their sources.
//!
//! Each set writes under an output root that mirrors the workspace: the
//! workspace itself when regenerating, a scratch directory for `--check`.
//!
//! - `unicode-tables` (offline): mcp-admission's Unicode tables
//!   (`crates/mcp-admission/src/unicode_tables.rs`) from the UCD files in
//!   `fixtures/admission/ucd-14.0.0`.
//! - `real-cli` (network: npm): runs lionrt's end-to-end tier
//!   (`e2e_real_cli`) with `LIONRT_E2E_RECORD` set, so the real Claude Code
//!   and Codex CLIs (installed from npm, run in a loopback-only network
//!   namespace against the local API stand-in) write their raw streams to
//!   `fixtures/real-cli/<cli>_<version>_<kind>.jsonl`.
//! - `lionagi` (network: pip): builds `fixtures/lionagi-import/state.db`
//!   with the original lionagi 0.36.0 (pip, in a venv under the temp dir)
//!   by running `fixtures/lionagi-import/make_state_db.py`.
//!
//! `--check` regenerates every offline set into a scratch directory and
//! fails when a generated file differs from the committed one by a single
//! byte (a test of this crate runs the same check). The network sets are
//! recordings of third-party programs and are not reproducible byte for
//! byte, so they are never checked.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::unicode_tables::{TABLES_FILE, UCD_DIR};
use crate::{say, workspace_root};

/// One fixture set.
struct FixtureSet {
    name: &'static str,
    /// Whether regenerating it needs the network (npm, pip).
    network: bool,
    /// Regenerates the set from the sources under `source` into `out` (a
    /// root laid out as the workspace); returns the files written, relative
    /// to `out`.
    generate: fn(source: &Path, out: &Path) -> Result<Vec<PathBuf>>,
}

const SETS: &[FixtureSet] = &[
    FixtureSet {
        name: "unicode-tables",
        network: false,
        generate: unicode_tables,
    },
    FixtureSet {
        name: "real-cli",
        network: true,
        generate: real_cli,
    },
    FixtureSet {
        name: "lionagi",
        network: true,
        generate: lionagi,
    },
];

fn set_names() -> String {
    SETS.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
}

/// Runs the named fixture generators (all of them with no name), or with
/// `--check` the drift check of the offline ones.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let root = workspace_root();
    if args.first().is_some_and(|a| a == "--check") {
        if args.len() > 1 {
            bail!("fixtures --check takes no set name (it checks every offline set)");
        }
        let drift = check(&root)?;
        if drift.is_empty() {
            say("offline fixtures match their generators");
            return Ok(());
        }
        for line in &drift {
            say(line);
        }
        bail!(
            "{} generated file(s) differ from the committed ones; run cargo xtask fixtures",
            drift.len()
        );
    }
    let chosen: Vec<&FixtureSet> = if args.is_empty() {
        SETS.iter().collect()
    } else {
        args.iter()
            .map(|name| {
                SETS.iter()
                    .find(|s| s.name == name.as_str())
                    .with_context(|| format!("unknown fixture set {name:?} ({})", set_names()))
            })
            .collect::<Result<_>>()?
    };
    for set in chosen {
        say(&format!("==> fixtures {}", set.name));
        for file in (set.generate)(&root, &root)? {
            say(&format!("    {}", file.display()));
        }
    }
    Ok(())
}

/// Regenerates every offline set from `root`'s sources into a scratch
/// directory and compares each file written, byte for byte, with the same
/// path under `root`. Returns one line per difference (empty: no drift).
pub(crate) fn check(root: &Path) -> Result<Vec<String>> {
    let scratch = tempfile::tempdir().context("creating a scratch directory")?;
    let mut drift = Vec::new();
    for set in SETS.iter().filter(|s| !s.network) {
        let written = (set.generate)(root, scratch.path())?;
        if written.is_empty() {
            drift.push(format!("{}: the generator wrote nothing", set.name));
        }
        for file in written {
            let generated = std::fs::read(scratch.path().join(&file))
                .with_context(|| format!("reading the generated {}", file.display()))?;
            match std::fs::read(root.join(&file)) {
                Ok(committed) if committed == generated => {}
                Ok(committed) => drift.push(format!(
                    "{}: {} differs from its generator ({})",
                    set.name,
                    file.display(),
                    first_difference(&committed, &generated)
                )),
                Err(e) => drift.push(format!(
                    "{}: {} is generated but cannot be read in the workspace ({e})",
                    set.name,
                    file.display()
                )),
            }
        }
    }
    Ok(drift)
}

/// Where two byte strings first differ, for the drift message.
fn first_difference(committed: &[u8], generated: &[u8]) -> String {
    let at = committed
        .iter()
        .zip(generated)
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| committed.len().min(generated.len()));
    let line = 1 + committed[..at].iter().filter(|&&b| b == b'\n').count();
    format!(
        "first difference at byte {at}, line {line}; committed {} bytes, generated {}",
        committed.len(),
        generated.len()
    )
}

fn write_file(out: &Path, relative: &Path, contents: &[u8]) -> Result<()> {
    let path = out.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))
}

fn unicode_tables(source: &Path, out: &Path) -> Result<Vec<PathBuf>> {
    let text = crate::unicode_tables::generate(&source.join(UCD_DIR))?;
    let file = PathBuf::from(TABLES_FILE);
    write_file(out, &file, text.as_bytes())?;
    Ok(vec![file])
}

fn real_cli(source: &Path, out: &Path) -> Result<Vec<PathBuf>> {
    let relative = Path::new("fixtures/real-cli");
    let dir = out.join(relative);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let started = std::time::SystemTime::now();
    say("==> recording the real CLIs' streams (e2e_real_cli)");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(source)
        .args([
            "test",
            "-p",
            "lionrt",
            "--test",
            "it",
            "e2e_real_cli",
            "--",
            "--test-threads=1",
            "--nocapture",
        ])
        .env("LIONRT_E2E_RECORD", &dir)
        .status()
        .context("running cargo test")?;
    if !status.success() {
        bail!("the end-to-end tier failed ({status})");
    }
    let written: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= started)
        })
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().ends_with(".jsonl"))
        .map(|n| relative.join(n))
        .collect();
    if written.len() < 2 {
        bail!("no stream was recorded (the tier skipped: see its SKIP line)");
    }
    Ok(written)
}

fn lionagi(source: &Path, out: &Path) -> Result<Vec<PathBuf>> {
    let script = source.join("fixtures/lionagi-import/make_state_db.py");
    let venv = std::env::temp_dir().join("lionrt-lionagi-0.36.0-venv");
    let python = venv.join("bin/python");
    if !python.is_file() {
        say(&format!("==> python3 -m venv {}", venv.display()));
        run_checked(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    }
    say("==> pip install lionagi==0.36.0");
    run_checked(Command::new(&python).args(["-m", "pip", "install", "-q", "lionagi==0.36.0"]))?;
    let file = PathBuf::from("fixtures/lionagi-import/state.db");
    let db = out.join(&file);
    if let Some(parent) = db.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    say(&format!("==> {} {}", script.display(), db.display()));
    run_checked(Command::new(&python).arg(&script).arg(&db))?;
    Ok(vec![file])
}

fn run_checked(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{SETS, check};
    use crate::unicode_tables::{TABLES_FILE, UCD_DIR};
    use crate::workspace_root;

    /// Copies the sources and committed outputs of the offline sets into a
    /// scratch workspace.
    fn scratch_workspace(root: &Path) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in ["UnicodeData.txt", "SpecialCasing.txt", "CaseFolding.txt"] {
            let to = dir.path().join(UCD_DIR).join(name);
            std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
            std::fs::copy(root.join(UCD_DIR).join(name), to).expect("copy");
        }
        let tables = dir.path().join(TABLES_FILE);
        std::fs::create_dir_all(tables.parent().expect("parent")).expect("mkdir");
        std::fs::copy(root.join(TABLES_FILE), tables).expect("copy");
        dir
    }

    // Every offline generator, run into a scratch directory, reproduces the
    // committed files byte for byte: changing a generator, its source or
    // the generated file alone fails here.
    #[test]
    fn offline_generators_reproduce_the_committed_files() {
        let drift = check(&workspace_root()).expect("check");
        assert!(
            drift.is_empty(),
            "run cargo xtask fixtures:\n{}",
            drift.join("\n")
        );
    }

    #[test]
    fn there_is_an_offline_set_to_check() {
        assert!(SETS.iter().any(|s| !s.network));
    }

    // The check can fail: a committed output edited by hand, and a source
    // edited without regenerating, are both reported as drift.
    #[test]
    fn an_edited_output_or_source_alone_is_drift() {
        let root = workspace_root();
        let work = scratch_workspace(&root);
        assert!(check(work.path()).expect("check").is_empty());

        let tables = work.path().join(TABLES_FILE);
        let mut text = std::fs::read(&tables).expect("read");
        let last = text.len() - 2;
        text[last] ^= 1;
        std::fs::write(&tables, &text).expect("write");
        let drift = check(work.path()).expect("check");
        assert_eq!(drift.len(), 1, "{drift:?}");
        assert!(drift[0].contains(TABLES_FILE), "{drift:?}");

        let work = scratch_workspace(&root);
        let folding = work.path().join(UCD_DIR).join("CaseFolding.txt");
        let source = std::fs::read_to_string(&folding).expect("read");
        let edited: String = source
            .lines()
            .filter(|l| !l.starts_with("00DF; F;"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_ne!(edited.len(), source.len(), "the edit must remove a line");
        std::fs::write(&folding, edited).expect("write");
        let drift = check(work.path()).expect("check");
        assert_eq!(drift.len(), 1, "{drift:?}");
        assert!(drift[0].contains("first difference"), "{drift:?}");
    }
}
