//! One server's connection: the rmcp client over a supervised process, its
//! registry, and the re-listing that `notifications/tools/list_changed`
//! triggers.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock, Weak};

use cli_supervisor::{ChildEnv, EnvPolicy, Leg, LegSpec, LineFormat, StdinPolicy, Watchdogs};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    PaginatedRequestParams, Tool,
};
use rmcp::service::{NotificationContext, Peer, RunningService, ServiceError};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Map, Value};
use tokio::sync::Notify;

use crate::audit::DenialRecord;
use crate::config::ServerSpec;
use crate::error::{Error, ListingLimit};
use crate::pool::{PoolConfig, ToolResult};
use crate::registry::{ListedTool, Registry};
use crate::transport::{Fault, FaultSlot, LegTransport};

/// The client side rmcp drives: it only listens for list changes.
pub(crate) struct Handler {
    stale: Arc<AtomicBool>,
    changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("lionrt-mcp-pool", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!("mcp server announced a tool list change");
        self.stale.store(true, Ordering::SeqCst);
        self.changed.notify_one();
    }
}

pub(crate) struct Connection {
    server: String,
    peer: Peer<RoleClient>,
    running: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    registry: RwLock<Arc<Registry>>,
    stale: Arc<AtomicBool>,
    refresh_lock: tokio::sync::Mutex<()>,
    fault: FaultSlot,
    pid: Option<i32>,
    /// Reached over streamable HTTP (no process of ours).
    over_http: bool,
    config: Arc<PoolConfig>,
}

