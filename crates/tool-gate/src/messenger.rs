//! Messenger events between workers and their coordinator: `help` is
//! fire-and-continue; the others report their callback's failure.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use serde_json::Value;

use crate::error::Error;

/// An event a worker emits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Event {
    /// The worker asks for help and carries on.
    Help,
    /// The worker reports progress.
    Progress,
    /// The worker is done.
    Done,
    /// Any other named event.
    Other(String),
}

impl Event {
    /// The event's name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Help => "help",
            Self::Progress => "progress",
            Self::Done => "done",
            Self::Other(name) => name,
        }
    }
}

/// What a callback receives.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who emitted it.
    pub sender: String,
    /// Its payload.
    pub payload: Value,
}

/// A callback's failure.
pub type CallbackError = Box<dyn std::error::Error + Send + Sync>;

type Callback = Arc<dyn Fn(&Event, &Message) -> Result<(), CallbackError> + Send + Sync>;

/// Routes worker events to the coordinator's callbacks (one per event).
///
/// For [`Event::Help`] a failing (or panicking) callback is caught and
/// logged at warn level and `fire` returns `Ok`: help is fire-and-continue
/// and must never fail the emitting worker's tool-call turn (GATE-024). For
/// every other event the failure is returned to the emitter as
/// [`Error::Callback`] (a panic included); the spec implies this without
/// stating it. An event with no callback is logged at debug level, not warn
/// (GATE-025): some events are legitimately unused.
#[derive(Clone, Default)]
pub struct Messenger {
    callbacks: HashMap<Event, Callback>,
}

impl std::fmt::Debug for Messenger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Messenger")
            .field("events", &self.callbacks.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Messenger {
    /// A messenger with no callbacks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers (or replaces) the callback for `event`.
    pub fn on(
        &mut self,
        event: Event,
        callback: impl Fn(&Event, &Message) -> Result<(), CallbackError> + Send + Sync + 'static,
    ) {
        self.callbacks.insert(event, Arc::new(callback));
    }

    /// Delivers `message` for `event`.
    pub fn fire(&self, event: &Event, message: &Message) -> Result<(), Error> {
        let Some(callback) = self.callbacks.get(event) else {
            tracing::debug!(event = event.as_str(), sender = %message.sender, "no callback registered for messenger event");
            return Ok(());
        };
        let outcome = match catch_unwind(AssertUnwindSafe(|| callback(event, message))) {
            Ok(outcome) => outcome,
            Err(_) => Err("callback panicked".into()),
        };
        match outcome {
            Ok(()) => Ok(()),
            Err(error) if *event == Event::Help => {
                tracing::warn!(
                    event = event.as_str(),
                    sender = %message.sender,
                    %error,
                    "help callback failed; the worker carries on"
                );
                Ok(())
            }
            Err(source) => Err(Error::Callback {
                event: event.as_str().to_owned(),
                source,
            }),
        }
    }
}
