//! The pool: configs accumulated across loads, one connection per server,
//! listing with admission, and validated, gated calls.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cli_supervisor::Redactor;
use providers_core::McpServers;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::audit::DenialSink;
use crate::config::{ServerSpec, read_config_file};
use crate::connection::Connection;
use crate::error::Error;
use crate::gate::{CallGate, GateDecision, GateRequest};
use crate::registry::{DeniedTool, Registry};
use crate::security::SecurityConfig;

/// How the pool connects, what it waits for, and who else hears about
/// denials and calls.
#[derive(Clone)]
#[non_exhaustive]
pub struct PoolConfig {
    /// Transport authorization.
    pub security: SecurityConfig,
    /// Time allowed for the `initialize` handshake.
    pub init_timeout: Duration,
    /// Time allowed for one `tools/list` (all pages) or `tools/call`.
    pub request_timeout: Duration,
    /// The longest message accepted from a server, in bytes; a longer one
    /// closes the connection with [`Error::Protocol`] (over HTTP: the
    /// largest JSON response body or SSE event rmcp's client accepts).
    pub max_message_bytes: usize,
    /// The most `tools/list` pages one listing follows; a server still
    /// naming a next cursor past it is [`Error::ListingTooLarge`].
    pub max_list_pages: usize,
    /// The most tools one listing (all pages) may hold.
    pub max_listed_tools: usize,
    /// The most bytes the tool descriptors of one listing (all pages) may
    /// hold, measured as their JSON. Together with the message limit this
    /// bounds what a listing keeps in memory.
    pub max_listed_bytes: usize,
    /// How many stdout lines that are not JSON a stdio server may print
    /// over a connection (a banner before JSON-RPC, as the official SDKs
    /// allow): each is skipped and logged (its number and the parser's
    /// message, never its text), never parsed as a message. One more ends
    /// the connection with [`Error::Protocol`]. Each line is bounded by
    /// `max_message_bytes` like any other; a line that is JSON but not a
    /// JSON-RPC message is never skipped.
    pub max_skipped_lines: usize,
    /// How much of a server's stderr is kept for error reports.
    pub stderr_tail_bytes: usize,
    /// How long a server gets between SIGTERM and SIGKILL at teardown,
    /// and the orphan guard's grace when this process dies while a stdio
    /// server runs.
    pub shutdown_grace: Duration,
    /// Where denials are recorded besides the log.
    pub denial_sink: Option<Arc<dyn DenialSink>>,
    /// The hook run before every call.
    pub gate: Option<Arc<dyn CallGate>>,
    /// The admission rules a listing is judged by: lionagi 0.36.0's
    /// (`Original`, the default) or `Strict` (which also denies a tool that
    /// says it runs code and leaves the code free; `lionrt`'s default).
    pub admission_policy: mcp_admission::Policy,
    /// Values no server may hand back (e.g. the variables `secrets.lookup`
    /// names, which a server inherits): each server's leg redacts its
    /// stderr tail and its stdout against these, its entry's own `env`
    /// values and inherited variables whose names look secret.
    pub redact: Redactor,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            security: SecurityConfig::default(),
            init_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_message_bytes: 8 * 1024 * 1024,
            max_list_pages: 100,
            max_listed_tools: 10_000,
            max_listed_bytes: 16 * 1024 * 1024,
            max_skipped_lines: 64,
            stderr_tail_bytes: 16 * 1024,
            shutdown_grace: Duration::from_secs(2),
            denial_sink: None,
            gate: None,
            admission_policy: mcp_admission::Policy::Original,
            redact: Redactor::new(),
        }
    }
}

impl PoolConfig {
    /// The default config with this transport authorization.
    pub fn with_security(security: SecurityConfig) -> Self {
        Self {
            security,
            ..Self::default()
        }
    }
}

impl std::fmt::Debug for PoolConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolConfig")
            .field("security", &self.security)
            .field("init_timeout", &self.init_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("max_list_pages", &self.max_list_pages)
            .field("max_listed_tools", &self.max_listed_tools)
            .field("max_listed_bytes", &self.max_listed_bytes)
            .field("max_skipped_lines", &self.max_skipped_lines)
            .field("denial_sink", &self.denial_sink.is_some())
            .field("gate", &self.gate.is_some())
            .field("admission_policy", &self.admission_policy)
            .finish_non_exhaustive()
    }
}

/// An admitted tool, as listings show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSummary {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
}

/// What a server offers after admission.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolListing {
    /// The server.
    pub server: String,
    /// The tools registered, by name.
    pub admitted: Vec<ToolSummary>,
    /// The tools refused, in listing order.
    pub denied: Vec<DeniedTool>,
}

