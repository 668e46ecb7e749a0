//! Tool descriptors the fixture servers offer, and the stdio and
//! streamable-HTTP serving loops.

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

/// The names of the executor-shaped tools `executor` mode adds.
pub const EXECUTOR_TOOLS: [&str; 2] = ["bash", "run_script"];

/// A JSON Schema object from a literal (a non-object literal gives `{}`).
pub fn schema(value: Value) -> Arc<JsonObject> {
    Arc::new(match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    })
}

/// Narrow tools every admission check lets through.
pub fn benign_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "echo",
            "Echo the given text back.",
            schema(json!({
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": 1000}},
                "required": ["text"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "add",
            "Add two integers.",
            schema(json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "search_code",
            "Search the code base.",
            schema(json!({
                "type": "object",
                "properties": {"query": {"type": "string"}, "repo_id": {"type": "string"}}
            })),
        ),
    ]
}

/// Generic executors dressed as tools: a `bash` with a free-form command
/// and a `run_script` with a free-form script.
pub fn executor_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "bash",
            "Run a shell command.",
            schema(json!({
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"]
            })),
        ),
        Tool::new(
            "run_script",
            "Runs a script with the given interpreter.",
            schema(json!({
                "type": "object",
                "properties": {
                    "interpreter": {"type": "string", "enum": ["python", "node"]},
                    "script": {"type": "string"}
                }
            })),
        ),
    ]
}

/// `n` narrow tools named `tool_00000`, `tool_00001`, ..., each with a
/// small closed schema (the bench's 1,000-tool list).
pub fn many_tools(n: usize) -> Vec<Tool> {
    (0..n)
        .map(|i| {
            Tool::new(
                format!("tool_{i:05}"),
                format!("Look up record {i} by its id."),
                schema(json!({
                    "type": "object",
                    "properties": {
                        "record_id": {"type": "string", "maxLength": 64},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                        "order": {"type": "string", "enum": ["asc", "desc"]}
                    },
                    "required": ["record_id"],
                    "additionalProperties": false
                })),
            )
        })
        .collect()
}

/// Serves `handler` on this process's stdin/stdout until the client goes
/// away.
pub async fn serve_stdio<H: rmcp::ServerHandler>(handler: H) -> Result<(), String> {
    let running = handler
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("serve failed: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| format!("server task failed: {e}"))?;
    Ok(())
}

/// The certificate chain and private key (PEM files) of the HTTP mode's
/// TLS listener.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: std::path::PathBuf,
    /// The leaf's private key (PKCS#8, PKCS#1 or SEC1).
    pub key: std::path::PathBuf,
}

/// A TLS acceptor from `files` (rustls, ring provider, HTTP/1.1 by ALPN).
///
/// # Errors
///
/// A message when the certificate or key cannot be read or used.
pub fn tls_acceptor(files: &TlsFiles) -> Result<tokio_rustls::TlsAcceptor, String> {
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let certs = CertificateDer::pem_file_iter(&files.cert)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| format!("tls cert {}: {e}", files.cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| format!("tls key {}: {e}", files.key.display()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("tls versions: {e}"))?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| format!("tls cert and key: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Serves a fresh handler from `factory` per MCP session over streamable
/// HTTP on `127.0.0.1`, at an ephemeral port, path `/mcp`, behind TLS when
/// `tls` is given. The endpoint's URL (`http://127.0.0.1:PORT/mcp`, or
/// `https://...`) is printed as the first line on stdout once the socket
/// listens; the server runs until stdin reaches end of file (its parent
/// went away or closed it) or the process is killed. A client whose TLS
/// handshake fails is disconnected; the server goes on.
///
/// # Errors
///
/// A message when the certificate or key cannot be loaded, the socket
/// cannot be bound or stdout written.
pub async fn serve_http<H, F>(factory: F, tls: Option<&TlsFiles>) -> Result<(), String>
where
    H: rmcp::ServerHandler,
    F: Fn() -> H + Send + Sync + 'static,
{
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

    let acceptor = tls.map(tls_acceptor).transpose()?;
    let service = StreamableHttpService::new(
        move || Ok(factory()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = listen_loopback(acceptor.is_some()).await?;
    let accept = async {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let service = hyper_util::service::TowerToHyperService::new(service.clone());
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let http = hyper::server::conn::http1::Builder::new();
                // A connection's failure (a refused handshake included)
                // concerns that client alone.
                match acceptor {
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(stream).await {
                            let io = hyper_util::rt::TokioIo::new(stream);
                            let _ = http.serve_connection(io, service).await;
                        }
                    }
                    None => {
                        let io = hyper_util::rt::TokioIo::new(stream);
                        let _ = http.serve_connection(io, service).await;
                    }
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

/// Binds `127.0.0.1` at an ephemeral port and prints the endpoint's URL,
/// `http://127.0.0.1:PORT/mcp` (`https://` with `tls`), as the first line
/// on stdout: a test reads it to know the socket listens.
///
/// # Errors
///
/// A message when the socket cannot be bound or stdout written.
pub async fn listen_loopback(tls: bool) -> Result<tokio::net::TcpListener, String> {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| format!("bind: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("local_addr: {e}"))?
        .port();
    let scheme = if tls { "https" } else { "http" };
    let mut stdout = tokio::io::stdout();
    stdout
        .write_all(format!("{scheme}://127.0.0.1:{port}/mcp\n").as_bytes())
        .await
        .map_err(|e| format!("stdout: {e}"))?;
    stdout.flush().await.map_err(|e| format!("stdout: {e}"))?;
    Ok(listener)
}

/// Returns once stdin reaches end of file (the parent went away or closed
/// it) or cannot be read.
pub async fn stdin_closed() {
    use tokio::io::AsyncReadExt;
    let mut stdin = tokio::io::stdin();
    let mut buf = [0_u8; 256];
    while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
}

/// Starts a long sleeper in this process's group (the same binary in mode
/// `sleeper`, carrying this process's arguments so a test's tag finds it):
/// the grandchild a teardown must not leave behind.
pub fn spawn_sleeper() -> std::io::Result<()> {
    let exe = std::env::current_exe()?;
    let mut args = std::env::args_os().skip(2);
    let mut command = std::process::Command::new(exe);
    command.arg("sleeper");
    command.args(&mut args);
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Deliberately not waited for: it must outlive this function.
    let _child = command.spawn()?;
    Ok(())
}
