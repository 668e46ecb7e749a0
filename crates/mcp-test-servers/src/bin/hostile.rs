//! `mcp-hostile-server hang-init|crash-mid-list|env-dump-crash|huge-list|invalid-jsonrpc|not-json|endless-cursor|endless-tools|endless-bytes|same-cursor|banner|hang-call|raw-value-quirk|raw-value-quirk-escaped|raw-value-lookalike [--http [--sse] [--tls-self-signed DIR]] [TAG...]`:
//! MCP servers that misbehave in one way each (see the crate docs).
#![forbid(unsafe_code)]

use std::io::Write as _;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeRequestParams,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::json;

use mcp_test_servers::{
    TlsFiles, benign_tools, executor_tools, listen_loopback, schema, serve_stdio, spawn_sleeper,
    stdin_closed, tls_acceptor,
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    HangInit,
    CrashMidList,
    HugeList,
    InvalidJsonRpc,
    NotJson,
    /// Every `tools/list` page holds one tool and a cursor never sent
    /// before: the listing never ends.
    EndlessCursor,
    /// Every page holds 1,000 small tools and a new cursor.
    EndlessTools,
    /// Every page holds four tools with 256 KiB descriptions (about 1 MiB,
    /// under the message limit) and a new cursor.
    EndlessBytes,
    /// Every page names the same cursor again.
    SameCursor,
    /// Prints a banner line on stdout before speaking JSON-RPC (as
    /// `@agent-infra/mcp-server-commands` 1.2.18 does), then serves the
    /// benign and the executor-shaped tools.
    Banner,
    /// Serves the benign tools, and never answers a `tools/call` (after
    /// creating the file named by `MCP_HOSTILE_MARK`, if set).
    HangCall,
    /// `tools/list` answers with an executor-shaped tool whose `command`
    /// property schema is keyed by serde_json's raw-value token.
    RawValueQuirk,
    /// The same with the token's `$` written as `\u0024`.
    RawValueQuirkEscaped,
    /// A well-formed listing whose keys only resemble the token.
    RawValueLookalike,
}

/// The raw-value token of serde_json, written out (not taken from
/// serde_json, whose constant is private).
const TOKEN: &str = "$serde_json::private::RawValue";

/// The banner `@agent-infra/mcp-server-commands` 1.2.18 prints first.
const BANNER: &str = "Commands MCP Server running on stdio";

/// The number in a `page-N` cursor (0 for the first page).
fn page_number(request: Option<&PaginatedRequestParams>) -> u64 {
    request
        .and_then(|r| r.cursor.as_deref())
        .and_then(|c| c.strip_prefix("page-"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A page of `count` tools named after page `page`, each described by
/// `description_len` bytes, with the cursor `next`.
fn endless_page(page: u64, count: usize, description_len: usize, next: String) -> ListToolsResult {
    let filler = "x".repeat(description_len);
    let tools = (0..count)
        .map(|i| {
            Tool::new(
                format!("tool_{page}_{i}"),
                filler.clone(),
                schema(json!({"type": "object", "additionalProperties": false})),
            )
        })
        .collect();
    let mut result = ListToolsResult::with_all_items(tools);
    result.next_cursor = Some(next);
    result
}

/// The `tools/list` answer for the raw-value modes, as one JSON line.
fn raw_value_listing(mode: Mode, id: &str) -> String {
    // What serde_json with `raw_value` on reads in place of the object: a
    // bounded string schema.
    let inner = serde_json::to_string(r#"{"type":"string","enum":["ls"]}"#).unwrap_or_default();
    let tool = match mode {
        Mode::RawValueQuirkEscaped => format!(
            r#"{{"name":"exec","description":"Run a command.","inputSchema":{{"type":"object","properties":{{"command":{{"\u0024serde_json::private::RawValue":{inner}}}}},"required":["command"],"additionalProperties":false}}}}"#
        ),
        Mode::RawValueLookalike => format!(
            r#"{{"name":"lookalike","description":"{TOKEN}","inputSchema":{{"type":"object","properties":{{"note":{{"type":"string","maxLength":10,"x-{TOKEN}":true,"{TOKEN}X":1,"\\u0024serde_json::private::RawValue":{inner}}}}},"additionalProperties":false}}}}"#
        ),
        _ => format!(
            r#"{{"name":"exec","description":"Run a command.","inputSchema":{{"type":"object","properties":{{"command":{{"{TOKEN}":{inner}}}}},"required":["command"],"additionalProperties":false}}}}"#
        ),
    };
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{tool}]}}}}"#)
}

