//! The streamable HTTP transport: rmcp's client over a reqwest client this
//! module builds, speaking `https://` through rustls (ring provider, the
//! platform's roots plus [`SecurityConfig::extra_tls_roots_pem`]) and plain
//! `http://` where transport authorization allows it (loopback hosts alone,
//! see [`SecurityConfig::allow_loopback_http`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use http::{HeaderName, HeaderValue};
use rmcp::RoleClient;
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::connection::Handler;
use crate::error::{Error, TlsFailure};
use crate::pool::PoolConfig;
use crate::security::{SecurityConfig, scheme_and_host};

/// Headers the transport sets itself; an entry may not override them.
const RESERVED: [&str; 4] = [
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// The most redirects followed for one request.
const MAX_REDIRECTS: usize = 10;

/// Checks what this build can speak and parses the headers, before any
/// connection is attempted. Returns the transport's config and whether the
/// url is https.
fn transport_config(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    config: &PoolConfig,
) -> Result<(StreamableHttpClientTransportConfig, bool), Error> {
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
    let https = match scheme.as_str() {
        "http" => false,
        "https" => true,
        other => {
            return Err(unsupported(format!(
                "'{other}' urls are not spoken: the streamable HTTP client takes http and https urls"
            )));
        }
    };
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
    Ok((transport, https))
}

/// The rustls client config: the ring provider, TLS 1.2 and 1.3, and the
/// platform's verifier (the system's roots as rustls-native-certs finds
/// them, or those of `SSL_CERT_FILE` / `SSL_CERT_DIR` when set) with the
/// configured extra roots added. There is no switch that skips verification.
fn tls_config(security: &SecurityConfig) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut extra = Vec::new();
    for (index, pem) in security.extra_tls_roots_pem.iter().enumerate() {
        let before = extra.len();
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            let cert =
                cert.map_err(|e| format!("extra tls root #{index} is not valid PEM: {e}"))?;
            extra.push(cert);
        }
        if extra.len() == before {
            return Err(format!(
                "extra tls root #{index} holds no PEM 'CERTIFICATE' block"
            ));
        }
    }
    let verifier =
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra, Arc::clone(&provider))
            .map_err(|e| format!("the certificate verifier cannot be set up: {e}"))?;
    // `dangerous()` is rustls's door to any verifier other than its
    // built-in one; this one verifies chain, name and validity in full.
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("the tls protocol versions cannot be set: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    // reqwest is built for HTTP/1 only here.
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tls)
}

/// The TLS config of a client for a plain `http://` url, which never
/// speaks TLS (a redirect to https is cross-origin and not followed): it
/// trusts no root, so it fails closed if it ever were, and building it
/// neither reads the system's roots nor depends on the extra ones.
fn trust_nothing() -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("the tls protocol versions cannot be set: {e}"))?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth())
}

/// The reqwest client for one server: for an https url, TLS as in
/// [`tls_config`] and https only (nothing is ever sent to it in the clear,
/// redirects included); for an http url, [`trust_nothing`]. No idle
/// connection is kept (as rmcp's own default client, which
/// avoids stalls on a reused connection whose previous body was left
/// unread), and redirects followed only as [`same_origin_redirects`] says.
fn http_client(server: &str, https: bool, config: &PoolConfig) -> Result<reqwest::Client, Error> {
    let setup = |detail: String| Error::Tls {
        server: server.to_owned(),
        phase: "initialize",
        reason: TlsFailure::Setup,
        detail,
    };
    let tls = if https {
        tls_config(&config.security)
    } else {
        trust_nothing()
    }
    .map_err(setup)?;
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .https_only(https)
        .pool_max_idle_per_host(0)
        .redirect(same_origin_redirects())
        .build()
        .map_err(|e| {
            setup(format!(
                "the http client cannot be built: {}",
                with_causes(&e)
            ))
        })
}

/// Follows a 307 or 308 to the same scheme, host and port (these keep the
/// method and body), at most [`MAX_REDIRECTS`] times; any other redirect is
/// handed back to rmcp, which reports it as an error. A cross-origin hop
/// would replay the session id and the entry's headers to another host,
/// and an https to http one would leave TLS.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
        let same_origin = attempt.previous().first().is_some_and(|first| {
            let next = attempt.url();
            first.scheme() == next.scheme()
                && first.host_str() == next.host_str()
                && first.port_or_known_default() == next.port_or_known_default()
        });
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error("too many redirects")
        } else {
            attempt.follow()
        }
    })
}