impl Connection {
    /// Starts the server (or reaches it over HTTP) and completes the
    /// `initialize` handshake. The registry is empty until the first
    /// [`Connection::refresh`].
    pub(crate) async fn open(
        server: &str,
        spec: &ServerSpec,
        config: Arc<PoolConfig>,
    ) -> Result<Arc<Self>, Error> {
        let stale = Arc::new(AtomicBool::new(false));
        let changed = Arc::new(Notify::new());
        let handler = Handler {
            stale: Arc::clone(&stale),
            changed: Arc::clone(&changed),
        };
        let fault = FaultSlot::default();
        let (running, pid) = match spec {
            ServerSpec::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let stdio = StdioSpec {
                    command,
                    args,
                    env,
                    cwd: cwd.as_deref(),
                };
                open_stdio(server, &stdio, &config, handler, &fault).await?
            }
            ServerSpec::Url { url, headers } => {
                let running = crate::http::open(server, url, headers, &config, handler).await?;
                (running, None)
            }
        };
        tracing::info!(server, pid, "mcp server connected");
        let conn = Arc::new(Self {
            server: server.to_owned(),
            peer: running.peer().clone(),
            running: tokio::sync::Mutex::new(Some(running)),
            registry: RwLock::new(Arc::new(Registry::default())),
            stale,
            refresh_lock: tokio::sync::Mutex::new(()),
            fault,
            pid,
            over_http: matches!(spec, ServerSpec::Url { .. }),
            config,
        });
        tokio::spawn(relist_on_change(Arc::downgrade(&conn), changed));
        Ok(conn)
    }

    pub(crate) fn pid(&self) -> Option<i32> {
        self.pid
    }

    pub(crate) fn is_open(&self) -> bool {
        !self.peer.is_transport_closed()
            && self
                .fault
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_none()
    }

    /// The registry, re-listed first if the server announced a change.
    pub(crate) async fn current_registry(&self) -> Result<Arc<Registry>, Error> {
        if self.stale.load(Ordering::SeqCst) {
            return self.refresh().await;
        }
        Ok(self.snapshot())
    }

    fn snapshot(&self) -> Arc<Registry> {
        Arc::clone(&self.registry.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Lists every page of tools, runs admission over them and installs the
    /// new registry; records each denial with the sink.
    pub(crate) async fn refresh(&self) -> Result<Arc<Registry>, Error> {
        let _one_at_a_time = self.refresh_lock.lock().await;
        // Cleared before listing: a change announced while the list is in
        // flight sets it again, and the next use lists again.
        self.stale.store(false, Ordering::SeqCst);
        let listed = self.list_all().await?;
        let previous = self.snapshot();
        let registry = Arc::new(Registry::admit_under(
            self.config.admission_policy,
            &self.server,
            listed.into_iter().map(ListedTool::from).collect(),
            Some(&previous),
        ));
        self.record_denials(&registry).await;
        *self
            .registry
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::clone(&registry);
        Ok(registry)
    }

    pub(crate) async fn bare_list_count(&self) -> Result<usize, Error> {
        Ok(self.list_all().await?.len())
    }

    /// Every page of `tools/list`, within the request timeout and the
    /// listing limits (pages, tools, descriptor bytes); a cursor the server
    /// already named is a protocol error, not another round. Past a limit
    /// the connection is marked failed, so nothing uses it again.
    async fn list_all(&self) -> Result<Vec<Tool>, Error> {
        let listed =
            match tokio::time::timeout(self.config.request_timeout, self.list_pages()).await {
                Err(_) => Err(self.timeout("tools/list")),
                Ok(listed) => listed,
            };
        if let Err(error) = &listed
            && matches!(
                error,
                Error::ListingTooLarge { .. } | Error::Protocol { .. }
            )
        {
            self.fault
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert(Fault::Io(error.to_string()));
        }
        listed
    }

    async fn list_pages(&self) -> Result<Vec<Tool>, Error> {
        let config = &self.config;
        let too_large = |what: ListingLimit, limit: usize| Error::ListingTooLarge {
            server: self.server.clone(),
            what,
            limit,
        };
        let mut tools: Vec<Tool> = Vec::new();
        let mut bytes = 0_usize;
        let mut cursors = HashSet::new();
        let mut cursor = None;
        let mut page = 0_usize;
        loop {
            page += 1;
            if page > config.max_list_pages {
                return Err(too_large(ListingLimit::Pages, config.max_list_pages));
            }
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let result = self
                .peer
                .list_tools(Some(params))
                .await
                .map_err(|e| self.service_error("tools/list", e))?;
            if tools.len().saturating_add(result.tools.len()) > config.max_listed_tools {
                return Err(too_large(ListingLimit::Tools, config.max_listed_tools));
            }
            for tool in result.tools {
                bytes =
                    bytes.saturating_add(json_len(&tool).map_err(|detail| Error::Protocol {
                        server: self.server.clone(),
                        phase: "tools/list",
                        detail,
                    })?);
                if bytes > config.max_listed_bytes {
                    return Err(too_large(ListingLimit::Bytes, config.max_listed_bytes));
                }
                tools.push(tool);
            }
            let Some(next) = result.next_cursor else {
                return Ok(tools);
            };
            if !cursors.insert(next.clone()) {
                return Err(Error::Protocol {
                    server: self.server.clone(),
                    phase: "tools/list",
                    detail: format!(
                        "page {page} names a cursor an earlier page named (the listing would \
                         never end)"
                    ),
                });
            }
            cursor = Some(next);
        }
    }

    async fn record_denials(&self, registry: &Registry) {
        let Some(sink) = self.config.denial_sink.clone() else {
            return;
        };
        if registry.denied().is_empty() {
            return;
        }
        let server = self.server.clone();
        let denied = registry.denied().to_vec();
        let outcome = tokio::task::spawn_blocking(move || {
            for d in &denied {
                let record = DenialRecord {
                    server: &server,
                    tool: &d.name,
                    reason: &d.reason,
                    message: &d.message,
                };
                if let Err(error) = sink.record(&record) {
                    tracing::error!(server = %server, tool = %d.name, %error, "recording an mcp tool denial failed");
                }
            }
        })
        .await;
        if outcome.is_err() {
            tracing::error!(server = %self.server, "the denial sink panicked");
        }
    }

    /// Sends `tools/call` (admission, validation and the gate are the
    /// pool's job, done before this).
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolResult, Error> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let result =
            match tokio::time::timeout(self.config.request_timeout, self.peer.call_tool(params))
                .await
            {
                Err(_) => return Err(self.timeout("tools/call")),
                Ok(Err(e)) => return Err(self.service_error("tools/call", e)),
                Ok(Ok(result)) => result,
            };
        let is_error = result.is_error.unwrap_or(false);
        let result = serde_json::to_value(&result).map_err(|e| Error::Rpc {
            server: self.server.clone(),
            phase: "tools/call",
            detail: e.to_string(),
        })?;
        Ok(ToolResult { is_error, result })
    }

    fn timeout(&self, phase: &'static str) -> Error {
        // A server that does not answer in time is not trusted to answer
        // later: the caller discards the connection.
        self.fault
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(Fault::Io(format!("{phase} timed out")));
        Error::Timeout {
            server: self.server.clone(),
            phase,
            timeout: self.config.request_timeout,
        }
    }

    fn service_error(&self, phase: &'static str, error: ServiceError) -> Error {
        if let ServiceError::McpError(data) = &error {
            return Error::Rpc {
                server: self.server.clone(),
                phase,
                detail: data.message.to_string(),
            };
        }
        if self.over_http
            && matches!(
                error,
                ServiceError::TransportSend(_) | ServiceError::TransportClosed
            )
        {
            // The HTTP session is gone with it: the caller discards the
            // connection and the next use connects afresh.
            self.fault
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert(Fault::Io(format!("{phase}: the http transport failed")));
            return crate::http::transport_error(&self.server, phase, &error);
        }
        match take_fault_clone(&self.fault) {
            Some(fault) => fault_error(&self.server, phase, fault),
            None => Error::Rpc {
                server: self.server.clone(),
                phase,
                detail: error.to_string(),
            },
        }
    }

    /// Ends the session and the server's process group.
    pub(crate) async fn close(&self) {
        let running = self.running.lock().await.take();
        if let Some(mut running) = running {
            let timeout = self.config.shutdown_grace + std::time::Duration::from_secs(10);
            match running.close_with_timeout(timeout).await {
                Ok(Some(_)) => {}
                Ok(None) => {
                    tracing::warn!(server = %self.server, "mcp session did not close in time")
                }
                Err(e) => {
                    tracing::warn!(server = %self.server, error = %e, "mcp session task failed")
                }
            }
        }
    }
}