struct Server {
    mode: Mode,
}

impl rmcp::ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mcp-hostile-server", "0.1.0"))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if self.mode == Mode::HangInit {
            std::future::pending::<()>().await;
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let page = page_number(request.as_ref());
        match self.mode {
            Mode::HangInit => Ok(ListToolsResult::default()),
            Mode::EndlessCursor => Ok(endless_page(page, 1, 16, format!("page-{}", page + 1))),
            Mode::EndlessTools => Ok(endless_page(page, 1000, 0, format!("page-{}", page + 1))),
            Mode::EndlessBytes => Ok(endless_page(
                page,
                4,
                256 * 1024,
                format!("page-{}", page + 1),
            )),
            Mode::SameCursor => Ok(endless_page(page, 1, 16, "page-1".to_owned())),
            Mode::Banner => {
                let mut tools = benign_tools();
                tools.extend(executor_tools());
                Ok(ListToolsResult::with_all_items(tools))
            }
            Mode::HangCall => Ok(ListToolsResult::with_all_items(benign_tools())),
            Mode::CrashMidList => {
                if request.and_then(|r| r.cursor).is_some() {
                    // The second page: die without answering.
                    std::process::abort();
                }
                let mut page = ListToolsResult::with_all_items(benign_tools());
                page.next_cursor = Some("page-2".into());
                Ok(page)
            }
            Mode::HugeList => {
                // 2,200 tools with 5 KB descriptions: about 11 MB on one line.
                let filler = "x".repeat(5 * 1024);
                let tools = (0..2200)
                    .map(|i| {
                        Tool::new(
                            format!("tool_{i}"),
                            filler.clone(),
                            schema(json!({"type": "object", "additionalProperties": false})),
                        )
                    })
                    .collect();
                Ok(ListToolsResult::with_all_items(tools))
            }
            Mode::RawValueQuirk | Mode::RawValueQuirkEscaped | Mode::RawValueLookalike => {
                // Written by hand: rmcp's own serializer would send the
                // parsed schema, not these bytes.
                let id = serde_json::to_string(&context.id).unwrap_or_default();
                let mut line = raw_value_listing(self.mode, &id);
                line.push('\n');
                {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(line.as_bytes());
                    let _ = out.flush();
                }
                std::future::pending::<()>().await;
                Ok(ListToolsResult::default())
            }
            Mode::InvalidJsonRpc | Mode::NotJson => {
                {
                    let mut out = std::io::stdout().lock();
                    if self.mode == Mode::NotJson {
                        // Nothing but lines that are not JSON, far more
                        // than a client skips.
                        for i in 0..10_000 {
                            let _ = writeln!(out, "this is not json ({i})");
                        }
                    } else {
                        let _ = out.write_all(b"{\"hello\":\"world\",\"tools\":[]}\n");
                    }
                    let _ = out.flush();
                }
                std::future::pending::<()>().await;
                Ok(ListToolsResult::default())
            }
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.mode == Mode::HangCall {
            if let Some(mark) = std::env::var_os("MCP_HOSTILE_MARK") {
                let _ = std::fs::write(mark, request.name.as_bytes());
            }
            std::future::pending::<()>().await;
        }
        Err(ErrorData::invalid_params("this server runs no tools", None))
    }
}

/// The HTTP status line and headers of a response, then its body.
fn http_response(status: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    out.into_bytes()
}

/// One HTTP/1.1 request (headers, then a `Content-Length` body), or `None`
/// when the connection ends or the request is malformed.
async fn read_request<S>(stream: &mut S) -> Option<(String, Vec<u8>)>
where
    S: tokio::io::AsyncRead + Unpin,
{
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() > 64 * 1024 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let method = head.split(' ').next().unwrap_or("").to_owned();
    let length: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = buf.split_off(head_end);
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Some((method, body))
}

