//! `lionrt mirror`: Claude Code and Codex transcripts into the state
//! database (a SQLite file, or PostgreSQL with `--db postgres://…`), once
//! or tailing (the original's `li mirror`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde_json::json;
use state_sqlite::{Engine, EngineConfig, Store};
use tokio::signal::unix::{SignalKind, signal};
use transcript_mirror::{Mirror, MirrorConfig, PassReport, parse_window};

use crate::out;

/// Which transcripts a pass reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SourceArg {
    /// Claude Code and Codex.
    Both,
    /// Claude Code only.
    Claude,
    /// Codex only.
    Codex,
}

const LONG_ABOUT: &str = "\
Mirror Claude Code and Codex transcripts into the state database.

Tails ~/.claude/projects transcripts and ~/.codex/sessions rollouts and writes
them to the state database as sessions of kind `mirrored`, so every Claude Code
and Codex session shows up beside lionrt's own. Resumable and idempotent: each
file is read from where the last pass stopped, and re-reading adds nothing. A
session idle for --live-window is marked completed and returns to running
(an audited override) when its transcript resumes.

Exit status: 0; with --once, 2 when a transcript could not be read (the
others were mirrored); 1 on any other error.";

/// The options of `lionrt mirror`.
#[derive(Debug, Args)]
#[command(
    about = "Mirror Claude Code and Codex transcripts into the state database (once, or tailing)",
    long_about = LONG_ABOUT
)]
pub(crate) struct MirrorArgs {
    /// Do a single catch-up pass over existing transcripts and exit, instead
    /// of tailing for new ones (backfills history without leaving a process).
    #[arg(long)]
    once: bool,
    /// Seconds between passes while tailing.
    #[arg(long, value_name = "SECS", default_value_t = 3.0)]
    interval: f64,
    /// Only mirror transcripts modified within this window (e.g. 90s, 15m,
    /// 12h, 7d, 2w). Default: all.
    #[arg(long, value_name = "WINDOW")]
    since: Option<String>,
    /// Which transcripts to mirror. A full Codex backfill is large; pair
    /// `codex` with --since to bound it.
    #[arg(long, value_enum, default_value = "both")]
    source: SourceArg,
    /// Claude projects directory [default: ~/.claude/projects].
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Codex sessions directory [default: ~/.codex/sessions].
    #[arg(long, value_name = "DIR")]
    codex_root: Option<PathBuf>,
    /// Idle gap since a session's last message after which it is marked
    /// completed (it returns to running when its transcript resumes).
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    live_window: u64,
}

fn home_dir(sub: &str) -> Result<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .context("HOME is not set: pass --root and --codex-root")?;
    Ok(Path::new(&home).join(sub))
}

fn config(args: &MirrorArgs) -> Result<MirrorConfig> {
    crate::seconds("--interval", args.interval)?;
    let claude = matches!(args.source, SourceArg::Both | SourceArg::Claude);
    let codex = matches!(args.source, SourceArg::Both | SourceArg::Codex);
    Ok(MirrorConfig {
        claude_root: match (&args.root, claude) {
            (_, false) => None,
            (Some(r), true) => Some(r.clone()),
            (None, true) => Some(home_dir(".claude/projects")?),
        },
        codex_root: match (&args.codex_root, codex) {
            (_, false) => None,
            (Some(r), true) => Some(r.clone()),
            (None, true) => Some(home_dir(".codex/sessions")?),
        },
        since: args.since.as_deref().map(parse_window).transpose()?,
        live_window: Duration::from_secs(args.live_window),
        ..MirrorConfig::default()
    })
}

fn print(json: bool, report: &PassReport) {
    if json {
        out::json(&json!({
            "files_seen": report.files_seen,
            "files_read": report.files.len(),
            "lines": report.stats.lines,
            "bytes": report.stats.bytes,
            "messages_added": report.messages_added,
            "sessions_created": report.sessions_created,
            "unparseable": report.stats.unparseable,
            "non_utf8": report.stats.non_utf8,
            "oversized": report.stats.oversized,
            "linked": report.linked,
            "reconcile": report.reconcile,
            "errors": report.errors,
            "files": report.files,
        }));
        return;
    }
    for f in &report.files {
        if f.write.messages_added > 0 || f.write.session_created {
            out::line(format!(
                "  mirror: {} (+{} msgs{})",
                f.session_id,
                f.write.messages_added,
                if f.write.session_created { ", new" } else { "" }
            ));
        }
    }
    for id in &report.reconcile.reactivated {
        out::line(format!("  resumed: {id}"));
    }
    for e in &report.errors {
        out::line(format!("  error: {e}"));
    }
    if report.messages_added > 0 || report.files_seen == 0 {
        out::line(format!(
            "mirrored {} new message(s) from {} of {} transcript(s)",
            report.messages_added,
            report.files.len(),
            report.files_seen
        ));
    }
}

/// Runs the mirror: one pass with `--once`, else a pass every `--interval`
/// until SIGINT or SIGTERM (a pass in progress finishes first).
pub(crate) fn run(db: &Path, json: bool, args: MirrorArgs) -> Result<ExitCode> {
    let config = config(&args)?;
    // `--db postgres://…` (shown redacted only): the same mirror over the
    // PostgreSQL store.
    let mut mirror = match crate::pg::url(db) {
        Some(url) => Mirror::new(
            crate::pg::open(&url).with_context(|| format!("opening {url}"))?,
            config,
        ),
        None => Mirror::new(
            Store::new(
                Engine::create(db, EngineConfig::default())
                    .with_context(|| format!("opening {}", db.display()))?,
            ),
            config,
        ),
    };
    if !json {
        let roots: Vec<String> = [&mirror.config().claude_root, &mirror.config().codex_root]
            .into_iter()
            .flatten()
            .map(|p| p.display().to_string())
            .collect();
        out::line(format!(
            "lionrt mirror: {} over {}",
            if args.once {
                "catch-up pass"
            } else {
                "tailing"
            },
            roots.join(", ")
        ));
    }
    if args.once {
        let report = mirror.pass(SystemTime::now())?;
        print(json, &report);
        return Ok(if report.errors.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        });
    }
    let interval = crate::seconds("--interval", args.interval)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async move {
        let mut interrupt =
            signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
        let mut terminate =
            signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        loop {
            let (back, report) = tokio::task::spawn_blocking(move || {
                let report = mirror.pass(SystemTime::now());
                (mirror, report)
            })
            .await
            .context("the mirror pass panicked")?;
            mirror = back;
            print(json, &report?);
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = interrupt.recv() => break,
                _ = terminate.recv() => break,
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}