impl ToolListing {
    fn from_registry(server: &str, registry: &Registry) -> Self {
        Self {
            server: server.to_owned(),
            admitted: registry
                .admitted()
                .map(|t| ToolSummary {
                    name: t.name().to_owned(),
                    description: t.description().map(str::to_owned),
                })
                .collect(),
            denied: registry.denied().to_vec(),
        }
    }
}

/// A tool's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolResult {
    /// The server flagged the result as an error (a tool-level failure,
    /// not a protocol one).
    pub is_error: bool,
    /// The `tools/call` result as the server sent it.
    pub result: Value,
}

type Slot = Arc<tokio::sync::Mutex<Option<Arc<Connection>>>>;

/// MCP client connections, one per configured server, opened on first use.
///
/// Configs accumulate across [`McpPool::load_config`] calls (a later entry
/// of the same name replaces the earlier one for the next connection).
pub struct McpPool {
    config: Arc<PoolConfig>,
    servers: Mutex<McpServers>,
    slots: Mutex<BTreeMap<String, Slot>>,
}

impl std::fmt::Debug for McpPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpPool")
            .field("config", &self.config)
            .field("servers", &self.server_names())
            .finish_non_exhaustive()
    }
}

impl McpPool {
    /// An empty pool.
    pub fn new(config: PoolConfig) -> Self {
        Self {
            config: Arc::new(config),
            servers: Mutex::new(McpServers::default()),
            slots: Mutex::new(BTreeMap::new()),
        }
    }

    /// Loads an `.mcp.json` file (see [`read_config_file`]) into the pool
    /// and returns the names declared in *this* file, sorted. The pool
    /// keeps the servers of earlier loads; this return value, not
    /// [`McpPool::server_names`], is "the servers from the file just
    /// loaded".
    ///
    /// # Errors
    ///
    /// Those of [`read_config_file`]; the pool is unchanged then.
    pub fn load_config(&self, path: &Path) -> Result<Vec<String>, Error> {
        let loaded = read_config_file(path)?;
        let names: Vec<String> = loaded.keys().cloned().collect();
        let mut servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
        let mut merged = std::mem::take(&mut *servers).into_map();
        merged.extend(loaded.into_map());
        *servers = McpServers::from(merged);
        Ok(names)
    }

    /// Adds (or replaces) one server's config entry.
    pub fn add_server(&self, name: &str, entry: Value) {
        let mut servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
        let mut merged = std::mem::take(&mut *servers).into_map();
        merged.insert(name.to_owned(), entry);
        *servers = McpServers::from(merged);
    }

    /// Every server the pool holds a config for, sorted.
    pub fn server_names(&self) -> Vec<String> {
        self.servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    fn slot(&self, server: &str) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(slots.entry(server.to_owned()).or_default())
    }

    /// The pooled connection to `server`, opened (handshake and first
    /// listing with admission) if there is none.
    async fn connection(&self, server: &str) -> Result<Arc<Connection>, Error> {
        let slot = self.slot(server);
        let mut guard = slot.lock().await;
        if let Some(conn) = guard.as_ref()
            && conn.is_open()
        {
            return Ok(Arc::clone(conn));
        }
        if let Some(old) = guard.take() {
            old.close().await;
        }
        let entry = self
            .servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(server)
            .cloned()
            .ok_or_else(|| Error::UnknownServer {
                server: server.to_owned(),
            })?;
        let spec = ServerSpec::from_entry(server, &entry)?;
        self.config.security.authorize(server, &spec)?;
        let conn = Connection::open(server, &spec, Arc::clone(&self.config)).await?;
        if let Err(e) = conn.refresh().await {
            conn.close().await;
            return Err(e);
        }
        *guard = Some(Arc::clone(&conn));
        Ok(conn)
    }

    /// Drops a connection that failed, ending its server.
    async fn discard(&self, server: &str, error: &Error) {
        if !error.is_server_failure() {
            return;
        }
        let slot = self.slot(server);
        let taken = slot.lock().await.take();
        if let Some(conn) = taken {
            conn.close().await;
        }
    }

    /// Connects to `server` if needed and returns its admitted and denied
    /// tools (re-listing first when the server announced a change).
    ///
    /// # Errors
    ///
    /// Configuration, authorization, transport and protocol errors; the
    /// server's process is ended on any of them.
    pub async fn list_tools(&self, server: &str) -> Result<ToolListing, Error> {
        let result = async {
            let conn = self.connection(server).await?;
            let registry = conn.current_registry().await?;
            Ok(ToolListing::from_registry(server, &registry))
        }
        .await;
        if let Err(e) = &result {
            self.discard(server, e).await;
        }
        result
    }

