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
//!   (`e2e_real_cli`) with `LIONRT_E2E_RECORD` set to a staging directory,
//!   so the real Claude Code and Codex CLIs (installed from npm, run in a
//!   loopback-only network namespace against the local API stand-in) write
//!   their raw streams, moved to
//!   `fixtures/real-cli/<cli>_<version>_<kind>.jsonl`, and the transcripts
//!   of the `lionrt run` (the worker's `$HOME/.claude/projects` and
//!   `$CODEX_HOME/sessions`), laid out as found under
//!   `fixtures/transcript-mirror/real-cli/{claude,codex}/` (replacing what
//!   was there) with the worker's temporary work dir rewritten to
//!   `/tmp/e2erec-<cli>`.
//! - `lionagi` (network: pip): builds `fixtures/lionagi-import/state.db`
//!   with the original lionagi 0.36.0 (pip, in a venv under the temp dir)
//!   by running `fixtures/lionagi-import/make_state_db.py`.
//!
//! `--out DIR` (before the set names) writes into `DIR` instead of the
//! workspace, laid out the same, to compare a new recording with the
//! committed one before replacing it.
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

/// Runs the named fixture generators (all of them with no name) into the
/// workspace, or with `--out DIR` first into `DIR` (laid out as the
/// workspace, to compare before committing); or with `--check` the drift
/// check of the offline ones.
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
    let (out, args) = match args {
        [flag, dir, rest @ ..] if flag == "--out" => (PathBuf::from(dir), rest),
        [flag] if flag == "--out" => bail!("fixtures --out takes a directory"),
        _ => (root.clone(), args),
    };
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
        for file in (set.generate)(&root, &out)? {
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
    let staging = tempfile::tempdir().context("creating a staging directory")?;
    say("==> recording the real CLIs' streams and transcripts (e2e_real_cli)");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(source)
        .args([
            "test",
            "-p",
            "lionrt",
            "--test",
            "it",
            "--",
            "--test-threads=1",
            "--nocapture",
            "--exact",
        ])
        // Only the two plain conversations: the tier's other runs (codex with
        // a forwarded MCP set) record into the same directory, and their
        // sessions, with work dirs the layout cannot normalise, would join
        // the fixtures.
        .args(RECORDED_TESTS)
        .env("LIONRT_E2E_RECORD", staging.path())
        .status()
        .context("running cargo test")?;
    if !status.success() {
        bail!("the end-to-end tier failed ({status})");
    }
    lay_out_recording(staging.path(), out)
}

/// The e2e tests whose runs `real-cli` records.
const RECORDED_TESTS: [&str; 2] = [
    "e2e_real_cli::claude_code_runs_through_lionrt_against_a_local_messages_api",
    "e2e_real_cli::codex_runs_through_lionrt_against_a_local_responses_api",
];

/// Where `real-cli` writes the raw streams, relative to the output root.
const STREAMS_DIR: &str = "fixtures/real-cli";
/// Where `real-cli` writes the transcripts, relative to the output root.
const TRANSCRIPTS_DIR: &str = "fixtures/transcript-mirror/real-cli";
/// The CLIs whose transcripts are recorded.
const TRANSCRIPT_CLIS: [&str; 2] = ["claude", "codex"];

/// The fixed path a recorded CLI's work dir (a fresh temporary directory
/// per run) is rewritten to in its transcripts.
fn stable_work_dir(cli: &str) -> String {
    format!("/tmp/e2erec-{cli}")
}

/// The rewrites of a recorded work dir: the path itself, and Claude's
/// encoded form of it, to [`stable_work_dir`].
fn work_dir_renames(cli: &str, work: &str) -> [(String, String); 2] {
    let stable = stable_work_dir(cli);
    [
        (work.to_owned(), stable.clone()),
        (claude_project_name(work), claude_project_name(&stable)),
    ]
}