/// The length of `tool` written as JSON, counted without keeping it.
fn json_len(tool: &Tool) -> Result<usize, String> {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, tool).map_err(|e| format!("a listed tool: {e}"))?;
    Ok(count.0)
}

/// A stdio entry's fields, borrowed.
struct StdioSpec<'a> {
    command: &'a str,
    args: &'a [String],
    env: &'a std::collections::BTreeMap<String, String>,
    cwd: Option<&'a std::path::Path>,
}

/// Starts a stdio server as a supervised leg and runs the handshake over
/// its stdin and stdout.
async fn open_stdio(
    server: &str,
    spec: &StdioSpec<'_>,
    config: &PoolConfig,
    handler: Handler,
    fault: &FaultSlot,
) -> Result<(RunningService<RoleClient, Handler>, Option<i32>), Error> {
    let pairs = config.security.child_env(std::env::vars_os(), spec.env);
    let child_env = ChildEnv::try_from_pairs(pairs).map_err(|e| Error::ServerConfigInvalid {
        server: server.to_owned(),
        detail: format!("env: {e}"),
    })?;
    let mut leg_spec =
        LegSpec::new(std::iter::once(spec.command).chain(spec.args.iter().map(String::as_str)));
    leg_spec.cwd = spec.cwd.map(std::path::Path::to_path_buf);
    leg_spec.stdin = StdinPolicy::Piped;
    leg_spec.env = EnvPolicy::Explicit(child_env);
    leg_spec.streams_first_output_early = false;
    leg_spec.explicit_watchdogs = Watchdogs::NONE;
    leg_spec.max_line_len = config.max_message_bytes;
    leg_spec.line_format = LineFormat::Raw;
    leg_spec.grace = config.shutdown_grace;
    leg_spec.stderr_tail_len = config.stderr_tail_bytes;
    // Like an agent leg: should this process die (however it dies), the
    // sentinel ends the server's whole group, descendants included; the
    // leader also has SIGKILL as its parent-death signal.
    leg_spec.orphan_guard = Some(config.shutdown_grace);
    // Every value the entry configures for the server's environment is
    // the entry's to keep: a server that prints its environment (on stderr
    // as it dies, or on stdout) hands none of them back. The leg adds
    // inherited variables whose names look secret.
    let mut redact = config.redact.clone();
    redact.extend(spec.env.values());
    leg_spec.redact = redact;
    let leg = Leg::spawn(leg_spec).await.map_err(|source| Error::Spawn {
        server: server.to_owned(),
        source,
    })?;
    let pid = Some(leg.record().pid);
    let transport = LegTransport::new(leg, Arc::clone(fault), config, server);
    // On timeout the handshake future is dropped with the transport in
    // it, and the leg's Drop backstop kills the server's whole group.
    match tokio::time::timeout(config.init_timeout, rmcp::serve_client(handler, transport)).await {
        Err(_) => Err(Error::Timeout {
            server: server.to_owned(),
            phase: "initialize",
            timeout: config.init_timeout,
        }),
        Ok(Err(e)) => Err(match take_fault(fault) {
            Some(fault) => fault_error(server, "initialize", fault),
            None => Error::Rpc {
                server: server.to_owned(),
                phase: "initialize",
                detail: e.to_string(),
            },
        }),
        Ok(Ok(running)) => Ok((running, pid)),
    }
}

