//! The streamable HTTP transport: rmcp's client over reqwest, built without
//! TLS, so only plain `http://` can be spoken (and transport authorization
//! allows that to loopback hosts alone, see
//! [`SecurityConfig::allow_loopback_http`](crate::SecurityConfig)).

use std::collections::{BTreeMap, HashMap};

use http::{HeaderName, HeaderValue};
use rmcp::RoleClient;
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::connection::Handler;
use crate::error::Error;
use crate::pool::PoolConfig;
use crate::security::scheme_and_host;

/// Headers the transport sets itself; an entry may not override them.
const RESERVED: [&str; 4] = [
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// Checks what this build can speak and parses the headers, before any
/// connection is attempted.
fn transport_config(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    config: &PoolConfig,
) -> Result<StreamableHttpClientTransportConfig, Error> {
    let unsupported = |detail: String| Error::TransportUnsupported {
        server: server.to_owned(),
        detail,
    };
    let invalid = |detail: String| Error::ServerConfigInvalid {
        server: server.to_owned(),
        detail,
    };
    let Some((scheme, _)) = scheme_and_host(url) else {
        return Err(invalid("url has no scheme and host".into()));
    };
    match scheme.as_str() {
        "http" => {}
        "https" => {
            return Err(unsupported(
                "https needs TLS, which this build does not include (plain http to loopback only)"
                    .into(),
            ));
        }
        other => {
            return Err(unsupported(format!(
                "'{other}' urls are not spoken: the streamable HTTP client takes http urls"
            )));
        }
    }
    let mut custom = HashMap::with_capacity(headers.len());
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(format!("headers: '{name}' is not a valid header name")))?;
        if RESERVED.contains(&header.as_str()) {
            return Err(invalid(format!(
                "headers: '{name}' is set by the transport and cannot be configured"
            )));
        }
        // The value may be a secret: the message names the header only.
        let value = HeaderValue::from_str(value).map_err(|_| {
            invalid(format!(
                "headers: the value of '{name}' is not a valid header value"
            ))
        })?;
        custom.insert(header, value);
    }
    let mut transport = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
        .custom_headers(custom)
        .max_sse_event_size(config.max_message_bytes);
    transport.max_json_response_size = config.max_message_bytes;
    Ok(transport)
}

/// Connects to a streamable-HTTP server and runs the handshake.
pub(crate) async fn open(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    config: &PoolConfig,
    handler: Handler,
) -> Result<RunningService<RoleClient, Handler>, Error> {
    let transport_config = transport_config(server, url, headers, config)?;
    let transport = StreamableHttpClientTransport::from_config(transport_config);
    // On timeout the handshake future is dropped with the transport's
    // worker handle, which ends the worker.
    match tokio::time::timeout(config.init_timeout, rmcp::serve_client(handler, transport)).await {
        Err(_) => Err(Error::Timeout {
            server: server.to_owned(),
            phase: "initialize",
            timeout: config.init_timeout,
        }),
        Ok(Err(e)) => Err(init_error(server, &e)),
        Ok(Ok(running)) => Ok(running),
    }
}

fn init_error(server: &str, error: &ClientInitializeError) -> Error {
    match error {
        ClientInitializeError::TransportError { .. }
        | ClientInitializeError::ConnectionClosed(_) => Error::Unreachable {
            server: server.to_owned(),
            phase: "initialize",
            detail: with_causes(error),
        },
        other => Error::Rpc {
            server: server.to_owned(),
            phase: "initialize",
            detail: other.to_string(),
        },
    }
}

/// The error's message followed by each distinct cause's.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let message = cause.to_string();
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        source = cause.source();
    }
    text
}
