//! Replayable request bodies: a fresh reader per attempt, or a refusal
//! before any I/O when a one-shot stream could be replayed.

use std::io::{Cursor, Read, Seek, SeekFrom};
use std::sync::Arc;

use crate::error::Error;

/// A readable and seekable body source.
pub trait ReadSeek: Read + Seek {}
impl<T: Read + Seek> ReadSeek for T {}

/// Where a request body comes from.
pub enum BodySource<'a> {
    /// Bytes, snapshotted once.
    Bytes(&'a [u8]),
    /// A seekable stream, read from its current position. It is `Send` so
    /// that a call holding the source (an upload waiting for its permit)
    /// can run on a multi-threaded runtime.
    Seekable(&'a mut (dyn ReadSeek + Send)),
    /// A stream that can be read once only.
    OneShot(Box<dyn Read + Send>),
}

impl std::fmt::Debug for BodySource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bytes(b) => write!(f, "Bytes(<{} byte(s)>)", b.len()),
            Self::Seekable(_) => f.write_str("Seekable"),
            Self::OneShot(_) => f.write_str("OneShot"),
        }
    }
}

/// Produces the body for each attempt.
pub struct BodyFactory {
    inner: Inner,
}

enum Inner {
    Snapshot(Arc<[u8]>),
    OneShot(Option<Box<dyn Read + Send>>),
}

impl std::fmt::Debug for BodyFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Inner::Snapshot(b) => write!(f, "BodyFactory::Snapshot(<{} byte(s)>)", b.len()),
            Inner::OneShot(r) => write!(f, "BodyFactory::OneShot(consumed: {})", r.is_none()),
        }
    }
}

/// Builds the per-attempt body factory.
///
/// Bytes are copied once, so later changes to the caller's buffer change no
/// upload. A seekable stream is read once from its current position into a
/// snapshot and seeked straight back, so a factory rebuilt later around the
/// same stream (an outer retry) still sees the whole content. A one-shot
/// stream is refused with [`Error::NotReplayable`] when
/// `require_replayable` (a retry could happen), before anything is read;
/// otherwise it is handed through once.
pub fn replayable_body(
    source: BodySource<'_>,
    require_replayable: bool,
) -> Result<BodyFactory, Error> {
    let inner = match source {
        BodySource::Bytes(b) => Inner::Snapshot(Arc::from(b)),
        BodySource::Seekable(s) => {
            let start = s.stream_position().map_err(|e| Error::BodyIo(e.kind()))?;
            let mut buf = Vec::new();
            let read = s.read_to_end(&mut buf).map_err(|e| Error::BodyIo(e.kind()));
            s.seek(SeekFrom::Start(start))
                .map_err(|e| Error::BodyIo(e.kind()))?;
            read?;
            Inner::Snapshot(Arc::from(buf))
        }
        BodySource::OneShot(r) => {
            if require_replayable {
                return Err(Error::NotReplayable);
            }
            Inner::OneShot(Some(r))
        }
    };
    Ok(BodyFactory { inner })
}

impl BodyFactory {
    /// A reader over the full body for the next attempt.
    pub fn next_body(&mut self) -> Result<Box<dyn Read + Send>, Error> {
        match &mut self.inner {
            Inner::Snapshot(b) => Ok(Box::new(Cursor::new(ArcBytes(Arc::clone(b))))),
            Inner::OneShot(r) => r.take().ok_or(Error::BodyConsumed),
        }
    }

    /// Whether every call to [`next_body`](Self::next_body) yields the full
    /// body.
    pub fn is_replayable(&self) -> bool {
        matches!(self.inner, Inner::Snapshot(_))
    }
}

struct ArcBytes(Arc<[u8]>);

impl AsRef<[u8]> for ArcBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}