/// Claude Code's project directory name for a path: every character other
/// than an ASCII letter or digit becomes `-`.
fn claude_project_name(path: &str) -> String {
    path.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Moves what the e2e worker recorded under `staging` into `out`: the raw
/// streams (`<cli>_<version>_<kind>.jsonl`) to [`STREAMS_DIR`], and each
/// CLI's transcript tree (`transcripts/<cli>/`, as found under the worker's
/// `$HOME/.claude/projects` or `$CODEX_HOME/sessions`) to
/// `TRANSCRIPTS_DIR/<cli>/` with the same layout, replacing what was there.
/// The only rewrite is the worker's temporary work dir (named in
/// `transcripts/<cli>.workdir`), replaced by [`stable_work_dir`] in file
/// contents and, in Claude's encoded form, in path components. Returns the
/// files written, relative to `out`.
fn lay_out_recording(staging: &Path, out: &Path) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let mut streams = 0;
    for entry in
        std::fs::read_dir(staging).with_context(|| format!("reading {}", staging.display()))?
    {
        let entry = entry.context("reading the staging directory")?;
        let name = entry.file_name();
        if entry.file_type()?.is_file() && name.to_string_lossy().ends_with(".jsonl") {
            let file = Path::new(STREAMS_DIR).join(&name);
            let mut contents = std::fs::read(entry.path())
                .with_context(|| format!("reading {}", entry.path().display()))?;
            // A stream may name its CLI's work dir too (Claude Code's memory
            // path holds it in encoded form): the same rewrite as below.
            let cli = TRANSCRIPT_CLIS
                .into_iter()
                .find(|c| name.to_string_lossy().starts_with(&format!("{c}_")));
            if let Some(cli) = cli
                && let Ok(work) = std::fs::read_to_string(
                    staging.join("transcripts").join(format!("{cli}.workdir")),
                )
                && !work.trim().is_empty()
            {
                let mut text = String::from_utf8_lossy(&contents).into_owned();
                for (old, new) in work_dir_renames(cli, work.trim()) {
                    text = text.replace(old.as_str(), &new);
                }
                contents = text.into_bytes();
            }
            write_file(out, &file, &contents)?;
            written.push(file);
            streams += 1;
        }
    }
    if streams < TRANSCRIPT_CLIS.len() {
        bail!("no stream was recorded (the tier skipped: see its SKIP line)");
    }
    for cli in TRANSCRIPT_CLIS {
        let recorded = staging.join("transcripts");
        let marker = recorded.join(format!("{cli}.workdir"));
        let work = std::fs::read_to_string(&marker)
            .with_context(|| format!("reading {} (written by the worker)", marker.display()))?;
        let work = work.trim();
        if work.is_empty() {
            bail!("{} names no work dir", marker.display());
        }
        let renames = work_dir_renames(cli, work);
        let target = Path::new(TRANSCRIPTS_DIR).join(cli);
        let dest = out.join(&target);
        if dest.exists() {
            std::fs::remove_dir_all(&dest)
                .with_context(|| format!("clearing {}", dest.display()))?;
        }
        let before = written.len();
        copy_normalised(&recorded.join(cli), &target, out, &renames, &mut written)?;
        if written.len() == before {
            bail!("the {cli} worker recorded no transcript");
        }
    }
    written.sort();
    Ok(written)
}

