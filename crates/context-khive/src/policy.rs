//! What the provider asks the daemon for, and on whose behalf.

use std::time::Duration;

use crate::error::Error;

/// The highest salience a writeback item is ever stored at: writeback
/// items are rule-derived, low-provenance memories and must not outrank
/// what a person or a reviewed process stored.
pub const WRITEBACK_SALIENCE_CAP: f64 = 0.3;

/// The longest content (in bytes) of one writeback item; longer text is
/// cut at a character boundary.
pub const WRITEBACK_MAX_CONTENT_BYTES: usize = 2048;

/// The provenance every writeback item carries.
pub const WRITEBACK_PROVENANCE: &str = "auto_writeback";

/// The provider's policy (the original's `KhiveInjectionPolicy`).
///
/// Built with [`KhiveInjectionPolicy::new`], which refuses an empty
/// profile id: every recall's `brain.auto_feedback` is attributed to this
/// profile, never to an implicit default.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct KhiveInjectionPolicy {
    /// The pool's name for the khive daemon's MCP server.
    pub server: String,
    /// The daemon's batch tool (`request`).
    pub tool: String,
    /// The profile every feedback event is attributed to.
    profile_id: String,
    /// When set, every write verb (`brain.auto_feedback`,
    /// `memory.remember`) carries it, isolating the writes to that store.
    /// Read verbs do not carry it (the daemon's read verbs refuse unknown
    /// parameters today).
    pub namespace: Option<String>,
    /// Whether a recall also asks the daemon to compose the memories into
    /// one text (`memory.compose`).
    pub compose: bool,
    /// How many memories a recall asks for.
    pub recall_limit: u32,
    /// Whether [`crate::KhiveProvider::writeback`] writes anything (opt-in).
    pub writeback: bool,
    /// The salience asked for writeback items; never above
    /// [`WRITEBACK_SALIENCE_CAP`].
    pub writeback_salience: f64,
    /// The longest a recall or a writeback may take, connection included;
    /// past it the request is abandoned and the turn goes on.
    pub timeout: Duration,
}

impl KhiveInjectionPolicy {
    /// A policy for the daemon reached as pool server `server`, attributing
    /// feedback to `profile_id`; no namespace, no compose, five memories,
    /// writeback off.
    ///
    /// # Errors
    ///
    /// [`Error::MissingProfile`] for an empty (or blank) profile id.
    pub fn new(server: impl Into<String>, profile_id: impl Into<String>) -> Result<Self, Error> {
        let profile_id = profile_id.into();
        if profile_id.trim().is_empty() {
            return Err(Error::MissingProfile);
        }
        Ok(Self {
            server: server.into(),
            tool: "request".to_owned(),
            profile_id,
            namespace: None,
            compose: false,
            recall_limit: 5,
            writeback: false,
            writeback_salience: WRITEBACK_SALIENCE_CAP,
            timeout: Duration::from_secs(5),
        })
    }

    /// The profile feedback is attributed to.
    pub fn profile_id(&self) -> &str {
        &self.profile_id
    }

    /// The salience writeback items are stored at: the one asked for,
    /// clamped into `0..=WRITEBACK_SALIENCE_CAP` (a value that is not a
    /// number counts as 0).
    pub fn effective_writeback_salience(&self) -> f64 {
        let s = self.writeback_salience;
        if s.is_nan() || s <= 0.0 {
            0.0
        } else {
            s.min(WRITEBACK_SALIENCE_CAP)
        }
    }

    /// The namespace write verbs carry. A blank namespace is refused
    /// rather than dropped: a caller who set one asked for isolation, and
    /// writing to the shared store instead would fail open.
    pub(crate) fn write_namespace(&self) -> Result<Option<&str>, Error> {
        match self.namespace.as_deref() {
            Some(n) if n.trim().is_empty() => Err(Error::InvalidPolicy {
                detail: "the namespace is blank".into(),
            }),
            other => Ok(other),
        }
    }
}
