//! The stdio transport: rmcp's client speaking to a server process run as
//! a cli-supervisor leg (its own process group, bounded stdout lines,
//! bounded stderr tail, group teardown with a Drop backstop).
//!
//! rmcp ships a child-process transport, but it kills only the direct
//! child and leaves stderr unbounded; running the server as a leg gives the
//! supervisor's guarantees instead. This file only frames: each stdout line
//! becomes one rmcp message (serde through rmcp's own types), each
//! outgoing message one line on stdin.
//!
//! A stdout line that does not parse as JSON at all (a banner such as
//! `Commands MCP Server running on stdio`, which the official TypeScript
//! and Python SDKs skip) is skipped and logged by number, never parsed as
//! a message nor handed on, up to `PoolConfig::max_skipped_lines` per
//! connection; one more ends the connection. A line that is JSON keeps the
//! strict path (the reserved-key scan, then JSON-RPC or the end of the
//! connection), and every line stays bounded by the message limit.

use std::sync::{Arc, Mutex};

use cli_supervisor::{Event, Leg};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;

use crate::pool::PoolConfig;
use crate::reserved::{self, Finding};

/// Why the transport stopped, as the pool reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fault {
    /// A line longer than the message limit.
    TooLarge { len: u64, limit: usize },
    /// A line that is not JSON, past the number of such lines skipped.
    TooManyNotJson {
        line: u64,
        error: String,
        limit: usize,
    },
    /// JSON that is not a JSON-RPC message rmcp understands.
    NotJsonRpc { line: u64, error: String },
    /// A message holding a reserved serde_json key (see `reserved`).
    ReservedKey { line: u64, key: &'static str },
    /// Stdout ended: the server exited or closed it.
    Closed { stderr_tail: String },
    /// Reading stdout failed.
    Io(String),
}

/// The shared slot a transport leaves its [`Fault`] in.
pub(crate) type FaultSlot = Arc<Mutex<Option<Fault>>>;

pub(crate) struct LegTransport {
    leg: Option<Leg>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    fault: FaultSlot,
    limit: usize,
    server: String,
    /// How many lines that are not JSON may be skipped.
    max_skipped: usize,
    /// How many have been.
    skipped: usize,
}

impl LegTransport {
    pub(crate) fn new(mut leg: Leg, fault: FaultSlot, config: &PoolConfig, server: &str) -> Self {
        let stdin = leg.take_stdin();
        Self {
            leg: Some(leg),
            stdin: Arc::new(tokio::sync::Mutex::new(stdin)),
            fault,
            limit: config.max_message_bytes,
            server: server.to_owned(),
            max_skipped: config.max_skipped_lines,
            skipped: 0,
        }
    }

    fn stop(&mut self, fault: Fault) -> Option<RxJsonRpcMessage<RoleClient>> {
        tracing::warn!(?fault, "mcp transport stopped");
        let mut slot = self
            .fault
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.get_or_insert(fault);
        None
    }

    /// One stdout event (never a line that is not JSON: `receive` skips
    /// those) as a message, or the fault that ends the connection.
    async fn frame(
        &mut self,
        event: cli_supervisor::Result<Option<Event>>,
    ) -> Option<RxJsonRpcMessage<RoleClient>> {
        match event {
            Ok(Some(Event::RawJson { line, json })) => {
                // Scanned as written before anything builds a Value from
                // it (see `reserved`).
                match reserved::scan(&json) {
                    Ok(()) => {}
                    Err(Finding::Reserved(key)) => {
                        return self.stop(Fault::ReservedKey { line, key });
                    }
                    Err(Finding::Invalid(error)) => {
                        return self.stop(Fault::NotJsonRpc { line, error });
                    }
                }
                match serde_json::from_str(&json) {
                    Ok(message) => Some(message),
                    Err(e) => self.stop(Fault::NotJsonRpc {
                        line,
                        error: e.to_string(),
                    }),
                }
            }
            // The leg is spawned with `LineFormat::Raw`, so a parsed value
            // never arrives; if one did, its keys were already read through
            // serde_json's Value parse and cannot be checked as written.
            Ok(Some(Event::Json { line, .. })) => self.stop(Fault::NotJsonRpc {
                line,
                error:
                    "the line arrived parsed, not as text, and cannot be checked for reserved keys"
                        .into(),
            }),
            Ok(Some(Event::LineTooLong { len, .. })) => {
                let limit = self.limit;
                self.stop(Fault::TooLarge { len, limit })
            }
            Ok(Some(_)) => self.stop(Fault::Io("unexpected stdout event".into())),
            Ok(None) => {
                // Give the stderr reader a moment: a crashing server's last
                // words arrive on a separate pipe.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                let stderr_tail = self.leg.as_ref().map(tail_text).unwrap_or_default();
                self.stop(Fault::Closed { stderr_tail })
            }
            Err(e) => self.stop(Fault::Io(e.to_string())),
        }
    }
}

fn tail_text(leg: &Leg) -> String {
    let tail = leg.stderr_tail();
    let text = String::from_utf8_lossy(&tail);
    // The last few lines are enough to say why a server died.
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

impl rmcp::transport::Transport<RoleClient> for LegTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = Arc::clone(&self.stdin);
        let line = serde_json::to_vec(&item);
        async move {
            let mut line = line.map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut guard = stdin.lock().await;
            let Some(writer) = guard.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the server's stdin is closed",
                ));
            };
            writer.write_all(&line).await?;
            writer.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let leg = self.leg.as_mut()?;
            let event = leg.next_event().await;
            if let Ok(Some(Event::InvalidJson { line, error })) = &event {
                if self.skipped >= self.max_skipped {
                    let (line, error, limit) = (*line, error.clone(), self.max_skipped);
                    return self.stop(Fault::TooManyNotJson { line, error, limit });
                }
                self.skipped += 1;
                // Its number and the parser's message only: the text is
                // the server's, and may hold anything.
                tracing::warn!(
                    server = %self.server,
                    line,
                    %error,
                    skipped = self.skipped,
                    limit = self.max_skipped,
                    "mcp server printed a stdout line that is not JSON; skipped"
                );
                continue;
            }
            return self.frame(event).await;
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // MCP's stdio shutdown: close the server's stdin first, then end
        // the group (SIGTERM, grace, SIGKILL; nothing of it survives).
        self.stdin.lock().await.take();
        if let Some(leg) = self.leg.take() {
            match leg.end().await {
                Ok(exit) => {
                    if !exit.teardown.survivors.is_empty() {
                        tracing::error!(survivors = ?exit.teardown.survivors, "mcp server group survived teardown");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "ending the mcp server failed"),
            }
        }
        Ok(())
    }
}
