//! Completion evidence: did a run leave commits or changes behind?

use std::path::Path;

use git2::{Repository, StatusOptions, StatusShow};
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The result of [`probe_completion_evidence`].
///
/// Only a probe that ran and succeeded reports a value; a probe that failed
/// or did not run is `None`, and any failure makes `checked` false for the
/// whole result. Use [`CompletionEvidence::is_completed_empty`] to decide
/// whether a run may be stamped completed-empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[must_use]
pub struct CompletionEvidence {
    /// True only when every probe ran and succeeded.
    pub checked: bool,
    /// Commits HEAD has that the base ref does not.
    pub commits_ahead: Option<usize>,
    /// Whether the work tree or index differs from HEAD, untracked
    /// (not-ignored) files included.
    pub uncommitted_changes: Option<bool>,
    /// The first probe failure, with its causes, when `checked` is false.
    pub failure: Option<String>,
}

impl CompletionEvidence {
    /// True when a successful probe found commits ahead or uncommitted
    /// changes.
    pub fn has_evidence(&self) -> bool {
        self.commits_ahead.is_some_and(|n| n > 0) || self.uncommitted_changes == Some(true)
    }

    /// True only when every probe ran, succeeded and found nothing: the one
    /// case in which a caller may stamp a run completed-empty. A failed probe
    /// is never read as "found nothing".
    pub fn is_completed_empty(&self) -> bool {
        self.checked && self.commits_ahead == Some(0) && self.uncommitted_changes == Some(false)
    }
}

/// Probes the work tree at `worktree` for evidence of delivered work: is HEAD
/// ahead of `base_ref` (any revision git understands, e.g. `main`,
/// `refs/heads/main` or a commit id), and does the tree carry uncommitted
/// changes?
///
/// Local only: it reads refs, objects and the index through libgit2, which
/// this crate builds without network transports; a remote-tracking base ref
/// is read as it is, never fetched. There is no subprocess and so no probe
/// timeout; a caller that needs one runs this on a blocking thread and treats
/// a timeout as unchecked.
///
/// Any failure (the repository cannot be opened, a corrupt or missing ref, an
/// unreadable index) stops the check with `checked = false`: the caller then
/// keeps trusting its completed status. Probes after the failing one do not
/// run, and a failure discards nothing a probe that already succeeded found
/// (its field keeps its value).
pub fn probe_completion_evidence(worktree: &Path, base_ref: &str) -> CompletionEvidence {
    let mut ev = CompletionEvidence {
        checked: false,
        commits_ahead: None,
        uncommitted_changes: None,
        failure: None,
    };
    let result = run_probes(worktree, base_ref, &mut ev);
    match result {
        Ok(()) => ev.checked = true,
        Err(err) => {
            tracing::warn!(worktree = %worktree.display(), error = %err, "completion evidence unchecked");
            ev.failure = Some(error_chain(&err));
        }
    }
    ev
}

fn run_probes(worktree: &Path, base_ref: &str, ev: &mut CompletionEvidence) -> Result<(), Error> {
    let fail = |probe: &'static str| {
        move |source: git2::Error| Error::ProbeFailed {
            probe,
            path: worktree.to_owned(),
            source,
        }
    };
    let repo = Repository::open(worktree).map_err(fail("open"))?;
    let head = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(fail("head"))?;
    let base = repo
        .revparse_single(base_ref)
        .and_then(|o| o.peel_to_commit())
        .map_err(fail("base ref"))?;
    let (ahead, _behind) = repo
        .graph_ahead_behind(head.id(), base.id())
        .map_err(fail("ahead"))?;
    ev.commits_ahead = Some(ahead);

    let mut opts = StatusOptions::new();
    opts.show(StatusShow::IndexAndWorkdir)
        .include_untracked(true)
        .recurse_untracked_dirs(false)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo.statuses(Some(&mut opts)).map_err(fail("status"))?;
    ev.uncommitted_changes = Some(!statuses.is_empty());
    Ok(())
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