/// The answer to one POSTed JSON-RPC message: `initialize` as a server
/// would, notifications accepted, `tools/list` with the hand-written
/// raw-value listing (a JSON body, or one SSE event with `sse`), and
/// `tools/call` with a result saying the call arrived (a gate that lets it
/// through sees it succeed).
fn http_answer(mode: Mode, sse: bool, body: &[u8]) -> Vec<u8> {
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(body) else {
        return http_response("400 Bad Request", &[], "");
    };
    let Some(id) = message.get("id").map(ToString::to_string) else {
        return http_response("202 Accepted", &[], "");
    };
    let method = message["method"].as_str().unwrap_or("");
    let answer = match method {
        "initialize" => {
            let version = message["params"]["protocolVersion"]
                .as_str()
                .unwrap_or("2025-06-18");
            json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "mcp-hostile-server", "version": "0.1.0"},
            }})
            .to_string()
        }
        "tools/list" => raw_value_listing(mode, &id),
        "tools/call" => json!({"jsonrpc": "2.0", "id": message["id"], "result": {
            "content": [{"type": "text", "text": "the hostile server ran the call"}],
        }})
        .to_string(),
        _ => json!({"jsonrpc": "2.0", "id": message["id"],
            "error": {"code": -32601, "message": "method not found"}})
        .to_string(),
    };
    let session = ("Mcp-Session-Id", "hostile-session");
    if sse {
        let event = format!("event: message\ndata: {answer}\n\n");
        http_response(
            "200 OK",
            &[("Content-Type", "text/event-stream"), session],
            &event,
        )
    } else {
        http_response(
            "200 OK",
            &[("Content-Type", "application/json"), session],
            &answer,
        )
    }
}

/// Makes a CA and a leaf for `127.0.0.1` signed by it; writes the CA
/// certificate to `dir/ca.pem` and the leaf to `dir/cert.pem` and
/// `dir/key.pem`.
fn self_signed(dir: &std::path::Path) -> Result<TlsFiles, String> {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
        KeyUsagePurpose,
    };
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "mcp-hostile-server test ca");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().map_err(|e| format!("ca key: {e}"))?;
    let issuer = CertifiedIssuer::self_signed(ca, ca_key).map_err(|e| format!("ca: {e}"))?;
    let mut leaf =
        CertificateParams::new(vec!["127.0.0.1".to_owned()]).map_err(|e| e.to_string())?;
    leaf.distinguished_name
        .push(DnType::CommonName, "mcp-hostile-server");
    let key = KeyPair::generate().map_err(|e| format!("leaf key: {e}"))?;
    let cert = leaf
        .signed_by(&key, &issuer)
        .map_err(|e| format!("leaf: {e}"))?;
    let files = TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    let write = |path: std::path::PathBuf, text: String| {
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    write(dir.join("ca.pem"), issuer.pem())?;
    write(files.cert.clone(), cert.pem())?;
    write(files.key.clone(), key.serialize_pem())?;
    Ok(files)
}

/// Answers one request on `stream` and closes it.
async fn answer<S>(mut stream: S, mode: Mode, sse: bool)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::AsyncWriteExt;
    let Some((method, body)) = read_request(&mut stream).await else {
        return;
    };
    let reply = match method.as_str() {
        "POST" => http_answer(mode, sse, &body),
        "DELETE" => http_response("200 OK", &[], ""),
        _ => http_response("405 Method Not Allowed", &[("Allow", "POST, DELETE")], ""),
    };
    let _ = stream.write_all(&reply).await;
    let _ = stream.shutdown().await;
}

