//! The provider: recall (optionally composed) with feedback attribution
//! before a turn, and the opt-in writeback after it.

use std::sync::Arc;

use mcp_pool::McpPool;
use serde_json::{Map, Value, json};

use crate::error::Error;
use crate::policy::{KhiveInjectionPolicy, WRITEBACK_PROVENANCE};
use crate::wire::{self, AUTO_FEEDBACK, COMPOSE, Memory, RECALL, REMEMBER};
use crate::writeback::{ToolEvent, WritebackOutcome, resolution_pairs};

/// The memory kind writeback items are stored as.
pub const WRITEBACK_KIND: &str = "tool_resolution";

/// What a recall brings into the turn.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct InjectedContext {
    /// The recalled memories, best first.
    pub memories: Vec<Memory>,
    /// The composed text, when the policy asked for compose.
    pub composed: Option<String>,
}

impl InjectedContext {
    /// Whether there is nothing to inject.
    pub fn is_empty(&self) -> bool {
        self.memories.is_empty() && self.composed.is_none()
    }

    /// The text to put in front of the turn: the composed text when there
    /// is one, else the memories one per line; empty when there is
    /// nothing.
    pub fn render(&self) -> String {
        if let Some(text) = &self.composed {
            return text.clone();
        }
        self.memories
            .iter()
            .map(|m| format!("- {}", m.content))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The khive context provider over an [`McpPool`]: the daemon is one more
/// MCP server of the pool (same transport, same transport authorization,
/// admission and call gate), connected on first use.
#[derive(Debug, Clone)]
pub struct KhiveProvider {
    pool: Arc<McpPool>,
    policy: KhiveInjectionPolicy,
}

impl KhiveProvider {
    /// A provider using `pool`'s server `policy.server`. Nothing is
    /// connected or spawned until the first recall or writeback.
    pub fn new(pool: Arc<McpPool>, policy: KhiveInjectionPolicy) -> Self {
        Self { pool, policy }
    }

    /// The policy.
    pub fn policy(&self) -> &KhiveInjectionPolicy {
        &self.policy
    }

    /// Context for a turn about `query`: [`KhiveProvider::try_provide`],
    /// with every failure logged and turned into an empty context, so the
    /// turn always proceeds.
    pub async fn provide(&self, query: &str) -> InjectedContext {
        match self.try_provide(query).await {
            Ok(context) => context,
            Err(error) => {
                tracing::warn!(
                    server = %self.policy.server,
                    error = %error,
                    "khive recall failed; the turn proceeds without injected context"
                );
                InjectedContext::default()
            }
        }
    }

    /// One round trip: `memory.recall`, `memory.compose` when the policy
    /// asks for it, and `brain.auto_feedback` attributed to the policy's
    /// profile (with its namespace, when set). Never `memory.remember`.
    /// A blank query recalls nothing and sends nothing.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPolicy`] for a blank namespace, and the transport
    /// and answer errors.
    pub async fn try_provide(&self, query: &str) -> Result<InjectedContext, Error> {
        let query = query.trim();
        if query.is_empty() {
            return Ok(InjectedContext::default());
        }
        let namespace = self.policy.write_namespace()?;
        let limit = self.policy.recall_limit;
        // Read verbs carry no namespace: the daemon refuses parameters its
        // read verbs do not know, and they have no namespace scoping yet.
        let mut read = Map::new();
        read.insert("query".into(), json!(query));
        read.insert("limit".into(), json!(limit));
        let mut ops = vec![wire::op(RECALL, read.clone())];
        if self.policy.compose {
            ops.push(wire::op(COMPOSE, read));
        }
        let mut feedback = Map::new();
        feedback.insert("profile_id".into(), json!(self.policy.profile_id()));
        feedback.insert("query".into(), json!(query));
        if let Some(ns) = namespace {
            feedback.insert("namespace".into(), json!(ns));
        }
        ops.push(wire::op(AUTO_FEEDBACK, feedback));
        let results = self.request(ops).await?;
        let memories = wire::memories(&results[0])?;
        let composed = if self.policy.compose {
            Some(wire::composed(&results[1])?)
        } else {
            None
        };
        tracing::debug!(
            server = %self.policy.server,
            memories = memories.len(),
            composed = composed.is_some(),
            "khive recall"
        );
        Ok(InjectedContext { memories, composed })
    }

    /// The post-turn hook the operate() middle calls after a turn (never
    /// called by [`KhiveProvider::provide`]):
    /// [`KhiveProvider::try_writeback`] with every failure logged and
    /// reported as [`WritebackOutcome::Failed`], so the turn completes
    /// normally.
    pub async fn writeback(&self, events: &[ToolEvent]) -> WritebackOutcome {
        match self.try_writeback(events).await {
            Ok(outcome) => outcome,
            Err(error) => {
                tracing::warn!(
                    server = %self.policy.server,
                    error = %error,
                    "khive writeback failed; the turn completes without it"
                );
                WritebackOutcome::Failed
            }
        }
    }

    /// Stores the turn's tool error/resolution pairs
    /// ([`crate::resolution_pairs`]) with `memory.remember`, in one round
    /// trip, at the policy's salience capped by
    /// [`crate::WRITEBACK_SALIENCE_CAP`], with provenance
    /// [`WRITEBACK_PROVENANCE`] and the policy's namespace when set. Only
    /// `memory.remember` is sent: writeback is not the nudge plane. Does
    /// nothing unless the policy opts in.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPolicy`] for a blank namespace, and the transport
    /// and answer errors.
    pub async fn try_writeback(&self, events: &[ToolEvent]) -> Result<WritebackOutcome, Error> {
        if !self.policy.writeback {
            return Ok(WritebackOutcome::Disabled);
        }
        let namespace = self.policy.write_namespace()?;
        let pairs = resolution_pairs(events);
        if pairs.is_empty() {
            return Ok(WritebackOutcome::NothingToWrite);
        }
        let salience = self.policy.effective_writeback_salience();
        let ops: Vec<Value> = pairs
            .into_iter()
            .map(|content| {
                let mut params = Map::new();
                params.insert("content".into(), json!(content));
                params.insert("kind".into(), json!(WRITEBACK_KIND));
                params.insert("salience".into(), json!(salience));
                params.insert("provenance".into(), json!(WRITEBACK_PROVENANCE));
                if let Some(ns) = namespace {
                    params.insert("namespace".into(), json!(ns));
                }
                wire::op(REMEMBER, params)
            })
            .collect();
        let items = ops.len();
        self.request(ops).await?;
        tracing::debug!(server = %self.policy.server, items, "khive writeback");
        Ok(WritebackOutcome::Written { items })
    }

    /// Sends one batch over the pool and returns one result per op.
    /// Abandoned (the call future dropped) past the policy's timeout.
    async fn request(&self, ops: Vec<Value>) -> Result<Vec<Value>, Error> {
        let n = ops.len();
        let call = self
            .pool
            .call_tool(&self.policy.server, &self.policy.tool, json!({"ops": ops}));
        let answer = tokio::time::timeout(self.policy.timeout, call)
            .await
            .map_err(|_| Error::TimedOut {
                server: self.policy.server.clone(),
                timeout: self.policy.timeout,
            })?
            .map_err(|source| Error::Transport {
                server: self.policy.server.clone(),
                source,
            })?;
        wire::results(&answer, n)
    }
}
