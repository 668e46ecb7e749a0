//! The mirror: discovery, one pass over every transcript, reconcile.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::MirrorError;
use crate::file::{FileReport, mirror_file, session_id_from_path, settle_lineage};
use crate::parse::{FileState, LineStats, Source};
use crate::store::{
    LineageOutcome, MirrorBatch, MirrorCursor, MirrorStore, MirrorWrite, ReconcileAction,
};

/// Mirror settings. Libraries read no environment: the binary resolves the
/// default roots (`~/.claude/projects`, `~/.codex/sessions`).
#[derive(Debug, Clone)]
pub struct MirrorConfig {
    /// Claude Code projects directory; `None` skips Claude transcripts.
    pub claude_root: Option<PathBuf>,
    /// Codex sessions directory; `None` skips Codex sessions.
    pub codex_root: Option<PathBuf>,
    /// Only files modified within this window are read (`None`: all).
    pub since: Option<Duration>,
    /// Idle gap after the newest message past which a session is completed.
    pub live_window: Duration,
    /// Lines per write transaction (at most).
    pub batch_lines: usize,
    /// Message bytes per write transaction (about; one line may exceed it).
    pub batch_bytes: usize,
    /// Lines longer than this are skipped without being held in memory.
    pub max_line_bytes: usize,
}

impl Default for MirrorConfig {
    fn default() -> Self {
        MirrorConfig {
            claude_root: None,
            codex_root: None,
            since: None,
            live_window: Duration::from_secs(300),
            // Few commits (each rewrites the pages it dirtied into the WAL),
            // and a batch that stays under SQLite's default 2 MiB page cache
            // so it does not spill to the WAL mid-transaction.
            batch_lines: 2048,
            batch_bytes: 1536 * 1024,
            max_line_bytes: 32 * 1024 * 1024,
        }
    }
}

/// What one reconcile did, by session id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconcileReport {
    /// Sessions that went idle and were completed.
    pub completed: Vec<String>,
    /// Sessions whose transcript resumed, moved back to running (override).
    pub reactivated: Vec<String>,
    /// Idle sessions left on a terminal status other than completed.
    pub left_terminal: Vec<String>,
    /// Sessions another writer moved first.
    pub conflicts: Vec<String>,
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PassReport {
    /// Transcript files found (within `since`).
    pub files_seen: usize,
    /// Files that had new bytes.
    pub files: Vec<FileReport>,
    /// Line counts over every file.
    pub stats: LineStats,
    /// Messages inserted.
    pub messages_added: usize,
    /// Sessions created.
    pub sessions_created: usize,
    /// Sessions linked to their parent after every file was read (the
    /// parent was mirrored after the continuation).
    pub linked: Vec<String>,
    /// The reconcile after the files.
    pub reconcile: ReconcileReport,
    /// Files that failed (the pass went on without them), as `path: error`.
    pub errors: Vec<String>,
}

/// A transcript mirror over one store. It keeps each file's state between
/// passes (the cursor and the tool names seen), so a long-running mirror
/// reads only what was appended; a fresh one resumes from the stored
/// cursors.
pub struct Mirror {
    store: Box<dyn DynStore>,
    config: MirrorConfig,
    files: HashMap<PathBuf, FileState>,
}

impl std::fmt::Debug for Mirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mirror")
            .field("config", &self.config)
            .field("files", &self.files.len())
            .finish_non_exhaustive()
    }
}