/// Connects to a streamable-HTTP server and runs the handshake.
pub(crate) async fn open(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    config: &PoolConfig,
    handler: Handler,
) -> Result<RunningService<RoleClient, Handler>, Error> {
    let (transport_config, https) = transport_config(server, url, headers, config)?;
    let client = http_client(server, https, config)?;
    let transport = StreamableHttpClientTransport::with_client(client, transport_config);
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
        | ClientInitializeError::ConnectionClosed(_) => {
            transport_error(server, "initialize", error)
        }
        other => Error::Rpc {
            server: server.to_owned(),
            phase: "initialize",
            detail: other.to_string(),
        },
    }
}

/// A failure of the HTTP transport: [`Error::Tls`] when rustls refused the
/// connection anywhere in the error's causes, else [`Error::Unreachable`].
pub(crate) fn transport_error(
    server: &str,
    phase: &'static str,
    error: &(dyn std::error::Error + 'static),
) -> Error {
    match find_tls_error(error) {
        Some(tls) => Error::Tls {
            server: server.to_owned(),
            phase,
            reason: TlsFailure::of(tls),
            detail: tls.to_string(),
        },
        None => Error::Unreachable {
            server: server.to_owned(),
            phase,
            detail: with_causes(error),
        },
    }
}

/// The rustls error among `error`'s causes (see [`next_cause`]).
fn find_tls_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut next = Some(error);
    // Bounded: a cause chain is short, and a cyclic one must not hang.
    for _ in 0..64 {
        let current = next?;
        if let Some(tls) = current.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        next = next_cause(current);
    }
    None
}

/// The cause of `error`, looking through links that `source()` skips:
/// rmcp's `ClientInitializeError::TransportError` and
/// `StreamableHttpError::Client` do not report the transport's or the HTTP
/// client's error as their source, and an `io::Error` reports its inner
/// error's source rather than the inner error itself.
fn next_cause<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    if let Some(ClientInitializeError::TransportError { error: inner, .. }) =
        error.downcast_ref::<ClientInitializeError>()
    {
        return Some(inner);
    }
    if let Some(StreamableHttpError::Client(inner)) =
        error.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return Some(inner);
    }
    if let Some(inner) = error
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::get_ref)
    {
        return Some(inner);
    }
    error.source()
}

/// The error's message followed by each distinct cause's (see
/// [`next_cause`]), with no URL in it (see [`message_without_url`]).
pub(crate) fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = message_without_url(error);
    let mut source = next_cause(error);
    for _ in 0..64 {
        let Some(cause) = source else { break };
        let message = message_without_url(cause);
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        source = next_cause(cause);
    }
    text
}

/// An error's message without the request URL that reqwest appends
/// (`… for url (URL)`): a URL may carry a token in its query or userinfo,
/// and these messages reach logs, the session's record and admin_events.
/// The server is named beside the message instead.
fn message_without_url(error: &(dyn std::error::Error + 'static)) -> String {
    let text = error.to_string();
    match error
        .downcast_ref::<reqwest::Error>()
        .and_then(reqwest::Error::url)
    {
        Some(url) => text.replace(&format!(" for url ({url})"), ""),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unreachable_servers_detail_carries_no_url_secret() {
        // Port 1 on loopback: nothing listens, the connect is refused.
        let url = "http://user:pa55word@127.0.0.1:1/mcp?api_key=s3cr3t-token";
        let client =
            http_client("srv", false, &PoolConfig::default()).expect("the pool's http client");
        let error = client
            .get(url)
            .send()
            .await
            .expect_err("nothing listens on port 1");
        assert!(
            error.to_string().contains("s3cr3t-token"),
            "reqwest's own message names the url, so the check below can fail"
        );
        let detail = match transport_error("srv", "initialize", &error) {
            Error::Unreachable { detail, .. } => detail,
            other => panic!("expected Unreachable, got {other:?}"),
        };
        assert!(!detail.contains("s3cr3t-token"), "{detail}");
        assert!(!detail.contains("pa55word"), "{detail}");
        assert!(!detail.is_empty());
    }
}