/// Re-lists and re-admits whenever the server announces a change, for as
/// long as the connection exists.
async fn relist_on_change(conn: Weak<Connection>, changed: Arc<Notify>) {
    loop {
        changed.notified().await;
        let Some(conn) = conn.upgrade() else {
            return;
        };
        if !conn.is_open() {
            return;
        }
        if conn.stale.load(Ordering::SeqCst)
            && let Err(error) = conn.refresh().await
        {
            tracing::warn!(server = %conn.server, %error, "re-listing after a list change failed");
        }
    }
}

fn take_fault(slot: &FaultSlot) -> Option<Fault> {
    slot.lock().unwrap_or_else(PoisonError::into_inner).take()
}

fn take_fault_clone(slot: &FaultSlot) -> Option<Fault> {
    slot.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

fn fault_error(server: &str, phase: &'static str, fault: Fault) -> Error {
    let protocol = |detail: String| Error::Protocol {
        server: server.to_owned(),
        phase,
        detail,
    };
    match fault {
        Fault::TooLarge { len, limit } => protocol(format!(
            "a message of {len} bytes exceeds the {limit}-byte limit"
        )),
        Fault::TooManyNotJson { line, error, limit } => protocol(format!(
            "stdout line {line} is not JSON ({error}), and the server already printed {limit} \
             such lines (a few are skipped, as before JSON-RPC starts; no more)"
        )),
        Fault::NotJsonRpc { line, error } => protocol(format!(
            "stdout line {line} is not a JSON-RPC message ({error})"
        )),
        Fault::ReservedKey { line, key } => protocol(format!(
            "stdout line {line}: {}",
            crate::reserved::describe(key)
        )),
        Fault::Io(detail) => protocol(detail),
        Fault::Closed { stderr_tail } => Error::Disconnected {
            server: server.to_owned(),
            phase,
            stderr_tail,
        },
    }
}
