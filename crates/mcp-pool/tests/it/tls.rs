//! Servers reached over `https://`: the benign fixture server's HTTP mode
//! behind TLS, with a CA and leaf certificates made at test time (rcgen),
//! so that trust, host name and validity can each be got wrong on purpose.

use std::path::Path;
use std::time::Duration;

use mcp_pool::{Error, McpPool, PoolConfig, SecurityConfig, TlsFailure};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use serde_json::json;

use crate::http::{HttpServer, calls_are_made_and_validated, http_server_with};
use crate::live_with_tag;

/// A certificate authority made for one test.
struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("ca key");
        Self {
            issuer: CertifiedIssuer::self_signed(params, key).expect("self-signed ca"),
        }
    }

    /// The CA certificate, PEM.
    fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A leaf for `names` (DNS names or IP addresses) written to `dir` as
    /// `cert.pem` and `key.pem`; `expired` backdates its validity.
    fn leaf(&self, dir: &Path, names: &[&str], expired: bool) -> [String; 2] {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).expect("leaf params");
        params
            .distinguished_name
            .push(DnType::CommonName, "mcp fixture");
        if expired {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        let key = KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &self.issuer).expect("sign the leaf");
        let cert_path = dir.join("cert.pem");
        let key_path = dir.join("key.pem");
        std::fs::write(&cert_path, cert.pem()).expect("write cert");
        std::fs::write(&key_path, key.serialize_pem()).expect("write key");
        [
            cert_path.to_string_lossy().into_owned(),
            key_path.to_string_lossy().into_owned(),
        ]
    }
}

/// The benign fixture server in `mode`, serving TLS with the leaf in `files`.
async fn tls_server(mode: &str, files: &[String; 2]) -> HttpServer {
    let server = http_server_with(mode, &["--tls-cert", &files[0], "--tls-key", &files[1]]).await;
    assert!(
        server.url.starts_with("https://127.0.0.1:"),
        "{}",
        server.url
    );
    server
}

/// A pool reaching URLs (https; plain http to loopback stays off) and
/// trusting `roots` besides the platform's, with generous limits.
fn tls_config(roots: &[String]) -> PoolConfig {
    let mut security = SecurityConfig::trusted();
    security.extra_tls_roots_pem = roots.to_vec();
    let mut config = PoolConfig::with_security(security);
    config.init_timeout = Duration::from_secs(60);
    config.request_timeout = Duration::from_secs(60);
    config
}