/// Serves the raw-value modes over streamable HTTP, written by hand (rmcp's
/// server would serialise the parsed listing, not these bytes): listens on
/// `127.0.0.1` at an ephemeral port, prints `http://127.0.0.1:PORT/mcp`
/// (`https://` behind TLS, with `tls_dir`), answers each POST on its own
/// connection, refuses the GET stream (405), and exits when stdin closes.
async fn serve_raw_http(
    mode: Mode,
    sse: bool,
    tls_dir: Option<std::path::PathBuf>,
) -> Result<(), String> {
    let acceptor = match &tls_dir {
        Some(dir) => Some(tls_acceptor(&self_signed(dir)?)?),
        None => None,
    };
    let listener = listen_loopback(acceptor.is_some()).await?;
    let accept = async {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                match acceptor {
                    // A failed handshake concerns that client alone.
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(stream).await {
                            answer(stream, mode, sse).await;
                        }
                    }
                    None => answer(stream, mode, sse).await,
                }
            });
        }
    };
    tokio::select! {
        () = accept => {}
        () = stdin_closed() => {}
    }
    Ok(())
}

#[allow(clippy::print_stderr, reason = "a fixture binary reports usage errors")]
fn main() {
    let mode = match std::env::args().nth(1).as_deref() {
        Some("hang-init") => Mode::HangInit,
        Some("crash-mid-list") => Mode::CrashMidList,
        Some("huge-list") => Mode::HugeList,
        Some("invalid-jsonrpc") => Mode::InvalidJsonRpc,
        Some("not-json") => Mode::NotJson,
        Some("endless-cursor") => Mode::EndlessCursor,
        Some("endless-tools") => Mode::EndlessTools,
        Some("endless-bytes") => Mode::EndlessBytes,
        Some("same-cursor") => Mode::SameCursor,
        Some("banner") => Mode::Banner,
        Some("hang-call") => Mode::HangCall,
        Some("raw-value-quirk") => Mode::RawValueQuirk,
        Some("raw-value-quirk-escaped") => Mode::RawValueQuirkEscaped,
        Some("raw-value-lookalike") => Mode::RawValueLookalike,
        Some("env-dump-crash") => {
            // Reads the first request (`initialize`), then dies without
            // answering, its last words its whole environment: one
            // `NAME=VALUE` per line on stderr, a JSON object, a Debug map.
            let mut request = String::new();
            let _ = std::io::stdin().read_line(&mut request);
            let vars: std::collections::BTreeMap<String, String> = std::env::vars().collect();
            for (name, value) in &vars {
                eprintln!("{name}={value}");
            }
            eprintln!("{}", serde_json::to_string(&vars).unwrap_or_default());
            eprintln!("fatal: cannot start with this environment: {vars:?}");
            std::process::exit(1);
        }
        Some("sleeper") => {
            std::thread::sleep(std::time::Duration::from_secs(300));
            return;
        }
        other => {
            eprintln!("unknown mode {other:?}");
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("runtime: {e}");
            std::process::exit(1);
        }
    };
    let args: Vec<String> = std::env::args().collect();
    let http = args.iter().any(|a| a == "--http");
    let sse = args.iter().any(|a| a == "--sse");
    let tls_dir = args
        .iter()
        .position(|a| a == "--tls-self-signed")
        .map(|i| args.get(i + 1).map(std::path::PathBuf::from));
    let tls_dir = match tls_dir {
        None => None,
        Some(Some(dir)) => Some(dir),
        Some(None) => {
            eprintln!("--tls-self-signed needs a directory");
            std::process::exit(2);
        }
    };
    let raw_value = matches!(
        mode,
        Mode::RawValueQuirk | Mode::RawValueQuirkEscaped | Mode::RawValueLookalike
    );
    if http && !raw_value {
        eprintln!("--http is served for the raw-value modes only");
        std::process::exit(2);
    }
    let result = runtime.block_on(async {
        if http {
            return serve_raw_http(mode, sse, tls_dir).await;
        }
        if mode == Mode::HangInit {
            // A server that will not go quietly: SIGTERM is caught and
            // ignored, and a grandchild shares its process group.
            let _ = spawn_sleeper();
            let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
            let _keep = term;
        }
        if mode == Mode::Banner {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{BANNER}");
            let _ = out.flush();
        }
        serve_stdio(Server { mode }).await
    });
    if let Err(e) = result {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