/// [`MirrorStore`] with its error boxed, so [`Mirror`] holds any store.
pub(crate) trait DynStore: Send {
    fn mirror_session(&self, batch: &MirrorBatch<'_>) -> Result<MirrorWrite, MirrorError>;
    fn advance_mirror_cursor(
        &self,
        cursor: &MirrorCursor,
        event_uuids: &[String],
    ) -> Result<(), MirrorError>;
    fn mirror_cursor(&self, path: &str) -> Result<Option<MirrorCursor>, MirrorError>;
    fn rewind_mirror_cursor(&self, path: &str) -> Result<(), MirrorError>;
    fn clear_pending_lineage(&self, path: &str) -> Result<(), MirrorError>;
    fn link_session_lineage(
        &self,
        child: &str,
        parent_event_uuid: &str,
    ) -> Result<LineageOutcome, MirrorError>;
    fn mirror_sessions_to_reconcile(
        &self,
        now: i64,
        live_window: i64,
    ) -> Result<Vec<String>, MirrorError>;
    fn reconcile_mirror_session(
        &self,
        session_id: &str,
        now: i64,
        live_window: i64,
    ) -> Result<ReconcileAction, MirrorError>;
}

impl<S: MirrorStore + Send> DynStore for S {
    fn mirror_session(&self, batch: &MirrorBatch<'_>) -> Result<MirrorWrite, MirrorError> {
        MirrorStore::mirror_session(self, batch).map_err(MirrorError::store)
    }
    fn advance_mirror_cursor(
        &self,
        cursor: &MirrorCursor,
        event_uuids: &[String],
    ) -> Result<(), MirrorError> {
        MirrorStore::advance_mirror_cursor(self, cursor, event_uuids).map_err(MirrorError::store)
    }
    fn mirror_cursor(&self, path: &str) -> Result<Option<MirrorCursor>, MirrorError> {
        MirrorStore::mirror_cursor(self, path).map_err(MirrorError::store)
    }
    fn rewind_mirror_cursor(&self, path: &str) -> Result<(), MirrorError> {
        MirrorStore::rewind_mirror_cursor(self, path).map_err(MirrorError::store)
    }
    fn clear_pending_lineage(&self, path: &str) -> Result<(), MirrorError> {
        MirrorStore::clear_pending_lineage(self, path).map_err(MirrorError::store)
    }
    fn link_session_lineage(
        &self,
        child: &str,
        parent_event_uuid: &str,
    ) -> Result<LineageOutcome, MirrorError> {
        MirrorStore::link_session_lineage(self, child, parent_event_uuid)
            .map_err(MirrorError::store)
    }
    fn mirror_sessions_to_reconcile(
        &self,
        now: i64,
        live_window: i64,
    ) -> Result<Vec<String>, MirrorError> {
        MirrorStore::mirror_sessions_to_reconcile(self, now, live_window)
            .map_err(MirrorError::store)
    }
    fn reconcile_mirror_session(
        &self,
        session_id: &str,
        now: i64,
        live_window: i64,
    ) -> Result<ReconcileAction, MirrorError> {
        MirrorStore::reconcile_mirror_session(self, session_id, now, live_window)
            .map_err(MirrorError::store)
    }
}

fn micros(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

fn duration_micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// Parses a window such as `90s`, `15m`, `12h`, `7d` or `2w`.
pub fn parse_window(s: &str) -> Result<Duration, MirrorError> {
    let bad = || MirrorError::Duration(s.to_owned());
    let t = s.trim();
    let unit = t.chars().last().ok_or_else(bad)?;
    let scale = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        'w' => 604_800,
        _ => return Err(bad()),
    };
    let n: u64 = t[..t.len() - 1].parse().map_err(|_| bad())?;
    n.checked_mul(scale)
        .map(Duration::from_secs)
        .ok_or_else(bad)
}

/// Every transcript file of one source under `root`, oldest first (so a
/// session is mirrored before the continuations that point at it). A root
/// that does not exist holds none.
pub fn discover(
    source: Source,
    root: &Path,
) -> Result<Vec<(PathBuf, SystemTime, u64)>, MirrorError> {
    let mut out = Vec::new();
    match source {
        // <root>/<project>/<session>.jsonl, exactly two levels.
        Source::Claude => {
            for project in read_dir(root)? {
                if project.1.is_dir() {
                    for (path, ft) in read_subdir(&project.0) {
                        if ft.is_file() && path.extension().is_some_and(|e| e == "jsonl") {
                            push_file(&mut out, path);
                        }
                    }
                }
            }
        }
        // <root>/**/rollout-*.jsonl; symlinked directories are not followed.
        Source::Codex => {
            let mut stack = read_dir(root)?;
            stack.retain(|(_, ft)| ft.is_dir());
            let mut stack: Vec<PathBuf> = stack.into_iter().map(|(p, _)| p).collect();
            for (path, ft) in read_dir(root)? {
                if ft.is_file() && is_rollout(&path) {
                    push_file(&mut out, path);
                }
            }
            while let Some(dir) = stack.pop() {
                for (path, ft) in read_subdir(&dir) {
                    if ft.is_dir() {
                        stack.push(path);
                    } else if ft.is_file() && is_rollout(&path) {
                        push_file(&mut out, path);
                    }
                }
            }
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    Ok(out)
}

fn is_rollout(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
        && path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("rollout-"))
}

/// A directory below a root: one that cannot be read is skipped with a
/// warning (the rest of the tree is still mirrored).
fn read_subdir(dir: &Path) -> Vec<(PathBuf, std::fs::FileType)> {
    read_dir(dir).unwrap_or_else(|e| {
        tracing::warn!(dir = %dir.display(), error = %e, "transcript directory skipped");
        Vec::new()
    })
}

fn read_dir(dir: &Path) -> Result<Vec<(PathBuf, std::fs::FileType)>, MirrorError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(MirrorError::io(dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| MirrorError::io(dir, e))?;
        let ft = entry
            .file_type()
            .map_err(|e| MirrorError::io(entry.path(), e))?;
        out.push((entry.path(), ft));
    }
    Ok(out)
}

fn push_file(out: &mut Vec<(PathBuf, SystemTime, u64)>, path: PathBuf) {
    match std::fs::metadata(&path) {
        Ok(m) => out.push((path, m.modified().unwrap_or(UNIX_EPOCH), m.len())),
        // Removed between listing and stat: nothing to mirror.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(path = %path.display(), error = %e, "transcript skipped"),
    }
}

impl Mirror {
    /// A mirror writing into `store` (`state_sqlite::Store`,
    /// `state_postgres::PgStore`, or any other [`MirrorStore`]).
    pub fn new<S: MirrorStore + Send + 'static>(store: S, config: MirrorConfig) -> Self {
        Mirror {
            store: Box::new(store),
            config,
            files: HashMap::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &MirrorConfig {
        &self.config
    }

    /// One pass at `now`: every transcript under the configured roots
    /// (modified within `since`), then a reconcile. A file that fails is
    /// reported in [`PassReport::errors`] and the pass goes on.
    pub fn pass(&mut self, now: SystemTime) -> Result<PassReport, MirrorError> {
        let mut report = PassReport::default();
        let cutoff = self.config.since.and_then(|w| now.checked_sub(w));
        let roots = [
            (Source::Claude, self.config.claude_root.clone()),
            (Source::Codex, self.config.codex_root.clone()),
        ];
        let mut files = Vec::new();
        for (source, root) in roots {
            if let Some(root) = root {
                for (path, mtime, len) in discover(source, &root)? {
                    if cutoff.is_none_or(|c| mtime >= c) {
                        files.push((source, path, mtime, len));
                    }
                }
            }
        }
        files.sort_by(|a, b| a.2.cmp(&b.2).then_with(|| a.1.cmp(&b.1)));
        report.files_seen = files.len();
        for (source, path, mtime, len) in files {
            match self.file_with_len(source, &path, mtime, len) {
                Ok(r) => {
                    if r.stats.bytes > 0 || r.write != Default::default() {
                        report.stats.add(&r.stats);
                        report.messages_added += r.write.messages_added;
                        report.sessions_created += usize::from(r.write.session_created);
                        report.files.push(r);
                    }
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "transcript not mirrored");
                    report.errors.push(format!("{}: {e}", path.display()));
                }
            }
        }
        // A continuation read before its parent links now that the parent
        // may have been mirrored in this pass.
        for st in self.files.values_mut() {
            if st.pending_parent.is_some()
                && let Some(LineageOutcome::Linked { .. }) =
                    settle_lineage(self.store.as_ref(), st)?
            {
                report.linked.push(st.session.session_id.clone());
            }
        }
        report.reconcile = self.reconcile(micros(now))?;
        Ok(report)
    }