    /// Lists `server`'s tools afresh (a new `tools/list` and admission
    /// pass), whatever the server announced.
    ///
    /// # Errors
    ///
    /// As [`McpPool::list_tools`].
    pub async fn relist_tools(&self, server: &str) -> Result<ToolListing, Error> {
        let result = async {
            let conn = self.connection(server).await?;
            let registry = conn.refresh().await?;
            Ok(ToolListing::from_registry(server, &registry))
        }
        .await;
        if let Err(e) = &result {
            self.discard(server, e).await;
        }
        result
    }

    /// Calls an admitted tool: re-lists first if the server announced a
    /// change, refuses a tool that is unknown or was refused at
    /// registration, validates `arguments` (an object, or `null` for none)
    /// against the tool's input schema, runs the gate (a rewrite is
    /// validated again), then sends `tools/call`.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownTool`], [`Error::ToolNotAdmitted`],
    /// [`Error::InvalidArguments`], [`Error::GateDenied`], or a transport
    /// error.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<ToolResult, Error> {
        let result = self.call_tool_inner(server, tool, arguments).await;
        if let Err(e) = &result {
            self.discard(server, e).await;
        }
        result
    }

    async fn call_tool_inner(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<ToolResult, Error> {
        let conn = self.connection(server).await?;
        let registry = conn.current_registry().await?;
        let Some(admitted) = registry.get(tool).cloned() else {
            return Err(match registry.denial(tool) {
                Some(denied) => Error::ToolNotAdmitted {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    reason: denied.reason.clone(),
                },
                None => Error::UnknownTool {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                },
            });
        };
        let mut arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            _ => {
                return Err(Error::InvalidArguments {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    path: String::new(),
                    detail: "the arguments must be a JSON object".into(),
                });
            }
        };
        admitted.validate(server, &arguments)?;
        if let Some(gate) = &self.config.gate
            && let Some(rewritten) = run_gate(gate.as_ref(), server, tool, &arguments)?
        {
            admitted.validate(server, &rewritten)?;
            arguments = rewritten;
        }
        conn.call(tool, arguments).await
    }

    /// The bench floor for listing: one `tools/list` (all pages) over the
    /// pooled connection, with no admission and no registry update; returns
    /// how many tools were listed. Not a way around admission: nothing it
    /// returns can be called.
    #[doc(hidden)]
    pub async fn bare_list_count(&self, server: &str) -> Result<usize, Error> {
        let conn = self.connection(server).await?;
        conn.bare_list_count().await
    }

    /// The bench floor for calls: `tools/call` on a tool the registry
    /// admitted, without argument validation or the gate.
    #[doc(hidden)]
    pub async fn bare_call(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolResult, Error> {
        let conn = self.connection(server).await?;
        if conn.current_registry().await?.get(tool).is_none() {
            return Err(Error::UnknownTool {
                server: server.to_owned(),
                tool: tool.to_owned(),
            });
        }
        conn.call(tool, arguments).await
    }

    /// The process id of `server`'s process, while it is connected over
    /// stdio.
    pub async fn server_pid(&self, server: &str) -> Option<i32> {
        let slot = self.slot(server);
        let guard = slot.lock().await;
        guard.as_ref().and_then(|c| c.pid())
    }

    /// Closes every connection and ends every server process.
    pub async fn shutdown(&self) {
        let slots: Vec<Slot> = self
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for slot in slots {
            let taken = slot.lock().await.take();
            if let Some(conn) = taken {
                conn.close().await;
            }
        }
    }
}

/// Runs the gate: `Ok(None)` allows as is, `Ok(Some(args))` allows with
/// rewritten arguments. A panic is a fail-closed refusal.
fn run_gate(
    gate: &dyn CallGate,
    server: &str,
    tool: &str,
    arguments: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, Error> {
    let request = GateRequest {
        server,
        tool,
        arguments,
    };
    let denied = |reason: String, errored: bool| Error::GateDenied {
        server: server.to_owned(),
        tool: tool.to_owned(),
        reason,
        errored,
    };
    let decision = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| gate.check(&request)));
    match decision {
        Ok(GateDecision::Allow) => Ok(None),
        Ok(GateDecision::Rewrite(args)) => Ok(Some(args)),
        Ok(GateDecision::Deny { reason }) => {
            tracing::debug!(server, tool, "mcp call denied by the gate");
            Err(denied(reason, false))
        }
        Ok(GateDecision::Unavailable { reason }) => {
            tracing::error!(server, tool, %reason, "mcp call gate could not answer; call refused");
            Err(denied(reason, true))
        }
        Err(_) => {
            tracing::error!(server, tool, "mcp call gate panicked; call refused");
            Err(denied("the gate failed unexpectedly".into(), true))
        }
    }
}
