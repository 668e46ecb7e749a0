//! `lionrt sandbox ...`: git worktree sandboxes from the command line.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use sandbox_git::{
    CreateOptions, MergeOptions, SandboxSession, cleanup_sandbox_by_id, create_sandbox,
    list_sandboxes, merge_sandbox_by_id,
};
use serde_json::Value;

use crate::out;

#[derive(Debug, Args)]
pub(crate) struct RepoArg {
    /// The repository's work tree.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SandboxCmd {
    /// Create a sandbox: a new branch and worktree from the repository's
    /// current branch, which becomes the merge target (a detached HEAD is refused).
    Create {
        #[command(flatten)]
        repo: RepoArg,
        /// The sandbox id (default: generated).
        #[arg(long)]
        id: Option<String>,
        /// Where worktrees go (default: inside .git, invisible to the main checkout).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// List the repository's sandboxes.
    #[command(visible_alias = "list")]
    Ls {
        #[command(flatten)]
        repo: RepoArg,
    },
    /// Merge a sandbox into its recorded base branch, then clean it up.
    ///
    /// Refused when the repository is detached, not on the recorded base
    /// branch (never checked out for you), or the target is protected
    /// (main, master, release*) without --allow-protected.
    Merge {
        #[command(flatten)]
        repo: RepoArg,
        /// Sandbox id or branch.
        id: String,
        /// Operator approval to merge into a protected branch.
        #[arg(long)]
        allow_protected: bool,
        /// Keep the sandbox after merging.
        #[arg(long)]
        keep: bool,
    },
    /// Remove a sandbox's worktree and branch (retry-safe; discards unmerged work).
    Cleanup {
        #[command(flatten)]
        repo: RepoArg,
        /// Sandbox id or branch.
        id: String,
    },
}

fn print_sessions(json: bool, sessions: &[SandboxSession]) {
    if json {
        out::json(&serde_json::to_value(sessions).unwrap_or(Value::Null));
        return;
    }
    out::line(format!(
        "{:<24} {:<16} {:<8} {}",
        "ID", "BASE", "ACTIVE", "WORKTREE"
    ));
    for s in sessions {
        out::line(format!(
            "{:<24} {:<16} {:<8} {}",
            s.id,
            s.base_branch,
            s.is_active(),
            s.worktree_path.display()
        ));
    }
}

pub(crate) fn run(json: bool, cmd: SandboxCmd) -> Result<ExitCode> {
    match cmd {
        SandboxCmd::Create { repo, id, dir } => {
            let session = create_sandbox(
                &repo.repo,
                &CreateOptions {
                    id,
                    worktrees_dir: dir,
                },
            )?;
            print_sessions(json, std::slice::from_ref(&session));
        }
        SandboxCmd::Ls { repo } => print_sessions(json, &list_sandboxes(&repo.repo)?),
        SandboxCmd::Merge {
            repo,
            id,
            allow_protected,
            keep,
        } => {
            let report = merge_sandbox_by_id(
                &repo.repo,
                &id,
                &MergeOptions {
                    allow_protected,
                    cleanup: !keep,
                },
            )?;
            if json {
                out::json(&serde_json::to_value(&report).unwrap_or(Value::Null));
            } else {
                use sandbox_git::MergeOutcome as O;
                let what = match &report.outcome {
                    O::FastForward { commit } => format!("fast-forwarded to {commit}"),
                    O::MergeCommit { commit } => format!("merge commit {commit}"),
                    O::UpToDate => "nothing to merge (no commits beyond it)".to_owned(),
                    O::BranchAbsent => "already merged and cleaned up".to_owned(),
                };
                out::line(format!(
                    "sandbox {} into {}: {what}",
                    report.id, report.base_branch
                ));
                if report.uncommitted_count > 0 {
                    let mut listed = report.uncommitted.join(", ");
                    if report.uncommitted_count > report.uncommitted.len() {
                        listed.push_str(", ...");
                    }
                    out::line(format!(
                        "NOT merged: {} uncommitted change(s) left in the kept sandbox ({listed}); \
                         only commits are merged: commit them in the sandbox and merge again",
                        report.uncommitted_count
                    ));
                }
            }
        }
        SandboxCmd::Cleanup { repo, id } => {
            let report = cleanup_sandbox_by_id(&repo.repo, &id)?;
            if json {
                out::json(&serde_json::to_value(&report).unwrap_or(Value::Null));
            } else {
                out::line(format!(
                    "cleaned sandbox {}: worktree {:?}, branch {:?}",
                    report.id, report.worktree, report.branch
                ));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
