//! Mirroring one transcript file: resume at the stored cursor, read line by
//! line, write in bounded batches, each committed with the cursor after it.

use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use std::path::Path;

use crate::mirror::DynStore;
use crate::store::{LineageOutcome, MirrorBatch, MirrorCursor, MirrorWrite};
use serde::{Deserialize, Serialize};

use crate::error::MirrorError;
use crate::mirror::MirrorConfig;
use crate::parse::{Batch, FileState, LineStats, Source, Verdict};
use crate::reader::{Line, LineReader};

/// What mirroring one file did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileReport {
    /// The file.
    pub path: String,
    /// The session it mirrors into.
    pub session_id: String,
    /// Line counts.
    pub stats: LineStats,
    /// Writes, summed over the batches.
    pub write: MirrorWrite,
    /// The lineage lookup made for this file, if any.
    pub lineage: Option<LineageOutcome>,
    /// Bytes after the last newline left for the next pass.
    pub tail_left: u64,
}

/// The session id a file mirrors into before its content says otherwise:
/// the file stem (Claude), or the uuid ending a rollout file name (Codex).
pub(crate) fn session_id_from_path(source: Source, path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match source {
        Source::Claude => stem,
        Source::Codex => {
            let tail = stem.len().checked_sub(36).and_then(|i| stem.get(i..));
            match tail {
                Some(t) if t.bytes().filter(|b| *b == b'-').count() == 4 => t.to_owned(),
                _ => stem,
            }
        }
    }
}

fn parse_line(
    st: &mut FileState,
    batch: &mut Batch,
    stats: &mut LineStats,
    bytes: &[u8],
    offset: u64,
) -> Result<Verdict, crate::json::LineError> {
    match st.source {
        Source::Claude => crate::claude::line(st, batch, stats, bytes, offset),
        Source::Codex => crate::codex::line(st, batch, stats, bytes, offset),
    }
}

/// One line, with a lossy UTF-8 retry: bytes that are not UTF-8 become
/// U+FFFD rather than costing the line.
fn handle(st: &mut FileState, batch: &mut Batch, stats: &mut LineStats, buf: &[u8], offset: u64) {
    let verdict = match parse_line(st, batch, stats, buf, offset) {
        Err(_) if std::str::from_utf8(buf).is_err() => {
            stats.non_utf8 += 1;
            let lossy = String::from_utf8_lossy(buf);
            parse_line(st, batch, stats, lossy.as_bytes(), offset)
        }
        other => other,
    };
    match verdict {
        Ok(Verdict::Mirrored | Verdict::Skipped) => {}
        Err(_) => {
            stats.unparseable += 1;
            tracing::warn!(path = %st.path, offset, "transcript line is not a known JSON event; skipped");
        }
    }
}

struct Run<'a> {
    store: &'a dyn DynStore,
    st: &'a mut FileState,
    batch: Batch,
    report: FileReport,
}

impl Run<'_> {
    fn flush(&mut self, consumed: u64) -> Result<(), MirrorError> {
        let cursor = MirrorCursor {
            path: self.st.path.clone(),
            source: self.st.source.as_str().to_owned(),
            session_id: self.st.session.session_id.clone(),
            byte_offset: i64::try_from(consumed).unwrap_or(i64::MAX),
            first_event_seen: self.st.first_event_seen,
            pending_parent_uuid: self.st.pending_parent.clone(),
        };
        if self.batch.messages.is_empty() {
            if consumed > self.st.offset || !self.batch.event_uuids.is_empty() {
                self.store
                    .advance_mirror_cursor(&cursor, &self.batch.event_uuids)?;
            }
        } else {
            let w = self.store.mirror_session(&MirrorBatch {
                session: &self.st.session,
                messages: &self.batch.messages,
                event_uuids: &self.batch.event_uuids,
                cursor: Some(&cursor),
            })?;
            let r = &mut self.report.write;
            r.progression_created |= w.progression_created;
            r.session_created |= w.session_created;
            r.branch_created |= w.branch_created;
            r.project_backfilled |= w.project_backfilled;
            r.messages_added += w.messages_added;
            r.messages_updated += w.messages_updated;
        }
        self.st.offset = consumed;
        self.batch.clear();
        Ok(())
    }
}

/// Tries the file's pending lineage link; forgets the pointer once it is
/// settled (linked, or inside the session itself).
pub(crate) fn settle_lineage(
    store: &dyn DynStore,
    st: &mut FileState,
) -> Result<Option<LineageOutcome>, MirrorError> {
    let Some(parent) = st.pending_parent.clone() else {
        return Ok(None);
    };
    let out = store.link_session_lineage(&st.session.session_id, &parent)?;
    if matches!(
        out,
        LineageOutcome::Linked { .. } | LineageOutcome::SameSession
    ) {
        store.clear_pending_lineage(&st.path)?;
        st.pending_parent = None;
    }
    Ok(Some(out))
}

/// Mirrors what `path` holds beyond `st.offset`.
pub(crate) fn mirror_file(
    store: &dyn DynStore,
    config: &MirrorConfig,
    st: &mut FileState,
    path: &Path,
    len: u64,
) -> Result<FileReport, MirrorError> {
    let report = FileReport {
        path: st.path.clone(),
        session_id: st.session.session_id.clone(),
        ..FileReport::default()
    };
    if len <= st.offset {
        return Ok(report);
    }
    let mut file = File::open(path).map_err(|e| MirrorError::io(path, e))?;
    file.seek(SeekFrom::Start(st.offset))
        .map_err(|e| MirrorError::io(path, e))?;
    let mut lines = LineReader::new(
        BufReader::with_capacity(256 * 1024, file),
        st.offset,
        config.max_line_bytes,
    );
    let mut run = Run {
        store,
        st,
        batch: Batch::default(),
        report,
    };
    let mut buf = Vec::new();
    let initial = run.st.offset;
    let mut consumed = initial;
    loop {
        let (line, bytes) = lines
            .next_line(&mut buf)
            .map_err(|e| MirrorError::io(path, e))?;
        match line {
            Line::Eof => break,
            Line::Complete { start, end } => {
                consumed = end;
                run.report.stats.lines += 1;
                if !bytes.iter().all(u8::is_ascii_whitespace) {
                    handle(run.st, &mut run.batch, &mut run.report.stats, bytes, start);
                }
            }
            Line::Oversized { start, end } => {
                consumed = end;
                run.report.stats.lines += 1;
                run.report.stats.oversized += 1;
                tracing::warn!(path = %run.st.path, offset = start, bytes = end - start, "transcript line over the length cap; skipped");
            }
            Line::Tail { start, end, fits } => {
                // A line still being written is left for the next pass,
                // unless it is already a whole JSON value (a writer that
                // ended without a newline).
                let whole = fits && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok();
                if whole {
                    consumed = end;
                    run.report.stats.lines += 1;
                    handle(run.st, &mut run.batch, &mut run.report.stats, bytes, start);
                } else {
                    run.report.tail_left = end - start;
                }
                break;
            }
        }
        run.batch.lines += 1;
        if run.batch.lines >= config.batch_lines || run.batch.bytes >= config.batch_bytes {
            run.report.stats.messages += run.batch.messages.len() as u64;
            run.flush(consumed)?;
        }
    }
    run.report.stats.messages += run.batch.messages.len() as u64;
    run.report.stats.bytes = consumed - initial;
    run.flush(consumed)?;
    let Run { st, mut report, .. } = run;
    report.session_id = st.session.session_id.clone();
    report.lineage = settle_lineage(store, st)?;
    Ok(report)
}
