//! Git worktree sandboxes for coding agents: each agent works on a branch and
//! worktree of its own; the orchestrator merges the result back under guard,
//! cleans up in a retry-safe way, and asks git whether the run left any work.
//!
//! # The API `lionrt sandbox` wires up
//!
//! | command | function | returns |
//! | --- | --- | --- |
//! | `create` | [`create_sandbox`]`(repo_root, &CreateOptions)` | [`SandboxSession`] |
//! | `ls` | [`list_sandboxes`]`(repo_root)` | `Vec<`[`SandboxSession`]`>` |
//! | `merge` | [`merge_sandbox_by_id`]`(repo_root, id_or_branch, &MergeOptions)` | [`MergeReport`] |
//! | `cleanup` | [`cleanup_sandbox_by_id`]`(repo_root, id_or_branch)` | [`CleanupReport`] |
//!
//! Every result type is `serde`-serialisable for `--json` output. A sandbox
//! is the branch `lionrt/sandbox/<id>` plus the worktree
//! `lionrt-sandbox-<id>` (by default under `.git/lionrt-sandboxes/<id>`),
//! and a metadata file `.git/lionrt-sandbox-meta/<id>.json` that records its
//! base branch until both resources are gone.
//!
//! # Rules kept
//!
//! - **Creation** records the branch checked out in `repo_root` as the merge
//!   target. A detached HEAD is refused ([`Error::DetachedHead`]): the
//!   literal `HEAD` is never recorded as a base branch (the fail-closed
//!   reading of the spec's open question).
//! - **Cleanup** ([`cleanup_sandbox`]) is retry-safe: an absent worktree or
//!   branch counts as cleaned; [`SandboxSession::is_active`] turns false only
//!   once both are gone; a partial failure ([`Error::CleanupIncomplete`])
//!   keeps the session active and a later call completes it. Cleanup discards
//!   uncommitted work in the sandbox and deletes the branch merged or not.
//! - **Crash safety**: a create or cleanup killed at any instant leaves a
//!   sandbox that [`list_sandboxes`] lists and [`cleanup_sandbox`] removes
//!   completely (work tree, admin folder under `.git/worktrees`, branch,
//!   metadata); a create with the same id rolls it back itself. Create and
//!   cleanup apply `git worktree prune` rules to stale admin folders. The
//!   crate registers worktrees and checks branches out itself rather than
//!   through libgit2's worktree add, list and branch delete, which a single
//!   pair of half-made admin folders wedges (see the `admin` module).
//! - **Merge** ([`merge_sandbox`]) refuses a detached `repo_root`, a
//!   `repo_root` not on the recorded base branch (never checking one out), and
//!   a protected target (`main`, `master`, `release*`, any ASCII case) unless
//!   the operator set [`MergeOptions::allow_protected`] or
//!   [`ToolkitConfig::sandbox_allow_protected`]. The agent-facing
//!   [`SandboxRequest`] has no such field and rejects unknown fields.
//! - **Untracked files** ([`list_untracked_files`]) come back as raw path
//!   bytes, one per file, as `git ls-files --others --exclude-standard -z`.
//! - **Completion evidence** ([`probe_completion_evidence`]): HEAD ahead of
//!   the base ref, or uncommitted changes. Any probe failure makes the whole
//!   result `checked = false`; only a probe that ran can report absence.
//! - **Backend seam** ([`SandboxBackend`]: `provision`, `capabilities`,
//!   `run_cell`), synchronous, with [`LocalWorktreeBackend`]. Exec cells get
//!   an environment built from nothing: `PATH`, `HOME`, `PYTHONPATH`,
//!   `VIRTUAL_ENV` from the host plus the cell's allow-list and explicit
//!   values. Prompt cells run host-side. Callers decide with [`admit_cell`],
//!   from capabilities only.
//! - **Read-before-edit** ([`ReadGuard`]): a read evicted from the agent's
//!   context no longer allows an edit.
//!
//! # Readings of open questions (fail-closed)
//!
//! - Detached HEAD at creation: refused, rather than recording no base.
//! - "Decisive" probe failure: any error of any probe. A failure does not
//!   erase what an earlier probe found, but `checked` is false and only
//!   [`CompletionEvidence::is_completed_empty`] (which needs `checked`) lets
//!   a caller stamp completed-empty.
//! - A cell's environment replaces the host's (`env_clear` first), it is
//!   never merged into it.
//! - Protected names compare ignoring ASCII case; an agent request with an
//!   unknown field (such as `allow_protected`) is rejected, not ignored.
//! - Synchronous seam: [`SandboxBackend`] methods block; async callers use
//!   `spawn_blocking`. The trait has no `name()`, so callers cannot branch
//!   on one.
//!
//! # Limits
//!
//! A worktree shares refs, config and objects with the main repository: an
//! agent running plain git in its sandbox can move any branch itself. The
//! merge guard governs merges made through this crate;
//! [`LocalWorktreeBackend`] reports `filesystem_isolated: false` and
//! `network_isolated: false` so callers that need isolation refuse it.
//!
//! # Example
//!
//! ```
//! use sandbox_git::{create_sandbox, list_sandboxes, merge_sandbox, CreateOptions, MergeOptions};
//!
//! // A repository on branch `work` with one commit.
//! let dir = tempfile::tempdir()?;
//! let repo = git2::Repository::init(dir.path())?;
//! repo.config()?.set_str("user.name", "Example")?;
//! repo.config()?.set_str("user.email", "example@example.invalid")?;
//! let sig = repo.signature()?;
//! let tree = repo.find_tree(repo.index()?.write_tree()?)?;
//! repo.commit(Some("refs/heads/work"), &sig, &sig, "init", &tree, &[])?;
//! repo.set_head("refs/heads/work")?;
//!
//! let mut session = create_sandbox(dir.path(), &CreateOptions::default())?;
//! assert_eq!(session.base_branch, "work");
//! std::fs::write(session.worktree_path.join("notes.txt"), "done\n")?;
//! assert_eq!(sandbox_git::list_untracked_files(&session.worktree_path)?, vec![b"notes.txt".to_vec()]);
//! let evidence = sandbox_git::probe_completion_evidence(&session.worktree_path, "work");
//! assert!(evidence.checked && evidence.has_evidence());
//! assert_eq!(list_sandboxes(dir.path())?.len(), 1);
//!
//! // The agent commits its work in the sandbox (merge takes commits only).
//! let wt = git2::Repository::open(&session.worktree_path)?;
//! let mut index = wt.index()?;
//! index.add_path(std::path::Path::new("notes.txt"))?;
//! index.write()?;
//! let tree = wt.find_tree(index.write_tree()?)?;
//! let parent = wt.head()?.peel_to_commit()?;
//! wt.commit(Some("HEAD"), &sig, &sig, "notes", &tree, &[&parent])?;
//!
//! let report = merge_sandbox(&mut session, &MergeOptions { allow_protected: false, cleanup: true })?;
//! assert!(report.cleanup.is_some());
//! assert!(!session.is_active());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! None. git2 is built without network transports, so nothing here can
//! reach a remote. Untracked listing walks the work tree with the `ignore`
//! crate (git's ignore rules only) because libgit2's status walk was several
//! times slower than `git ls-files`; tests cross-check it against the git CLI.
#![forbid(unsafe_code)]

mod admin;
mod backend;
mod error;
mod evidence;
mod guard;
mod local;
mod merge;
mod readme;
mod session;
mod toolkit;
mod untracked;

pub use backend::{
    Capabilities, Cell, CellOutput, CellPolicy, ExecCell, PromptCell, PromptProvider,
    ProvisionRequest, ProvisionedSandbox, SandboxBackend, SecretValue, admit_cell,
};
pub use error::Error;
pub use evidence::{CompletionEvidence, probe_completion_evidence};
pub use guard::ReadGuard;
pub use local::{HostEnv, LocalWorktreeBackend, LocalWorktreeConfig, SAFE_ENV_KEYS};
pub use merge::{
    MAX_LISTED_UNCOMMITTED, MergeOptions, MergeOutcome, MergeReport, is_protected_branch,
    merge_sandbox, merge_sandbox_by_id,
};
pub use session::{
    BRANCH_PREFIX, CleanupReport, CreateOptions, SandboxSession, StepOutcome, cleanup_sandbox,
    cleanup_sandbox_by_id, create_sandbox, find_sandbox, list_sandboxes,
};
pub use toolkit::{CodingToolkit, SandboxRequest, SandboxResponse, ToolkitConfig};
pub use untracked::list_untracked_files;
