//! Integration tests for tool-gate: gate passes, verdicts, policy, guards,
//! MCP config resolution, nudges and messenger events.

mod destructive;
mod gate;
mod mcp_config;
mod messenger;
mod nudge;
mod paths;
mod policy;
mod props;
mod shell_reading;
mod spellings;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tool_gate::{Control, GateResult, ToolCall};

/// A log sink shared with a tracing subscriber.
#[derive(Clone, Default)]
pub(crate) struct LogBuf(Arc<Mutex<Vec<u8>>>);

impl Write for LogBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `f` with every tracing event (all levels) captured as text.
pub(crate) fn capture_logs<T>(f: impl FnOnce() -> T) -> (T, String) {
    let buf = LogBuf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(buf.0.lock().expect("log lock").clone()).expect("utf8 logs");
    (out, text)
}

/// A control that counts its evaluations, records the arguments it saw and
/// answers with `answer`.
pub(crate) struct Recording {
    pub(crate) name: String,
    pub(crate) count: Arc<AtomicUsize>,
    pub(crate) seen: Arc<Mutex<Vec<Value>>>,
    pub(crate) answer: fn(&ToolCall) -> GateResult,
}

impl Recording {
    pub(crate) fn new(name: &str, answer: fn(&ToolCall) -> GateResult) -> Self {
        Self {
            name: name.to_owned(),
            count: Arc::default(),
            seen: Arc::default(),
            answer,
        }
    }

    pub(crate) fn counter(&self) -> Arc<AtomicUsize> {
        self.count.clone()
    }
}

impl Control for Recording {
    fn name(&self) -> &str {
        &self.name
    }

    fn evaluate(&self, call: &ToolCall) -> GateResult {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.seen
            .lock()
            .expect("seen lock")
            .push(call.arguments.clone());
        (self.answer)(call)
    }
}

pub(crate) fn count(c: &AtomicUsize) -> usize {
    c.load(Ordering::SeqCst)
}