    /// Mirrors one file (whatever its name), resuming at its cursor.
    pub fn mirror_file(&mut self, source: Source, path: &Path) -> Result<FileReport, MirrorError> {
        let meta = std::fs::metadata(path).map_err(|e| MirrorError::io(path, e))?;
        self.file_with_len(
            source,
            path,
            meta.modified().unwrap_or(UNIX_EPOCH),
            meta.len(),
        )
    }

    fn file_with_len(
        &mut self,
        source: Source,
        path: &Path,
        mtime: SystemTime,
        len: u64,
    ) -> Result<FileReport, MirrorError> {
        let key = path.to_string_lossy().into_owned();
        if !self.files.contains_key(path) {
            let mut st = FileState::new(
                source,
                key.clone(),
                session_id_from_path(source, path),
                micros(mtime),
            );
            if let Some(c) = self.store.mirror_cursor(&key)? {
                st.set_session_id(c.session_id);
                st.id_open = false;
                st.offset = u64::try_from(c.byte_offset).unwrap_or(0);
                st.first_event_seen = c.first_event_seen;
                st.pending_parent = c.pending_parent_uuid;
            }
            self.files.insert(path.to_path_buf(), st);
        }
        let st = self
            .files
            .get_mut(path)
            .expect("the state was inserted above");
        st.fallback_ts = micros(mtime);
        if len < st.offset {
            // The file shrank: it was replaced. Read it again from the
            // start; deterministic ids keep that duplicate-free.
            tracing::info!(path = %key, "transcript shrank; reading it again");
            self.store.rewind_mirror_cursor(&key)?;
            st.offset = 0;
        }
        let result = mirror_file(self.store.as_ref(), &self.config, st, path, len);
        if result.is_err() {
            // Forget the in-memory state: the next pass resumes from the
            // stored cursor, which only moves with committed batches.
            self.files.remove(path);
        }
        result
    }

    /// Reconciles every mirrored session that may need it at `now`
    /// (microseconds since the epoch).
    pub fn reconcile(&self, now: i64) -> Result<ReconcileReport, MirrorError> {
        let window = duration_micros(self.config.live_window);
        let mut report = ReconcileReport::default();
        for id in self.store.mirror_sessions_to_reconcile(now, window)? {
            match self.store.reconcile_mirror_session(&id, now, window)? {
                ReconcileAction::Completed => report.completed.push(id),
                ReconcileAction::Reactivated { .. } => report.reactivated.push(id),
                ReconcileAction::LeftTerminal { .. } => report.left_terminal.push(id),
                ReconcileAction::Conflict => report.conflicts.push(id),
                _ => {}
            }
        }
        Ok(report)
    }
}