/// Stops the fixture and checks that no process carrying its tag is left.
async fn stop(server: HttpServer) {
    let tag = server.tag.clone();
    server.stop().await;
    let left = live_with_tag(&tag);
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

/// Lists the tools at `url` through a fresh pool and returns the TLS
/// failure with the error's message, failing on any other outcome.
async fn tls_refusal(config: PoolConfig, url: &str) -> (TlsFailure, String) {
    let pool = McpPool::new(config);
    pool.add_server("secure", json!({"url": url}));
    let e = pool.list_tools("secure").await.unwrap_err();
    pool.shutdown().await;
    assert!(e.is_server_failure(), "{e}");
    let message = e.to_string();
    match e {
        Error::Tls {
            server,
            phase,
            reason,
            ..
        } => {
            assert_eq!((server.as_str(), phase), ("secure", "initialize"));
            assert!(message.contains(reason.code()), "{message}");
            (reason, message)
        }
        other => panic!("expected a tls refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_and_called_over_https_with_an_extra_root() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = Ca::new("mcp-pool test ca");
    let files = ca.leaf(dir.path(), &["localhost", "127.0.0.1"], false);
    let server = tls_server("executor", &files).await;
    let pool = McpPool::new(tls_config(&[ca.pem()]));
    pool.add_server("secure", json!({"url": server.url}));

    let listing = pool.list_tools("secure").await.expect("list over https");
    let admitted: Vec<&str> = listing.admitted.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(admitted, ["add", "echo", "search_code"]);
    let denied: Vec<&str> = listing.denied.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(denied, ["bash", "run_script"]);

    calls_are_made_and_validated(&pool, "secure", "over tls").await;
    pool.shutdown().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_from_an_untrusted_issuer_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = Ca::new("the server's ca");
    let other = Ca::new("some other ca");
    let files = ca.leaf(dir.path(), &["localhost", "127.0.0.1"], false);
    let server = tls_server("benign", &files).await;

    // Another CA among the extra roots: the chain leads nowhere trusted.
    let (reason, message) = tls_refusal(tls_config(&[other.pem()]), &server.url).await;
    assert_eq!(reason, TlsFailure::UntrustedIssuer, "{message}");
    assert!(message.contains("untrusted-issuer"), "{message}");

    // The platform's roots alone do not know a test CA either. (With no
    // system roots on the machine at all, setting up the verifier is what
    // fails, which refuses just the same.)
    let (reason, message) = tls_refusal(tls_config(&[]), &server.url).await;
    assert!(
        matches!(reason, TlsFailure::UntrustedIssuer | TlsFailure::Setup),
        "{message}"
    );

    // The same server is reached once its CA is trusted: the refusals
    // above were about trust, not about the server.
    let pool = McpPool::new(tls_config(&[other.pem(), ca.pem()]));
    pool.add_server("secure", json!({"url": server.url}));
    pool.list_tools("secure").await.expect("trusted now");
    pool.shutdown().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_another_host_or_out_of_date_is_refused() {
    let ca = Ca::new("mcp-pool test ca");

    // Issued by a trusted CA, but for another name than the url's host.
    let dir = tempfile::tempdir().expect("tempdir");
    let files = ca.leaf(dir.path(), &["mcp.example.test"], false);
    let server = tls_server("benign", &files).await;
    let (reason, message) = tls_refusal(tls_config(&[ca.pem()]), &server.url).await;
    assert_eq!(reason, TlsFailure::WrongHost, "{message}");
    // The name matters, not the address: `localhost` is not on it either.
    let localhost = server.url.replace("127.0.0.1", "localhost");
    let (reason, message) = tls_refusal(tls_config(&[ca.pem()]), &localhost).await;
    assert_eq!(reason, TlsFailure::WrongHost, "{message}");
    stop(server).await;

    // The right name, from a trusted CA, expired.
    let dir = tempfile::tempdir().expect("tempdir");
    let files = ca.leaf(dir.path(), &["localhost", "127.0.0.1"], true);
    let server = tls_server("benign", &files).await;
    let (reason, message) = tls_refusal(tls_config(&[ca.pem()]), &server.url).await;
    assert_eq!(reason, TlsFailure::Expired, "{message}");
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_to_a_server_without_tls_fails_and_never_falls_back_to_http() {
    // The plain-http fixture, addressed as https: the handshake fails, and
    // the request is not retried in the clear (the server logs every call
    // it receives on stderr, but nothing reaches it as MCP at all: the
    // initialize never completes).
    let server = http_server_with("benign", &[]).await;
    let url = server.url.replacen("http://", "https://", 1);
    let (reason, message) = tls_refusal(tls_config(&[]), &url).await;
    assert!(
        matches!(reason, TlsFailure::Handshake | TlsFailure::Setup),
        "{message}"
    );
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extra_root_that_is_not_a_certificate_fails_closed_before_connecting() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let url = format!("https://127.0.0.1:{port}/mcp");
    let ca = Ca::new("mcp-pool test ca");
    let key_only = KeyPair::generate().expect("key").serialize_pem();
    for bad in ["not pem at all".to_owned(), key_only] {
        // A good root beside the bad one does not save it: a root the
        // caller meant to trust and that cannot be read is not skipped.
        let (reason, message) = tls_refusal(tls_config(&[ca.pem(), bad]), &url).await;
        assert_eq!(reason, TlsFailure::Setup, "{message}");
    }
    let pool = McpPool::new(tls_config(&[
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_owned(),
    ]));
    pool.add_server("secure", json!({"url": url}));
    let e = pool.list_tools("secure").await.unwrap_err();
    assert!(
        matches!(
            e,
            Error::Tls {
                reason: TlsFailure::Setup,
                ..
            }
        ),
        "{e}"
    );
    // Valid PEM around bytes that are no certificate.
    assert!(e.to_string().contains("verifier cannot be set up"), "{e}");
    listener.set_nonblocking(true).expect("nonblocking");
    assert!(
        listener.accept().is_err(),
        "a refused setup was connected from"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_to_loopback_is_unchanged_and_does_not_depend_on_tls_roots() {
    // Still refused without the loopback allowance, and reached with it,
    // even beside an extra root that would fail every https connection:
    // a plain-http client neither reads nor needs any root.
    let server = http_server_with("benign", &[]).await;
    let broken = ["no certificate here".to_owned()];
    let pool = McpPool::new(tls_config(&broken));
    pool.add_server("local", json!({"url": server.url}));
    let e = pool.list_tools("local").await.unwrap_err();
    assert!(matches!(e, Error::TransportDenied { .. }), "{e}");
    let mut config = tls_config(&broken);
    config.security.allow_loopback_http = true;
    let pool = McpPool::new(config);
    pool.add_server("local", json!({"url": server.url}));
    let listing = pool
        .list_tools("local")
        .await
        .expect("plain http to loopback");
    assert_eq!(listing.admitted.len(), 3);
    pool.shutdown().await;
    stop(server).await;
}

/// A CA certificate (PEM) made once for the property test.
fn shared_ca_pem() -> &'static str {
    static PEM: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PEM.get_or_init(|| Ca::new("proptest ca").pem())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    // Whatever an extra root holds, if it is not a certificate the pool
    // refuses https as a setup failure, never connecting and never
    // dropping the root to go on with the others: text without a PEM
    // block, and PEM framing around anything that is not a certificate.
    #[test]
    fn a_malformed_extra_root_always_fails_closed_before_connecting(
        body in "[A-Za-z0-9+/=\n]{0,300}",
        framed in proptest::bool::ANY,
        good_first in proptest::bool::ANY,
    ) {
        let bad = if framed {
            format!("-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n")
        } else {
            body
        };
        let roots = if good_first {
            vec![shared_ca_pem().to_owned(), bad]
        } else {
            vec![bad, shared_ca_pem().to_owned()]
        };
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let e = runtime.block_on(async {
            let pool = McpPool::new(tls_config(&roots));
            pool.add_server("secure", json!({"url": format!("https://127.0.0.1:{port}/mcp")}));
            pool.list_tools("secure").await.unwrap_err()
        });
        proptest::prop_assert!(
            matches!(e, Error::Tls { reason: TlsFailure::Setup, .. }),
            "{}", e
        );
        listener.set_nonblocking(true).expect("nonblocking");
        proptest::prop_assert!(listener.accept().is_err(), "a refused setup was connected from");
    }
}