/// Copies the tree `from` to `out/to`, replacing each `(from, to)` pair of
/// `renames` in file contents and path components; appends the files
/// written (relative to `out`) to `written`.
fn copy_normalised(
    from: &Path,
    to: &Path,
    out: &Path,
    renames: &[(String, String)],
    written: &mut Vec<PathBuf>,
) -> Result<()> {
    let entries = match std::fs::read_dir(from) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", from.display())),
    };
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", from.display()))?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        for (old, new) in renames {
            name = name.replace(old.as_str(), new);
        }
        let target = to.join(name);
        if entry.file_type()?.is_dir() {
            std::fs::create_dir_all(out.join(&target))
                .with_context(|| format!("creating {}", target.display()))?;
            copy_normalised(&entry.path(), &target, out, renames, written)?;
        } else {
            let mut text = std::fs::read_to_string(entry.path())
                .with_context(|| format!("reading {}", entry.path().display()))?;
            for (old, new) in renames {
                text = text.replace(old.as_str(), new);
            }
            write_file(out, &target, text.as_bytes())?;
            written.push(target);
        }
    }
    Ok(())
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

    use super::{SETS, check, claude_project_name, lay_out_recording};
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

    fn put(root: &Path, relative: &str, contents: &str) {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, contents).expect("write");
    }

    fn read(root: &Path, relative: &str) -> String {
        std::fs::read_to_string(root.join(relative)).expect("read")
    }

    /// A staging directory as the e2e worker leaves it: two streams, and
    /// the transcripts from a fake worker HOME whose work dirs were
    /// `/tmp/.tmpAbC1` (claude) and `/tmp/.tmpXyZ2` (codex).
    fn fake_recording() -> tempfile::TempDir {
        let staging = tempfile::tempdir().expect("tempdir");
        let s = staging.path();
        put(
            s,
            "claude_2.1.197_stream_json.jsonl",
            "{\"type\":\"system\",\"memory\":\"/srv/home/.claude/projects/-tmp--tmpAbC1-ws/memory/\"}\n",
        );
        put(
            s,
            "codex_0.171.0_exec_json.jsonl",
            "{\"type\":\"thread.started\"}\n",
        );
        put(s, "transcripts/claude.workdir", "/tmp/.tmpAbC1");
        put(
            s,
            "transcripts/claude/-tmp--tmpAbC1-ws/01e7.jsonl",
            "{\"cwd\":\"/tmp/.tmpAbC1/ws\",\"message\":\"Say hello.\"}\n",
        );
        put(s, "transcripts/codex.workdir", "/tmp/.tmpXyZ2\n");
        put(
            s,
            "transcripts/codex/2026/12/01/rollout-2026-12-01T15-06-37-01a2.jsonl",
            "{\"cwd\":\"/tmp/.tmpXyZ2/ws\",\"skills\":\"/tmp/.tmpXyZ2/home/.codex/skills\"}\n",
        );
        staging
    }

    #[test]
    fn claude_project_names_encode_every_non_alphanumeric() {
        // The committed fixture's directory, from its transcript's cwd.
        assert_eq!(
            claude_project_name("/tmp/e2erec-claude/ws"),
            "-tmp-e2erec-claude-ws"
        );
        assert_eq!(claude_project_name("/tmp/.tmpAbC1/ws"), "-tmp--tmpAbC1-ws");
    }

    // The recorded transcripts land in the transcript-mirror fixture layout
    // (claude: `<project>/<session>.jsonl`, codex: `YYYY/MM/DD/rollout-…`),
    // replace an earlier recording, and keep no temporary path.
    #[test]
    fn a_recording_is_laid_out_as_the_transcript_mirror_fixtures() {
        let staging = fake_recording();
        let out = tempfile::tempdir().expect("tempdir");
        let stale = "fixtures/transcript-mirror/real-cli/claude/-old/0000.jsonl";
        put(out.path(), stale, "{}\n");
        let written = lay_out_recording(staging.path(), out.path()).expect("lay out");
        let written: Vec<String> = written
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let claude = "fixtures/transcript-mirror/real-cli/claude/-tmp-e2erec-claude-ws/01e7.jsonl";
        let codex = "fixtures/transcript-mirror/real-cli/codex/2026/12/01/rollout-2026-12-01T15-06-37-01a2.jsonl";
        assert_eq!(
            written,
            [
                "fixtures/real-cli/claude_2.1.197_stream_json.jsonl",
                "fixtures/real-cli/codex_0.171.0_exec_json.jsonl",
                claude,
                codex,
            ]
        );
        assert_eq!(
            read(out.path(), claude),
            "{\"cwd\":\"/tmp/e2erec-claude/ws\",\"message\":\"Say hello.\"}\n"
        );
        assert_eq!(
            read(out.path(), codex),
            "{\"cwd\":\"/tmp/e2erec-codex/ws\",\"skills\":\"/tmp/e2erec-codex/home/.codex/skills\"}\n"
        );
        assert_eq!(
            read(
                out.path(),
                "fixtures/real-cli/codex_0.171.0_exec_json.jsonl"
            ),
            "{\"type\":\"thread.started\"}\n"
        );
        assert_eq!(
            read(
                out.path(),
                "fixtures/real-cli/claude_2.1.197_stream_json.jsonl"
            ),
            "{\"type\":\"system\",\"memory\":\"/srv/home/.claude/projects/-tmp-e2erec-claude-ws/memory/\"}\n",
            "a stream keeps no temporary path either"
        );
        assert!(
            !out.path().join(stale).exists(),
            "the old recording is replaced"
        );
    }

    // A recording without streams (the tier skipped), without a work dir
    // marker or without a transcript is refused, not laid out half.
    #[test]
    fn an_incomplete_recording_is_an_error() {
        let out = tempfile::tempdir().expect("tempdir");
        let staging = fake_recording();
        std::fs::remove_file(staging.path().join("codex_0.171.0_exec_json.jsonl")).expect("rm");
        let e = lay_out_recording(staging.path(), out.path()).expect_err("no codex stream");
        assert!(e.to_string().contains("no stream"), "{e:#}");

        let staging = fake_recording();
        std::fs::remove_file(staging.path().join("transcripts/codex.workdir")).expect("rm");
        let e = lay_out_recording(staging.path(), out.path()).expect_err("no marker");
        assert!(format!("{e:#}").contains("codex.workdir"), "{e:#}");

        let staging = fake_recording();
        std::fs::remove_dir_all(staging.path().join("transcripts/claude")).expect("rm");
        let e = lay_out_recording(staging.path(), out.path()).expect_err("no transcript");
        assert!(
            e.to_string()
                .contains("claude worker recorded no transcript"),
            "{e:#}"
        );
    }
}
