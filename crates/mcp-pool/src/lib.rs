//! Pooled MCP client connections on the official Rust SDK (`rmcp`), with
//! the admission gate at registration and validated, gated tool calls.
//!
//! - **Config:** [`McpPool::load_config`] reads an `.mcp.json`
//!   (`{"mcpServers": {name: entry}}`) with the original's `load_config`
//!   semantics and returns the names declared in that file, while the pool
//!   keeps the servers of earlier loads.
//! - **Transport authorization:** [`SecurityConfig`] (the original's
//!   `MCPSecurityConfig`) decides which commands may be started and which
//!   URLs reached, before anything is spawned; it fails closed by default
//!   and is independent of admission both ways.
//! - **One connection per server**, opened on first use: a `url` server
//!   over streamable HTTP (see below); otherwise the server runs as
//!   a cli-supervisor leg (its own process group, stdout lines bounded by
//!   [`PoolConfig::max_message_bytes`], a bounded stderr tail, group
//!   teardown with SIGTERM, grace and SIGKILL, and a Drop backstop), with
//!   rmcp's client speaking MCP over its stdin and stdout. Like an agent
//!   leg it has SIGKILL as its parent-death signal and the orphan guard (a
//!   sentinel in its group that, should this process die however it dies,
//!   SIGTERMs the group, waits [`PoolConfig::shutdown_grace`] and SIGKILLs
//!   it), so no server, nor anything it started in its group, outlives
//!   the process that started it.
//! - **Bounded listing:** one `tools/list` follows at most
//!   [`PoolConfig::max_list_pages`] pages (100) holding at most
//!   [`PoolConfig::max_listed_tools`] tools (10,000) and
//!   [`PoolConfig::max_listed_bytes`] of descriptors as JSON (16 MiB), all
//!   within [`PoolConfig::request_timeout`]; past one of them the listing
//!   stops with [`Error::ListingTooLarge`], and a cursor an earlier page
//!   named is [`Error::Protocol`]. Nothing of such a listing is
//!   registered and the server is ended.
//! - **Admission at registration:** every tool of every `tools/list` page
//!   goes through `mcp_admission::validate_tool_admission`; a refused tool
//!   never enters the [`Registry`], is logged with its reason and, when a
//!   [`DenialSink`] is configured (the SQLite store implements it), recorded
//!   as an `admin_events` row. `notifications/tools/list_changed` re-lists
//!   and re-admits, in the background and before the next call.
//! - **Calls:** [`McpPool::call_tool`] refuses a tool that is unknown or was
//!   refused, validates the arguments against the tool's input schema with
//!   `jsonschema` (compiled at most once per tool; an error names the JSON
//!   pointer), runs the [`CallGate`] (a panic refuses; `tool_gate::Gate`
//!   implements it, so the GATE passes sit in front of every call), then
//!   sends `tools/call`.
//!
//! Every failure is a typed [`Error`] naming the server, and leaves no
//! process of the server's group behind: a handshake that does not finish
//! within [`PoolConfig::init_timeout`], a server that exits, a message over
//! the size limit, a JSON stdout line that is not JSON-RPC, too many lines
//! that are not JSON, a listing past its limits.
//!
//! ```no_run
//! use mcp_pool::{McpPool, PoolConfig, SecurityConfig};
//! use serde_json::json;
//!
//! # async fn demo() -> Result<(), mcp_pool::Error> {
//! let pool = McpPool::new(PoolConfig::with_security(SecurityConfig::trusted()));
//! let declared = pool.load_config(std::path::Path::new(".mcp.json"))?;
//! for server in &declared {
//!     let listing = pool.list_tools(server).await?;
//!     for denied in &listing.denied {
//!         eprintln!("{}: {}", denied.name, denied.reason);
//!     }
//! }
//! let answer = pool.call_tool("files", "read_file", json!({"path_id": "README"})).await?;
//! println!("{}", answer.result);
//! pool.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! # Readings of the original
//!
//! - The original keeps loaded configs in class-level state; here they live
//!   in the [`McpPool`] (a process normally holds one), which is what the
//!   return value of `load_config` is contrasted with.
//! - `filter_sensitive_env` drops *inherited* variables whose name contains
//!   a denylist pattern; variables the entry's own `env` declares are kept.
//! - A stdout line that does not parse as JSON at all (a banner such as
//!   `Commands MCP Server running on stdio`, printed before JSON-RPC by
//!   `@agent-infra/mcp-server-commands`) is skipped and logged by its line
//!   number and the parser's message (never its text), as the official
//!   TypeScript and Python SDKs skip it: never parsed as a message, never
//!   handed on. At most [`PoolConfig::max_skipped_lines`] (64) per
//!   connection, each bounded by [`PoolConfig::max_message_bytes`]; one
//!   more ends the connection ([`Error::Protocol`]). A line that *is* JSON
//!   but not a JSON-RPC message still ends the connection: that is a
//!   server speaking the protocol wrongly, not a banner.
//! - URL servers pass the same authorization (https or wss, host
//!   allowlist; plain http to a loopback host only when
//!   [`SecurityConfig::allow_loopback_http`] is set) and are then reached
//!   with rmcp's streamable HTTP client (https through rustls, see
//!   [TLS](#tls)). The `headers` of the entry are
//!   sent with every request (the transport's own headers cannot be
//!   overridden; an invalid name or value is [`Error::ServerConfigInvalid`],
//!   which never quotes the value). A server that cannot be reached is
//!   [`Error::Unreachable`]; one whose certificate is refused is
//!   [`Error::Tls`]; one that accepts but never answers is
//!   [`Error::Timeout`].
//!
//! # Reserved serde_json keys
//!
//! With serde_json's `raw_value` feature on (cargo unifies features, so one
//! crate turning it on turns it on for the whole binary), deserializing a
//! `serde_json::Value` reads an object whose first key is
//! `$serde_json::private::RawValue` as the JSON text inside that key's
//! string: `{"$serde_json::private::RawValue":"{\"enum\":[\"ls\"]}"}`
//! parses as `{"enum":["ls"]}` (`arbitrary_precision` does the same with
//! `$serde_json::private::Number`). A server could then show the admission
//! gate a bounded schema while the agent CLI it is forwarded to reads the
//! object as written, an open one.
//!
//! **The feature is off in the whole build**, so every transport, streamable
//! HTTP included (where rmcp's reqwest client parses each response body,
//! JSON or SSE, into a `Value` itself), reads such a key as an ordinary key
//! and the gate judges the object as written. transcript-mirror, which used
//! it for zero-copy capture, keeps value spans with a scanner of its own.
//! Guards: lionrt's `raw_value` test (the binary's own serde_json reads the
//! token's object as written; it fails if any crate turns the feature back
//! on), its end-to-end tests against a server that sends such a schema
//! over HTTP (`lionrt mcp audit|call`, JSON and SSE responses; `lionrt run`
//! forwarding to Codex over https: the server is not forwarded and the
//! refusal is an `admin_events` row), and `cargo xtask ci`, which names
//! the crate that enables it from `cargo tree`. This crate's
//! tests do the same through the pool (`tests/it/raw_value_http.rs`).
//!
//! As defence in depth, every message from a stdio server is still scanned
//! as raw text before rmcp parses it, and one holding an object key equal
//! (after JSON unescaping, so `\u0024serde_json::...` too) to one of
//! [`RESERVED_SERDE_JSON_KEYS`], anywhere, ends the connection with
//! [`Error::Protocol`] ("a reserved serde_json key was sent"); nothing of
//! that listing is registered. A key that merely contains the token, or a
//! string value equal to it, is ordinary. The scan is one pass of serde's
//! visitor API over `serde_json::Deserializer` that keeps nothing, bounded
//! by serde_json's recursion limit (deeper text fails closed). `.mcp.json`
//! text is scanned the same way: such a file is [`Error::ConfigInvalid`].
//! The stdio leg is always read as raw lines (`LineFormat::Raw`); a line
//! that arrived already parsed would be refused. Streamable HTTP responses
//! are not scanned (rmcp's client parses them before this crate sees
//! them); there the feature being off is the whole protection.
//!
//! # TLS
//!
//! `https` URLs are spoken through rustls, handed to reqwest (rmcp's HTTP
//! client) as a ready `ClientConfig`:
//!
//! - **Crypto provider:** `ring`, passed in the config (no process-wide
//!   provider is installed). rustls's default, aws-lc-rs, is a much larger
//!   C and assembly build; native-tls would tie the binary to the system's
//!   OpenSSL.
//! - **Roots:** the platform's, through rustls-platform-verifier (on Linux
//!   the system's CA bundle as rustls-native-certs finds it, or only the
//!   certificates in `SSL_CERT_FILE` / `SSL_CERT_DIR` when either is set),
//!   plus
//!   [`SecurityConfig::extra_tls_roots_pem`] for a private or test CA. An
//!   extra root that holds no certificate, or no root at all, refuses every
//!   https connection ([`TlsFailure::Setup`]) rather than being skipped.
//! - **Fail closed:** a certificate that does not chain to a trusted root,
//!   is for another host, or is out of date is [`Error::Tls`] with the
//!   matching [`TlsFailure`] (`untrusted-issuer`, `wrong-host`, `expired`;
//!   `handshake` for a server that does not speak TLS). There is no setting
//!   that skips verification, the client for an https URL sends nothing
//!   but https (`https_only`), and redirects are followed only for 307/308
//!   to the same scheme, host and port, so nothing is ever retried in the
//!   clear. Transport authorization is unchanged: https to any allowed
//!   host, plain http only to loopback with
//!   [`SecurityConfig::allow_loopback_http`]. The client for a plain http
//!   URL reads no roots (its TLS config trusts nothing), so a broken extra
//!   root or a machine without a CA bundle leaves loopback http working.
//! - **Connections:** like rmcp's default client, no idle connection is
//!   kept, so every request opens a connection and, for https, a TLS
//!   handshake (rustls resumes sessions, which shortens the repeat ones).
//! - `wss` stays unsupported ([`Error::TransportUnsupported`] before any
//!   connection): rmcp offers no WebSocket client transport.
//!
//! The tests serve the benign fixture over TLS on `127.0.0.1` with a CA and
//! leaf certificates made at test time, and check each refusal.
//!
//! # Performance
//!
//! `cargo bench -p mcp-pool` (bench `pool`) measures over one pooled stdio
//! connection to the fixture server, each timed run followed by an untimed
//! run of its partner so both see the same load:
//!
//! - `list_1000`: `tools/list` of 1,000 tools, bare (the floor) and with
//!   admission of every tool and the registry swap (`relist_tools`; verdicts
//!   on unchanged descriptors come from the previous listing's memo, read
//!   on the calling thread: only descriptors judged afresh, 64 or more of
//!   them, are spread over threads);
//! - `call`: a bare `tools/call` round trip (the floor) and the same call
//!   after argument validation and the tool-gate (destructive guard);
//! - `call_checks`: what the gated call adds, alone (validation and the
//!   gate check, no transport);
//! - `admit_1000_cold` / `_warm`: admission alone, without and with a
//!   previous registry.
//!
//! Each of the `list_1000` and `call` groups also prints a **paired**
//! ratio on stderr: both halves of every back-to-back pair are timed and
//! kept, so floor and measured path alternate run by run. Criterion runs a
//! group's two functions one after the other (10-15 s apart), and on this
//! shared 2-core machine the load drifts that much: over fifteen runs of
//! the same code the ratio of the two criterion estimates for `call` swung
//! from 0.67 to 1.25 (median about 0.96), while the paired ratio of the
//! last three stayed within 0.94-0.98.
//!
//! Measured with `cargo bench -p mcp-pool --bench pool` (release), load
//! average 4-6.5 from other builds:
//!
//! - **`tools/call` through validation and the gate, against a bare
//!   `tools/call`** (target 0.8): paired floor/gated 0.977 by mean
//!   (198.4 µs / 203.1 µs) and 0.960 by median (154.3 µs / 160.7 µs) over
//!   65,374 pairs; 0.971 / 0.956 over 53,357 pairs; 0.937 / 0.963 over
//!   39,061 pairs. `call_checks` takes 0.8-1.7 µs, under 1% of the
//!   150-300 µs round trip. The paired gap (about 6 µs by median) is
//!   larger than that; not broken down further, it is presumably the same
//!   work with cold caches after the round trip's context switches plus
//!   the gated path's bookkeeping (argument wrapping, the `catch_unwind`).
//! - **`tools/list` plus admission of 1,000 tools, against `tools/list`
//!   alone** (target 0.8): paired 0.886 by mean (19.6 ms / 22.1 ms) and
//!   0.868 by median over 820 pairs; 0.864 / 0.878 over 546 pairs.
//!   Admission of 1,000 small closed schemas alone takes 5.5-6.8 ms cold
//!   (two threads); a re-listing of unchanged descriptors reads the
//!   previous listing's verdicts on the calling thread.
//!
//! Both targets are met in every paired run. Earlier unpaired figures
//! (list 0.63-0.88, call 0.51-1.06, at similar load and partly on older
//! code) are consistent with the drift described above.
//!
//! # Features
//!
//! - `store` (default): [`DenialSink`] for `state_sqlite::Engine`, writing
//!   `admin_events` rows of kind [`TOOL_DENIED_KIND`].

#![forbid(unsafe_code)]

mod audit;
mod config;
mod connection;
mod error;
mod gate;
mod http;
mod pool;
mod registry;
mod reserved;
mod security;
mod transport;

pub use audit::{DenialRecord, DenialSink, POOL_ACTOR_ID, TOOL_DENIED_KIND, TOOL_ENTITY_TYPE};
pub use config::{ServerSpec, parse_config, read_config_file};
pub use error::{DenialReason, Error, ListingLimit, TlsFailure};
pub use gate::{CallGate, GateDecision, GateRequest};
pub use pool::{McpPool, PoolConfig, ToolListing, ToolResult, ToolSummary};
pub use registry::{AdmittedTool, DeniedTool, ListedTool, Registry};
pub use reserved::RESERVED_SERDE_JSON_KEYS;
pub use security::{DEFAULT_ENV_DENYLIST, SecurityConfig};
