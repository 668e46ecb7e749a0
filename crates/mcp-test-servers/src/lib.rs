//! Fixture MCP servers for the workspace's tests and benches, built on
//! rmcp's server side and speaking MCP over stdio (or, for the benign
//! server, streamable HTTP on loopback).
//!
//! Three binaries, each taking a mode as its first argument (any further
//! arguments are ignored, so a test can add a unique tag and find every
//! process it started in `/proc`):
//!
//! - `mcp-benign-server benign|executor|many N|list-changes`: a server whose
//!   tools are narrow (`echo`, `add`, `search_code`); one that also offers
//!   executor-shaped tools (`bash`, `run_script`); `N` generated narrow
//!   tools (benches); and one whose `lookup` tool turns executor-shaped
//!   right after the first `tools/list`, announced with
//!   `notifications/tools/list_changed`. With `--http` among its arguments
//!   it serves streamable HTTP instead of stdio: it listens on
//!   `127.0.0.1` at an ephemeral port, prints the endpoint's URL
//!   (`http://127.0.0.1:PORT/mcp`) as its first stdout line, and exits when
//!   its stdin closes. With `--tls-cert CERT.pem --tls-key KEY.pem` as well
//!   it serves that over TLS (rustls, ring) and prints an `https://` URL.
//! - `mcp-hostile-server hang-init|crash-mid-list|huge-list|invalid-jsonrpc|not-json`:
//!   never answers `initialize` (and ignores SIGTERM, with a grandchild in
//!   its process group); aborts while serving the second page of
//!   `tools/list`; answers `tools/list` with more than 10 MB; writes a JSON
//!   line that is not JSON-RPC, or 10,000 lines that are not JSON, instead
//!   of the `tools/list` answer.
//! - `mcp-hostile-server endless-cursor|endless-tools|endless-bytes|same-cursor`:
//!   answers every `tools/list` page with a `nextCursor`, so the listing
//!   never ends: one tool a page and a cursor never sent before; 1,000
//!   small tools a page; four tools with 256 KiB descriptions a page (about
//!   1 MiB, under the message limit); or the same cursor every time.
//! - `mcp-hostile-server banner`: prints `Commands MCP Server running on
//!   stdio` on stdout before speaking JSON-RPC (as
//!   `@agent-infra/mcp-server-commands` 1.2.18 does), then serves the benign
//!   and the executor-shaped tools.
//! - `mcp-hostile-server hang-call`: serves the benign tools and never
//!   answers `tools/call`; it first writes the tool's name to the file named
//!   by `MCP_HOSTILE_MARK`, when set, so a test knows the call arrived.
//! - `mcp-hostile-server env-dump-crash`: reads the first request, then
//!   prints its whole environment to stderr (`NAME=VALUE` lines, a JSON
//!   object, a Debug map) and exits 1 without answering.
//! - `mcp-hostile-server raw-value-quirk|raw-value-quirk-escaped|raw-value-lookalike`:
//!   answers `tools/list` with an executor-shaped tool (`exec`, a `command`
//!   property) whose property schema is an object keyed by serde_json's
//!   private `$serde_json::private::RawValue` token (as written, or with
//!   its `$` escaped as `\u0024`) wrapping a bounded schema; or, for
//!   `raw-value-lookalike`, a harmless tool whose keys only contain or
//!   resemble the token. With `--http` it serves the same listing over
//!   streamable HTTP instead (HTTP/1.1 written by hand, since rmcp's server
//!   would re-serialise the parsed listing): it prints
//!   `http://127.0.0.1:PORT/mcp` as its first stdout line, answers the
//!   `tools/list` POST with that JSON as the body, or with `--sse` as one
//!   server-sent event, answers `tools/call` with a success (so a call that
//!   got through shows), and exits when its stdin closes. With
//!   `--tls-self-signed DIR` as well it serves that over TLS: it makes a CA
//!   and a leaf for `127.0.0.1` (rcgen), writes the CA certificate to
//!   `DIR/ca.pem` (the leaf to `DIR/cert.pem` and `DIR/key.pem`) and prints
//!   an `https://` URL.
//! - `mcp-khive-server ok|fail|crash|slow LOG`: a fake khive daemon (one batch
//!   tool, `request`, over the memory and brain verbs) that appends every
//!   call it receives to the file `LOG`; `fail` answers each call with a
//!   tool error, `crash` exits instead of answering and `slow` answers
//!   after 5 s.
//!
//! Tests and benches of other packages find the binaries with [`locate`],
//! depending on this crate with `default-features = false` (std only).
//!
//! # Features
//!
//! - `servers` (default): the servers themselves (rmcp's server side,
//!   tokio). Without it only [`locate`] is compiled.
#![forbid(unsafe_code)]

mod locate;
mod procs;
#[cfg(feature = "servers")]
mod tools;

pub use locate::{BENIGN, DIR_VAR, HOSTILE, KHIVE, locate};
pub use procs::live_with_tag;
#[cfg(feature = "servers")]
pub use tools::{
    EXECUTOR_TOOLS, TlsFiles, benign_tools, executor_tools, listen_loopback, many_tools, schema,
    serve_http, serve_stdio, spawn_sleeper, stdin_closed, tls_acceptor,
};
